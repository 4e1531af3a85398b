"""Tests for docscraper.content.discovery: llms.txt, llms-full.txt, sitemaps, robots.txt and probe URLs."""

from __future__ import annotations

import gzip
import random
import time

import pytest

from docscraper.content.discovery import (
    DiscoveredLink,
    LlmsFullSplit,
    SitemapWalk,
    html_counterparts,
    is_markdown_url,
    llms_candidates,
    parse_llms_txt,
    parse_sitemap,
    sitemaps_from_robots,
    split_llms_full,
)

BASE = "https://docs.example.com/docs/llms.txt"


def urls(links: list[DiscoveredLink]) -> list[str]:
    return [link.url for link in links]


# --- llms.txt -----------------------------------------------------------------------------------------


def test_inline_link_with_optional_title_keeps_link_text() -> None:
    links = parse_llms_txt('See [Quick start](https://docs.example.com/start.md "The start").', BASE)
    assert links == [DiscoveredLink("https://docs.example.com/start.md", "Quick start")]


def test_inline_link_text_is_cleaned_of_markdown() -> None:
    links = parse_llms_txt("- [The **`run`** command](run.md)", BASE)
    assert links == [DiscoveredLink("https://docs.example.com/docs/run.md", "The run command")]


def test_inline_link_with_angle_destination_and_balanced_parentheses() -> None:
    text = "[a](<https://h.example/a>) [b](https://h.example/wiki/B_(x))"
    assert urls(parse_llms_txt(text, BASE)) == ["https://h.example/a", "https://h.example/wiki/B_(x)"]


def test_autolink_has_no_title() -> None:
    assert parse_llms_txt("Docs: <https://h.example/auto>", BASE) == [
        DiscoveredLink("https://h.example/auto", None)
    ]


def test_reference_links_full_collapsed_and_shortcut() -> None:
    text = (
        "Read [the API][api], [Guides][] and [faq].\n"
        "\n"
        "[API]: https://h.example/api.md\n"
        '[guides]: <https://h.example/guides.md> "Guides"\n'
        "[FAQ]: /faq.md\n"
    )
    assert parse_llms_txt(text, BASE) == [
        DiscoveredLink("https://h.example/api.md", "the API"),
        DiscoveredLink("https://h.example/guides.md", "Guides"),
        DiscoveredLink("https://docs.example.com/faq.md", "faq"),
    ]


def test_unused_reference_definition_is_kept_as_bare_link() -> None:
    assert parse_llms_txt("[orphan]: https://h.example/orphan\n", BASE) == [
        DiscoveredLink("https://h.example/orphan", None)
    ]


def test_undefined_reference_is_not_a_link() -> None:
    assert parse_llms_txt("Tick [x] and [y][nowhere].", BASE) == []


def test_html_anchor_href_and_text() -> None:
    text = "<p><a class='x' href=\"/guide?a=1&amp;b=2\">The <em>guide</em></a> and <A HREF='b.md'>B</A></p>"
    assert parse_llms_txt(text, BASE) == [
        DiscoveredLink("https://docs.example.com/guide?a=1&b=2", "The guide"),
        DiscoveredLink("https://docs.example.com/docs/b.md", "B"),
    ]


def test_bare_urls_trailing_punctuation_and_parentheses() -> None:
    text = "Go to https://h.example/a. Also (see https://h.example/b), or https://h.example/w/X_(y)!"
    assert parse_llms_txt(text, BASE) == [
        DiscoveredLink("https://h.example/a", None),
        DiscoveredLink("https://h.example/b", None),
        DiscoveredLink("https://h.example/w/X_(y)", None),
    ]


def test_relative_urls_resolve_against_base() -> None:
    text = "[a](page.md) [b](/root.md) [c](../up.md) [d](//cdn.example/x.md) [e](?q=1)"
    assert urls(parse_llms_txt(text, BASE)) == [
        "https://docs.example.com/docs/page.md",
        "https://docs.example.com/root.md",
        "https://docs.example.com/up.md",
        "https://cdn.example/x.md",
        "https://docs.example.com/docs/llms.txt?q=1",
    ]


def test_file_base_resolves_to_file_urls() -> None:
    assert urls(parse_llms_txt("[a](guide/a.md)", "file:///srv/site/llms.txt")) == [
        "file:///srv/site/guide/a.md"
    ]


def test_fragments_are_stripped_and_rest_kept_verbatim() -> None:
    text = "[a](https://H.example/Page/?b=2&a=1#part) <https://h.example/x#y> https://h.example/z#w"
    assert urls(parse_llms_txt(text, BASE)) == [
        "https://H.example/Page/?b=2&a=1",
        "https://h.example/x",
        "https://h.example/z",
    ]


def test_duplicates_keep_first_order_and_title() -> None:
    text = (
        "- [Second](https://h.example/b)\n"
        "- [First](https://h.example/a#intro)\n"
        "- [Again](https://h.example/b#more)\n"
        "- https://h.example/a\n"
    )
    assert parse_llms_txt(text, BASE) == [
        DiscoveredLink("https://h.example/b", "Second"),
        DiscoveredLink("https://h.example/a", "First"),
    ]


def test_other_schemes_are_dropped() -> None:
    text = (
        "[m](mailto:team@example.com) [j](javascript:alert(1)) [d](data:text/html,hi) "
        "[t](tel:+123) <ftp://h.example/f> [ok](https://h.example/ok)"
    )
    assert urls(parse_llms_txt(text, BASE)) == ["https://h.example/ok"]


def test_malformed_links_are_skipped_and_the_rest_found() -> None:
    text = (
        "- [unclosed](https://h.example/unclosed\n"
        "- [bad port](http://h.example:99999/)\n"
        "- [not a port](http://h.example:http/)\n"
        "- [space](https://h.example/a b)\n"
        "- <https://h.example/with space>\n"
        "- [no host](https:///path)\n"
        "- [[nested unbalanced](https://h.example/nested)\n"
        "- [good](https://h.example/good)\n"
        "- [ipv6](http://[::1/)\n"
        "- [also good](https://h.example/good2)\n"
    )
    found = urls(parse_llms_txt(text, BASE))
    assert "https://h.example/good" in found
    assert "https://h.example/good2" in found
    assert "https://h.example/nested" in found
    assert not any("unclosed" in url or "99999" in url or "space" in url for url in found)
    assert not any(":http" in url or "///" in url or "[" in url for url in found)


def test_links_inside_brackets_that_are_not_links_are_found() -> None:
    assert parse_llms_txt("[see [the guide](guide.md) first]", BASE) == [
        DiscoveredLink("https://docs.example.com/docs/guide.md", "the guide")
    ]


def test_images_are_not_links_but_linked_images_are() -> None:
    text = "![logo](/logo.png) [![badge](/b.svg) Home](https://h.example/)"
    assert parse_llms_txt(text, BASE) == [DiscoveredLink("https://h.example/", "badge Home")]


def test_code_fences_comments_and_code_spans_are_ignored() -> None:
    text = (
        "[before](https://h.example/before)\n"
        "```markdown\n"
        "[in backticks](https://h.example/code1) https://h.example/code2\n"
        "```\n"
        "~~~~\n"
        "```\n"
        "[still code](https://h.example/code3)\n"
        "~~~~\n"
        "Use `https://h.example/span` or ``[x](https://h.example/span2)``.\n"
        "<!-- [hidden](https://h.example/comment) -->\n"
        "[after](https://h.example/after)\n"
        "  ```\n"
        "  [indented fence](https://h.example/code4)\n"
        "  ```\n"
    )
    assert urls(parse_llms_txt(text, BASE)) == ["https://h.example/before", "https://h.example/after"]


def test_unclosed_fence_hides_the_rest() -> None:
    assert urls(parse_llms_txt("[a](/a)\n```\n[b](/b)\n", BASE)) == ["https://docs.example.com/a"]


REALISTIC_LLMS_TXT = """\
# FastHTML

> FastHTML is a python library which brings together Starlette, Uvicorn, HTMX, and fastcore's `FT`
> "FastTags" into a library for creating server-rendered hypermedia applications.

Things to remember when writing FastHTML apps:

- Although parts of its API are inspired by FastAPI, it is *not* compatible with FastAPI syntax
- FastHTML includes support for Pico CSS and the fastlite sqlite library, see <https://fastht.ml/docs/>

## Docs

- [FastHTML quick start](https://fastht.ml/docs/tutorials/quickstart_for_web_devs.html.md): A brief \
overview of many FastHTML features
- [HTMX reference](https://raw.githubusercontent.com/bigskysoftware/htmx/master/www/content/reference.md): \
Brief description of all HTMX attributes, CSS classes, headers, events, extensions, js lib methods
- [Surreal](https://raw.githubusercontent.com/AnswerDotAI/surreal/main/README.md): Tiny jQuery alternative

## Examples

- [Todo list application](https://raw.githubusercontent.com/AnswerDotAI/fasthtml/main/examples/adv_app.py): \
Detailed walk-thru of a complete CRUD app
- [Quick start](/docs/tutorials/quickstart_for_web_devs.html.md#installation): The same page again

```python
app, rt = fast_app()  # see https://fastht.ml/docs/api/fastapp.html
```

## Optional

- [Starlette full documentation](https://gist.githubusercontent.com/jph00/809e4a4808d4510be0e3dc9565e9cbd3/raw/starlette-sml.md): \
A subset of the Starlette documentation useful for FastHTML development.
"""


def test_realistic_llms_txt() -> None:
    links = parse_llms_txt(REALISTIC_LLMS_TXT, "https://fastht.ml/docs/llms.txt")
    assert links == [
        DiscoveredLink("https://fastht.ml/docs/", None),
        DiscoveredLink("https://fastht.ml/docs/tutorials/quickstart_for_web_devs.html.md", "FastHTML quick start"),
        DiscoveredLink(
            "https://raw.githubusercontent.com/bigskysoftware/htmx/master/www/content/reference.md",
            "HTMX reference",
        ),
        DiscoveredLink("https://raw.githubusercontent.com/AnswerDotAI/surreal/main/README.md", "Surreal"),
        DiscoveredLink(
            "https://raw.githubusercontent.com/AnswerDotAI/fasthtml/main/examples/adv_app.py",
            "Todo list application",
        ),
        DiscoveredLink(
            "https://gist.githubusercontent.com/jph00/809e4a4808d4510be0e3dc9565e9cbd3/raw/starlette-sml.md",
            "Starlette full documentation",
        ),
    ]


NASTY_FRAGMENTS = [
    "[", "]", "(", ")", "<", ">", "`", "```", "~~~", "<!--", "-->", "\\", "!", "[x]:", "](", "<a href=",
    "</a>", "http://", "https://h:99999/", "http://[::1", "#", "# ", "---", "\n", "\r", "\r\n", "\t", " ",
    "Source:", "url:", "title:", "\x00", "\u2028", "é", "&amp;", "&#0;", "[a][b]", "[a](b", "file:",
    "javascript:", "//", "?", "=", '"', "'", "*", "_",
]


def random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(NASTY_FRAGMENTS) for _ in range(rng.randint(0, 60))) for _ in range(count)]


def test_parse_llms_txt_never_raises_on_arbitrary_text() -> None:
    for text in random_texts(1500, seed=1):
        for link in parse_llms_txt(text, BASE):
            assert "#" not in link.url
            assert link.url.split(":", 1)[0].lower() in {"http", "https", "file"}


def test_parse_llms_txt_is_fast_on_pathological_input() -> None:
    text = "[" * 20_000 + "[a](" * 20_000 + "<a href=x>" * 5_000 + "`" * 20_000
    started = time.monotonic()
    parse_llms_txt(text, BASE)
    assert time.monotonic() - started < 5


# --- llms-full.txt ------------------------------------------------------------------------------------

MINTLIFY_FULL = """\
# Introduction
Source: https://docs.example.com/introduction

Welcome to the docs.

## Setup

```bash
# install it
pip install example
```

# Quickstart
URL: <https://docs.example.com/quickstart#top>

> A short description

Run it.

# Relative page
source url: /guides/relative
Body.
"""


def test_mintlify_source_lines() -> None:
    split = split_llms_full(MINTLIFY_FULL, "https://docs.example.com/llms-full.txt")
    assert split.problem is None
    assert [(s.title, s.url, s.mapped_by) for s in split.sections] == [
        ("Introduction", "https://docs.example.com/introduction", "source-line"),
        ("Quickstart", "https://docs.example.com/quickstart", "source-line"),
        ("Relative page", "https://docs.example.com/guides/relative", "source-line"),
    ]
    intro = split.sections[0].markdown
    assert intro.startswith("# Introduction\n")
    assert "Source:" not in intro
    assert "# install it" in intro  # the fenced comment stays in its section
    assert "## Setup" in intro
    assert "URL:" not in split.sections[1].markdown
    assert "> A short description" in split.sections[1].markdown


def test_source_line_must_be_close_to_the_heading() -> None:
    text = "# Page\nOne.\n\nTwo.\n\nThree.\n\nFour.\nSource: https://h.example/late\n"
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert split.sections[0].url is None
    assert "Source: https://h.example/late" in split.sections[0].markdown


def test_file_level_preamble_is_left_out() -> None:
    text = (
        "# Example project\n\n> Everything about Example.\n\n"
        "# First page\nSource: https://h.example/first\n\nA.\n\n"
        "# Second page\nSource: https://h.example/second\n\nB.\n"
    )
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert split.problem is None
    assert [s.title for s in split.sections] == ["First page", "Second page"]
    assert all("Everything about" not in s.markdown for s in split.sections)


def test_front_matter_documents() -> None:
    text = (
        "---\n"
        'title: "Getting started: basics"\n'
        "url: https://h.example/start#x\n"
        "tags:\n"
        "  - intro\n"
        "---\n"
        "# Getting started\n\nHello.\n\n---\n\nA thematic break above.\n"
        "---\n"
        "source: /api\n"
        "---\n"
        "No heading here.\n"
    )
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert split.problem is None
    assert [(s.title, s.url, s.mapped_by) for s in split.sections] == [
        ("Getting started: basics", "https://h.example/start", "front-matter"),
        ("", "https://h.example/api", "front-matter"),
    ]
    assert split.sections[0].markdown.startswith("# Getting started\n")
    assert "A thematic break above." in split.sections[0].markdown
    assert "url:" not in split.sections[0].markdown
    assert split.sections[1].markdown == "No heading here.\n"


def test_front_matter_without_url_maps_by_title() -> None:
    text = "---\ntitle: Install\n---\nSteps.\n---\ntitle: Unknown\n---\nMore.\n"
    split = split_llms_full(text, "https://h.example/", {"install": "https://h.example/install"})
    assert [(s.title, s.url, s.mapped_by) for s in split.sections] == [
        ("Install", "https://h.example/install", "title"),
        ("Unknown", None, None),
    ]
    assert split.problem == "1 of 2 sections could not be mapped to a page URL"


def test_plain_sections_map_by_title_case_and_whitespace_insensitively() -> None:
    text = "# Getting   Started\nText.\n\n# The `CLI`\nMore.\n\n# Changelog\nLast.\n"
    titles = {"getting started": "/start", "The CLI": "https://h.example/cli#x"}
    split = split_llms_full(text, "https://h.example/llms-full.txt", titles)
    assert [(s.title, s.url, s.mapped_by) for s in split.sections] == [
        ("Getting   Started", "https://h.example/start", "title"),
        ("The `CLI`", "https://h.example/cli", "title"),
        ("Changelog", None, None),
    ]
    assert split.problem == "1 of 3 sections could not be mapped to a page URL"


def test_no_section_mapped() -> None:
    split = split_llms_full("# A\nx\n# B\ny\n", "https://h.example/")
    assert len(split.sections) == 2
    assert split.problem == "no section maps to a page URL"


def test_h2_pages_under_a_single_project_h1() -> None:
    text = (
        "# Project docs\n\n> Summary of the project.\n\n"
        "## Install\nSource: https://h.example/install\n\n### Requirements\nPython.\n\n"
        "## Usage\nSource: https://h.example/usage\n\nUse it.\n"
    )
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert split.problem is None
    assert [(s.title, s.url) for s in split.sections] == [
        ("Install", "https://h.example/install"),
        ("Usage", "https://h.example/usage"),
    ]
    assert split.sections[0].markdown.startswith("## Install\n")
    assert "### Requirements" in split.sections[0].markdown
    assert all("Project docs" not in s.markdown for s in split.sections)


def test_single_h1_page_with_h2_subsections_stays_whole() -> None:
    text = "# Only page\nSource: https://h.example/only\n\n## Part one\nA.\n\n## Part two\nB.\n"
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert [(s.title, s.url) for s in split.sections] == [("Only page", "https://h.example/only")]
    assert "## Part two" in split.sections[0].markdown


def test_h2_pages_mapped_by_title() -> None:
    text = "# Proj\n\n## Alpha\nA.\n\n## Beta\nB.\n"
    split = split_llms_full(text, "https://h.example/", {"Alpha": "/a", "Beta": "/b"})
    assert [(s.title, s.url, s.mapped_by) for s in split.sections] == [
        ("Alpha", "https://h.example/a", "title"),
        ("Beta", "https://h.example/b", "title"),
    ]


def test_headings_in_code_fences_do_not_split() -> None:
    text = (
        "# Page one\nSource: https://h.example/one\n\n"
        "```python\n# Not a heading\nprint(1)\n```\n\n"
        "~~~\n# Also not\n---\nurl: https://h.example/nope\n---\n~~~\n\n"
        "# Page two\nSource: https://h.example/two\n"
    )
    split = split_llms_full(text, "https://h.example/llms-full.txt")
    assert [s.title for s in split.sections] == ["Page one", "Page two"]
    assert "# Not a heading" in split.sections[0].markdown
    assert "# Also not" in split.sections[0].markdown


def test_closing_hashes_and_crlf() -> None:
    text = "# Title one ##\r\nSource: https://h.example/1\r\n\r\n# C#\r\nURL: https://h.example/2\r\n"
    split = split_llms_full(text, "https://h.example/")
    assert [(s.title, s.url) for s in split.sections] == [
        ("Title one", "https://h.example/1"),
        ("C#", "https://h.example/2"),
    ]
    assert "\r" not in split.sections[0].markdown


@pytest.mark.parametrize("text", ["", "   \n\n\t\n"])
def test_empty_file(text: str) -> None:
    assert split_llms_full(text, "https://h.example/") == LlmsFullSplit(sections=[], problem="empty file")


def test_file_without_headings() -> None:
    split = split_llms_full("just some text\n", "https://h.example/")
    assert split.sections == []
    assert split.problem


def test_split_llms_full_never_raises_on_arbitrary_text() -> None:
    titles = {"a": "/a", "x": "https://h:99999/"}
    for text in random_texts(1500, seed=2):
        split = split_llms_full(text, BASE, titles)
        assert split.problem is None or isinstance(split.problem, str)
        for section in split.sections:
            assert (section.url is None) == (section.mapped_by is None)


# --- sitemaps -----------------------------------------------------------------------------------------

SM_URL = "https://h.example/sitemap.xml"


def urlset(*locs: str) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc><lastmod>2024-05-0{i % 9 + 1}</lastmod></url>" for i, loc in enumerate(locs))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'
    ).encode()


def test_urlset() -> None:
    doc = parse_sitemap(urlset("https://h.example/a", " /rel ", "https://h.example/b?x=1&amp;y=2#f"), SM_URL)
    assert doc.kind == "urlset"
    assert doc.problem is None
    assert [(e.url, e.lastmod) for e in doc.entries] == [
        ("https://h.example/a", "2024-05-01"),
        ("https://h.example/rel", "2024-05-02"),
        ("https://h.example/b?x=1&y=2", "2024-05-03"),
    ]


def test_urlset_skips_unusable_locs() -> None:
    doc = parse_sitemap(
        urlset("https://h.example/ok", "mailto:a@b.example", "http://h.example:99999/", "", "https://h.example/a b"),
        SM_URL,
    )
    assert [e.url for e in doc.entries] == ["https://h.example/ok"]


def test_sitemap_index() -> None:
    body = (
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://h.example/s1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>"
        b"<sitemap><loc>/s2.xml</loc></sitemap></sitemapindex>"
    )
    doc = parse_sitemap(body, SM_URL)
    assert doc.kind == "sitemapindex"
    assert [(e.url, e.lastmod) for e in doc.entries] == [
        ("https://h.example/s1.xml.gz", "2024-01-01"),
        ("https://h.example/s2.xml", None),
    ]


def test_gzip_sitemap() -> None:
    doc = parse_sitemap(gzip.compress(urlset("https://h.example/z")), SM_URL + ".gz")
    assert doc.kind == "urlset"
    assert [e.url for e in doc.entries] == ["https://h.example/z"]


def test_corrupt_gzip_is_invalid() -> None:
    doc = parse_sitemap(b"\x1f\x8b\x08\x00garbage-not-deflate", SM_URL)
    assert doc.kind == "invalid"
    assert doc.entries == []
    assert doc.problem


def test_gzip_bomb_over_max_bytes_is_invalid() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * (8 * 1024 * 1024) + b"</urlset>", compresslevel=9)
    assert len(bomb) < 64 * 1024
    doc = parse_sitemap(bomb, SM_URL, max_bytes=1024 * 1024)
    assert doc.kind == "invalid"
    assert doc.problem is not None
    assert str(1024 * 1024) in doc.problem


def test_uncompressed_body_over_max_bytes_is_invalid() -> None:
    doc = parse_sitemap(urlset("https://h.example/a") + b" " * 2000, SM_URL, max_bytes=1000)
    assert doc.kind == "invalid"


def test_plain_text_sitemap() -> None:
    body = "\ufeffhttps://h.example/one\n\n  https://h.example/two#x  \r\nnot a url\nhttp://h.example:99999/\n"
    doc = parse_sitemap(body.encode(), "https://h.example/sitemap.txt")
    assert doc.kind == "urlset"
    assert [(e.url, e.lastmod) for e in doc.entries] == [
        ("https://h.example/one", None),
        ("https://h.example/two", None),
    ]


def test_text_that_is_not_a_sitemap_is_invalid() -> None:
    doc = parse_sitemap(b"Hello, this is not a sitemap.\nAt all.\n", SM_URL)
    assert doc.kind == "invalid"
    assert doc.problem


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<urlset><url><loc>https://h.example/a</loc></url><url><loc>https://h.example/b",
        b"<urlset><url><loc>https://h.example/a?x=1&y=2</loc></url></urlset>",
        b"<<<>>>",
    ],
    ids=["empty", "truncated", "unescaped-ampersand", "garbage"],
)
def test_broken_xml_is_invalid(body: bytes) -> None:
    doc = parse_sitemap(body, SM_URL)
    assert doc.kind == "invalid"
    assert doc.entries == []
    assert doc.problem


def test_wrong_root_element_is_invalid() -> None:
    doc = parse_sitemap(b"<html><body><a href='https://h.example/'>x</a></body></html>", SM_URL)
    assert doc.kind == "invalid"
    assert doc.problem is not None
    assert "html" in doc.problem


def test_max_urls_truncates_and_says_so() -> None:
    locs = [f"https://h.example/p{i}" for i in range(10)]
    doc = parse_sitemap(urlset(*locs), SM_URL, max_urls=3)
    assert doc.kind == "urlset"
    assert [e.url for e in doc.entries] == locs[:3]
    assert doc.problem is not None
    assert "3" in doc.problem
    text_doc = parse_sitemap("\n".join(locs).encode(), SM_URL, max_urls=4)
    assert [e.url for e in text_doc.entries] == locs[:4]
    assert text_doc.problem is not None


def test_exactly_max_urls_is_not_truncated() -> None:
    doc = parse_sitemap(urlset("https://h.example/a", "https://h.example/b"), SM_URL, max_urls=2)
    assert len(doc.entries) == 2
    assert doc.problem is None


def test_external_entity_is_not_expanded(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE-42")
    body = (
        '<?xml version="1.0"?>\n'
        f'<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://h.example/&xxe;</loc></url>"
        "<url><loc>&xxe;</loc></url>"
        "<url><loc>https://h.example/plain</loc></url>"
        "</urlset>"
    ).encode()
    doc = parse_sitemap(body, SM_URL)
    assert "TOP-SECRET" not in repr(doc)
    assert "https://h.example/plain" in [e.url for e in doc.entries]


def test_billion_laughs_is_not_expanded() -> None:
    entities = "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    body = (
        f'<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY lol0 "lol">{entities}]>\n'
        "<urlset><url><loc>https://h.example/&lol9;</loc></url></urlset>"
    ).encode()
    started = time.monotonic()
    doc = parse_sitemap(body, SM_URL)
    assert time.monotonic() - started < 2
    assert "lollol" not in repr(doc)


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE urlset [<!ENTITY % ext SYSTEM "file:///etc/passwd"> %ext;]>',
        '<!DOCTYPE urlset SYSTEM "file:///etc/passwd">',
    ],
    ids=["general-entity", "parameter-entity", "external-dtd"],
)
def test_system_files_never_leak_into_a_sitemap(doctype: str) -> None:
    body = (
        f'<?xml version="1.0"?>\n{doctype}\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://h.example/&xxe;</loc></url><url><loc>&xxe;</loc></url>"
        "<url><loc>https://h.example/plain</loc></url></urlset>"
    ).encode()
    doc = parse_sitemap(body, SM_URL)
    assert "root:" not in repr(doc) and "/bin/" not in repr(doc)
    assert "https://h.example/plain" in [e.url for e in doc.entries]


def test_external_entity_is_never_fetched_over_the_network(tmp_path) -> None:
    from tests.mockserver import DocsServer

    (tmp_path / "secret.txt").write_text("NETWORK-SECRET")
    with DocsServer(tmp_path) as server:
        body = (
            f'<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{server.url("/secret.txt")}">'
            f'<!ENTITY % dtd SYSTEM "{server.url("/evil.dtd")}"> %dtd;]>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            "<url><loc>https://h.example/&xxe;</loc></url><url><loc>https://h.example/ok</loc></url></urlset>"
        ).encode()
        doc = parse_sitemap(body, SM_URL)
        assert server.requests == []
    assert "NETWORK-SECRET" not in repr(doc)


def test_entity_bombs_use_little_memory() -> None:
    """Billion laughs (10^9 copies) and a quadratic blow-up (one 100 kB entity used 10,000 times): parsed in
    a fresh interpreter whose peak resident memory is compared with what it had before parsing."""
    script = r"""
import resource, sys
from docscraper.content.discovery import parse_sitemap
laughs = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
billion = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY lol0 "lol">{laughs}]>'
           '<urlset><url><loc>https://h.example/&lol9;</loc></url></urlset>').encode()
quadratic = ('<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY big "' + "x" * 100_000 + '">]><urlset>'
             + "<url><loc>https://h.example/&big;</loc></url>" * 10_000 + "</urlset>").encode()
parse_sitemap(b"<urlset><url><loc>https://h.example/warm</loc></url></urlset>", "https://h.example/s.xml")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for body in (billion, quadratic):
    doc = parse_sitemap(body, "https://h.example/s.xml", max_bytes=0)
    assert "lollol" not in repr(doc) and "xxxxxxxxxx" not in repr(doc), doc.problem
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - started < 30
    grown_kib = int(proc.stdout.split()[-1])
    # the quadratic body itself is 1.4 MB; expanded it would be 1 GB, the laughs 3 GB
    assert grown_kib < 64 * 1024, f"peak memory grew by {grown_kib} KiB"


# --- robots.txt ---------------------------------------------------------------------------------------


def test_sitemaps_from_robots() -> None:
    robots = (
        "User-agent: *\nDisallow: /private\n"
        "Sitemap: https://h.example/sitemap.xml\n"
        "sitemap: /docs/sitemap.xml\n"
        "SITEMAP:   https://h.example/sitemap.xml  \n"
        "Sitemap: <https://h.example/angle.xml>\n"
        "Sitemap: <https://h.example/commented.xml#not part of it>\n"
        "Sitemap: mailto:x@h.example\n"
        "Sitemap: http://h.example:99999/bad.xml\n"
    )
    assert sitemaps_from_robots(robots, "https://h.example/robots.txt") == [
        "https://h.example/sitemap.xml",
        "https://h.example/docs/sitemap.xml",
        "https://h.example/angle.xml",
        "https://h.example/commented.xml",
    ]


def test_robots_without_sitemaps() -> None:
    assert sitemaps_from_robots("User-agent: *\nDisallow:\n", "https://h.example/robots.txt") == []
    assert sitemaps_from_robots("", "https://h.example/robots.txt") == []


# --- llms_candidates, is_markdown_url, html_counterparts ----------------------------------------------


@pytest.mark.parametrize(
    "source", ["https://h.example/docs/", "https://h.example/docs/index.html", "https://h.example/docs"]
)
def test_llms_candidates_prefix_then_root(source: str) -> None:
    assert llms_candidates(source) == [
        ("llms-full", "https://h.example/docs/llms-full.txt"),
        ("llms", "https://h.example/docs/llms.txt"),
        ("llms-full", "https://h.example/llms-full.txt"),
        ("llms", "https://h.example/llms.txt"),
    ]


@pytest.mark.parametrize("source", ["https://h.example/", "https://h.example", "https://h.example/index.html"])
def test_llms_candidates_at_root_are_not_repeated(source: str) -> None:
    assert llms_candidates(source) == [
        ("llms-full", "https://h.example/llms-full.txt"),
        ("llms", "https://h.example/llms.txt"),
    ]


def test_llms_candidates_file_source_and_bad_input() -> None:
    assert llms_candidates("file:///srv/site/docs/") == [
        ("llms-full", "file:///srv/site/docs/llms-full.txt"),
        ("llms", "file:///srv/site/docs/llms.txt"),
    ]
    assert llms_candidates("http://h.example:99999/docs/") == []
    assert llms_candidates("mailto:a@h.example") == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://h.example/a.md", True),
        ("https://h.example/a.MARKDOWN", True),
        ("https://h.example/a.mdx?x=1#y", True),
        ("https://h.example/llms.txt", True),
        ("https://h.example/a.html", False),
        ("https://h.example/md", False),
        ("https://h.example/a.md/", False),
        ("https://h.example/a.html?file=x.md", False),
        ("http://[::1", False),
    ],
)
def test_is_markdown_url(url: str, expected: bool) -> None:
    assert is_markdown_url(url) is expected


@pytest.mark.parametrize(
    ("md_url", "expected"),
    [
        ("https://h/d/page.html.md", ["https://h/d/page.html"]),
        ("https://h/d/intro.md", ["https://h/d/intro", "https://h/d/intro.html"]),
        ("https://h/d/guide/index.html.md", ["https://h/d/guide/index.html", "https://h/d/guide/"]),
        ("https://h/d/index.md", ["https://h/d/index.html", "https://h/d/"]),
        ("https://h/index.md", ["https://h/index.html", "https://h/"]),
        ("https://h/d/intro.md#part", ["https://h/d/intro", "https://h/d/intro.html"]),
        ("https://h/d/page.html", []),
        ("https://h/d/page.mdx", []),
        ("https://h/d/.md", []),
        ("http://[::1", []),
    ],
)
def test_html_counterparts(md_url: str, expected: list[str]) -> None:
    assert html_counterparts(md_url) == expected


def test_sitemap_and_robots_parsers_never_raise_on_arbitrary_input() -> None:
    rng = random.Random(3)
    pieces = [b"<", b">", b"</", b"urlset", b"sitemapindex", b"url", b"loc", b"&", b";", b"<!DOCTYPE x [",
              b"<!ENTITY a 'b'>", b"]>", b"\x1f\x8b", b"\x00", b"\xff", b"https://h/", b"\n", b"Sitemap: "]
    for _ in range(800):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        doc = parse_sitemap(body, SM_URL, max_urls=5, max_bytes=10_000)
        assert doc.kind in {"urlset", "sitemapindex", "invalid"}
        assert len(doc.entries) <= 5
        assert (doc.kind == "invalid") <= (doc.problem is not None)
        sitemaps_from_robots(body.decode("utf-8", errors="replace"), "https://h.example/robots.txt")


# -- the sitemap walk the spider and the sources probe share ----------------------------------------------


def _urlset(*urls: str) -> bytes:
    body = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'.encode()


def _index(*urls: str) -> bytes:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'.encode()


def test_sitemap_walk_reads_robots_lines_then_the_fallbacks_and_follows_indexes_to_their_depth() -> None:
    site = "https://h.example"
    files = {
        f"{site}/robots-map.xml": _index(f"{site}/a.xml", "https://other.example/b.xml", f"{site}/nested.xml"),
        f"{site}/a.xml": _urlset(f"{site}/docs/one.html", f"{site}/docs/two.html"),
        f"{site}/nested.xml": _index(f"{site}/deeper.xml"),
        f"{site}/docs/sitemap.xml": _urlset(f"{site}/docs/three.html"),
    }
    walk = SitemapWalk(f"{site}/docs/", f"{site}/docs/", f"Sitemap: {site}/robots-map.xml\n", max_depth=1)
    fetched = []
    for url in walk:
        fetched.append(url)
        if url in files:  # the root sitemap.xml answers 404: not added
            walk.add(url, parse_sitemap(files[url], url))
    assert walk.from_robots
    assert fetched == [f"{site}/robots-map.xml", f"{site}/docs/sitemap.xml", f"{site}/sitemap.xml",
                       f"{site}/a.xml", f"{site}/nested.xml"]
    assert walk.pages == [f"{site}/docs/three.html", f"{site}/docs/one.html", f"{site}/docs/two.html"]
    assert [f["url"] for f in walk.files] == [f"{site}/robots-map.xml", f"{site}/docs/sitemap.xml",
                                              f"{site}/a.xml", f"{site}/nested.xml"]
    assert walk.problems == ["https://other.example/b.xml: sitemap on another host ignored",
                             f"{site}/nested.xml: nested deeper than 1; children ignored"]


def test_sitemap_walk_stops_at_its_file_limit_and_a_local_folder_has_no_site_root() -> None:
    walk = SitemapWalk("file:///srv/docs/", "file:///srv/docs/", "", site_root=False, max_files=1)
    urls = []
    for url in walk:
        urls.append(url)
        walk.add(url, parse_sitemap(_index("file:///srv/docs/part.xml"), url))
    assert urls == ["file:///srv/docs/sitemap.xml"]
    assert walk.problems == ["more than 1 sitemap files; the rest ignored"]
