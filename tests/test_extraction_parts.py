"""The modules of docscraper.content.extraction, each on its own: parsing, chrome, main content, code."""

from __future__ import annotations

from typing import Any

import pytest

from docscraper.content.extraction import extract_html
from docscraper.content.extraction.chrome import is_chrome, remove_chrome
from docscraper.content.extraction.code import code_language, code_text
from docscraper.content.extraction.main_content import find_main
from docscraper.content.extraction.parsing import MAX_PARSE_DEPTH, decode, parse, prepare_markup


def _body(markup: str) -> Any:
    """The ``<body>`` of ``markup`` as extraction parses it."""
    root = parse(prepare_markup(markup))
    return next(root.iter("body"))


# -- parsing -------------------------------------------------------------------------------------


def test_decoding_is_the_spiders_a_wrong_utf8_declaration_is_redetected() -> None:
    # docscraper.content.encoding decides, as it does for the spider: the page says UTF-8, its bytes are Latin-1.
    html = "<meta charset=utf-8><p>café crème, déjà vu, à la carte, naïve</p>".encode("latin-1")
    assert decode(html, None) == html.decode("cp1252")
    assert extract_html(html, "https://e.com/").markdown == "café crème, déjà vu, à la carte, naïve\n"


def test_header_encoding_is_the_declared_one() -> None:
    assert decode("<p>Привет</p>".encode("cp1251"), "cp1251") == "<p>Привет</p>"


def test_parse_wraps_fragments_in_a_document() -> None:
    root = parse(prepare_markup("just text"))
    assert root.tag == "html"
    assert [el.tag for el in root.iter("p")] == ["p"]


def test_parse_caps_depth_beyond_lxmls_limit_and_keeps_text() -> None:
    root = parse("<body>" + "<div>" * 1000 + "deep" + "</div>" * 1000 + "<p>after</p></body>")
    body = next(root.iter("body"))
    depth = max(sum(1 for _ in el.iterancestors()) for el in body.iter())
    assert depth <= MAX_PARSE_DEPTH + 2
    text = "".join(body.itertext())
    assert "deep" in text
    assert "after" in text


def test_drop_tree_and_drop_tag_keep_the_surrounding_text() -> None:
    body = _body("<body><p>a<b>b</b>c<i>i<em>e</em>j</i>d</p></body>")
    p = next(body.iter("p"))
    next(p.iter("b")).drop_tree()
    next(p.iter("i")).drop_tag()
    assert "".join(p.itertext()) == "aciejd"
    assert [child.tag for child in p] == ["em"]


# -- chrome --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markup", "chrome"),
    [
        ('<div class="sphinxsidebar">x</div>', True),
        ('<nav class="md-nav">x</nav>', True),
        ('<div class="theme-doc-toc-desktop_fXgn">x</div>', True),  # Docusaurus CSS-module hash
        ('<div id="navigation"><h2>Navigation</h2><p>How to move around.</p></div>', False),
        ('<div class="cookie-banner">We use cookies.</div>', True),
        ('<aside class="sidebar"><p>Tip: <a href="x">x</a></p><pre>code</pre></aside>', False),
        ('<a href="https://github.com/x/edit/main/a.md">Edit this page</a>', True),
        ('<div style="display: none">hidden</div>', True),
        ('<div role="tabpanel" hidden>a tab</div>', False),
        ("<p>content</p>", False),
    ],
)
def test_is_chrome(markup: str, chrome: bool) -> None:
    el = _body(f"<body>{markup}</body>")[0]
    assert is_chrome(el) is chrome


def test_remove_chrome_keeps_the_main_content_and_unlinks_heading_self_links() -> None:
    body = _body(
        '<body><nav class="toc"><a href="#a">A</a></nav><main><h2 id="a"><a href="#a">Title</a></h2>'
        '<p>Text.</p></main><footer>Copyright</footer></body>'
    )
    remove_chrome(body)
    assert "".join(body.itertext()) == "TitleText."
    assert not list(body.iter("a", "nav", "footer"))


# -- main content --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "markup",
    [
        '<div class="sphinxsidebar">nav</div><div class="body" role="main" data-main><p>{text}</p></div>',
        '<div class="wy-nav-content"><div itemprop="articleBody" data-main><p>{text}</p></div></div>',
        '<article class="md-content__inner md-typeset" data-main><p>{text}</p></article>',
        '<main data-main><div class="content"><p>{text}</p></div></main>',
    ],
)
def test_find_main(markup: str) -> None:
    body = _body("<body>" + markup.format(text="Words of the page. " * 20) + "</body>")
    assert find_main(body).get("data-main") is not None


@pytest.mark.parametrize(
    "markup",
    [
        "<article><p>{text}</p></article><article><p>{text}</p></article>",  # a blog index: no one article
        "<div><p>{text}</p></div>",
        '<div class="content"><p>a</p></div><p>{text}</p>',  # too small a share of the text
    ],
)
def test_find_main_falls_back_to_body(markup: str) -> None:
    body = _body("<body>" + markup.format(text="Words of the page. " * 20) + "</body>")
    assert find_main(body) is body


# -- code ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markup", "language"),
    [
        ('<div class="highlight-pycon3 notranslate"><div class="highlight"><pre>x</pre></div></div>', "pycon"),
        ('<pre data-lang="Rust">x</pre>', "rust"),
        ('<pre><code class="hljs python">x</code></pre>', "python"),
        ('<pre class="programlisting">x</pre>', ""),
        ('<div class="code"><pre class="notranslate highlight">x</pre></div>', ""),
    ],
)
def test_code_language(markup: str, language: str) -> None:
    assert code_language(next(_body(f"<body>{markup}</body>").iter("pre"))) == language


def test_code_text_drops_gutters_keeps_breaks_and_tabs() -> None:
    pre = next(
        _body(
            '<body><pre>\n\n<span class="linenos">1</span>if a:<br>'
            '<span class="lineno">2</span>\treturn b\xa0 </pre></body>'
        ).iter("pre")
    )
    assert code_text(pre) == "if a:\n\treturn b"
