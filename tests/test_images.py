"""Images of a page's main content: extraction, the state records that follow the page, and search.

The unit tests extract hand-made pages and use the state store on ``sqlite://``. The crawl tests use the
fixture site (the concepts page's diagram, plus a figure with a caption added to the routing page of the
test's own copy): one crawl with the real model and Chroma for indexing and search, and three crawls
without the index for the records' lifecycle.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace

import pytest

from docscraper.config import DocscraperConfig
from docscraper.content.chunking import Chunker, ChunkingConfig
from docscraper.content.extraction import extract_html, extract_markdown
from docscraper.content.images import ImageRef
from docscraper.storage.embedding import SentenceTransformerEmbedder
from docscraper.storage.search import Searcher, SearchResult
from docscraper.storage.state import ImageRecord, PageSeen, PageWrite, SqlStateStore, utcnow
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import ROOT, Crawl, CrawlResult
from tests.mockserver import SITE_ROOT, DocsServer

PAGE = "https://docs.example.com/guide/flow/page.html"


def page(main: str, *, chrome: str = "", head: str = "") -> str:
    filler = "<p>" + "Relay routes events from sources to sinks along routes. " * 4 + "</p>"
    return (
        f"<!doctype html><html><head><title>Flow</title>{head}</head><body>"
        '<header class="site-header"><a href="/"><img src="/img/logo.svg" alt="Acme logo"></a></header>'
        '<nav class="sidebar-nav"><ul><li><a href="/a"><img src="/img/icon-a.png" alt="A icon"> A</a></li>'
        '<li><a href="/b">B</a></li></ul></nav>'
        f"{chrome}<main><h1>Flow</h1>{filler}{main}</main>"
        '<footer><img src="/img/badge.png" alt="Build passing"></footer></body></html>'
    )


def images(main: str, **kwargs: str) -> list[ImageRef]:
    return list(extract_html(page(main, **kwargs), PAGE).images)


# -- extraction: HTML ----------------------------------------------------------------------------------


def test_figure_caption_alt_title_and_relative_urls() -> None:
    got = images(
        '<figure class="diagram"><a href="big/flow.png"><img src="img/flow.png" alt="Events  flow\n to sinks" '
        'title="The flow"></a><figcaption>Figure 1: <em>the</em> event flow</figcaption></figure>'
        '<p>Inline <img src="../icons/warn.svg" alt="Warning"> and an absolute '
        '<img src="https://cdn.example.net/x.png"> one.</p>'
        "<table><tr><th>Icon</th><th>Meaning</th></tr><tr><td><img src='/img/ok.png' alt='OK'></td>"
        "<td>fine</td></tr></table>"
    )
    assert got == [
        ImageRef("https://docs.example.com/guide/flow/img/flow.png", "Events flow to sinks", "Figure 1: the event flow",
                 "The flow"),
        ImageRef("https://docs.example.com/guide/icons/warn.svg", "Warning"),
        ImageRef("https://cdn.example.net/x.png", ""),
        ImageRef("https://docs.example.com/img/ok.png", "OK"),
    ]


def test_an_alt_that_only_repeats_the_file_name_is_no_alt_text() -> None:
    # Sphinx writes the image's path as the alt of an image given no :alt:
    html = page('<img alt="../_images/pathlib-inheritance.png" src="../_images/pathlib-inheritance.png">'
                '<img alt="Overview.PNG" data-src="img/overview.png" src="data:image/gif;base64,R0lGOD">'
                '<img alt="logo.png" src="img/banner.png"><img alt="The pathlib classes" src="img/p.png">')
    extracted = extract_html(html, PAGE)
    assert [(image.url.rsplit("/", 1)[-1], image.alt) for image in extracted.images] == [
        ("pathlib-inheritance.png", ""), ("overview.png", ""), ("banner.png", "logo.png"),
        ("p.png", "The pathlib classes"),
    ]
    assert "pathlib-inheritance.png]" not in extracted.markdown and "Overview" not in extracted.markdown
    assert "![logo.png]" in extracted.markdown and "![The pathlib classes]" in extracted.markdown


def test_only_the_enclosing_figure_gives_a_caption() -> None:
    got = images(
        "<figure><img src='a.png' alt='A'><figcaption>Caption of A</figcaption></figure>"
        "<figure><img src='b.png' alt='B'></figure>"  # a figure without a caption
        "<p><img src='c.png' alt='C'></p><figcaption>stray caption</figcaption>"
        # Sphinx before 4: <div class="figure"> with <p class="caption">
        '<div class="figure align-center"><img src="d.png" alt="D"><p class="caption">'
        '<span class="caption-text">Caption of D</span><a class="headerlink" href="#id1">¶</a></p></div>'
    )
    assert [(i.alt, i.caption) for i in got] == [("A", "Caption of A"), ("B", None), ("C", None), ("D", "Caption of D")]


def test_docbook_object_figures_are_images_with_their_title_as_caption() -> None:
    # The PostgreSQL manual (DocBook XSL) embeds its diagrams as <object> in a div.figure titled by p.title.
    got = extract_html(page(
        '<div class="figure" id="GEQO-FIGURE"><p class="title"><strong>Figure 62.1. Structure of a Genetic '
        'Algorithm</strong></p><div class="figure-contents"><div class="mediaobject"><object '
        'type="image/svg+xml" data="genetic-algorithm.svg" width="100%"></object></div></div></div>'
        '<p><object data="diagrams/page.png">Page layout</object> <object data="manual.pdf" '
        'type="application/pdf"></object> <object type="image/svg+xml" data="x.svg"><img src="x.png" '
        'alt="X fallback"></object></p>'
    ), PAGE)
    assert list(extract_html(page(""), PAGE).images) == []
    assert list(got.images) == [
        ImageRef("https://docs.example.com/guide/flow/genetic-algorithm.svg", "",
                 "Figure 62.1. Structure of a Genetic Algorithm"),
        ImageRef("https://docs.example.com/guide/flow/diagrams/page.png", "Page layout"),
        ImageRef("https://docs.example.com/guide/flow/x.png", "X fallback"),
    ]
    assert "![](https://docs.example.com/guide/flow/genetic-algorithm.svg)" in got.markdown
    assert "manual.pdf" not in got.markdown


def test_lazy_loading_attributes() -> None:
    got = images(
        # a lazy loader swaps data-src in, whether src is a data: placeholder or a low-resolution preview
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="img/lazy.png" alt="Lazy">'
        '<img src="img/preview-low.jpg" data-src="img/full.jpg" alt="LQIP">'
        '<img data-original="img/orig.png" alt="Original">'
        # no src (or a placeholder file): the largest srcset candidate
        '<img srcset="img/s-480.png 480w, img/s-1200.png 1200w, img/s-800.png 800w" alt="Widths">'
        '<img src="/static/blank.gif" srcset="img/d.png, img/d@2x.png 2x" alt="Densities">'
        '<img src="img/real.png" srcset="img/real@2x.png 2x" alt="Real src wins">'
        '<img src="data:image/png;base64,AAAA" data-srcset="img/ds-1.png 1x, img/ds-3.png 3x" alt="Data srcset">'
        '<picture><source srcset="img/p.webp 1x, img/p@2x.webp 2x" type="image/webp">'
        '<img alt="Picture"></picture>'
    )
    base = "https://docs.example.com/guide/flow/img/"
    assert [(i.alt, i.url.removeprefix(base)) for i in got] == [
        ("Lazy", "lazy.png"),
        ("LQIP", "full.jpg"),
        ("Original", "orig.png"),
        ("Widths", "s-1200.png"),
        ("Densities", "d@2x.png"),
        ("Real src wins", "real.png"),
        ("Data srcset", "ds-3.png"),
        ("Picture", "p@2x.webp"),
    ]


def test_data_uris_tracking_pixels_and_unusable_sources_are_skipped() -> None:
    got = images(
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="Inline data">'
        '<img src="data:image/png;base64,iVBORw0KGgo=">'
        '<img src="https://t.example.net/p.gif" width="1" height="1" alt="">'
        '<img src="https://t.example.net/q.gif" width="1px" height="0">'
        '<img src="https://t.example.net/r.gif" width="1">'
        '<img src="javascript:alert(1)" alt="Script">'
        '<img alt="No source at all">'
        '<img src="img/kept.png" width="16" height="16" alt="Kept">'
        '<img src="img/kept.png" width="16" height="16" alt="Kept">'  # an exact repeat is recorded once
    )
    assert got == [ImageRef("https://docs.example.com/guide/flow/img/kept.png", "Kept")]


def test_images_outside_the_main_content_are_not_recorded() -> None:
    html = page(
        "<p><img src='img/in.png' alt='In the content'></p>",
        chrome='<div class="cookie-banner"><img src="/img/cookie.png" alt="Cookie"></div>'
        '<aside class="toc"><img src="/img/toc.png" alt="TOC icon"></aside>',
    )
    extracted = extract_html(html, PAGE)
    assert [i.alt for i in extracted.images] == ["In the content"]
    for alt in ("Acme logo", "A icon", "Build passing", "Cookie", "TOC icon"):
        assert alt not in extracted.markdown


def test_base_href_resolves_sources() -> None:
    got = images("<img src='shot.png' alt='Shot'>", head='<base href="https://static.example.com/v2/">')
    assert got == [ImageRef("https://static.example.com/v2/shot.png", "Shot")]


def test_a_page_without_images_and_bad_input() -> None:
    assert extract_html(page("<p>No pictures.</p>"), PAGE).images == ()
    broken = b"\x00\xff<p><img src=a.png alt=A><figure><img src=b.png alt=B><figcaption>cut off"
    assert extract_html(broken, PAGE).images == (ImageRef("https://docs.example.com/guide/flow/a.png", "A"),
                                                 ImageRef("https://docs.example.com/guide/flow/b.png", "B", "cut off"))
    assert extract_html("", PAGE).images == ()


def test_markdown_converter_and_image_records_agree() -> None:
    extracted = extract_html(page('<p><img srcset="a.png 1x, b.png 2x" alt="Both"></p>'), PAGE)
    assert extracted.images[0].url == "https://docs.example.com/guide/flow/b.png"
    assert "![Both](https://docs.example.com/guide/flow/b.png)" in extracted.markdown


# -- extraction: Markdown ------------------------------------------------------------------------------


def test_markdown_images() -> None:
    text = (
        "# Flow\n\n"
        '![Events flow to sinks](img/flow.png "The flow") and '
        "[![badge](https://ci.example.net/b.svg)](https://ci.example.net/)\n\n"
        "A wrapped ![alt that\nwraps](<img/with space.png>) and ![Esc \\[1\\]](/abs.png 'single').\n\n"
        "`![in a code span](no.png)` is code.\n\n"
        "```markdown\n![in a fence](no.png)\n```\n\n"
        "![](data:image/png;base64,AAAA) ![reference style][ref]\n\n"
        "[ref]: ref.png\n"
    )
    got = list(extract_markdown(text, "https://docs.example.com/guide/flow.md").images)
    assert got == [
        ImageRef("https://docs.example.com/guide/img/flow.png", "Events flow to sinks", None, "The flow"),
        ImageRef("https://ci.example.net/b.svg", "badge"),
        ImageRef("https://docs.example.com/guide/img/with%20space.png", "alt that wraps"),
        ImageRef("https://docs.example.com/abs.png", "Esc [1]", None, "single"),
    ]


def test_fixture_concepts_page_and_its_markdown_twin_give_the_same_image() -> None:
    base = "http://127.0.0.1:8000"
    html = (SITE_ROOT / "docs/guide/concepts.html").read_text().replace("__BASE__", base)
    twin = (SITE_ROOT / "docs/guide/concepts.html.md").read_text().replace("__BASE__", base)
    expected = (ImageRef(f"{base}/docs/_static/diagram.png", "Events flow from sources through routes to sinks"),)
    assert extract_html(html, f"{base}/docs/guide/concepts.html").images == expected
    assert extract_markdown(twin, f"{base}/docs/guide/concepts.html.md").images == expected


# -- indexed with the page -----------------------------------------------------------------------------


def words(texts: list[str]) -> list[int]:
    return [len(text.split()) + 2 for text in texts]


def test_alt_text_and_captions_are_in_the_chunk_text() -> None:
    extracted = extract_html(page(
        "<h2>Overview</h2><figure><img src='img/arch.png' alt='Architecture of the relay cluster'>"
        "<figcaption>Three relay nodes share one PostgreSQL queue.</figcaption></figure>"
        "<p>Text after the figure.</p><table><tr><th>Icon</th><th>Meaning</th></tr>"
        "<tr><td><img src='ok.png' alt='green check'></td><td>healthy</td></tr></table>"
    ), PAGE)
    chunks = Chunker(words, ChunkingConfig(256, 200, 0, 0)).chunk(extracted.markdown, title=extracted.title)
    text = "\n".join(chunk.text for chunk in chunks)
    assert "Architecture of the relay cluster" in text
    assert "Three relay nodes share one PostgreSQL queue." in text
    assert "green check" in text
    assert "img/arch.png" not in text  # the chunker keeps the alt text, not the image URL


# -- the state store -----------------------------------------------------------------------------------


def write(pid: str, content_hash: str, *images: ImageRecord) -> PageWrite:
    return PageWrite(pid, f"https://h/{pid}", None, pid, content_hash, None, None, 200, pid, "link", 1, "text/html",
                     utcnow(), "r1", images=images)


def test_store_images_follow_their_page() -> None:
    store = SqlStateStore("sqlite://")
    try:
        docs = store.ensure_source("docs", "https://h/", {})
        other = store.ensure_source("other", "https://o/", {})
        diagram = ImageRecord("https://h/d.png", "Diagram", "Figure 1", "Title")
        store.commit_page(docs.id, write("a", "h1", diagram, ImageRecord("https://h/e.png")))
        store.commit_page(docs.id, write("b", "h1", ImageRecord("https://h/b.png", "B")))
        store.commit_page(other.id, write("a", "h1", ImageRecord("https://o/a.png", "Other")))
        assert store.page_images("docs", ["a", "b", "zzz"]) == {
            "a": [diagram, ImageRecord("https://h/e.png", "")],
            "b": [ImageRecord("https://h/b.png", "B")],
        }
        # a changed page's images are replaced wholesale
        store.commit_page(docs.id, write("a", "h2", ImageRecord("https://h/new.png", "New")))
        assert store.page_images("docs", ["a"]) == {"a": [ImageRecord("https://h/new.png", "New")]}
        # an unchanged page (seen) keeps them
        store.mark_seen(docs.id, "r2", [PageSeen("a", None, None, 304, utcnow())])
        assert store.page_images("docs", ["a"]) == {"a": [ImageRecord("https://h/new.png", "New")]}
        # a page that lost its images
        store.commit_page(docs.id, write("b", "h2"))
        assert store.page_images("docs", ["b"]) == {}
        # a removed page loses them; the same page id of another source keeps its own
        store.mark_removed(docs.id, ["a"], "r3", utcnow())
        assert store.page_images("docs", ["a"]) == {}
        assert store.page_images("other", ["a"]) == {"a": [ImageRecord("https://o/a.png", "Other")]}
        # deleting a source deletes its images
        store.commit_page(docs.id, write("c", "h1", diagram))
        assert store.delete_source(docs.id)["images"] == 1
        assert store.page_images("docs", ["c"]) == {}
        assert store.page_images("other", ["a"]) != {}
    finally:
        store.close()


def test_search_result_images_default_to_empty_and_are_json_ready() -> None:
    result = SearchResult(1, 0.5, "u", "t", "h", "x", "s", "p", "c")
    assert result.images == [] and json.loads(json.dumps(result.as_dict()))["images"] == []
    image = {"url": "https://h/d.png", "alt": "D", "caption": None}
    assert json.loads(json.dumps(replace(result, images=[image]).as_dict()))["images"] == [image]


# -- whole crawls --------------------------------------------------------------------------------------

DIAGRAM_ALT = "Events flow from sources through routes to sinks"
FIGURE = (
    '<figure><img src="../_static/route-selection.svg" alt="Flowchart of route selection" title="Route selection">'
    "<figcaption>Figure 1: how Relay picks the routes of an event, one filter after another.</figcaption></figure>"
)
CAPTION = "Figure 1: how Relay picks the routes of an event, one filter after another."


def add_figure(site: DocsServer) -> None:
    routing = site.root / "docs/guide/routing.html"
    routing.write_text(routing.read_text().replace("</article>", FIGURE + "\n</article>"))


def image_rows(result: CrawlResult) -> dict[str, list[tuple[object, ...]]]:
    """rel_path -> [(rowid, position, url, alt, caption, title)] of the active pages."""
    db = sqlite3.connect(result.data_dir / "state.db")
    try:
        rows = db.execute(
            "SELECT p.rel_path, i.rowid, i.position, i.url, i.alt, i.caption, i.title FROM images i "
            "JOIN pages p ON p.source_id = i.source_id AND p.page_id = i.page_id ORDER BY p.rel_path, i.position"
        ).fetchall()
        orphans = db.execute("SELECT count(*) FROM images i LEFT JOIN pages p ON p.source_id = i.source_id AND "
                             "p.page_id = i.page_id WHERE p.page_id IS NULL OR p.status != 'active'").fetchone()[0]
    finally:
        db.close()
    assert orphans == 0
    found: dict[str, list[tuple[object, ...]]] = {}
    for rel_path, *rest in rows:
        found.setdefault(rel_path, []).append(tuple(rest))
    return found


@pytest.mark.crawl
def test_indexed_crawl_records_images_and_search_lists_them(site: DocsServer, crawl: Crawl) -> None:
    add_figure(site)
    result = crawl(f"{site.base_url}/docs/", index=True)
    base = site.base_url
    rows = image_rows(result)
    assert {path: [row[1:] for row in found] for path, found in rows.items()} == {
        "guide/concepts.html": [(0, f"{base}/docs/_static/diagram.png", DIAGRAM_ALT, None, None)],
        "guide/routing.html": [(0, f"{base}/docs/_static/route-selection.svg", "Flowchart of route selection",
                                CAPTION, "Route selection")],
    }
    assert result.report["counters"]["images"] == 2

    # alt text and caption are embedded with their page
    index = ChromaIndex(path=result.data_dir / "chroma")
    got = index.collection.get(include=["documents", "metadatas"])
    texts: dict[str, str] = {}
    for document, meta in zip(got["documents"] or [], got["metadatas"] or [], strict=True):
        texts[str(meta["path"])] = texts.get(str(meta["path"]), "") + "\n" + document
    assert DIAGRAM_ALT in texts["guide/concepts.html"]
    assert "how Relay picks the routes of an event" in texts["guide/routing.html"]

    # a question about the diagram finds its page, and the page's images come with it when asked for
    embedder = SentenceTransformerEmbedder()
    config = DocscraperConfig(data_dir=result.data_dir, state_url=f"sqlite:///{result.data_dir / 'state.db'}")
    searcher = Searcher(config, embedder=embedder, index=index)
    try:
        question = "Is there a diagram of how events flow from sources through routes to sinks?"
        plain = searcher.search(question, k=3)
        assert any(r.url.endswith("/docs/guide/concepts.html") for r in plain)
        assert all(r.images == [] for r in plain)
        listed = searcher.search(question, k=3, with_images=True)
        concepts = next(r for r in listed if r.url.endswith("/docs/guide/concepts.html"))
        assert concepts.images == [{"url": f"{base}/docs/_static/diagram.png", "alt": DIAGRAM_ALT, "caption": None}]
        assert all(r.images == [] for r in listed if r.page_id != concepts.page_id and "routing" not in r.url)
        routing = searcher.search("flowchart of route selection", k=5, with_images=True)
        hit = next(r for r in routing if r.url.endswith("/docs/guide/routing.html"))
        assert hit.images[0]["caption"] == CAPTION
    finally:
        searcher.close()

    # scrapy search --images: under each result, and in --json
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(result.data_dir), HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "scrapy", "search", question, "-k", "3", "--images"]
    as_json = subprocess.run([*command, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    hits = json.loads(as_json.stdout)
    assert [h["images"] for h in hits if h["url"].endswith("/docs/guide/concepts.html")] == [
        [{"url": f"{base}/docs/_static/diagram.png", "alt": DIAGRAM_ALT, "caption": None}]]
    printed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert f"   image: {base}/docs/_static/diagram.png  {DIAGRAM_ALT}" in printed.stdout


@pytest.mark.crawl
def test_image_records_are_replaced_with_their_page_and_removed_with_it(site: DocsServer, crawl: Crawl) -> None:
    add_figure(site)
    source = f"{site.base_url}/docs/"
    first = image_rows(crawl(source))
    assert set(first) == {"guide/concepts.html", "guide/routing.html"}

    # a new alt text on the concepts page (its HTML and its Markdown twin) replaces its image record;
    # the unchanged routing page's record is not rewritten
    for name in ("concepts.html", "concepts.html.md"):
        path = site.root / "docs/guide" / name
        path.write_text(path.read_text().replace(DIAGRAM_ALT, "Diagram of sources, routes and sinks"))
    second_run = crawl(source)
    assert second_run.keys("success", "changed") == {"guide/concepts.html"}
    assert second_run.report["counters"]["images"] == 1
    second = image_rows(second_run)
    assert [row[3] for row in second["guide/concepts.html"]] == ["Diagram of sources, routes and sinks"]
    assert second["guide/concepts.html"][0][2] == first["guide/concepts.html"][0][2]  # same URL
    assert second["guide/routing.html"] == first["guide/routing.html"]  # same rows, same rowids

    # the page deleted from the site: its image records go with it
    for name in ("concepts.html", "concepts.html.md"):
        (site.root / "docs/guide" / name).unlink()
    for path in site.root.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".xml", ".txt") and "concepts.html" in path.read_text():
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if "concepts.html" not in line))
    third_run = crawl(source)
    assert third_run.keys("success", "removed") == {"guide/concepts.html"}
    assert "images" not in third_run.report["counters"]
    assert image_rows(third_run) == {"guide/routing.html": first["guide/routing.html"]}
