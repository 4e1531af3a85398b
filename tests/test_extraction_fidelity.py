"""Extraction fidelity, each rule on small pages in the shape of the generators' markup: a heading's words
are never chrome, a document's own header is content, superscripts and subscripts, admonitions."""

from __future__ import annotations

import pytest

from docscraper.content.extraction import extract_html

URL = "https://docs.example.org/page.html"

# mdBook: every heading's text is a link to the heading itself, with class "header".
MDBOOK = """<!DOCTYPE html><html lang="en"><head><title>Getting started - The Book</title></head>
<body><nav id="sidebar" class="sidebar" aria-label="Table of contents"><div class="sidebar-scrollbox">
<ol class="chapter"><li class="chapter-item"><a href="intro.html">Introduction</a></li>
<li class="chapter-item"><a href="start.html" class="active">Getting started</a></li></ol></div></nav>
<div id="page-wrapper" class="page-wrapper"><div class="page">
<div id="menu-bar" class="menu-bar sticky"><div class="left-buttons"><button id="sidebar-toggle"></button></div>
<h1 class="menu-title">The Book</h1><div class="right-buttons"><a href="print.html" title="Print"><i class="fa fa-print"></i></a></div></div>
<div id="content" class="content"><main>
<h1 id="getting-started"><a class="header" href="#getting-started">Getting started</a></h1>
<p>Install the toolchain first, then create a project with cargo new and build it.</p>
<h2 id="installation"><a class="header" href="#installation">Installation</a></h2>
<p>Download the installer for your platform and run it in a terminal window.</p>
<h3 id="on-linux"><a class="header" href="#on-linux">On <code>Linux</code></a></h3>
<p>Use the shell script that the project publishes for every release of the tools.</p>
</main><nav class="nav-wrapper" aria-label="Page navigation"><a rel="next" href="next.html" class="mobile-nav-chapters next">Next</a></nav>
</div></div></div></body></html>"""

# Sphinx: the permalink after the heading's words goes; an "edit" link beside the words goes too.
SPHINX_HEADINGS = """<html><body><div class="body" role="main"><section id="usage">
<h1>Usage<a class="headerlink" href="#usage" title="Link to this heading">¶</a></h1>
<p>How to use the widgets module in your own programs, with examples.</p>
<h2 id="x">Options <a class="edit-link header-anchor" href="#x">#</a></h2><p>The options it takes.</p>
</section></div></body></html>"""

# asciidoc (git's manual pages): the header block holds the title and the NAME section.
ASCIIDOC_MAN = """<!DOCTYPE html><html lang="en"><head><title>git-worktree(1)</title></head><body class="manpage">
<div id="header"><h1>git-worktree(1) Manual Page</h1><h2>NAME</h2><div class="sectionbody">
<p>git-worktree - Manage multiple working trees</p></div></div>
<div id="content"><div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody">
<div class="verseblock"><pre class="content"><em>git worktree add</em> [-f] [--detach] &lt;path&gt; [&lt;commit-ish&gt;]</pre>
<div class="attribution"></div></div></div></div>
<div class="sect1"><h2 id="_description">DESCRIPTION</h2><div class="sectionbody"><div class="paragraph">
<p>Manage multiple working trees attached to the same repository. A git repository can support multiple
working trees, allowing you to check out more than one branch at a time.</p></div></div></div></div>
<div id="footnotes"><hr></div><div id="footer"><div id="footer-text">Last updated 2023-08-21</div></div>
</body></html>"""

# asciidoctor: the same page as Asciidoctor writes it.
ASCIIDOCTOR_MAN = """<!DOCTYPE html><html lang="en"><head><title>git-worktree(1)</title></head><body class="manpage">
<div id="header"><h1>git-worktree(1) Manual Page</h1><h2 id="_name">NAME</h2><div class="sectionbody">
<p>git-worktree - Manage multiple working trees</p></div></div>
<div id="content"><div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody">
<div class="verseblock"><pre class="content"><em>git worktree add</em> [-f] &lt;path&gt;</pre></div></div></div>
<div class="sect1"><h2 id="_description">DESCRIPTION</h2><div class="sectionbody"><div class="paragraph">
<p>Manage multiple working trees attached to the same repository. A git repository can support multiple
working trees, allowing you to check out more than one branch at a time.</p></div></div></div></div>
<div id="footer"><div id="footer-text">Last updated 2023-08-21 10:00:00 +0200</div></div></body></html>"""


def test_mdbook_headings_keep_their_words() -> None:
    markdown = extract_html(MDBOOK, URL).markdown
    assert markdown.startswith("# Getting started\n\nInstall the toolchain")
    assert "\n## Installation\n\nDownload" in markdown
    assert "\n### On `Linux`\n\nUse the shell" in markdown
    assert "](#" not in markdown and "The Book" not in markdown and "Next" not in markdown


def test_heading_permalinks_and_links_beside_the_words_still_go() -> None:
    markdown = extract_html(SPHINX_HEADINGS, URL).markdown
    assert markdown.startswith("# Usage\n\nHow to use")
    assert "\n## Options\n\nThe options it takes.\n" in markdown
    assert "¶" not in markdown and "#x" not in markdown


@pytest.mark.parametrize("page", [ASCIIDOC_MAN, ASCIIDOCTOR_MAN], ids=["asciidoc", "asciidoctor"])
def test_a_man_pages_own_header_is_content(page: str) -> None:
    extracted = extract_html(page, URL)
    assert extracted.title == "git-worktree(1) Manual Page"
    assert extracted.markdown.startswith(
        "# git-worktree(1) Manual Page\n\n## NAME\n\ngit-worktree - Manage multiple working trees\n\n## SYNOPSIS\n"
    )
    assert "Last updated" not in extracted.markdown


def test_a_site_name_before_the_content_stays_out() -> None:
    # a menu bar's <h1> (only a heading, no words of its own) is no header of the content without one
    page = MDBOOK.replace(
        '<h1 id="getting-started"><a class="header" href="#getting-started">Getting started</a></h1>', ""
    )
    markdown = extract_html(page, URL).markdown
    assert markdown.startswith("Install the toolchain") and "The Book" not in markdown


def test_superscripts_and_subscripts_keep_their_meaning() -> None:
    markdown = extract_html(
        "<p>At most 2<sup>32</sup> entries, from -(2<sup>7</sup>) to 2<sup>7</sup>-1; H<sub>2</sub>O;"
        " x<sup>n+1</sup>.</p><h2>O(n<sup>2</sup>) sorting</h2><p>Quadratic in the worst case of all.</p>",
        URL,
    ).markdown
    assert (
        "At most 2<sup>32</sup> entries, from -(2<sup>7</sup>) to 2<sup>7</sup>-1; H<sub>2</sub>O; x<sup>n+1</sup>."
        in markdown
    )
    assert "\n## O(n<sup>2</sup>) sorting\n" in markdown


ADMONITIONS = {
    "sphinx": '<div class="admonition note"><p class="admonition-title">Note</p><p>{a}</p><p>{b}</p></div>',
    "mkdocs-material": '<div class="admonition warning"><p class="admonition-title">Warning</p><p>{a}</p><p>{b}</p></div>',
    "docusaurus": (
        '<div class="theme-admonition theme-admonition-note alert alert--secondary admonition_xJq3">'
        '<div class="admonitionHeading_Gvgb"><span class="admonitionIcon_Rf37"><svg><path d="M6"></path></svg></span>note</div>'
        '<div class="admonitionContent_BuS1"><p>{a}</p><p>{b}</p></div></div>'
    ),
    "docbook": '<div class="note"><h3 class="title">Note</h3><p>{a}</p><p>{b}</p></div>',
    "docbook-table": (
        '<div class="note" style="margin-left: 0.5in; margin-right: 0.5in;"><table border="0" summary="Note">'
        '<tr><td rowspan="2" align="center" valign="top" width="25"><img alt="[Note]" src="images/note.png"></td>'
        '<th align="left">Note</th></tr><tr><td align="left" valign="top"><p>{a}</p><p>{b}</p></td></tr></table></div>'
    ),
    "asciidoc": (
        '<div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>'
        '<td class="content"><div class="paragraph"><p>{a}</p></div><div class="paragraph"><p>{b}</p></div></td>'
        "</tr></table></div>"
    ),
    "asciidoctor-icons": (
        '<div class="admonitionblock note"><table><tr><td class="icon"><i class="fa icon-note" title="Note"></i></td>'
        '<td class="content"><div class="paragraph"><p>{a}</p></div><div class="paragraph"><p>{b}</p></div></td>'
        "</tr></table></div>"
    ),
}


@pytest.mark.parametrize("markup", ADMONITIONS.values(), ids=ADMONITIONS.keys())
def test_admonitions_are_quotes_led_by_their_label(markup: str) -> None:
    page = "<div class='body'><h1>Guide</h1><p>Before.</p>" + markup.format(a="First part.", b="Second part.")
    page += "<p>After the note.</p></div>"
    label = "Warning" if "warning" in markup else "Note"
    assert extract_html(page, URL).markdown == (
        f"# Guide\n\nBefore.\n\n> **{label}:** First part.\n>\n> Second part.\n\nAfter the note.\n"
    )


def test_admonitions_side_by_side_stay_apart_and_code_stays_unquoted() -> None:
    page = (
        '<div class="body"><div class="admonition note"><p class="admonition-title">Note</p><p>One.</p></div>'
        '<div class="admonition tip"><p class="admonition-title">Tip</p><p>Two.</p></div>'
        '<div class="admonition warning"><p class="admonition-title">Warning</p><p>Run:</p>'
        '<div class="highlight-python"><pre>rm -rf build</pre></div></div><p>A div.note without a title is text.</p>'
        '<div class="note"><p>Plain.</p></div></div>'
    )
    assert extract_html(page, URL).markdown == (
        "> **Note:** One.\n\n> **Tip:** Two.\n\n**Warning:** Run:\n\n```python\nrm -rf build\n```\n\n"
        "A div.note without a title is text.\n\nPlain.\n"
    )


# rustdoc 1.63: each impl block's and each method's heading is the <summary> of a <details> toggle, with the
# notable-traits tooltip and the playground's "Run" link beside it.
RUSTDOC = """<!DOCTYPE html><html lang="en"><head><title>Vec in std::vec - Rust</title></head><body class="rustdoc struct">
<nav class="sidebar"><a href="../index.html">std</a></nav><main><div class="width-limiter"><section id="main-content" class="content">
<h1 class="fqn"><span class="in-band">Struct <a href="../index.html">std</a>::<a href="index.html">vec</a>::<a class="struct" href="#">Vec</a></span></h1>
<details class="rustdoc-toggle top-doc" open><summary class="hideme"><span>Expand description</span></summary>
<div class="docblock"><p>A contiguous growable array type, written as <code>Vec&lt;T&gt;</code>.</p></div></details>
<h2 id="implementations" class="small-section-header">Implementations</h2><div id="implementations-list">
<details class="rustdoc-toggle implementors-toggle" open><summary><section id="impl-Vec%3CT%2C%20A%3E" class="impl has-srclink">
<a href="#impl-Vec%3CT%2C%20A%3E" class="anchor"></a><h3 class="code-header in-band">impl&lt;T, A&gt; Vec&lt;T, A&gt;</h3></section></summary>
<div class="impl-items"><details class="rustdoc-toggle method-toggle" open><summary><section id="method.split_off" class="method has-srclink">
<div class="rightside"><span class="since" title="Stable since Rust version 1.4.0">1.4.0</span> · <a class="srclink" href="#">source</a></div>
<h4 class="code-header">pub fn <a href="#method.split_off" class="fnname">split_off</a>(&amp;mut self, at: usize) -&gt; Vec&lt;T, A&gt;<span class="notable-traits"><span class="notable-traits-tooltip">ⓘ<div class="notable-traits-tooltiptext"><span class="docblock"><div class="notable">Notable traits for Vec&lt;u8, A&gt;</div></span></div></span></span></h4></section></summary>
<div class="docblock"><p>Splits the collection into two at the given index.</p>
<div class="example-wrap"><pre class="rust rust-example-rendered"><code>let mut vec = vec![1, 2, 3];
let vec2 = vec.split_off(1);</code></pre><a class="test-arrow" target="_blank" href="https://play.rust-lang.org/">Run</a></div>
</div></details></div></details></div></section></div></main></body></html>"""

# Doxygen 1.9: code is a div.fragment of div.line rows, each with its line-number gutter; hidden tooltips follow.
DOXYGEN = """<!DOCTYPE html><html><head><title>SDL2: SDL_bits.h File Reference</title></head><body>
<div id="top"><div id="titlearea">SDL2</div></div><div class="header"><div class="headertitle"><div class="title">SDL_bits.h File Reference</div></div></div>
<div class="contents"><h2 class="groupheader">Function Documentation</h2>
<h2 class="memtitle"><span class="permalink"><a href="#a1">&#9670;&nbsp;</a></span>SDL_HasExactlyOneBitSet32()</h2>
<div class="memitem"><div class="memdoc"><p>Definition at line 110 of file SDL_bits.h.</p>
<div class="fragment"><div class="line"><a id="l00111" name="l00111"></a><span class="lineno">  111</span>{</div>
<div class="line"><a id="l00112" name="l00112"></a><span class="lineno">  112</span>    <span class="keywordflow">if</span> (x &amp;&amp; !(x &amp; (x - 1))) {</div>
<div class="line"><a id="l00113" name="l00113"></a><span class="lineno">  113</span>        <span class="keywordflow">return</span> <a class="code" href="#t">SDL_TRUE</a>;</div>
<div class="line"><span class="lineno">  114</span>    }</div>
<div class="ttc" id="t"><div class="ttname"><a href="#t">SDL_TRUE</a></div><div class="ttdeci">@ SDL_TRUE</div></div>
</div></div></div></div></body></html>"""


def test_rustdoc_method_headings_stay_headings() -> None:
    markdown = extract_html(RUSTDOC, URL).markdown
    assert "\n### impl\\<T, A> Vec\\<T, A>\n" in markdown  # text that reads as a tag is escaped
    assert "\n#### pub fn split_off(&mut self, at: usize) -> Vec\\<T, A>\n\nSplits the collection into two" in markdown
    assert "**" not in markdown  # no heading written as a bold paragraph
    assert "Notable traits" not in markdown and "ⓘ" not in markdown and "[Run]" not in markdown
    assert "```rust\nlet mut vec = vec![1, 2, 3];\nlet vec2 = vec.split_off(1);\n```" in markdown


def test_doxygen_code_fragments_are_code_blocks() -> None:
    markdown = extract_html(DOXYGEN, URL).markdown
    assert "```\n{\n    if (x && !(x & (x - 1))) {\n        return SDL_TRUE;\n    }\n```" in markdown
    assert "111" not in markdown and "@ SDL_TRUE" not in markdown


def test_a_line_break_stays_a_hard_break() -> None:
    # javadoc's StopWatch rules, one per <br>: trailing spaces (html-to-markdown's default hard break) would be
    # stripped with all trailing white space, and the rules would render as one line
    markdown = extract_html("<main><p>1. split() cannot be invoked twice<br>2. unsplit() may only be called if the "
                            "watch has been split()<br>3. suspend() cannot be invoked twice</p></main>", URL).markdown
    assert markdown == ("1\\. split() cannot be invoked twice\\\n2. unsplit() may only be called if the watch has been "
                        "split()\\\n3. suspend() cannot be invoked twice\n")


def test_javadoc_summary_grids_are_tables() -> None:
    # JDK 17 javadoc: the field summary is a CSS grid of divs, three per row after the header row
    page = ("<main><h2>Field Summary</h2><div class=\"summary-table three-column-summary\">"
            "<div class=\"table-header col-first\">Modifier and Type</div><div class=\"table-header col-second\">Field"
            "</div><div class=\"table-header col-last\">Description</div>"
            "<div class=\"col-first even-row-color\"><code>static final Fraction</code></div>"
            "<div class=\"col-second even-row-color\"><code><a href=\"#ONE\">ONE</a></code></div>"
            "<div class=\"col-last even-row-color\"><div class=\"block\"><code>Fraction</code> representation of 1."
            "</div></div><div class=\"col-first odd-row-color\"><code>static final Fraction</code></div>"
            "<div class=\"col-second odd-row-color\"><code><a href=\"#ZERO\">ZERO</a></code></div>"
            "<div class=\"col-last odd-row-color\"><div class=\"block\"><code>Fraction</code> representation of 0."
            "</div></div></div></main>")
    assert extract_html(page, URL).markdown == (
        "## Field Summary\n\n| Modifier and Type | Field | Description |\n| --- | --- | --- |\n"
        "| `static final Fraction` | `ONE` | `Fraction` representation of 1. |\n"
        "| `static final Fraction` | `ZERO` | `Fraction` representation of 0. |\n")


def test_an_asciidoc_articles_title_is_content() -> None:
    # an article's <div id="header"> holds only its <h1>, which says what <title> says
    page = ("<html><head><title>How to revert a faulty merge</title></head><body><div id=\"header\">"
            "<h1>How to revert a faulty merge</h1></div><div id=\"content\"><div class=\"paragraph\"><p>Alan said "
            "that a merge broke the master branch, and that reverting it was only half of the story.</p></div>"
            "</div><div id=\"footer\"><div id=\"footer-text\">Last updated 2023-08-21</div></div></body></html>")
    assert extract_html(page, URL).markdown == (
        "# How to revert a faulty merge\n\nAlan said that a merge broke the master branch, and that reverting it "
        "was only half of the story.\n")


def _page(body: str, title: str = "SDL_syswm.h") -> bytes:
    return f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>".encode()


# Doxygen: the member summary is one table whose heading rows (an h2 in a spanning cell) separate the kinds of
# members, with spacer rows between the items; each member's prototype is a table of its own.
DOXYGEN_MEMBERS = _page("""<h1>SDL_SysWMinfo Struct Reference</h1>
<table class="memberdecls">
<tr class="heading"><td colspan="2"><h2 class="groupheader"><a id="pub-attribs"></a>Data Fields</h2></td></tr>
<tr class="memitem:a1"><td class="memItemLeft" align="right"><a class="el" href="v.html">SDL_version</a>&#160;</td>
<td class="memItemRight"><a class="el" href="#a1">version</a></td></tr>
<tr class="separator:a1"><td class="memSeparator" colspan="2">&#160;</td></tr>
<tr class="memitem:a2"><td class="memItemLeft" align="right">int&#160;</td><td class="memItemRight"><a href="#a2">dev_index</a></td></tr>
<tr class="memdesc:a2"><td class="mdescLeft">&#160;</td><td class="mdescRight">Device index of the window. </td></tr>
<tr class="heading"><td colspan="2"><h2 class="groupheader">Macros</h2></td></tr>
<tr class="memitem:a3"><td class="memItemLeft" align="right">#define&#160;</td><td class="memItemRight">SDL_X&#160;&#160;&#160;1</td></tr>
<tr class="memitem:a4"><td class="memItemLeft" align="right">#define&#160;</td><td class="memItemRight">SDL_Y&#160;&#160;&#160;2</td></tr>
</table>
<h2 class="groupheader">Function Documentation</h2>
<h2 class="memtitle"><span class="permalink"><a href="#a5">&#9670;&nbsp;</a></span>SDL_GetWindowWMInfo()</h2>
<div class="memitem"><div class="memproto"><table class="memname">
<tr><td class="memname">SDL_bool SDL_GetWindowWMInfo </td><td>(</td><td class="paramtype">SDL_Window *&#160;</td>
<td class="paramname"><em>window</em>, </td></tr>
<tr><td class="paramkey"></td><td></td><td class="paramtype">SDL_SysWMinfo *&#160;</td><td class="paramname"><em>info</em>&#160;</td></tr>
<tr><td></td><td>)</td><td></td><td></td></tr></table></div>
<div class="memdoc"><p>Get driver-specific information about a window.</p></div></div>
<h2 class="memtitle"><span class="permalink"><a href="#a6">&#9670;&nbsp;</a></span></h2>
<div class="memitem"><div class="memdoc"><p>An anonymous union of the subsystems' fields.</p></div></div>""")


def test_doxygen_member_summaries_are_sections_with_tables() -> None:
    markdown = extract_html(DOXYGEN_MEMBERS, URL).markdown
    assert (
        "## Data Fields\n\n"
        "| [SDL_version](https://docs.example.org/v.html) | [version](https://docs.example.org/page.html#a1) |\n"
        "| --- | --- |\n"
        "| int | [dev_index](https://docs.example.org/page.html#a2) |\n"
        "|  | Device index of the window. |\n\n"  # the spacer row between two items is gone
        "## Macros\n\n"
        "| #define | SDL_X 1 |\n| --- | --- |\n| #define | SDL_Y 2 |\n"
    ) in markdown


def test_doxygen_prototypes_are_code_and_member_headings_lose_the_diamond() -> None:
    markdown = extract_html(DOXYGEN_MEMBERS, URL).markdown
    assert (
        "\n## SDL_GetWindowWMInfo()\n\n`SDL_bool SDL_GetWindowWMInfo (SDL_Window * window, SDL_SysWMinfo * info)`\n"
        in markdown
    )
    assert "\u25c6" not in markdown
    assert "\n## \n" not in markdown and "\n##\n" not in markdown  # a heading of nothing but the diamond goes
    assert "Get driver-specific information about a window." in markdown
    assert "An anonymous union of the subsystems' fields." in markdown


def test_a_one_row_table_of_inline_cells_is_a_line() -> None:
    page = _page(
        '<h1>Index</h1><table class="cp-letters-header-printindex"><tr><th>Jump to: &nbsp; </th>'
        '<td><a href="#A"><b>A</b></a></td><td><a href="#B"><b>B</b></a></td></tr></table>'
        "<p>The index of every macro.</p>"
    )
    markdown = extract_html(page, URL).markdown
    assert (
        "Jump to: [**A**](https://docs.example.org/page.html#A) [**B**](https://docs.example.org/page.html#B)"
        in markdown
    )
    assert "| --- |" not in markdown


def test_a_data_table_keeps_its_rows_when_a_cell_holds_a_short_block() -> None:
    # Sphinx (decimal's constants): the first cell of each row is an object description, a <dl>
    page = _page(
        """<h1>decimal</h1><table class="docutils"><thead><tr><th class="head"></th>
<th class="head"><p>32-bit</p></th><th class="head"><p>64-bit</p></th></tr></thead><tbody>
<tr><td><dl class="py data"><dt class="sig sig-object py" id="decimal.MAX_PREC"><span class="sig-prename">decimal.</span><span class="sig-name descname">MAX_PREC</span><a class="headerlink" href="#decimal.MAX_PREC">\u00b6</a></dt><dd></dd></dl></td>
<td><p><code>425000000</code></p></td><td><p><code>999999999999999999</code></p></td></tr>
<tr><td><h4>Limit</h4></td><td><p>short</p></td><td><pre>x = 1</pre></td></tr></tbody></table>""",
        "decimal",
    )
    markdown = extract_html(page, URL).markdown
    assert (
        "|  | 32-bit | 64-bit |\n| --- | --- | --- |\n"
        "| `decimal.MAX_PREC` | `425000000` | `999999999999999999` |\n"
        "| **Limit** | short | `x = 1` |\n"
    ) in markdown


def test_a_definition_in_a_table_cell_is_a_code_span_by_the_same_rule_as_outside_tables() -> None:
    # Texinfo 7 (@deffn: a "def" class on the list) and Sphinx before 4.0 (no "sig" class, a "descname" inside);
    # a term that is no definition stays bold
    page = _page(
        """<h1>Builtins</h1><table><thead><tr><th>Macro</th><th>Since</th></tr></thead><tbody>
<tr><td><dl class="first-deffn def-block"><dt class="deffn" id="index-define"><span class="category-def">Builtin: </span><strong class="def-name">define</strong> <var class="def-var-arguments">(name)</var></dt><dd></dd></dl></td><td>1.0</td></tr>
<tr><td><dl class="function"><dt id="os.getcwd"><code class="descname">getcwd</code>()</dt><dd></dd></dl></td><td>2.0</td></tr>
<tr><td><dl><dt>plain term</dt><dd>its text</dd></dl></td><td>3.0</td></tr></tbody></table>""",
        "Builtins",
    )
    markdown = extract_html(page, URL).markdown
    assert "| `Builtin: define (name)` | 1.0 |\n" in markdown
    assert "| `getcwd()` | 2.0 |\n" in markdown
    assert "| **plain term** its text | 3.0 |" in markdown


def test_a_table_whose_cell_holds_a_long_block_is_still_written_as_blocks() -> None:
    code = "\n".join(f"line_{i} = {i}" for i in range(5))
    page = _page(
        f"<h1>Example</h1><table><tr><th>Name</th><th>Code</th></tr>"
        f"<tr><td>setup</td><td><pre>{code}</pre></td></tr></table>",
        "Example",
    )
    markdown = extract_html(page, URL).markdown
    assert f"```\n{code}\n```" in markdown  # the code keeps its lines: no pipe table can hold them
    assert "| --- |" not in markdown


def test_text_that_reads_as_a_tag_is_escaped_but_code_links_and_markup_are_not() -> None:
    page = _page(
        "<h1>Class Range&lt;T&gt;</h1>"
        '<p>Returns: <a href="https://developer.mozilla.org/s">&lt;string&gt;</a>; see &lt;commit&gt;, '
        "<code>Vec&lt;T&gt;</code>, 2<sup>32</sup>, &lt;https://example.org/x&gt;, a &lt; b and &lt;T, N&gt;.</p>"
        '<p><a href="https://docs.example.org/a b.html">spaced</a></p>',
        "Range",
    )
    extracted = extract_html(page, URL)
    markdown = extracted.markdown
    assert extracted.title == "Class Range<T>"
    assert "# Class Range\\<T>\n" in markdown
    assert (
        "Returns: [\\<string>](https://developer.mozilla.org/s); see \\<commit>, `Vec<T>`, 2<sup>32</sup>, " in markdown
    )
    assert "<https://example.org/x>, a < b and \\<T, N>." in markdown
    assert (
        "[spaced](<https://docs.example.org/a b.html>)" in markdown
        or "[spaced](https://docs.example.org/a%20b.html)" in markdown
    )
