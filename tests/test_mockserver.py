"""Tests for the loopback documentation server and the integrity of the fixture site it serves.

The inventory constants below mirror ``tests/site/README.md``; the crawler's tests rely on them.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections import Counter, deque
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import pytest

from tests.mockserver import SITE_ROOT, DocsServer, copy_site

# --- the site's inventory, as documented in tests/site/README.md ------------------------------------------

HTML_PAGES_UNDER_DOCS = 35
ALLOWED_PAGES = 34
ARCHIVE_PAGES = 4
LLMS_FULL_SOURCES = 4
LLMS_ENTRIES = 11
PAGES_XML_URLS = 22
GUIDES_XML_URLS = 10
PAGES_IN_SITEMAPS = 31
CANONICAL_PAGES = 30
OUT_OF_SCOPE_TARGETS = 36
DISALLOWED = {"/docs/private/secret.html"}
LINK_ONLY = {
    "/docs/guide/troubleshooting.html",
    "/docs/guide/advanced/tuning.html",
    "/docs/guide/advanced/plugins.html",
}
DEPTHS = {0: 1, 1: 8, 2: 23, 3: 1, 4: 1}
FIRST_FINDER = {"llms-full": 4, "llms": 7, "sitemap": 20, "link": 3}

# Links that point nowhere on purpose.
INTENTIONAL_404 = {"/docs/missing-page.html"}
EXTERNAL_HOSTS = {"example.com"}
NON_HTTP = ("mailto:",)

FACTS = {
    "74201": "docs/guide/deployment.html",
    "24 hours after": "docs/reference/api/pagination.html",
    "18,000 events per second": "docs/guide/advanced/tuning.html",
    "acme_relay.plugins": "docs/guide/advanced/plugins.html",
    "RELAY_TELEMETRY": "docs/faq.html",
    "4096 characters": "docs/guide/filters.html",
    "storage backend unreachable": "docs/reference/cli.html",
    "the sink could not be reached": "docs/reference/api/errors.html",
    "old one valid for 24": "docs/guide/security.html",
    "14 days": "docs/guide/delivery.html",
    "Python 3.8": "docs/archive/v1/install.html",
    "UID 10001": "docs/getting-started/install.html",
    "600 requests per minute": "docs/reference/api/index.html",
    "10,000 log lines": "docs/guide/troubleshooting.html",
    "50 milliseconds": "docs/guide/transforms.html",
    "more than 64 sinks": "docs/changelog.html",
    "rk_admin_": "docs/private/secret.html",
}

FAKE_BASE = "http://site.test"


# --- helpers ------------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def fetch(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with _opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers.items()), exc.read()


def raw_get(server: DocsServer, path: str) -> tuple[int, bytes]:
    """GET a path verbatim (urllib would not normalize it either, but be explicit)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.canonical: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "a" and attr.get("href") is not None:
            self.hrefs.append(attr["href"] or "")
        elif tag == "img" and attr.get("src"):
            self.hrefs.append(attr["src"] or "")
        elif tag == "link" and attr.get("rel") == "canonical":
            self.canonical = attr.get("href")


def _read(rel: str) -> str:
    return (SITE_ROOT / rel).read_text(encoding="utf-8").replace("__BASE__", FAKE_BASE)


def _parse(rel: str) -> _Links:
    parser = _Links()
    parser.feed(_read(rel))
    parser.close()
    return parser


def _routes() -> dict[str, dict[str, object]]:
    routes: dict[str, dict[str, object]] = json.loads((SITE_ROOT / "_routes.json").read_text(encoding="utf-8"))
    return routes


def _resolve(url: str) -> tuple[int | str, str]:
    """What the server would finally answer for *url*, statically: (status | "external", final path)."""
    routes = _routes()
    for _ in range(10):
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != FAKE_BASE:
            return "external", url
        path = parts.path
        if path in routes:
            route = routes[path]
            if route["status"] in (301, 302, 307, 308):
                url = str(route["location"]).replace("__BASE__", FAKE_BASE)
                continue
            return int(route["status"]), path  # type: ignore[call-overload]
        target = SITE_ROOT / path.lstrip("/")
        if target.is_dir():
            if not path.endswith("/"):
                url = FAKE_BASE + path + "/"
                continue
            target = target / "index.html"
        if target.is_file():
            return 200, "/" + target.relative_to(SITE_ROOT).as_posix()
        if target.suffix == ".gz" and target.with_suffix("").is_file():
            return 200, path
        return 404, path
    raise AssertionError(f"redirect loop at {url}")


def _html_files(under: str = "docs") -> list[str]:
    return sorted(p.relative_to(SITE_ROOT).as_posix() for p in (SITE_ROOT / under).rglob("*.html"))


def _locs(xml_text: str) -> list[str]:
    root = ET.fromstring(xml_text)
    return [el.text.strip() for el in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc") if el.text]


def _as_page(url: str) -> str:
    status, final = _resolve(url.replace("__BASE__", FAKE_BASE))
    assert status == 200, f"{url} answers {status}"
    return final[: -len(".md")] if final.endswith(".html.md") else final


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[DocsServer]:
    with DocsServer(SITE_ROOT) as srv:
        yield srv


@pytest.fixture()
def fresh_server() -> Iterator[DocsServer]:
    with DocsServer(SITE_ROOT) as srv:
        yield srv


# --- the server ---------------------------------------------------------------------------------------


def test_base_url_is_loopback_with_the_bound_port(server: DocsServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}"
    assert server.port > 0
    assert server.url("/docs/") == server.base_url + "/docs/"


def test_robots_txt_is_substituted(server: DocsServer) -> None:
    status, headers, body = fetch(server.url("/robots.txt"))
    assert status == 200
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    text = body.decode()
    assert "__BASE__" not in text
    assert f"Sitemap: {server.base_url}/sitemap_index.xml" in text
    assert "Disallow: /docs/private/" in text


def test_html_index_and_substitution(server: DocsServer) -> None:
    status, headers, body = fetch(server.url("/docs/"))
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert body == fetch(server.url("/docs/index.html"))[2]
    assert f'<link rel="canonical" href="{server.base_url}/docs/">'.encode() in body
    assert b"__BASE__" not in body
    assert int(headers["Content-Length"]) == len(body)


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/sitemap_index.xml", "application/xml"),
        ("/docs/llms.txt", "text/plain; charset=utf-8"),
        ("/docs/guide/concepts.html.md", "text/markdown; charset=utf-8"),
        ("/docs/_static/diagram.png", "image/png"),
        ("/docs/_static/theme.css", "text/css; charset=utf-8"),
        ("/docs/downloads/manual.pdf", "application/pdf"),
    ],
)
def test_content_types(server: DocsServer, path: str, content_type: str) -> None:
    status, headers, body = fetch(server.url(path))
    assert status == 200
    assert headers["Content-Type"] == content_type
    assert b"__BASE__" not in body


def test_binary_assets_are_valid_and_untouched(server: DocsServer) -> None:
    png = fetch(server.url("/docs/_static/diagram.png"))[2]
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")
    assert png == (SITE_ROOT / "docs/_static/diagram.png").read_bytes()
    pdf = fetch(server.url("/docs/downloads/manual.pdf"))[2]
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")


def test_markdown_and_llms_files_hold_absolute_urls(server: DocsServer) -> None:
    llms = fetch(server.url("/docs/llms.txt"))[2].decode()
    assert f"({server.base_url}/docs/guide/concepts.html.md)" in llms
    full = fetch(server.url("/docs/llms-full.txt"))[2].decode()
    assert f"Source: {server.base_url}/docs/getting-started/quickstart.html" in full


def test_gzip_on_the_fly_sitemap(server: DocsServer) -> None:
    assert not (SITE_ROOT / "sitemaps/guides.xml.gz").exists()
    index = fetch(server.url("/sitemap_index.xml"))[2].decode()
    assert _locs(index) == [f"{server.base_url}/sitemaps/pages.xml", f"{server.base_url}/sitemaps/guides.xml.gz"]

    status, headers, body = fetch(server.url("/sitemaps/guides.xml.gz"))
    assert status == 200
    assert headers["Content-Type"] == "application/gzip"
    assert "Content-Encoding" not in headers
    xml_text = gzip.decompress(body).decode()
    assert xml_text == fetch(server.url("/sitemaps/guides.xml"))[2].decode()
    locs = _locs(xml_text)
    assert len(locs) == GUIDES_XML_URLS
    assert all(loc.startswith(server.base_url + "/docs/guide/") for loc in locs)
    # Stable bytes, so the ETag does not change between requests.
    assert fetch(server.url("/sitemaps/guides.xml.gz"))[2] == body


def test_gzip_of_a_missing_file_is_404(server: DocsServer) -> None:
    assert fetch(server.url("/sitemaps/nothing.xml.gz"))[0] == 404


def test_etag_and_last_modified_answer_304(server: DocsServer) -> None:
    url = server.url("/docs/faq.html")
    status, headers, body = fetch(url)
    assert status == 200
    etag, last_modified = headers["ETag"], headers["Last-Modified"]
    assert etag == '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    assert last_modified.endswith(" GMT")

    status, headers304, body304 = fetch(url, headers={"If-None-Match": etag})
    assert (status, body304) == (304, b"")
    assert headers304["ETag"] == etag
    assert fetch(url, headers={"If-None-Match": f'"other", W/{etag}'})[0] == 304
    assert fetch(url, headers={"If-Modified-Since": last_modified})[0] == 304

    assert fetch(url, headers={"If-None-Match": '"stale"'})[0] == 200
    # If-None-Match wins over If-Modified-Since.
    assert fetch(url, headers={"If-None-Match": '"stale"', "If-Modified-Since": last_modified})[0] == 200
    assert fetch(url, headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})[0] == 200
    assert fetch(url, headers={"If-Modified-Since": "not a date"})[0] == 200


def test_etag_of_gzip_file_and_304(server: DocsServer) -> None:
    url = server.url("/sitemaps/guides.xml.gz")
    etag = fetch(url)[1]["ETag"]
    assert fetch(url, headers={"If-None-Match": etag})[0] == 304


def test_directory_without_slash_redirects(server: DocsServer) -> None:
    status, headers, _ = fetch(server.url("/docs/guide"))
    assert status == 301
    assert headers["Location"] == server.base_url + "/docs/guide/"
    status, headers, _ = fetch(server.url("/docs/reference?x=1"))
    assert (status, headers["Location"]) == (301, server.base_url + "/docs/reference/?x=1")


def test_directory_without_index_is_404(server: DocsServer) -> None:
    assert fetch(server.url("/docs/_static/"))[0] == 404


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/docs/old-install.html", 301, "/docs/getting-started/install.html"),
        ("/docs/moved-away.html", 301, "/blog/moved.html"),
        ("/docs/retired.html", 410, None),
        ("/docs/flaky.html", 500, None),
        ("/docs/missing-page.html", 404, None),
    ],
)
def test_dynamic_routes_and_errors(server: DocsServer, path: str, status: int, location: str | None) -> None:
    got, headers, body = fetch(server.url(path))
    assert got == status
    assert headers["Content-Type"].startswith("text/html")
    assert body.startswith(b"<!doctype html>")
    if location is None:
        assert "Location" not in headers
    else:
        assert headers["Location"] == server.base_url + location
        assert fetch(headers["Location"])[0] == 200


def test_head_sends_headers_without_body(server: DocsServer) -> None:
    status, headers, body = fetch(server.url("/docs/faq.html"), method="HEAD")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) == len(fetch(server.url("/docs/faq.html"))[2])
    status, _, body = fetch(server.url("/docs/retired.html"), method="HEAD")
    assert (status, body) == (410, b"")


def test_other_methods_are_refused(server: DocsServer) -> None:
    status, headers, _ = fetch(server.url("/docs/"), method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def test_query_strings_are_ignored(server: DocsServer) -> None:
    plain = fetch(server.url("/docs/getting-started/install.html"))
    tracked = fetch(server.url("/docs/getting-started/install.html?utm_source=newsletter&x=1"))
    assert tracked[0] == 200 and tracked[2] == plain[2]
    assert fetch(server.url("/docs/retired.html?v=2"))[0] == 410


@pytest.mark.parametrize(
    "path",
    [
        "/_routes.json",
        "/docs/../_routes.json",
        "/../tests/mockserver.py",
        "/docs/../../mockserver.py",
        "/%2e%2e/mockserver.py",
        "/docs/%2E%2E/%2e%2e/test_mockserver.py",
        "/docs%2F..%2F..%2Fmockserver.py",
        "/docs/..%5c..%5cmockserver.py",
        "/docs/%00.html",
        "/.hidden",
    ],
)
def test_private_and_outside_files_are_never_served(server: DocsServer, path: str) -> None:
    status, body = raw_get(server, path)
    assert status in (400, 404)
    assert b"DocsServer" not in body and b'"status"' not in body


def test_requests_are_recorded_and_counted(fresh_server: DocsServer) -> None:
    assert fresh_server.requests == [] and fresh_server.hits("/") == 0
    fetch(fresh_server.url("/docs/faq.html"))
    fetch(fresh_server.url("/docs/faq.html?utm_source=x"), headers={"If-None-Match": '"abc"'})
    fetch(fresh_server.url("/docs/missing-page.html"), method="HEAD")
    fetch(fresh_server.url("/robots.txt"))

    assert fresh_server.hits("/docs/") == 3
    assert fresh_server.hits("/docs/faq.html") == 2
    assert fresh_server.hits("/docs/faq.html?") == 1
    assert fresh_server.hits("/docs/private/") == 0
    methods_paths = [(method, path) for method, path, _ in fresh_server.requests]
    assert methods_paths == [
        ("GET", "/docs/faq.html"),
        ("GET", "/docs/faq.html?utm_source=x"),
        ("HEAD", "/docs/missing-page.html"),
        ("GET", "/robots.txt"),
    ]
    assert fresh_server.requests[1][2]["If-None-Match"] == '"abc"'
    fresh_server.reset_requests()
    assert fresh_server.hits("/") == 0


def test_server_is_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    with DocsServer(SITE_ROOT) as srv:
        fetch(srv.url("/docs/"))
        fetch(srv.url("/nope"))
        raw_get(srv, "/../x")
        fetch(srv.url("/docs/"), method="POST")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_stop_closes_the_socket() -> None:
    srv = DocsServer(SITE_ROOT).start()
    url = srv.url("/robots.txt")
    assert fetch(url)[0] == 200
    srv.stop()
    with pytest.raises(urllib.error.URLError):
        fetch(url)


def test_copy_site_can_be_edited(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "site")
    assert (root / "docs/index.html").is_file() and (root / "_routes.json").is_file()
    (root / "docs/faq.html").unlink()
    (root / "docs/new.html").write_text("<p>new at __BASE__</p>", encoding="utf-8")
    with DocsServer(root) as srv:
        assert fetch(srv.url("/docs/faq.html"))[0] == 404
        assert fetch(srv.url("/docs/new.html"))[2] == f"<p>new at {srv.base_url}</p>".encode()
        assert fetch(srv.url("/docs/retired.html"))[0] == 410

        routes = json.loads((root / "_routes.json").read_text(encoding="utf-8"))
        routes["/docs/retired.html"] = {"status": 200, "body": "back", "headers": {"X-Base": "__BASE__"}}
        routes["/docs/slow.html"] = {"status": 200, "body": "slow", "delay": 0.05}
        (root / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")
        status, headers, body = fetch(srv.url("/docs/retired.html"))
        assert (status, body, headers["X-Base"]) == (200, b"back", srv.base_url)
        assert fetch(srv.url("/docs/slow.html"))[2] == b"slow"
    assert (SITE_ROOT / "docs/faq.html").is_file()


def test_route_with_times_answers_its_first_requests_only(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "site")
    routes = json.loads((root / "_routes.json").read_text(encoding="utf-8"))
    routes["/docs/glossary.html"] = {"status": 429, "headers": {"Retry-After": "2"}, "times": 2}
    routes["/docs/nowhere.html"] = {"status": 503, "times": 1}
    (root / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")
    with DocsServer(root) as srv:
        url = srv.url("/docs/glossary.html")
        first, second, third = fetch(url), fetch(url), fetch(url)
        assert (first[0], first[1]["Retry-After"]) == (429, "2")
        assert second[0] == 429
        assert third[0] == 200 and b"Glossary" in third[2]
        # once spent, a route is as if it were not there: no file, 404
        assert [fetch(srv.url("/docs/nowhere.html"))[0] for _ in range(2)] == [503, 404]
        assert fetch(srv.url("/docs/retired.html"))[0] == fetch(srv.url("/docs/retired.html"))[0] == 410
        # arrival times, one per request, in order
        assert len(srv.request_times) == len(srv.requests) == 7
        assert srv.request_times == sorted(srv.request_times)
        srv.reset_requests()
        assert srv.request_times == []


def test_routes_serve_hostile_bodies(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "site")
    routes = json.loads((root / "_routes.json").read_text(encoding="utf-8"))
    routes["/latin.html"] = {"body": "<p>café at __BASE__</p>", "body_encoding": "cp1252",
                             "headers": {"Content-Type": "text/html"}}
    routes["/big.txt"] = {"body": "ab", "repeat": 5, "headers": {"Content-Type": "text/plain"}}
    routes["/bomb.html"] = {"body": "0" * 1024, "repeat": 64 * 1024, "gzip": True}
    (root / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")
    with DocsServer(root) as srv:
        status, headers, body = fetch(srv.url("/latin.html"))
        assert (status, headers["Content-Type"]) == (200, "text/html")
        assert body == f"<p>café at {srv.base_url}</p>".encode("cp1252")
        assert fetch(srv.url("/big.txt"))[2] == b"ab" * 5
        # 64 MiB of zeros in a few dozen kilobytes, sent as they are, with their Content-Encoding
        status, headers, body = fetch(srv.url("/bomb.html"))
        assert headers["Content-Encoding"] == "gzip" and int(headers["Content-Length"]) == len(body)
        assert len(body) < 128 * 1024
        assert len(gzip.decompress(body)) == 64 * 1024 * 1024


def test_changed_file_changes_etag(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "site")
    with DocsServer(root) as srv:
        url = srv.url("/docs/glossary.html")
        etag = fetch(url)[1]["ETag"]
        page = root / "docs/glossary.html"
        page.write_text(page.read_text(encoding="utf-8").replace("Sink", "Sink target"), encoding="utf-8")
        status, headers, _ = fetch(url, headers={"If-None-Match": etag})
        assert status == 200 and headers["ETag"] != etag


def test_command_line_serves_the_site() -> None:
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mockserver", "--port", "0"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base_url)
        status, _, body = fetch(base_url + "/robots.txt")
        assert status == 200 and f"Sitemap: {base_url}/sitemap_index.xml".encode() in body
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


# --- the site -----------------------------------------------------------------------------------------


def test_site_has_enough_pages() -> None:
    pages = _html_files()
    assert len(pages) == HTML_PAGES_UNDER_DOCS >= 32


def test_every_page_has_the_theme() -> None:
    for rel in _html_files():
        text = _read(rel)
        assert text.startswith('<!doctype html>\n<html lang="en">'), rel
        for needle in (
            "<title>",
            "<header",
            'aria-label="Navigation"',
            "<main",
            "<article",
            "<footer",
            "Edit this page",
            'class="cookie-banner"',
        ):
            assert needle in text, (rel, needle)


def test_no_accidental_broken_links() -> None:
    problems: list[tuple[str, str, object]] = []
    for rel in _html_files("docs") + _html_files("blog"):
        page_url = FAKE_BASE + "/" + rel
        for href in _parse(rel).hrefs:
            if href.startswith(NON_HTTP):
                continue
            url = urljoin(page_url, href)
            parts = urlsplit(url)
            if f"{parts.scheme}://{parts.netloc}" != FAKE_BASE:
                if parts.hostname not in EXTERNAL_HOSTS:
                    problems.append((rel, href, "unexpected external host"))
                continue
            status, final = _resolve(url.split("#")[0])
            if status != 200:
                if parts.path not in INTENTIONAL_404 and parts.path not in _routes():
                    problems.append((rel, href, status))
                continue
            fragment_target = _read(final.lstrip("/")) if final.endswith(".html") else ""
            if parts.fragment and f'id="{parts.fragment}"' not in fragment_target:
                problems.append((rel, href, "missing fragment target"))
    assert problems == []


def test_discovery_files_point_at_existing_pages() -> None:
    for rel in ("sitemaps/pages.xml", "sitemaps/guides.xml", "sitemap_index.xml"):
        for loc in _locs(_read(rel)):
            assert _resolve(loc)[0] == 200, (rel, loc)
    for source in re.findall(r"^Source: (\S+)$", _read("docs/llms-full.txt"), re.M):
        assert _resolve(source)[0] == 200, source
    for rel in ("docs/llms.txt", "docs/llms-full.txt", "docs/guide/concepts.html.md"):
        # Links inside page bodies may name the intentional 404 and the routes, like the HTML does.
        for target in re.findall(r"\]\((http[^)\s]+)\)", _read(rel)):
            path = urlsplit(target).path
            if target.startswith(FAKE_BASE) and path not in INTENTIONAL_404 and path not in _routes():
                assert _resolve(target.split("#")[0])[0] == 200, (rel, target)


def _finders() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}

    def add(name: str, urls: list[str]) -> None:
        for url in urls:
            if url.startswith(FAKE_BASE + "/docs/"):
                found.setdefault(_as_page(url), set()).add(name)

    add("llms-full", re.findall(r"^Source: (\S+)$", _read("docs/llms-full.txt"), re.M))
    add("llms", re.findall(r"\]\((\S+?)\)", _read("docs/llms.txt")))
    add("sitemap", _locs(_read("sitemaps/pages.xml")) + _locs(_read("sitemaps/guides.xml")))
    return found


def _link_depths() -> dict[str, int]:
    start = _resolve(FAKE_BASE + "/docs/")[1]
    depth = {start: 0}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        if not current.endswith(".html"):
            continue
        for href in _parse(current.lstrip("/")).hrefs:
            if href.startswith(NON_HTTP) or href.startswith("#"):
                continue
            status, final = _resolve(urljoin(FAKE_BASE + current, href).split("#")[0])
            if status == 200 and final.startswith("/docs/") and final not in depth:
                depth[final] = depth[current] + 1
                queue.append(final)
    return {page: d for page, d in depth.items() if page.endswith(".html")}


def test_inventory_matches_the_readme() -> None:
    robots = RobotFileParser()
    robots.parse(_read("robots.txt").splitlines())
    every_page = {"/" + rel for rel in _html_files()}
    depths = _link_depths()
    assert set(depths) == every_page, "every HTML page under docs/ is reachable by links"
    allowed = {p for p in every_page if robots.can_fetch("docscraper", FAKE_BASE + p)}
    assert every_page - allowed == DISALLOWED
    assert len(allowed) == ALLOWED_PAGES
    assert len([p for p in allowed if p.startswith("/docs/archive/")]) == ARCHIVE_PAGES
    assert Counter(depths[p] for p in allowed) == Counter(DEPTHS)

    assert len(re.findall(r"^Source: ", _read("docs/llms-full.txt"), re.M)) == LLMS_FULL_SOURCES
    assert len(re.findall(r"^- \[", _read("docs/llms.txt"), re.M)) == LLMS_ENTRIES
    assert len(_locs(_read("sitemaps/pages.xml"))) == PAGES_XML_URLS
    assert len(_locs(_read("sitemaps/guides.xml"))) == GUIDES_XML_URLS

    finders = _finders()
    assert set(finders) <= allowed
    assert len([p for p, f in finders.items() if "sitemap" in f]) == PAGES_IN_SITEMAPS
    assert allowed - set(finders) == LINK_ONLY
    assert every_page - set(finders) == LINK_ONLY | DISALLOWED
    priority = ["llms-full", "llms", "sitemap", "link"]
    first = Counter(min(finders.get(p, set()) | {"link"}, key=priority.index) for p in allowed)
    assert first == Counter(FIRST_FINDER)

    canonical = [rel for rel in _html_files() if _parse(rel).canonical]
    assert len(canonical) == CANONICAL_PAGES
    for rel in canonical:
        assert _resolve(_parse(rel).canonical or "") == (200, "/" + rel), rel

    outside = set()
    for page in allowed:
        for href in _parse(page.lstrip("/")).hrefs:
            url = urljoin(FAKE_BASE + page, href).split("#")[0]
            if not href.startswith(NON_HTTP) and not url.startswith(FAKE_BASE + "/docs/"):
                outside.add(url)
    assert len(outside) == OUT_OF_SCOPE_TARGETS


def test_link_only_pages_are_linked_from_one_page() -> None:
    linked_from: dict[str, set[str]] = {}
    for rel in _html_files():
        for href in _parse(rel).hrefs:
            if href.startswith(NON_HTTP) or href.startswith("#"):
                continue
            status, final = _resolve(urljoin(FAKE_BASE + "/" + rel, href).split("#")[0])
            if status == 200 and "/" + rel != final:
                linked_from.setdefault(final, set()).add(rel)
    assert linked_from["/docs/guide/advanced/plugins.html"] == {"docs/guide/advanced/tuning.html"}
    assert linked_from["/docs/guide/advanced/tuning.html"] == {"docs/guide/advanced/index.html"}
    assert linked_from["/docs/guide/troubleshooting.html"] == {"docs/faq.html"}
    assert linked_from["/docs/private/secret.html"] == {"docs/reference/api/server.html"}


def test_facts_live_on_exactly_one_page() -> None:
    texts = {rel: (SITE_ROOT / rel).read_text(encoding="utf-8") for rel in _html_files()}
    for needle, page in FACTS.items():
        assert [rel for rel, text in texts.items() if needle in text] == [page], needle
    readme = (SITE_ROOT / "README.md").read_text(encoding="utf-8")
    for needle in FACTS:
        assert f"`{needle}`" in readme
