"""Robots directives of a page: ``noindex`` keeps its content out of the index (its links still lead on; a page
indexed before is retired), ``nofollow`` keeps its links from being followed; from ``<meta name="robots">``,
``<meta name="docscraper">`` or an ``X-Robots-Tag`` header. ``rel="nofollow"`` on one link changes nothing.
Whole crawls of a small site of the test's own; the last test loads the real model and Chroma."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from scrapy.http import HtmlResponse

from docscraper._resources import read_text
from docscraper.crawl.ledger import summarize
from docscraper.spiders.page_parser import RobotsDirectives, header_robots, meta_robots
from docscraper.storage.vectors import ChromaIndex
from docscraper.urls import page_id
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

SCHEMA = json.loads(read_text("docscraper", "schema", "stats-report.schema.json"))


def _page(title: str, body: str, head: str = "") -> str:
    return (f"<!doctype html><html lang=\"en\"><head><title>{title}</title>{head}</head><body><main>"
            f"<h1>{title}</h1><p>{title} is a page of the robots test book, about {title.lower()} alone.</p>"
            f"{body}</main></body></html>")


def _links(*names: str) -> str:
    return "<ul>" + "".join(f'<li><a href="{name}">{name}</a></li>' for name in names) + "</ul>"


def _site(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    pages = {
        "index.html": _page("Home", _links("chapter.html", "print.html", "none.html", "nofollow.html",
                                           "xrobots.html", "xnofollow.html", "googlebot.html")
                            + '<p>See <a rel="nofollow" href="hinted.html">a hinted link</a>.</p>'),
        "chapter.html": _page("Chapter", "<p>The chapter the whole-book print page copies.</p>"),
        # mdBook's print.html: the whole book on one page, which asks not to be indexed
        "print.html": _page("Print", _links("only-from-print.html"), '<meta name="robots" content="noindex">'),
        "only-from-print.html": _page("Reached through print", ""),
        "none.html": _page("None", _links("only-from-none.html"), '<meta name="ROBOTS" content="none">'),
        "only-from-none.html": _page("Never fetched none", ""),
        "nofollow.html": _page("Nofollow", _links("only-from-nofollow.html"),
                               '<meta name="docscraper" content="index, nofollow">'),
        "only-from-nofollow.html": _page("Never fetched nofollow", ""),
        "googlebot.html": _page("Googlebot", "", '<meta name="googlebot" content="noindex, nofollow">'),
        "hinted.html": _page("Hinted", ""),
        "only-from-xrobots.html": _page("Reached through the header", ""),
        "only-from-xnofollow.html": _page("Never fetched header", ""),
    }
    for name, html in pages.items():
        (docs / name).write_text(html)
    routes = {
        "/docs/xrobots.html": {"headers": {"X-Robots-Tag": "noindex"},
                               "body": _page("Header noindex", _links("only-from-xrobots.html"))},
        "/docs/xnofollow.html": {"headers": {"X-Robots-Tag": "docscraper: nofollow"},
                                 "body": _page("Header nofollow", _links("only-from-xnofollow.html"))},
    }
    (root / "_routes.json").write_text(json.dumps(routes))
    return root


@pytest.fixture
def robots_site(tmp_path: Path) -> Iterator[DocsServer]:
    server = DocsServer(_site(tmp_path / "robots-site"))
    with server.start():
        yield server


def _valid(result: CrawlResult) -> dict:
    report = result.report
    jsonschema.validate(report, SCHEMA)
    assert report["stats"] == summarize(report["items"])
    return report


def _pages(result: CrawlResult) -> dict[str, str]:
    db = sqlite3.connect(result.data_dir / "state.db")
    rows = db.execute("SELECT rel_path, status FROM pages").fetchall()
    db.close()
    return dict(rows)


def test_directives_are_read_from_meta_tags_and_headers() -> None:
    def meta(content: str, name: str = "robots") -> RobotsDirectives:
        body = f'<html><head><meta name="{name}" content="{content}"></head><body></body></html>'.encode()
        return meta_robots(HtmlResponse(url="http://127.0.0.1/", body=body, encoding="utf-8"))

    assert meta("noindex") == RobotsDirectives(noindex=True, source="meta robots")
    assert meta("NoIndex, NoFollow", "Robots") == RobotsDirectives(True, True, "meta robots")
    assert meta("none", "docscraper") == RobotsDirectives(True, True, "meta robots")
    assert meta("noindex", "googlebot") == RobotsDirectives()
    assert meta("index, follow") == RobotsDirectives()
    assert header_robots(["noindex"]) == RobotsDirectives(noindex=True, source="X-Robots-Tag")
    assert header_robots(["googlebot: noindex"]) == RobotsDirectives()
    assert header_robots(["docscraper: nofollow", "unavailable_after: 25 Jun 2010 15:00:00 PST"]) == \
        RobotsDirectives(nofollow=True, source="X-Robots-Tag")
    assert (meta("nofollow") | header_robots(["noindex"])) == RobotsDirectives(True, True, "meta robots, X-Robots-Tag")


@pytest.mark.crawl
def test_noindex_pages_lead_on_and_nofollow_pages_do_not(robots_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{robots_site.base_url}/docs/")
    report = _valid(result)
    assert result.keys("skipped", "noindex") == {"print.html", "none.html", "xrobots.html"}
    assert report["items"]["print.html"]["detail"] == "meta robots: noindex"
    assert report["items"]["xrobots.html"]["detail"] == "X-Robots-Tag: noindex"
    # a noindex page's links are followed; a nofollow (or none) page's are not even requested
    assert {"./", "chapter.html", "only-from-print.html", "only-from-xrobots.html", "nofollow.html",
            "xnofollow.html", "googlebot.html", "hinted.html"} == result.keys("success", "new")
    fetched = {path for _, path, _ in robots_site.requests}
    assert not {"/docs/only-from-none.html", "/docs/only-from-nofollow.html",
                "/docs/only-from-xnofollow.html"} & fetched
    assert report["counters"]["nofollow_pages"] == 3
    assert report["result"] == "success"
    # a noindex page has no state row: nothing of it is stored, nothing is revalidated
    pages = _pages(result)
    assert not {"print.html", "none.html", "xrobots.html"} & set(pages)
    assert pages["chapter.html"] == "active"


@pytest.mark.crawl
def test_a_page_that_turns_noindex_is_removed_from_the_index(robots_site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{robots_site.base_url}/docs/", index=True)
    source = first.report["source"]
    chapter = page_id(f"{robots_site.base_url}/docs/chapter.html")
    index = ChromaIndex(path=first.data_dir / "chroma")
    try:
        assert index.count(source, chapter) > 0
        assert index.count(source, page_id(f"{robots_site.base_url}/docs/print.html")) == 0
        assert index.count(source, page_id(f"{robots_site.base_url}/docs/xrobots.html")) == 0
    finally:
        index.close()

    path = robots_site.root / "docs" / "chapter.html"
    path.write_text(path.read_text().replace("</title>", '</title><meta name="robots" content="noindex">'))
    second = crawl(f"{robots_site.base_url}/docs/", index=True)
    report = _valid(second)
    entry = report["items"]["chapter.html"]
    assert (entry["status"], entry["statusReason"]) == ("success", "removed")
    assert "noindex" in entry["detail"]
    assert report["removal"]["noindex"] == 1
    assert _pages(second)["chapter.html"] == "removed"
    index = ChromaIndex(path=second.data_dir / "chroma")
    try:
        assert index.count(source, chapter) == 0
        assert index.count(source) > 0  # the other pages stay
    finally:
        index.close()
    # the next run: skipped as noindex, nothing left to remove
    third = crawl(f"{robots_site.base_url}/docs/", index=True)
    assert "chapter.html" in third.keys("skipped", "noindex")
    assert third.report["removal"].get("noindex", 0) == 0
