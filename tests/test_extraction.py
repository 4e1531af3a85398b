"""Tests for docscraper.content.extraction: main content to Markdown, metadata, robustness, normalization.

The HTML fixtures under ``tests/extraction_fixtures/`` mimic what Sphinx (alabaster and the Read the
Docs theme), Material for MkDocs, Docusaurus and rustdoc emit, plus a hand-written page and a
JavaScript application shell.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

from docscraper.content.extraction import (
    MAX_HTML_CHARS,
    Extracted,
    extract_html,
    extract_markdown,
    normalize_markdown,
)
from docscraper.content.extraction.links import LinkResolver, safe_url

FIXTURES = Path(__file__).parent / "extraction_fixtures"

#: Fixture file -> the URL it is served from in these tests.
PAGES = {
    "sphinx_alabaster.html": "https://widgets.example.org/en/stable/api/widgets.html",
    "sphinx_rtd.html": "https://gadgets.example.org/en/latest/configuration.html",
    "mkdocs_material.html": "https://gizmo.example.dev/guide/usage/",
    "docusaurus.html": "https://thing.example.com/docs/getting-started",
    "plain.html": "http://frob.example.net/old/manual.html",
    "rustdoc.html": "https://docs.example.rs/sprockets/struct.Sprocket.html",
}


def extract_fixture(name: str) -> Extracted:
    return extract_html((FIXTURES / name).read_bytes(), PAGES.get(name, "https://example.com/"))


def fences(markdown: str) -> list[tuple[str, str]]:
    """(info string, code) for every fenced code block."""
    pattern = re.compile(r"^(?P<fence>`{3,})(?P<lang>[^\n`]*)\n(?P<code>.*?)\n(?P=fence)$", re.M | re.S)
    return [(m.group("lang"), m.group("code")) for m in pattern.finditer(markdown)]


@pytest.fixture(scope="module")
def alabaster() -> Extracted:
    return extract_fixture("sphinx_alabaster.html")


@pytest.fixture(scope="module")
def rtd() -> Extracted:
    return extract_fixture("sphinx_rtd.html")


@pytest.fixture(scope="module")
def material() -> Extracted:
    return extract_fixture("mkdocs_material.html")


@pytest.fixture(scope="module")
def docusaurus() -> Extracted:
    return extract_fixture("docusaurus.html")


@pytest.fixture(scope="module")
def plain() -> Extracted:
    return extract_fixture("plain.html")


@pytest.fixture(scope="module")
def rustdoc() -> Extracted:
    return extract_fixture("rustdoc.html")


# -- code blocks ---------------------------------------------------------------------------------


def test_sphinx_code_blocks_keep_language_and_text(alabaster: Extracted) -> None:
    blocks = fences(alabaster.markdown)
    assert [lang for lang, _ in blocks] == ["console", "python", "python"]
    assert blocks[0][1] == "$ pip install widgets"
    assert blocks[1][1] == (
        "from widgets import build_widget\n"
        "\n"
        "def make(spec_file):\n"
        "    if spec_file.size < 10 and spec_file.ok:\n"
        '        return build_widget(spec_file, mode="a & b")'
    )


def test_sphinx_line_number_table_keeps_only_the_code(alabaster: Extracted) -> None:
    _, code = fences(alabaster.markdown)[2]
    assert code == 'w = make("spec.toml")\nw.show()'


def test_inline_line_numbers_are_dropped(rtd: Extracted) -> None:
    assert fences(rtd.markdown) == [("yaml", "server:\n  port: 8080\n  log_level: debug_all")]


def test_material_code_blocks(material: Extracted) -> None:
    blocks = fences(material.markdown)
    assert blocks[0] == (
        "python",
        'import gizmo\n\nclass My_Gizmo(gizmo.Base):\n    __slots__ = ("a_b",)',
    )
    assert blocks[1] == ("bash", 'gizmo serve --port 9000\necho "```"')
    assert "\\_" not in material.markdown


def test_fence_is_longer_than_backticks_in_code(material: Extracted) -> None:
    assert '````bash\ngizmo serve --port 9000\necho "```"\n````' in material.markdown


def test_docusaurus_prism_code_blocks(docusaurus: Extracted) -> None:
    blocks = fences(docusaurus.markdown)
    assert blocks == [
        ("bash", "npm install thingamajig"),
        ("bash", "yarn add thingamajig"),
        ("js", 'module.exports = {\n  retries: 3,\n  match: "a|b <c>",\n};'),
    ]


def test_lang_class_and_data_lang_and_verbatim_tabs(plain: Extracted) -> None:
    blocks = fences(plain.markdown)
    assert blocks[0] == ("sh", "frob --in a.txt --out b.txt\nfrob -v *.txt")
    assert blocks[1] == (
        "c",
        "int main(void) {\n\tif (a < b && c) {\n\t\treturn 1;   /* tabbed */\n\t}\n}",
    )


def test_rustdoc_code_blocks(rustdoc: Extracted) -> None:
    blocks = fences(rustdoc.markdown)
    assert [lang for lang, _ in blocks] == ["rust", "rust"]
    assert blocks[0][1] == "pub struct Sprocket {\n    pub teeth: u32,\n}"
    assert blocks[1][1] == "let s = Sprocket { teeth: 12 };\nassert_eq!(s.teeth, 12);"


@pytest.mark.parametrize(
    ("markup", "language"),
    [
        ('<pre><code class="language-toml">a = 1</code></pre>', "toml"),
        ('<pre><code class="hljs language-go">a := 1</code></pre>', "go"),
        ('<pre class="sourceCode haskell"><code class="sourceCode haskell">a = 1</code></pre>', "haskell"),
        ('<div class="highlight-python3 notranslate"><div class="highlight"><pre>a = 1</pre></div></div>', "python"),
        ('<div class="highlight-none notranslate"><div class="highlight"><pre>a = 1</pre></div></div>', "text"),
        ('<pre class="brush: ruby;">a = 1</pre>', "ruby"),
        ("<pre>a = 1</pre>", ""),
    ],
)
def test_code_language_conventions(markup: str, language: str) -> None:
    result = extract_html(f"<html><body><main>{markup}</main></body></html>", "https://e.com/")
    assert fences(result.markdown) == [(language, "a = 1" if language != "go" else "a := 1")]


def test_inline_code_is_not_escaped() -> None:
    html = "<p>Call <code>get_user_by_id(*args)</code> or <code>a_b &lt; c</code>.</p>"
    assert extract_html(html, "https://e.com/").markdown == ("Call `get_user_by_id(*args)` or `a_b < c`.\n")


# -- tables --------------------------------------------------------------------------------------


def test_table_with_thead(alabaster: Extracted) -> None:
    assert (
        "| Mode | Meaning |\n"
        "| --- | --- |\n"
        "| `fast` | Skip validation \\| trust input |\n"
        "| `safe` | Validate every field |\n"
    ) in alabaster.markdown


def test_table_without_thead_uses_first_row_as_header(rtd: Extracted) -> None:
    assert (
        "| Option | Default | Description |\n"
        "| --- | --- | --- |\n"
        "| port | 8080 | TCP port |\n"
        "| log_level | info | One of debug, info, warning |\n"
    ) in rtd.markdown


def test_table_header_row_of_th_without_thead(plain: Extracted) -> None:
    assert (
        "| Option | Meaning |\n| --- | --- |\n| -v | verbose output |\n| -q | quiet, no output at all |\n"
    ) in plain.markdown


def test_docusaurus_table_escapes_pipes_in_code(docusaurus: Extracted) -> None:
    assert "| Key | Type | Default |\n| --- | --- | --- |\n" in docusaurus.markdown
    assert "| `match` | `string \\| RegExp` | — |" in docusaurus.markdown


def test_layout_table_is_not_a_pipe_table() -> None:
    html = (
        "<body><table><tr><td><h2>Section</h2><p>Intro text for the section.</p>"
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "</td></tr></table></body>"
    )
    markdown = extract_html(html, "https://e.com/").markdown
    assert markdown.startswith("## Section\n\nIntro text for the section.\n")
    assert "| a | b |\n| --- | --- |\n| 1 | 2 |" in markdown


# -- chrome --------------------------------------------------------------------------------------

CHROME = {
    "sphinx_alabaster.html": [
        "Navigation", "Previous topic", "This Page", "Show Source", "Quick search", "Powered by",
        "Page source", "[source]", "Table of Contents", "General Index",
    ],
    "sphinx_rtd.html": [
        "Edit on GitHub", "Search docs", "Contents", "Previous", "Copyright", "Read the Docs",
        "Installation",
    ],
    "mkdocs_material.html": [
        "Skip to content", "Search", "Home", "On this page", "Installation guide", "Last update",
        "Back to top", "Made with", "Cookie consent", "cookies",
    ],
    "docusaurus.html": [
        "Skip to main content", "Star us", "Sidebar Intro Link", "Breadcrumb Current",
        "On this page", "Edit this page", "Last updated", "Footer Inc", "cookies", "Copy",
        "Concepts", "Docs",
    ],
    "plain.html": ["Skip to content", "Home", "Download", "cookies", "Copyright", "webmaster"],
    "rustdoc.html": [
        "Sidebar Methods", "Copy item path", "Expand description", "source", "§", "0.3.1",
    ],
}  # fmt: skip


@pytest.mark.parametrize(("name", "markers"), sorted(CHROME.items()))
def test_chrome_is_removed(name: str, markers: list[str]) -> None:
    markdown = extract_fixture(name).markdown
    leaked = [marker for marker in markers if marker in markdown]
    assert leaked == []


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_anchor_glyphs_or_invisible_characters(name: str) -> None:
    markdown = extract_fixture(name).markdown
    for glyph in ("\u00b6", "\u00a7", "\u200b", "\ufffd"):
        assert glyph not in markdown


def test_headings(alabaster: Extracted, docusaurus: Extracted, material: Extracted) -> None:
    assert alabaster.markdown.startswith("# `widgets` — Widget toolkit\n")
    assert "\n## Quick start\n" in alabaster.markdown
    assert "\n## Reference\n" in alabaster.markdown
    assert docusaurus.markdown.startswith("# Getting started\n")
    assert "\n## Install\n" in docusaurus.markdown
    assert "\n## Example\n" in material.markdown


def test_hidden_and_aria_hidden_elements_are_dropped() -> None:
    html = (
        "<main><p>Visible words.</p><div hidden>Hidden words</div>"
        '<span aria-hidden="true">Decorative</span><div style="display: none">Collapsed</div></main>'
    )
    assert extract_html(html, "https://e.com/").markdown == "Visible words.\n"


# -- structure -----------------------------------------------------------------------------------


def test_api_signature_and_field_list(alabaster: Extracted) -> None:
    assert "\n`widgets.build_widget(spec, *, mode='fast')`\n\nBuild a widget from *spec*.\n" in (alabaster.markdown)
    assert "**Parameters:**\n\n- **spec** – the widget spec.\n" in alabaster.markdown


def test_admonition_title(alabaster: Extracted) -> None:
    assert "\n> **Warning:** Widgets are not thread-safe.\n" in alabaster.markdown


def test_nested_lists(plain: Extracted, material: Extracted) -> None:
    assert (
        "1. Prepare the input.\n2. Run `frob`:\n   - once for each file,\n   - or with a glob.\n3. Check the output.\n"
    ) in plain.markdown
    assert (
        "- First level\n  - Second level with [a link](https://example.org/x)\n- Another item\n"
    ) in material.markdown


def test_definition_list(plain: Extracted) -> None:
    assert "**frob.conf**\n\nThe main configuration file.\n\n**~/.frobrc**\n\nPer-user overrides." in (plain.markdown)


def test_tab_labels_precede_their_panels(docusaurus: Extracted, material: Extracted) -> None:
    assert "**npm**\n\n```bash\nnpm install thingamajig\n```\n\n**Yarn**\n\n```bash\nyarn add" in (docusaurus.markdown)
    assert "**pip**\n\n```text\npip install gizmo\n```\n\n**conda**\n\n```text\nconda install" in (material.markdown)


def test_rst_indentation_blockquote_does_not_quote_code() -> None:
    html = (
        "<main><ul><li><p>Run it:</p><blockquote><div>"
        '<div class="highlight-shell-session notranslate"><div class="highlight"><pre>$ python3 app.py\n</pre>'
        "</div></div></div></blockquote></li></ul><blockquote><p>A real quote.</p></blockquote></main>"
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "- Run it:\n\n  ```shell-session\n  $ python3 app.py\n  ```\n\n> A real quote.\n"
    )


def test_sections_named_like_chrome_are_content() -> None:
    html = (
        '<main><section id="navigation"><h2>Navigation</h2><p>How to move around the map.</p></section>'
        '<section id="cookie-objects"><h2>Cookie Objects</h2><dl class="py class">'
        '<dt class="sig sig-object py" id="http.cookies.BaseCookie">class BaseCookie</dt>'
        "<dd><p>Base class for cookies.</p></dd></dl></section>"
        '<aside class="sidebar"><p class="sidebar-title">Hello</p><pre>print("hi")</pre></aside></main>'
    )
    markdown = extract_html(html, "https://e.com/").markdown
    assert "## Navigation\n\nHow to move around the map." in markdown
    assert "## Cookie Objects\n\n`class BaseCookie`\n\nBase class for cookies." in markdown
    assert '```\nprint("hi")\n```' in markdown


def test_alternative_code_versions_in_one_pre() -> None:
    html = (
        '<main><pre><input type="checkbox"><code class="language-js cjs">const a = require("a");</code>'
        '<code class="language-js mjs">import a from "a";</code></pre></main>'
    )
    assert fences(extract_html(html, "https://e.com/").markdown) == [
        ("js", 'const a = require("a");\n\nimport a from "a";')
    ]


def test_texinfo_definition_is_a_signature() -> None:
    html = (
        '<body><dl><dt id="index-ffi_005fcall"><span class="category">Function: </span><span>'
        "<strong>void</strong> <em>ffi_call (ffi_cif *<var>cif</var>)</em>"
        "<a href='#index-ffi_005fcall' class='copiable-anchor'> &para;</a></span></dt>"
        "<dd><p>Calls the function.</p></dd></dl></body>"
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "`Function: void ffi_call (ffi_cif *cif)`\n\nCalls the function.\n"
    )


# -- links and images ----------------------------------------------------------------------------


def test_links_are_absolute(material: Extracted, alabaster: Extracted, docusaurus: Extracted) -> None:
    assert "[installation guide](https://gizmo.example.dev/guide/install/)" in material.markdown
    assert "[spec](https://widgets.example.org/en/stable/api/config.html#spec)" in alabaster.markdown
    assert "[concepts](https://thing.example.com/docs/concepts)" in docusaurus.markdown


def test_base_href_images_and_javascript_links(plain: Extracted) -> None:
    assert "[download page](https://frob.example.net/download/index.html)" in plain.markdown
    assert "![Frob pipeline](https://frob.example.net/manual/img/diagram.png)" in plain.markdown
    assert "or click here." in plain.markdown
    assert "javascript:" not in plain.markdown


# -- metadata ------------------------------------------------------------------------------------


def test_metadata_sphinx(alabaster: Extracted) -> None:
    assert alabaster.title == "widgets — Widget toolkit"
    assert alabaster.canonical_url == "https://widgets.example.org/en/stable/api/widgets.html"
    assert alabaster.language == "en"
    assert alabaster.description == "Reference for the widgets module."
    assert alabaster.has_scripts_only is False


def test_relative_canonical_is_resolved(rtd: Extracted) -> None:
    assert rtd.canonical_url == "https://gadgets.example.org/en/latest/configuration.html"
    assert rtd.language == "en-US"
    assert rtd.description is None
    assert rtd.title == "Configuration"


def test_metadata_material_and_docusaurus(material: Extracted, docusaurus: Extracted) -> None:
    assert (material.title, material.language) == ("Usage", "de")
    assert material.canonical_url == "https://gizmo.example.dev/guide/usage/"
    assert docusaurus.title == "Getting started"
    assert docusaurus.description == "Set up Thingamajig in five minutes."
    assert docusaurus.canonical_url == "https://thing.example.com/docs/getting-started"


def test_title_falls_back_to_title_element() -> None:
    result = extract_html("<title> Only  title </title><p>Body text.</p>", "https://e.com/")
    assert result.title == "Only title"
    assert extract_html("<p>No title at all.</p>", "https://e.com/").title == ""


@pytest.mark.parametrize(
    "head",
    ["", '<link rel="canonical" href="">', '<link rel="canonical" href="http://[::1">',
     '<link rel="canonical" href="javascript:alert(1)">'],
)  # fmt: skip
def test_missing_or_malformed_canonical_is_none(head: str) -> None:
    result = extract_html(f"<html><head>{head}</head><body><p>x</p></body></html>", "https://e.com/")
    assert result.canonical_url is None


def test_no_language_or_description() -> None:
    result = extract_html("<html><body><p>x</p></body></html>", "https://e.com/")
    assert (result.language, result.description) == (None, None)


# -- JavaScript shells ---------------------------------------------------------------------------


def test_spa_shell_is_detected() -> None:
    result = extract_fixture("spa_shell.html")
    assert result.has_scripts_only is True
    assert result.markdown == ""
    assert result.title == "Widget Cloud Docs"


def test_minimal_spa_shell() -> None:
    html = "<html><body><div id=root></div><script src=app.js></script></body></html>"
    assert extract_html(html, "https://e.com/").has_scripts_only is True


@pytest.mark.parametrize("name", sorted(PAGES))
def test_rendered_pages_are_not_spa_shells(name: str) -> None:
    assert extract_fixture(name).has_scripts_only is False


def test_short_page_without_scripts_is_not_a_shell() -> None:
    assert extract_html("<p>Moved.</p>", "https://e.com/").has_scripts_only is False


# -- decoding and bad input ----------------------------------------------------------------------


def test_declared_latin1_decodes() -> None:
    html = "<html><head><meta charset=iso-8859-1></head><body><p>café crème</p></body></html>"
    result = extract_html(html.encode("latin-1"), "https://e.com/")
    assert result.markdown == "café crème\n"


def test_undeclared_latin1_decodes() -> None:
    result = extract_html("<html><body><p>café</p></body></html>".encode("latin-1"), "https://e.com/")
    assert result.markdown == "café\n"


def test_undeclared_utf8_decodes() -> None:
    result = extract_html("<p>naïve — “quoted”</p>".encode(), "https://e.com/")
    assert result.markdown == "naïve — “quoted”\n"


def test_explicit_encoding_wins_over_meta() -> None:
    html = "<html><head><meta charset=utf-8></head><body><p>Привет</p></body></html>"
    result = extract_html(html.encode("cp1251"), "https://e.com/", encoding="cp1251")
    assert result.markdown == "Привет\n"


def test_utf16_with_bom() -> None:
    result = extract_html("<p>café</p>".encode("utf-16"), "https://e.com/")
    assert result.markdown == "café\n"


@pytest.mark.parametrize("empty", [b"", "", "   \n ", b"\xef\xbb\xbf", "<html></html>"])
def test_empty_input(empty: str | bytes) -> None:
    result = extract_html(empty, "https://e.com/")
    assert result.markdown == ""
    assert result.title == ""
    assert result.has_scripts_only is False


def test_malformed_html() -> None:
    html = "<html><body><div><p>unclosed <b>bold <i>italic</div></table><li>item<p>after</body>"
    markdown = extract_html(html, "https://e.com/").markdown
    assert "unclosed **bold *italic***" in markdown
    assert "after" in markdown


@pytest.mark.parametrize(
    "garbage",
    [
        bytes(range(256)) * 20,
        b"\x00\x01\x02<html>\x00<body>\x00",
        "<p>lone \ud800 surrogate</p>",
        b"\xff\xfe\x00\x00garbage",
        "<?xml version='1.0' encoding='utf-8'?><root><item>x</item></root>",
        "http://example.com/page.html",
        "index.html",
    ],
)
def test_garbage_does_not_raise(garbage: str | bytes) -> None:
    result = extract_html(garbage, "https://e.com/")
    assert isinstance(result, Extracted)
    assert "\x00" not in result.markdown


def test_deep_nesting_keeps_text() -> None:
    html = "<div>" * 3000 + "deep text" + "</div>" * 3000
    assert "deep text" in extract_html(html, "https://e.com/").markdown
    lists = "<ul><li>" * 1000 + "deep item" + "</li></ul>" * 1000
    assert "deep item" in extract_html(lists, "https://e.com/").markdown


@pytest.mark.parametrize(
    ("hostile", "kept"),
    [
        ("<div>" * 10_000 + "deep text" + "</div>" * 10_000, "deep text"),
        ("<p>start</p>" + "<div><span><b><i>" * 10_000 + "never closed", "start"),
        ("<ul><li>" * 10_000 + "deep item", "deep item"),
        ("<p>start</p>" + "<table><tr><td>" * 1_000 + "nested cell", "nested cell"),
        ("<table>" + "<tr><td>cell" * 5_000, "cell"),
        ("<p>a\x00b</p>\x00<p>\x00</p>" * 1_000, "ab"),
        (b"<meta charset=utf-8><p>ok \xc3\x28 \xa0\xa1 \xe2\x28\xa1 \xf0\x28\x8c\xbc \xf8\xa1\xa1\xa1\xa1 \xed\xa0\x80 end</p>",
         "end"),
        ("<p>" + "word " * (1024 * 1024) + "</p>", "word word"),
        ("x" * (5 * 1024 * 1024), "xxxx"),
        ("<p>kept</p><!-- " + "never closed " * 10_000, "kept"),
        ("<p " + "a=1 " * 100_000 + ">attributes</p>", "attributes"),
    ],
    ids=["10k-divs", "10k-unclosed", "10k-lists", "1k-nested-tables", "5k-unclosed-rows", "nul-bytes",
         "invalid-utf8", "5MB-line", "5MB-text", "unclosed-comment", "100k-attributes"],
)
def test_hostile_html_never_raises_and_keeps_its_text(hostile: str | bytes, kept: str) -> None:
    started = time.perf_counter()
    result = extract_html(hostile, "https://e.com/")
    assert kept in result.markdown
    assert "\x00" not in result.markdown
    assert len(result.markdown) <= MAX_HTML_CHARS + 100
    # generous: only a runaway (quadratic on 10,000 levels) would come near it
    assert time.perf_counter() - started < 10


def test_bad_url_does_not_raise() -> None:
    result = extract_html('<p><a href="x">link</a></p>', "http://[::1")
    assert "link" in result.markdown


def test_large_page_is_fast() -> None:
    section = (
        '<h2>Section {i}</h2><p>Some <a href="../x{i}.html">words</a> about <code>item_{i}</code>.</p>'
        '<div class="highlight-python notranslate"><div class="highlight"><pre>'
        '<span class="n">x</span> <span class="o">=</span> <span class="mi">{i}</span>\n</pre></div></div>'
        "<table><tr><th>a</th><th>b</th></tr><tr><td>{i}</td><td>y</td></tr></table>"
    )
    body = "".join(section.format(i=i) for i in range(650))
    html = f'<html><body><div class="body" role="main">{body}</div></body></html>'
    assert len(html) > 200_000
    start = time.perf_counter()
    result = extract_html(html, "https://e.com/docs/")
    elapsed = time.perf_counter() - start
    assert len(fences(result.markdown)) == 650
    # Measured around 0.2 s; the bound only catches accidental quadratic work.
    assert elapsed < 2.0


# -- links ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base", ["https://e.com/a/b.html?q=1#top", "file:///doc/x.html", "mailto:x@e.com", "http://[::1"]
)
def test_links_resolved_per_fragment_match_safe_url(base: str) -> None:
    # The resolver resolves the part before a fragment once per page; the result must not change.
    hrefs = ["p.html#a", "p.html#b(c) d", "../q#x", "//h/p#f", "?x#y", "#f", "p#", "p #f", "p#a\tb", " p#f ",
             "javascript:x#y", "j#avascript:x", "//[::1#x", "http://o.org/p#f", "p;q#f", None, ""]  # fmt: skip
    resolve = LinkResolver(base)
    for href in hrefs + hrefs:
        assert resolve(href) == safe_url(base, href), href


# -- determinism ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_deterministic(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    first = extract_html(raw, PAGES[name])
    second = extract_html(raw, PAGES[name])
    from_text = extract_html(raw.decode("utf-8"), PAGES[name])
    assert first == second == from_text
    assert first.markdown.encode() == second.markdown.encode()
    assert normalize_markdown(first.markdown) == first.markdown


def test_extracted_is_frozen(alabaster: Extracted) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        alabaster.title = "x"  # type: ignore[misc]


# -- normalize_markdown --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        ("\n\n \n", ""),
        ("a", "a\n"),
        ("a\n\n\n\n", "a\n"),
        ("\n\n  \na", "a\n"),
        ("a  \nb\t\n", "a\nb\n"),
        ("a\r\nb\rc", "a\nb\nc\n"),
        ("a\n\n\nb", "a\n\nb\n"),
        ("a\n\n\n\n\n\nb", "a\n\nb\n"),
        ("a\n\nb", "a\n\nb\n"),
        ("a\n \t\n  \nb", "a\n\nb\n"),
        ("```py\nx = 1\n\n\n\ny = 2   \n```\n\n\n\nz", "```py\nx = 1\n\n\n\ny = 2\n```\n\nz\n"),
        ("  indented\n", "  indented\n"),
    ],
)
def test_normalize_markdown(given: str, expected: str) -> None:
    assert normalize_markdown(given) == expected
    assert normalize_markdown(expected) == expected


# -- Markdown pages ------------------------------------------------------------------------------


def test_extract_markdown_front_matter_and_heading() -> None:
    text = (
        "---\ntitle: Front title\ndescription: 'About things'\ntags: [a, b]\n---\n"
        "\n# Real heading\n\nBody   \n\n\n\nMore.\n"
    )
    result = extract_markdown(text, "https://e.com/page.md")
    assert result.markdown == "# Real heading\n\nBody\n\nMore.\n"
    assert result.title == "Real heading"
    assert result.description == "About things"
    assert result.canonical_url is None
    assert result.has_scripts_only is False


def test_extract_markdown_title_from_front_matter() -> None:
    result = extract_markdown('---\ntitle: "Quoted title"\n---\nNo heading here.\n', "https://e.com/")
    assert result.title == "Quoted title"
    assert result.markdown == "No heading here.\n"


def test_extract_markdown_ignores_headings_in_code_and_deeper_levels() -> None:
    text = "## Second level\n\n```sh\n# a comment, not a title\n```\n\n# Project\r\n"
    result = extract_markdown(text, "https://e.com/llms.txt")
    assert result.title == "Project"
    assert "# a comment, not a title" in result.markdown


def test_extract_markdown_plain_text_and_empty() -> None:
    assert extract_markdown("just text", "https://e.com/a.txt") == Extracted(
        title="", markdown="just text\n", canonical_url=None, language=None, description=None,
        has_scripts_only=False,
    )  # fmt: skip
    assert extract_markdown("", "https://e.com/a.txt").markdown == ""


def test_extract_markdown_without_closing_front_matter_keeps_text() -> None:
    result = extract_markdown("---\n# Title\n\nText", "https://e.com/a.md")
    assert result.title == "Title"
    assert result.markdown == "---\n# Title\n\nText\n"


# -- fixes found comparing with the Beautiful Soup and markdownify extractor on 1,600 pages -------
# (benchmarks/EXTRACTION.md lists the difference classes)


def test_line_break_between_inline_elements_keeps_words_apart() -> None:
    # DocBook: <acronym>V</acronym>\n<acronym>IPC</acronym>
    html = "<p>System <acronym>V</acronym>\n<acronym>IPC</acronym> semaphores</p>"
    assert extract_html(html, "https://e.com/").markdown == "System V IPC semaphores\n"


def test_paragraph_starting_on_a_new_line_stays_in_its_list_item() -> None:
    html = (
        "<main><ol><li><p>Create it:</p><pre>x = 1</pre><p>\n      Then run\n      it.\n    </p></li>"
        "<li><p>Done.</p></li></ol></main>"
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "1. Create it:\n\n   ```\n   x = 1\n   ```\n\n   Then run it.\n\n2. Done.\n"
    )


def test_small_headerless_table_of_links_stays_a_table() -> None:
    html = (
        '<main><table><tr><td><a href="/a"><code>a</code></a></td><td>Raised when <a href="/b">b</a>.</td></tr>'
        '<tr><td><a href="/c">c</a></td><td>See <a href="/d">d</a>.</td></tr></table></main>'
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "| [`a`](https://e.com/a) | Raised when [b](https://e.com/b). |\n| --- | --- |\n"
        "| [c](https://e.com/c) | See [d](https://e.com/d). |\n"
    )


def test_row_spanning_cell_keeps_the_columns_aligned() -> None:
    html = (
        "<table><tr><th>a</th><th>b</th><th>c</th></tr><tr><td rowspan=2>x</td><td>1</td><td>2</td></tr>"
        "<tr><td>3</td><td>4</td></tr></table>"
    )
    assert "| x | 1 | 2 |\n|  | 3 | 4 |\n" in extract_html(html, "https://e.com/").markdown


def test_inline_code_is_one_line_and_adjacent_spans_stay_apart() -> None:
    html = (
        '<p><code class="structfield">stream_count</code><code class="type">bigint</code></p>'
        "<p>Call <code> f(a,\n  b) </code>now, or <tt>frob</tt>.</p>"
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "`stream_count` `bigint`\n\nCall `f(a, b)` now, or `frob`.\n"
    )


def test_text_that_looks_like_markdown_syntax_is_escaped() -> None:
    # DocBook's literallayout: a plain-text README with <br> line breaks. Unescaped, the dashes made a
    # heading of the line above, "- " lines list items and the tildes an unclosed code fence. Each <br> is a
    # hard break (a backslash at the end of the line), so the lines render apart as they do in the page.
    html = (
        '<div class="literallayout"><p><br>\n      Requirements<br>\n------------<br>\n'
        "- You need a recent OS.<br>\n~~~~~~<br>\n# pkg install x<br>\n</p></div>"
    )
    assert extract_html(html, "https://e.com/").markdown == (
        "Requirements\\\n\\------------\\\n\\- You need a recent OS.\\\n\\~~~~~~\\\n\\# pkg install x\n"
    )


def test_wrapped_line_is_not_a_list_item() -> None:
    html = "<p>The value must be at most\n1000. Note that it counts seconds.</p>"
    assert extract_html(html, "https://e.com/").markdown == (
        "The value must be at most 1000. Note that it counts seconds.\n"
    )


def test_page_nested_beyond_lxmls_depth_limit_keeps_its_structure_above_the_cap() -> None:
    html = "<main><h2>Title</h2><p>Intro.</p>" + "<div>" * 400 + "deep text" + "</div>" * 400 + "<p>After.</p></main>"
    markdown = extract_html(html, "https://e.com/").markdown
    assert markdown.startswith("## Title\n\nIntro.\n")
    assert "deep text" in markdown
    assert markdown.endswith("After.\n")
