"""Hostile and broken input, end to end: redirect loops and chains, content types, decompression bombs,
wrong encodings, hostile sitemaps and repeated failures (DESIGN rules 3, 6 and 7).

Each test serves a small site of its own (built in ``tmp_path``, dynamic answers from ``_routes.json``,
see tests/mockserver.py) and crawls it in a subprocess with the ``crawl`` fixture; a small site keeps
these crawls quick and independent of the fixture site's counts.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from docscraper.crawl.report import load_schema, summarize
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

FRENCH = "Café crème, naïve résumé — “smart quotes” and façade. Déjà vu à la française."
JAPANESE = "日本語のドキュメントです。設定ファイルを編集してください。インストール方法。"


def html(title: str, text: str, head: str = "", links: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f"<!doctype html><html lang=\"en\"><head>{head}<title>{title}</title></head><body><main>"
            f"<h1>{title}</h1><p>{text}</p><ul>{anchors}</ul></main></body></html>")


def make_site(root: Path, pages: dict[str, str], *, links: tuple[str, ...] = (),
              routes: dict[str, Any] | None = None) -> Path:
    """A site with ``docs/index.html`` linking every page in *pages* (name -> text) and *links*."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    (docs / "index.html").write_text(html("Home", "The start page.", links=(*pages, *links)), encoding="utf-8")
    for name, text in pages.items():
        (docs / name).write_text(html(name, text), encoding="utf-8")
    set_routes(root, routes or {})
    return root


def set_routes(root: Path, routes: dict[str, Any]) -> None:
    (root / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[DocsServer] = []

    def start(root: Path) -> DocsServer:
        server = DocsServer(root).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def checked(result: CrawlResult) -> dict[str, Any]:
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["stats"] == summarize(report["items"])
    return report


def rows(result: CrawlResult) -> dict[str, dict[str, Any]]:
    db = sqlite3.connect(result.data_dir / "state.db")
    db.row_factory = sqlite3.Row
    found = {row["rel_path"]: dict(row) for row in db.execute("SELECT * FROM pages")}
    db.close()
    return found


# --- redirects ------------------------------------------------------------------------------------------


def test_redirect_chain_is_stored_with_the_page(tmp_path: Path, serve: Any, crawl: Crawl) -> None:
    final = html("Final", "Landed after three hops.")
    routes = {f"/docs/hop-{i}.html": {"status": 301 + i % 2, "location": f"__BASE__/docs/hop-{i + 1}.html"}
              for i in range(3)}
    routes["/docs/hop-3.html"] = {"body": final}
    server = serve(make_site(tmp_path / "site", {"plain.html": "Not redirected."}, links=("hop-0.html",),
                             routes=routes))
    result = crawl(f"{server.base_url}/docs/")
    report = checked(result)
    chain = [f"{server.base_url}/docs/hop-{i}.html" for i in range(4)]
    assert report["items"]["hop-3.html"]["redirects"] == chain
    assert "redirects" not in report["items"]["plain.html"]
    table = rows(result)
    assert json.loads(table["hop-3.html"]["redirects"]) == chain
    assert table["plain.html"]["redirects"] is None
    # an unchanged second run keeps the chain
    second = crawl(f"{server.base_url}/docs/")
    assert second.report["items"]["hop-3.html"]["statusReason"] == "unchanged"
    assert second.report["items"]["hop-3.html"]["redirects"] == chain
    assert json.loads(rows(second)["hop-3.html"]["redirects"]) == chain


def test_a_redirect_to_no_http_url_refuses_the_page_and_keeps_the_run_successful(tmp_path: Path, serve: Any,
                                                                                   crawl: Crawl) -> None:
    """A Location that is malformed (``http://[``), or of another scheme (``javascript:``, ``file:``), is
    a refusal of the page that redirected, with its reason; no failure, so the run stays ``success``."""
    routes = {
        "/docs/bracket.html": {"status": 301, "location": "http://["},
        "/docs/script.html": {"status": 302, "location": "javascript:alert(1)"},
        "/docs/local.html": {"status": 307, "location": "file:///etc/passwd"},
        "/docs/badport.html": {"status": 308, "location": "http://example.com:99999/x"},
    }
    server = serve(make_site(tmp_path / "site", {"plain.html": "Not redirected."},
                             links=("bracket.html", "script.html", "local.html", "badport.html"), routes=routes))
    result = crawl(f"{server.base_url}/docs/")
    report = checked(result)
    items = report["items"]
    assert report["result"] == "success" and not result.keys("failed")
    assert result.keys("skipped", "redirectOutOfScope") == {"bracket.html", "badport.html"}
    assert result.keys("skipped", "blockedAddress") >= {"script.html", "local.html"}
    assert "'http://[': not a valid URL" in items["bracket.html"]["detail"]
    assert "scheme javascript is not http(s)" in items["script.html"]["detail"]
    assert "scheme file is not http(s)" in items["local.html"]["detail"]
    assert result.keys("success", "new") == {"./", "plain.html"}
    assert "Traceback" not in result.stderr


def test_redirect_loops_and_long_chains_fail_cleanly_and_keep_stored_pages(tmp_path: Path, serve: Any,
                                                                           crawl: Crawl) -> None:
    pages = {name: f"The {name} page, stored on the first run." for name in
             ("loop-a.html", "self.html", "chain-0.html", "ping.html", "pong.html", "down.html")}
    root = make_site(tmp_path / "site", pages)
    server = serve(root)
    first = crawl(f"{server.base_url}/docs/")
    assert first.keys("success", "new") == {"./", *pages}
    # the site breaks: a loop through another page, a self-redirect, a chain longer than
    # REDIRECT_MAX_TIMES (10), two linked pages redirecting to each other, and a 503
    routes: dict[str, Any] = {
        "/docs/loop-a.html": {"status": 301, "location": "__BASE__/docs/loop-b.html"},
        "/docs/loop-b.html": {"status": 302, "location": "__BASE__/docs/loop-a.html"},
        "/docs/self.html": {"status": 301, "location": "__BASE__/docs/self.html"},
        "/docs/ping.html": {"status": 301, "location": "__BASE__/docs/pong.html"},
        "/docs/pong.html": {"status": 301, "location": "__BASE__/docs/ping.html"},
        "/docs/down.html": {"status": 503, "body": "maintenance"},
    }
    routes.update({f"/docs/chain-{i}.html": {"status": 301, "location": f"__BASE__/docs/chain-{i + 1}.html"}
                   for i in range(15)})
    set_routes(root, routes)
    for run in (1, 2):
        started = time.monotonic()
        result = crawl(f"{server.base_url}/docs/")
        assert time.monotonic() - started < 120
        report = checked(result)
        items = report["items"]
        assert report["result"] == "partial" and report["closeReason"] == "finished"
        assert result.keys("failed", "redirectLoop") == {"loop-a.html", "self.html"}
        assert "loop-a.html -> " in items["loop-a.html"]["detail"]
        assert items["loop-a.html"]["detail"].count("loop-b.html") == 2
        assert result.keys("failed", "redirectLimit") == {"chain-0.html"}
        assert items["chain-0.html"]["detail"].startswith("more than 10 redirects")
        assert result.keys("failed", "httpError") == {"down.html"}
        # linked pages redirecting to each other: each is the other's duplicate, and neither is removed
        assert result.keys("skipped", "redirectDuplicate") == {"ping.html", "pong.html"}
        assert report["removal"]["performed"] is True
        assert report["stats"]["success.removed"] == 0
        table = rows(result)
        for name in pages:
            assert table[name]["status"] == "active", name
            assert table[name]["content_hash"], name
        for name in ("loop-a.html", "self.html", "chain-0.html", "down.html"):
            assert table[name]["failure_count"] == run, name
        assert table["loop-a.html"]["last_error"].startswith("redirect loop: ")
        assert table["chain-0.html"]["last_error"].startswith("more than 10 redirects")
        assert table["down.html"]["last_error"] == "HTTP 503"
    # no hop was fetched more than a loop needs: A, B, A, B (the fifth request is refused)
    assert server.hits("/docs/loop-a.html") == 2 * 2 + 1 and server.hits("/docs/self.html") == 2 * 2 + 1
    # the site is mended: one success resets the failure count and the error
    set_routes(root, {})
    mended = crawl(f"{server.base_url}/docs/")
    assert mended.report["result"] == "success"
    assert mended.keys("success", "unchanged") == {"./", *pages}
    for name, row in rows(mended).items():
        assert (row["failure_count"], row["last_error"], row["status"]) == (0, None, "active"), name


# --- content types and sizes ----------------------------------------------------------------------------


def test_non_text_types_are_skipped_with_their_type_and_xhtml_is_extracted(tmp_path: Path, serve: Any,
                                                                          crawl: Crawl) -> None:
    xhtml = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml" '
             'lang="en"><head><title>XHTML</title></head><body><main><h1>An XHTML page</h1>'
             "<p>Served as application/xhtml+xml and extracted like HTML.</p></main></body></html>")
    routes = {
        "/docs/report": {"body": "%PDF-1.4\n%fake\n", "headers": {"Content-Type": "application/pdf"}},
        "/docs/data": {"body": '{"pages": [1, 2, 3]}', "headers": {"Content-Type": "application/json"}},
        "/docs/page.xhtml": {"body": xhtml, "headers": {"Content-Type": "application/xhtml+xml; charset=utf-8"}},
    }
    server = serve(make_site(tmp_path / "site", {}, links=("report", "data", "page.xhtml"), routes=routes))
    out = tmp_path / "pages.jsonl"
    result = crawl(f"{server.base_url}/docs/", extra=["-O", str(out)])
    report = checked(result)
    assert result.keys("skipped", "nonText") == {"data"}
    assert report["items"]["data"]["detail"] == "content type application/json"
    # a PDF is a document (tests/test_documents.py): this one is no PDF at all, a refusal with its reason
    assert result.keys("skipped", "unreadableDocument") == {"report"}
    assert report["items"]["report"]["detail"].startswith("PDFium cannot read it")
    assert report["items"]["page.xhtml"]["statusReason"] == "new"
    exported = {json.loads(line)["url"].rsplit("/", 1)[-1]: json.loads(line) for line in out.read_text().splitlines()}
    assert "extracted like HTML" in exported["page.xhtml"]["markdown"]
    assert exported["page.xhtml"]["title"] == "An XHTML page"


def recrawl_oversized(tmp_path: Path, serve: Any, crawl: Crawl, name: str,
                      route: dict[str, Any]) -> tuple[CrawlResult, dict[str, Any]]:
    """Crawl a site where page *name* is ordinary and links on to ``after.html``, then make *name* a
    4 MB+ body of ``<p>0000...`` sent as *route* says, under a 1 MB cap, and recrawl with ``full=1``."""
    root = make_site(tmp_path / "site", {name: "An ordinary page for now.", "after.html": "Linked on."})
    (root / "docs" / name).write_text(html(name.removesuffix(".html"), "An ordinary page.", links=("after.html",)))
    server = serve(root)
    settings = {"DOWNLOAD_MAXSIZE": "1000000", "DOWNLOAD_WARNSIZE": "500000"}
    crawl(f"{server.base_url}/docs/", settings=settings)
    set_routes(root, {f"/docs/{name}": {"body": "<p>" + "0" * 1021, "headers": {"Content-Type": "text/html"},
                                         **route}})
    result = crawl(f"{server.base_url}/docs/", "full=1", settings=settings)
    return result, checked(result)


def test_decompression_bomb_is_refused_as_over_the_size_cap(tmp_path: Path, serve: Any, crawl: Crawl) -> None:
    # 64 MiB of HTML in about 64 kB of gzip, sent with Content-Encoding: gzip
    result, report = recrawl_oversized(tmp_path, serve, crawl, "bomb.html", {"repeat": 64 * 1024, "gzip": True})
    assert result.keys("skipped", "sizeLimit") == {"bomb.html"}
    assert "DOWNLOAD_MAXSIZE (1000000 B) during decompression" in report["items"]["bomb.html"]["detail"]
    assert not result.keys("failed")
    # a page over the cap is not an orphan: it stays, and its stored links still lead on
    assert report["removal"]["performed"] is True and report["stats"]["success.removed"] == 0
    assert rows(result)["bomb.html"]["status"] == "active"
    assert "after.html" in result.keys("success")


def test_body_without_length_that_grows_past_the_cap_is_skipped_not_failed(tmp_path: Path, serve: Any,
                                                                          crawl: Crawl) -> None:
    # No Content-Length: Scrapy cancels the download mid-body, with an error that has no message.
    result, report = recrawl_oversized(tmp_path, serve, crawl, "big.html", {"repeat": 4 * 1024, "no_length": True})
    assert result.keys("skipped", "sizeLimit") == {"big.html"}
    assert "DOWNLOAD_MAXSIZE (1000000 B)" in report["items"]["big.html"]["detail"]
    assert not result.keys("failed") and report["result"] == "success"
    assert rows(result)["big.html"]["status"] == "active" and rows(result)["big.html"]["failure_count"] == 0
    assert "after.html" in result.keys("success")


def test_decompression_stops_at_the_size_cap_with_bounded_memory() -> None:
    crawler = get_crawler(settings_dict={"DOWNLOAD_MAXSIZE": 1_000_000, "DOWNLOAD_WARNSIZE": 500_000})
    middleware = HttpCompressionMiddleware.from_crawler(crawler)
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)  # 64 MiB in ~64 kB
    request = Request("https://h.example/bomb.html")
    response = HtmlResponse(request.url, body=bomb, request=request,
                            headers={"Content-Encoding": "gzip", "Content-Type": "text/html"})
    tracemalloc.start()
    try:
        with pytest.raises(IgnoreRequest, match="DOWNLOAD_MAXSIZE"):
            middleware.process_response(request, response)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # about the cap plus one decompression chunk (measured 1.4 MB), never the 64 MiB it would expand to
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes"


# --- encodings --------------------------------------------------------------------------------------------


def test_undeclared_and_wrongly_declared_encodings_decode_sensibly(tmp_path: Path, serve: Any,
                                                                    crawl: Crawl) -> None:
    def route(text: str, codec: str, content_type: str, head: str = "") -> dict[str, Any]:
        return {"body": html("Encoded", text, head=head), "body_encoding": codec,
                "headers": {"Content-Type": content_type}}

    routes = {
        "/docs/cp1252.html": route(FRENCH, "cp1252", "text/html"),
        "/docs/wrong-header.html": route(FRENCH, "cp1252", "text/html; charset=utf-8"),
        "/docs/sjis.html": route(JAPANESE, "shift_jis", "text/html"),
        "/docs/utf16.html": route(FRENCH, "utf-16", "text/html"),
        "/docs/meta-vs-header.html": route(FRENCH, "utf-8", "text/html; charset=iso-8859-1", '<meta charset="utf-8">'),
        "/docs/notes.md": {"body": f"# Notes\n\n{FRENCH}\n", "body_encoding": "cp1252",
                           "headers": {"Content-Type": "text/markdown; charset=utf-8"}},
    }
    names = [path.rsplit("/", 1)[-1] for path in routes]
    server = serve(make_site(tmp_path / "site", {}, links=tuple(names), routes=routes))
    out = tmp_path / "pages.jsonl"
    result = crawl(f"{server.base_url}/docs/", extra=["-O", str(out)])
    report = checked(result)
    exported = {json.loads(line)["url"].rsplit("/", 1)[-1]: json.loads(line)["markdown"]
                for line in out.read_text().splitlines()}
    for name in names:
        expected = JAPANESE if name == "sjis.html" else FRENCH
        assert expected in exported[name], (name, exported[name][:200])
        assert "\ufffd" not in exported[name], name
    # header utf-8 over cp1252 bytes (HTML and Markdown), and latin-1 declared over UTF-8 bytes
    assert report["counters"]["encoding/redetected"] == 3
    assert report["scrapy"]["docscraper/encoding/redetected"] == 3
    assert "not the utf-8 declared (header)" in result.stderr


# --- hostile sitemaps -------------------------------------------------------------------------------------


def _index(*children: str) -> str:
    body = "".join(f"<sitemap><loc>__BASE__/sm/{child}</loc></sitemap>" for child in children)
    return f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'


def _urlset(*pages: str) -> str:
    body = "".join(f"<url><loc>__BASE__/docs/{page}</loc></url>" for page in pages)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'


def test_hostile_sitemaps_terminate_within_their_caps(tmp_path: Path, serve: Any, crawl: Crawl) -> None:
    pages = {f"{name}.html": f"Listed in a sitemap: {name}." for name in ("p1", "p1b", "p1c", "p2", "p3")}
    root = make_site(tmp_path / "site", {})
    for name, text in pages.items():
        (root / "docs" / name).write_text(html(name, text), encoding="utf-8")
    sm = root / "sm"
    sm.mkdir()
    files = {
        "self.xml": _index("self.xml", "pages1.xml"),           # lists itself
        "a.xml": _index("b.xml"), "b.xml": _index("a.xml", "pages2.xml"),  # list each other
        "deep0.xml": _index("deep1.xml"), "deep1.xml": _index("deep2.xml"),
        "deep2.xml": _index("deep3.xml"), "deep3.xml": _index("pages3.xml"),  # deeper than the cap of 2
        "pages1.xml": _urlset("p1.html", "p1b.html", "p1c.html", "p1d.html"),  # over the 3-URL cap
        "pages2.xml": _urlset("p2.html"),
        "pages3.xml": _urlset("p3.html"),
    }
    for name, text in files.items():
        (sm / name).write_text(text, encoding="utf-8")
    (sm / "bomb.xml.gz").write_bytes(gzip.compress(b"<urlset>" + b" " * (64 * 1024 * 1024) + b"</urlset>", 9))
    robots = "".join(f"Sitemap: __BASE__/sm/{name}\n" for name in ("self.xml", "a.xml", "deep0.xml", "bomb.xml.gz"))
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n\n" + robots)
    server = serve(root)
    started = time.monotonic()
    result = crawl(f"{server.base_url}/docs/", settings={
        "DOCSCRAPER_SITEMAP_MAX_DEPTH": "2", "DOCSCRAPER_SITEMAP_MAX_URLS": "3",
        "DOCSCRAPER_SITEMAP_MAX_BYTES": "1000000"})
    assert time.monotonic() - started < 120
    report = checked(result)
    found = {key for key, item in report["items"].items() if item.get("finder") == "sitemap"}
    assert found == {"p1.html", "p1b.html", "p1c.html", "p2.html"}
    assert server.hits("/docs/p1d.html") == server.hits("/docs/p3.html") == 0
    # every sitemap file was fetched once, however often it was listed
    for name in ("self.xml", "a.xml", "b.xml", "deep0.xml", "deep1.xml", "deep2.xml", "pages1.xml"):
        assert server.hits(f"/sm/{name}") == 1, name
    assert server.hits("/sm/deep3.xml") == 0
    problems = "\n".join(report["discovery"]["sitemap"]["problems"])
    assert "deep2.xml: nested deeper than 2" in problems
    assert "pages1.xml: more than 3 entries" in problems
    assert "bomb.xml.gz: gzip body decompresses to more than 1000000 bytes" in problems
    assert report["result"] == "success"
