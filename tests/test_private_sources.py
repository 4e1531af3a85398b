"""Private sources (DESIGN rule 9): the fixture site served on loopback behind a bearer header, HTTP basic auth
and a cookie; crawled, recrawled, refused; a redirect and a rendered page's script to another loopback origin
that record what they receive; every file under the data directory, the log at DEBUG level and the output
searched for each secret. Unit tests of the credentials themselves are in test_credentials.py."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from docscraper.crawl.rendering import chromium_problem
from docscraper.storage.state import SqlStateStore
from docscraper.urls import page_id
from tests.conftest import Crawl
from tests.mockserver import DocsServer
from tests.test_crawl import ALLOWED_PAGES
from tests.test_secrets import process_list

TOKEN = "bearer-secret-4d8e1f2a9c"
API_KEY = "api-key-secret-77b3e0c5"
PASSWORD = "basic-pass-secret-5a1c9e"
COOKIE = "cookie-secret-c0ffee1234"
BASIC = base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
SECRETS = (TOKEN, API_KEY, PASSWORD, COOKIE, BASIC)
DEBUG = {"LOG_LEVEL": "DEBUG"}


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def _files_leaking(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            names = _leaks(path.read_bytes().decode("utf-8", errors="replace"))
            if names:
                found[str(path.relative_to(folder))] = names
    return found


def _header(headers: dict[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


def _pages(data_dir: Path) -> dict[str, str]:
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    try:
        summary = store.list_sources()
        assert summary, "no source stored"
        return {rec.page_id: rec.status for rec in store.load_pages(summary[0].source.id).values()}
    finally:
        store.close()


def _stored_scope(data_dir: Path) -> dict[str, object]:
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    try:
        return dict(store.list_sources()[0].source.scope)
    finally:
        store.close()


def _secrets_dir(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o700)
    for name, text in files.items():
        path = folder / name.replace("_", "-")
        path.write_text(text)
        path.chmod(0o600)
    return folder


def test_bearer_source_crawls_recrawls_and_leaks_nothing(site: DocsServer, crawl: Crawl, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    site.require("Authorization", f"Bearer {TOKEN}")
    monkeypatch.setenv("DOCS_HEADERS", f"Authorization: Bearer {TOKEN}\nX-Api-Key: {API_KEY}")
    mirror = tmp_path / "mirror"
    first = crawl(f"{site.base_url}/docs/", "auth_headers=env:DOCS_HEADERS", f"save_dir={mirror}", settings=DEBUG)
    assert first.keys("failed") == {"flaky.html"}  # the fixture's page that answers 500
    assert first.stats["success.new"] == ALLOWED_PAGES
    # every request reached the site with the credentials: robots.txt, llms.txt, sitemaps and pages
    paths = {path.split("?")[0] for _, path, _ in site.requests}
    assert {"/robots.txt", "/docs/llms.txt", "/docs/index.html"} <= paths or "/docs/" in paths
    assert all(_header(h, "Authorization") == f"Bearer {TOKEN}" and _header(h, "X-Api-Key") == API_KEY
               for _, _, h in site.requests)
    # the source stores where the secret is kept, never the secret
    assert _stored_scope(first.data_dir)["auth"] == {"headers": "env:DOCS_HEADERS"}

    # a recrawl by URL uses the stored reference (no -a auth_headers): everything unchanged
    site.reset_requests()
    second = crawl(f"{site.base_url}/docs/", settings=DEBUG)
    assert second.keys("failed") == {"flaky.html"}
    assert second.stats["success.unchanged"] == ALLOWED_PAGES
    assert site.requests and all(_header(h, "Authorization") == f"Bearer {TOKEN}" for _, _, h in site.requests)

    for result in (first, second):
        assert not _leaks(result.stdout + result.stderr), "a secret reached the crawl's output or log"
    assert "Authorization" in first.stderr or "headers from env:DOCS_HEADERS" in first.stderr
    assert not _files_leaking(first.data_dir)
    assert not _files_leaking(mirror)
    assert list(mirror.rglob("*.md"))


def test_expired_credentials_are_one_error_and_keep_every_page(site: DocsServer, crawl: Crawl,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    site.require("Authorization", f"Bearer {TOKEN}")
    monkeypatch.setenv("DOCS_HEADERS", f"Authorization: Bearer {TOKEN}")
    first = crawl(f"{site.base_url}/docs/", "auth_headers=env:DOCS_HEADERS")
    assert first.stats["success.new"] == ALLOWED_PAGES
    before = _pages(first.data_dir)

    site.require("Authorization", "Bearer a-new-token-the-crawler-lacks")  # the token expired
    site.reset_requests()
    expired = crawl(f"{site.base_url}/docs/", check=False, settings=DEBUG)
    assert expired.returncode == 1
    assert "HTTP 401 at the seed" in expired.stderr
    assert "credentials (headers from env:DOCS_HEADERS) were refused or have expired" in expired.stderr
    report = expired.report
    assert report["result"] == "aborted" and report["closeReason"] == "unauthorized"
    assert "HTTP 401 at the seed" in report["resultReason"]
    assert report["stats"]["success.removed"] == 0
    # nothing was fetched beyond the seed (and the robots.txt the seed's request asked first)
    assert {path for _, path, _ in site.requests} <= {"/robots.txt", "/docs/"}
    assert _pages(first.data_dir) == before
    assert not _leaks(expired.stdout + expired.stderr)


def test_seed_that_needs_credentials_is_a_clear_error(site: DocsServer, crawl: Crawl) -> None:
    site.require("Authorization", f"Bearer {TOKEN}")
    result = crawl(f"{site.base_url}/docs/", check=False)
    assert result.returncode == 1
    assert "HTTP 401 at the seed" in result.stderr
    assert "-a auth_headers=env:NAME" in result.stderr
    assert result.report["result"] == "aborted"
    assert _pages(result.data_dir) == {}


def test_a_page_answering_401_is_a_failure_that_removes_nothing(site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/")
    assert first.stats["success.new"] == ALLOWED_PAGES
    routes = site.root / "_routes.json"
    table = json.loads(routes.read_text())
    table["/docs/changelog.html"] = {"status": 403}
    table["/docs/glossary.html"] = {"status": 401}
    routes.write_text(json.dumps(table))
    for _ in range(2):
        again = crawl(f"{site.base_url}/docs/")
        assert again.report["result"] == "partial"
        assert again.keys("failed", "unauthorized") == {"changelog.html", "glossary.html"}
        assert again.keys("failed", "httpError") == {"flaky.html"}
        assert again.report["stats"]["success.removed"] == 0
        pages = _pages(again.data_dir)
        for path in ("changelog.html", "glossary.html"):
            assert pages[page_id(f"{site.base_url}/docs/{path}")] == "active"
        assert list(pages.values()).count("active") == ALLOWED_PAGES


def test_basic_auth_source_registered_with_a_secrets_file(site: DocsServer, crawl: Crawl, command: Crawl,
                                                          tmp_path: Path) -> None:
    folder = _secrets_dir(tmp_path, docs_basic=f"reader:{PASSWORD}\n")
    settings = {"DOCSCRAPER_SECRETS_DIR": str(folder), **DEBUG}
    site.require("Authorization", f"Basic {BASIC}")
    # without credentials the probe says what is missing, and nothing is stored
    refused = command("sources", "add", "open", f"{site.base_url}/docs/", settings=settings, check=False)
    assert refused.returncode != 0
    assert "HTTP 401" in refused.stderr and "--auth-basic" in refused.stderr
    added = command("sources", "add", "intranet", f"{site.base_url}/docs/", "--auth-basic", "file:docs-basic",
                    settings=settings)
    assert "basic from file:docs-basic" in added.stdout
    shown = command("sources", "show", "intranet", "--json", settings=settings)
    assert json.loads(shown.stdout)["scope"]["auth"] == {"basic": "file:docs-basic"}
    site.reset_requests()
    result = crawl("intranet", settings=settings)
    assert result.keys("failed") == {"flaky.html"}
    assert result.stats["success.new"] == ALLOWED_PAGES
    assert all(_header(h, "Authorization") == f"Basic {BASIC}" for _, _, h in site.requests)
    for output in (refused, added, shown, result):
        assert not _leaks(output.stdout + output.stderr)
    assert not _files_leaking(result.data_dir)
    # a secrets file others may read is refused before anything is fetched
    (folder / "docs-basic").chmod(0o644)
    site.reset_requests()
    loose = crawl("intranet", settings=settings, check=False)
    assert loose.returncode == 1 and "chmod 600" in loose.stderr
    assert site.requests == []


def test_cookie_jar_source(site: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    expires = int(time.time()) + 86400
    jar = ("# Netscape HTTP Cookie File\n"
           f"127.0.0.1\tFALSE\t/\tFALSE\t{expires}\tsid\t{COOKIE}\n"
           f"#HttpOnly_127.0.0.1\tFALSE\t/docs\tFALSE\t0\ttheme\tdark\n")
    folder = _secrets_dir(tmp_path, cookies_txt=jar)
    site.require("Cookie", f"sid={COOKIE}")
    result = crawl(f"{site.base_url}/docs/", "auth_cookies=file:cookies-txt",
                   settings={"DOCSCRAPER_SECRETS_DIR": str(folder), **DEBUG})
    assert result.keys("failed") == {"flaky.html"}
    assert result.stats["success.new"] == ALLOWED_PAGES
    cookies = [_header(h, "Cookie") or "" for _, path, h in site.requests if path.startswith("/docs/")]
    assert cookies and all(f"sid={COOKIE}" in c and "theme=dark" in c for c in cookies)
    assert not _leaks(result.stdout + result.stderr)
    assert not _files_leaking(result.data_dir)


def test_another_origin_gets_no_credentials(site: DocsServer, crawl: Crawl, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A redirect from the private site to another loopback origin (same host, another port: the cookie rules
    would send a cookie there) carries none of them, even where the crawl follows it."""
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "landing.html").write_text("<html><head><title>Elsewhere</title></head><body><main>"
                                              "<h1>Elsewhere</h1><p>Another origin's page.</p></main></body></html>")
    with DocsServer(other_root).start() as other:
        routes = site.root / "_routes.json"
        table = json.loads(routes.read_text())
        table["/docs/moved.html"] = {"status": 302, "location": other.url("/landing.html")}
        routes.write_text(json.dumps(table))
        index = site.root / "docs" / "index.html"
        index.write_text(index.read_text().replace("</body>", '<a href="moved.html">Moved</a></body>'))
        site.require("X-Api-Key", API_KEY)
        monkeypatch.setenv("DOCS_HEADERS", f"Authorization: Bearer {TOKEN}\nX-Api-Key: {API_KEY}")
        monkeypatch.setenv("DOCS_COOKIES", f"sid={COOKIE}")
        args = ("auth_headers=env:DOCS_HEADERS", "auth_cookies=env:DOCS_COOKIES")
        # the scope refuses the hop to another origin before it is fetched
        scoped = crawl(f"{site.base_url}/docs/", *args, settings=DEBUG)
        assert "moved.html" in scoped.keys("skipped", "redirectOutOfScope")
        assert all(not _leaks(json.dumps(h)) for _, _, h in other.requests)
        # with the redirect scope off, the hop is fetched: without a credential
        followed = crawl(f"{site.base_url}/docs/", *args, settings={"DOCSCRAPER_REDIRECT_SCOPE_ENABLED": "0", **DEBUG})
        landing = [h for _, path, h in other.requests if path == "/landing.html"]
        assert landing, "the redirect was not followed"
        for headers in other.requests:
            assert not _leaks(json.dumps(headers[2])), headers
            assert _header(headers[2], "Authorization") is None and _header(headers[2], "X-Api-Key") is None
            assert f"sid={COOKIE}" not in (_header(headers[2], "Cookie") or "")
        assert followed.report["scrapy"]["docscraper/credentials/stripped"] >= 1
        assert all(_header(h, "X-Api-Key") == API_KEY for _, _, h in site.requests)
        for result in (scoped, followed):
            assert not _leaks(result.stdout + result.stderr)
            assert not _files_leaking(result.data_dir)


def test_rendered_pages_send_credentials_to_their_origin_only(site: DocsServer, crawl: Crawl, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """render=js: Chromium's navigation and the page's same-origin script get the credentials; a script from
    another loopback origin and a redirect hop there get none. With cookies, the source's host on another port
    (where Chromium's jar would send them) is not fetched at all."""
    problem = chromium_problem("/usr/bin/chromium")
    if problem:
        pytest.fail(f"{problem}; the rendering tests need it", pytrace=False)
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "widget.js").write_text("document.getElementById('extra').textContent = 'From elsewhere.';")
    (other_root / "landing.html").write_text("<html><head><title>Elsewhere</title></head><body><main><h1>Elsewhere"
                                              "</h1><p>Another origin.</p></main></body></html>")
    with DocsServer(other_root).start() as other:
        app = site.root / "app"
        app.mkdir()
        (app / "local.js").write_text(
            "document.addEventListener('DOMContentLoaded', () => {"
            "document.getElementById('app').innerHTML = '<h1>Private widget guide</h1>"
            "<p>Rendered behind the token, with the script of its own origin.</p>'; });")
        (app / "index.html").write_text(
            "<!doctype html><html><head><title>Private widget guide</title>"
            "<script src=\"local.js\"></script>"
            f"<script src=\"{other.url('/widget.js')}\"></script></head>"
            "<body><div id=\"app\"></div><p id=\"extra\"></p><a href=\"moved.html\">Moved</a></body></html>")
        routes = site.root / "_routes.json"
        table = json.loads(routes.read_text())
        table["/app/moved.html"] = {"status": 302, "location": other.url("/landing.html")}
        routes.write_text(json.dumps(table))
        site.require("Authorization", f"Basic {BASIC}")
        monkeypatch.setenv("DOCS_BASIC", f"reader:{PASSWORD}")
        monkeypatch.setenv("DOCS_HEADERS", f"X-Api-Key: {API_KEY}")
        monkeypatch.setenv("DOCS_COOKIES", f"sid={COOKIE}")
        # header credentials are not given to Chromium, which carries a request's headers across redirects
        refused = crawl(f"{site.base_url}/app/", "render=js", "auth_headers=env:DOCS_HEADERS", check=False)
        assert refused.returncode == 1
        assert "cannot be given to Chromium safely" in refused.stderr and "X-Api-Key" in refused.stderr
        out = tmp_path / "items.jsonl"
        result = crawl(f"{site.base_url}/app/", "render=js", "max_depth=1", "auth_basic=env:DOCS_BASIC",
                       settings=DEBUG, extra=["-O", str(out)])
        items = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        assert "Rendered behind the token" in items[0]["markdown"]
        # Chromium answered the site's 401 challenge with the source's basic auth
        browser = [(path, h) for _, path, h in site.requests if _header(h, "Sec-Fetch-Mode") is not None]
        authorized = {path for path, h in browser if _header(h, "Authorization") == f"Basic {BASIC}"}
        assert authorized >= {"/app/", "/app/local.js", "/app/moved.html"}
        # the other origin was asked for its script and the redirect's target: with no credential
        assert {path for _, path, _ in other.requests} == {"/widget.js", "/landing.html"}
        for _, path, headers in other.requests:
            assert not _leaks(json.dumps(headers)), (path, headers)
            assert _header(headers, "Authorization") is None

        other.reset_requests()
        site.reset_requests()
        with_cookies = crawl(f"{site.base_url}/app/", "render=js", "max_depth=0", "auth_basic=env:DOCS_BASIC",
                             "auth_cookies=env:DOCS_COOKIES", "full=1", settings=DEBUG)
        browser = [(path, h) for _, path, h in site.requests if _header(h, "Sec-Fetch-Mode") is not None]
        assert {path for path, _ in browser} >= {"/app/", "/app/local.js"}
        for path, headers in browser:
            assert f"sid={COOKIE}" in (_header(headers, "Cookie") or ""), (path, headers)
        assert other.requests == []  # 127.0.0.1 on another port: Chromium's jar would have sent the cookie
        assert with_cookies.report["scrapy"]["docscraper/credentials/refused"] >= 1
        for output in (refused, result, with_cookies):
            assert not _leaks(output.stdout + output.stderr)
            assert not _files_leaking(output.data_dir)


def test_background_crawl_and_server_keep_values_to_themselves(site: DocsServer, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's client may name only the references the operator allowed; the answers hold names, and the
    crawl the server starts in the background gets the value through its environment, never its command line."""
    from mcp.server.mcpserver.exceptions import ToolError
    from scrapy.settings import Settings

    from docscraper.config import DocscraperConfig
    from docscraper.ops.launch import start_crawl
    from docscraper.ops.mcp_server import DocsTools

    site.require("Authorization", f"Bearer {TOKEN}")
    monkeypatch.setenv("DOCS_HEADERS", f"Authorization: Bearer {TOKEN}")
    data_dir = tmp_path / "data"
    monkeypatch.setenv("DOCSCRAPER_DATA_DIR", str(data_dir))  # the background crawl's
    config = DocscraperConfig.from_settings(Settings({
        "DOCSCRAPER_DATA_DIR": str(data_dir), "DOCSCRAPER_SSRF_ALLOWED_HOSTS": "127.0.0.1",
        "DOCSCRAPER_SERVER_CREDENTIALS": "env:DOCS_HEADERS", "DOCSCRAPER_INDEX_ENABLED": "0"}))
    tools = DocsTools(config)
    with pytest.raises(ToolError, match="not allowed for this server's clients"):
        tools.add_source("nosy", site.url("/docs/"), auth_headers="env:HOME")
    with pytest.raises(ToolError) as caught:
        tools.add_source("nosy", site.url("/docs/"), auth_basic=f"reader:{PASSWORD}")
    assert PASSWORD not in str(caught.value)
    answer = tools.add_source("private", site.url("/docs/"), auth_headers="env:DOCS_HEADERS")
    assert answer["source"]["scope"]["auth"] == {"headers": "env:DOCS_HEADERS"}
    assert answer["probe"]["status"] == 200
    assert not _leaks(json.dumps(answer))

    site.hold("/docs/changelog.html")
    try:
        started = start_crawl(config, "private", settings={"DOCSCRAPER_INDEX_ENABLED": "0",
                                                          "DOCSCRAPER_SSRF_ALLOWED_HOSTS": "127.0.0.1"})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and site.hits("/docs/changelog.html") == 0:
            time.sleep(0.1)
        listing = process_list()
    finally:
        site.release("/docs/changelog.html")
    assert started["started"] and site.hits("/docs/changelog.html") >= 1
    assert f"{started['pid']}" and "source=private" in listing
    assert not _leaks(listing)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(data_dir.glob("runs/private/crawl-metadata.json")):
        time.sleep(0.2)
    report = json.loads((data_dir / "runs" / "private" / "crawl-metadata.json").read_text())
    assert report["result"] == "partial" and set(report["items"]) >= {"changelog.html", "./"}
    assert not _files_leaking(data_dir)  # the state, the report and the crawl's log under logs/
