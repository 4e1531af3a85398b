"""JavaScript rendering (docscraper.crawl.rendering): a single-page application crawled without and with
``-a render=js``, in Debian's Chromium (``/usr/bin/chromium``; ``.ci/run`` installs it).

The fixture pages are written by :func:`write_spa` into each test's copy of the site: their static HTML
is an empty ``<div id="app">`` and a script that builds the article with DOM calls. Without Chromium the
rendering tests fail (they never skip): install it with ``apt-get install -y chromium``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.crawl.rendering import CHROMIUM_ARGS, BrowserConfig, chromium_problem, render_problem, renders_url
from docscraper.crawl.report import load_schema
from docscraper.storage.state import SqlStateStore
from docscraper.urls import normalize_url
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer, copy_site

CHROMIUM = "/usr/bin/chromium"
USER_AGENT_PREFIX = "docscraper/"

# The article an inline script builds: two headings, paragraphs, a code block, and a link that exists
# only once the script ran.
_APP_SCRIPT = """
const app = document.getElementById("app");
const main = document.createElement("main");
const add = (tag, text, parent = main) => {
  const node = document.createElement(tag);
  node.textContent = text;
  parent.appendChild(node);
  return node;
};
add("h1", "Widget rendering guide");
add("p", "The widget engine assembles this paragraph in the browser, after the page loaded.");
add("h2", "Spinning a widget");
add("p", "Call spin with a speed between one and ten revolutions per second.");
const pre = document.createElement("pre");
const code = add("code", "import widget\\nwidget.spin(speed=3)", pre);
code.className = "language-python";
main.appendChild(pre);
const link = add("a", "Read the advanced guide");
link.href = "/spa/advanced.html";
app.appendChild(main);
"""

# An external script file (fetched by Chromium as a subresource) fills the second page.
_ADVANCED_SCRIPT = """
document.addEventListener("DOMContentLoaded", () => {
  const main = document.createElement("main");
  main.innerHTML = "<h1>Advanced widget topics</h1>" +
    "<p>Widgets can be chained into pipelines of arbitrary length by the browser script.</p>";
  document.getElementById("app").appendChild(main);
});
"""


def _shell(title: str, head: str = "", body: str = "") -> str:
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>\n'
        f'<body><div id="app"></div>{body}</body></html>\n'
    )


def write_spa(root: Path) -> None:
    """Add ``/spa/`` to a copy of the fixture site: two script-built pages, one static page, an
    llms.txt and a sitemap (so discovery finds files there, fetched without Chromium)."""
    spa = root / "spa"
    spa.mkdir()
    (spa / "index.html").write_text(_shell("Widget app", body=f"<script>{_APP_SCRIPT}</script>"))
    # a script on the crawler's own network (refused: SSRF) and an image (never fetched by the browser)
    head = '<script src="/spa/advanced.js"></script><script src="http://10.0.0.1/steal.js"></script>'
    (spa / "advanced.html").write_text(_shell("Widget app", head=head, body='<img src="/spa/logo.png">'))
    (spa / "advanced.js").write_text(_ADVANCED_SCRIPT)
    (spa / "static.html").write_text(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Static</title></head><body><main>'
        "<h1>Static widget facts</h1><p>This page is plain HTML and needs no browser to be read at all.</p>"
        '<p><a href="/spa/away.html">The old widget page</a></p></main></body></html>\n'
    )
    routes_path = root / "_routes.json"
    routes = json.loads(routes_path.read_text()) if routes_path.exists() else {}
    routes["/spa/away.html"] = {"status": 301, "location": "__BASE__/blog/moved.html"}  # out of scope
    routes_path.write_text(json.dumps(routes))
    (spa / "llms.txt").write_text("# Widgets\n\n- [Static facts](__BASE__/spa/static.html)\n")
    (spa / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>__BASE__/spa/</loc></url><url><loc>__BASE__/spa/static.html</loc></url></urlset>\n"
    )


@pytest.fixture
def spa(tmp_path: Path) -> Iterator[DocsServer]:
    root = copy_site(tmp_path / "site")
    write_spa(root)
    with DocsServer(root).start() as server:
        yield server


@pytest.fixture
def chromium() -> str:
    """Debian's Chromium: these tests fail, never skip, without it."""
    problem = chromium_problem(CHROMIUM)
    if problem:
        pytest.fail(f"{problem}; the rendering tests need it (.ci/run and the README install it)", pytrace=False)
    return CHROMIUM


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME for the crawl, to show that nothing downloads a browser into its cache."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH", raising=False)
    return path


def _items(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["metadata"]["path"]: row for row in rows}


def _header(headers: dict[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


def _requests(server: DocsServer, path: str) -> list[dict[str, str]]:
    return [headers for _, p, headers in server.requests if p.split("?")[0] == path]


def _by_browser(headers: dict[str, str]) -> bool:
    # Chromium sends Fetch Metadata headers; Scrapy's HTTP/1.1 handler does not.
    return _header(headers, "Sec-Fetch-Mode") is not None


def _playwright_stats(result: CrawlResult) -> dict[str, Any]:
    return {k: v for k, v in result.report["scrapy"].items() if k.startswith("playwright/")}


# -- settings and arguments ------------------------------------------------------------------------------


def test_render_argument_is_js_or_none() -> None:
    assert CrawlArgs.parse({"source": "https://h/docs/"}).render is None
    assert CrawlArgs.parse({"source": "https://h/docs/", "render": "JS"}).render == "js"
    assert CrawlArgs.parse({"source": "https://h/docs/", "render": "none"}).render == "none"
    with pytest.raises(ConfigError, match="render must be js"):
        CrawlArgs.parse({"source": "https://h/docs/", "render": "chrome"})


def config_of(settings: Settings) -> DocscraperConfig:
    return DocscraperConfig.from_settings(settings)


def browser_config(settings: Settings) -> BrowserConfig:
    """How Chromium is launched, from settings parsed as a crawl parses them."""
    return BrowserConfig.from_settings(settings, config_of(settings))


def test_browser_config_launches_the_configured_chromium_quietly() -> None:
    settings = Settings({"DOCSCRAPER_CHROMIUM_PATH": "/opt/chromium/chrome"})
    options = browser_config(settings).launch_options
    assert options["executable_path"] == "/opt/chromium/chrome"
    assert options["headless"] is True
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        assert arg in options["args"]
    assert DocscraperConfig.from_settings(Settings()).chromium_path == CHROMIUM
    # PLAYWRIGHT_LAUNCH_OPTIONS keys win, but may not contradict DOCSCRAPER_CHROMIUM_PATH.
    slow = browser_config(Settings({"PLAYWRIGHT_LAUNCH_OPTIONS": {"slow_mo": 50}})).launch_options
    assert slow["slow_mo"] == 50 and list(slow["args"]) == list(CHROMIUM_ARGS)
    with pytest.raises(ConfigError, match="contradicts DOCSCRAPER_CHROMIUM_PATH"):
        browser_config(Settings({"PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": "/x/chrome"}}))
    with pytest.raises(ConfigError, match="Chromium only"):
        browser_config(Settings({"PLAYWRIGHT_BROWSER_TYPE": "firefox"}))
    with pytest.raises(ConfigError, match="asyncio"):
        browser_config(Settings({"TWISTED_REACTOR": "twisted.internet.pollreactor.PollReactor"}))


def test_missing_chromium_is_reported_with_the_fix(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-chromium")
    problem = render_problem(settings := Settings({"DOCSCRAPER_CHROMIUM_PATH": missing}), config_of(settings))
    assert problem is not None and missing in problem and "apt-get install -y chromium" in problem
    remote = Settings({"DOCSCRAPER_CHROMIUM_PATH": missing, "PLAYWRIGHT_CDP_URL": "ws://h:9222"})
    assert render_problem(remote, config_of(remote)) is None


def test_only_pages_are_rendered() -> None:
    assert renders_url("https://h/docs/")
    assert renders_url("https://h/docs/page.html?x=1")
    for url in ("https://h/docs/page.html.md", "https://h/llms.txt", "https://h/sitemap.xml", "file:///d/a.html",
                "https://h/docs/manual.PDF", "https://h/docs/tour.ipynb", "https://h/docs/notes.docx"):
        assert not renders_url(url)


@pytest.mark.crawl
def test_crawl_with_render_js_exits_2_without_chromium(spa: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    result = crawl(f"{spa.base_url}/spa/", "render=js", check=False,
                   settings={"DOCSCRAPER_CHROMIUM_PATH": str(tmp_path / "no-chromium")})
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: docs spider: render=js: Chromium not found at "), errors
    assert "apt-get install -y chromium" in errors[0]
    assert "Traceback" not in result.stderr
    assert spa.requests == []  # nothing was fetched


# -- whole crawls ----------------------------------------------------------------------------------------


@pytest.mark.crawl
def test_hash_routes_are_reported_not_crawled(spa: DocsServer, crawl: Crawl) -> None:
    """A hash-routed app (docsify) shows its pages at #/...: one URL is one page, so the report says so."""
    (spa.root / "spa" / "hashed.html").write_text(
        '<!doctype html><html><head><title>Hashed</title></head><body><main><h1>Hashed</h1>'
        '<p>The widget manual, one route per chapter, in a single document.</p>'
        '<a href="#/install">Install</a> <a href="#!/spin">Spin</a> <a href="hashed.html#/install">Again</a>'
        '<a href="#spinning">A plain anchor</a> <a href="#/">Home route</a></main></body></html>\n')
    result = crawl(f"{spa.base_url}/spa/hashed.html")
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["counters"]["hash_route_pages"] == 1
    assert report["items"]["hashed.html"]["hint"].startswith("2 links are client-side hash routes (#/...)")
    assert "hint" not in report["items"]["static.html"]
    assert not [key for key in report["items"] if "#" in key]


@pytest.mark.crawl
def test_static_crawl_reports_pages_that_need_rendering(spa: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    out = tmp_path / "items.jsonl"
    result = crawl(f"{spa.base_url}/spa/", extra=["-O", str(out)])
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["render"] == "none"
    items = _items(out)
    assert items["./"]["markdown"] == ""  # the static HTML has no content: it is all built by the script
    assert "Widget rendering guide" not in out.read_text()
    assert "advanced.html" not in report["items"]  # linked only from the script's output
    assert report["counters"]["needs_rendering"] == 1
    hint = report["items"]["./"]["hint"]
    assert "-a render=js" in hint
    assert "hint" not in report["items"]["static.html"]
    assert result.keys("skipped", "redirectOutOfScope") == {"away.html"}
    assert "page has scripts but no static content" in result.stderr
    # No browser was started, nor even Playwright's driver: every request is Scrapy's.
    assert _playwright_stats(result) == {}
    assert "scrapy-playwright" not in result.stderr
    assert not any(_by_browser(headers) for _, _, headers in spa.requests)


@pytest.mark.crawl
@pytest.mark.render
def test_render_js_crawls_the_script_built_content(spa: DocsServer, crawl: Crawl, chromium: str, home: Path,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "items.jsonl"
    result = crawl(f"{spa.base_url}/spa/", "render=js", extra=["-O", str(out)])
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["render"] == "js"
    assert report["result"] == "success", report["resultReason"]
    items = _items(out)
    assert set(items) == {"./", "advanced.html", "static.html"}
    markdown = items["./"]["markdown"]
    assert items["./"]["title"] == "Widget rendering guide"
    assert "# Widget rendering guide" in markdown
    assert "## Spinning a widget" in markdown
    assert "assembles this paragraph in the browser" in markdown
    assert "```python\nimport widget\nwidget.spin(speed=3)\n```" in markdown
    # found through the link the script built; filled by an external script file
    assert "# Advanced widget topics" in items["advanced.html"]["markdown"]
    assert items["advanced.html"]["metadata"]["depth"] == 1
    # rendered pages carry no validators: the shell's ETag says nothing about the scripts' output
    assert all(item["metadata"]["etag"] is None for item in items.values())
    assert report["counters"]["rendered_pages"] == 4  # away.html too, which led out of scope
    assert "needs_rendering" not in report["counters"]
    assert not any("hint" in entry for entry in report["items"].values())
    stats = _playwright_stats(result)
    assert stats["playwright/browser_count"] == 1
    assert report["scrapy"]["docscraper/render/skipped/image"] == 1  # the <img> was not fetched
    assert report["scrapy"]["docscraper/render/refused"] == 1  # nor the script on 10.0.0.1
    # Chromium followed the redirect; the page it reached is out of scope and not used
    assert result.keys("skipped", "redirectOutOfScope") == {"away.html"}

    # Discovery stayed plain HTTP, with docscraper's User-Agent; Chromium fetched the pages only.
    for path in ("/robots.txt", "/spa/llms.txt", "/spa/sitemap.xml"):
        requests = _requests(spa, path)
        assert requests, path
        for headers in requests:
            assert not _by_browser(headers), (path, headers)
            assert (_header(headers, "User-Agent") or "").startswith(USER_AGENT_PREFIX)
    browser_paths = {p.split("?")[0] for _, p, headers in spa.requests if _by_browser(headers)}
    assert browser_paths == {"/spa/", "/spa/advanced.html", "/spa/static.html", "/spa/advanced.js",
                             "/spa/away.html", "/blog/moved.html"}
    for path in ("/spa/", "/spa/advanced.html", "/spa/static.html"):
        (headers,) = _requests(spa, path)
        assert _header(headers, "Sec-Fetch-Mode") == "navigate"
        assert (_header(headers, "User-Agent") or "").startswith(USER_AGENT_PREFIX)
        assert _header(headers, "If-None-Match") is None
    assert _requests(spa, "/spa/logo.png") == []
    # Debian's Chromium was used: nothing was downloaded into Playwright's browser cache.
    assert not (home / ".cache" / "ms-playwright").exists()
    assert not (Path(os.path.expanduser("~")) / ".cache" / "ms-playwright").exists()

    # Again: rendered pages are fetched in full (no If-None-Match), and found unchanged by their hash.
    spa.reset_requests()
    again = crawl(f"{spa.base_url}/spa/", "render=js")
    assert again.stats["success.unchanged"] == 3, again.report["items"]
    for path in ("/spa/", "/spa/advanced.html", "/spa/static.html"):
        (headers,) = _requests(spa, path)
        assert _header(headers, "If-None-Match") is None and _header(headers, "If-Modified-Since") is None
    assert "not_modified" not in again.report["counters"]


@pytest.mark.crawl
@pytest.mark.render
def test_stored_render_renders_the_source_and_render_none_overrides(spa: DocsServer, crawl: Crawl, chromium: str,
                                                                   home: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    try:
        store.ensure_source("widgets", normalize_url(f"{spa.base_url}/spa/"),
                            {"prefix": f"{spa.base_url}/spa/", "max_pages": 2, "render": "js"}, registered=True)
    finally:
        store.close()

    rendered = crawl("widgets")
    assert rendered.report["render"] == "js"
    assert rendered.report["counters"]["rendered_pages"] == 2
    assert any(_by_browser(headers) for headers in _requests(spa, "/spa/"))

    spa.reset_requests()
    plain = crawl("widgets", "render=none")
    assert plain.report["render"] == "none"
    assert plain.report["counters"]["needs_rendering"] == 1
    assert not any(_by_browser(headers) for _, _, headers in spa.requests)
    assert _playwright_stats(plain) == {}


@pytest.mark.crawl
def test_stored_render_without_chromium_closes_the_run(spa: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    try:
        store.ensure_source("widgets", normalize_url(f"{spa.base_url}/spa/"),
                            {"prefix": f"{spa.base_url}/spa/", "render": "js"}, registered=True)
    finally:
        store.close()
    result = crawl("widgets", check=False, settings={"DOCSCRAPER_CHROMIUM_PATH": str(tmp_path / "no-chromium")})
    assert result.returncode == 1
    assert "cannot render source widgets: Chromium not found at" in result.stderr
    assert "render_unavailable" in result.stderr
    assert "Traceback" not in result.stderr
    assert [path for _, path, _ in spa.requests] == []


@pytest.mark.crawl
@pytest.mark.render
def test_rendered_redirects_to_the_crawlers_network_are_refused(spa: DocsServer, crawl: Crawl, chromium: str,
                                                                 home: Path, tmp_path: Path) -> None:
    """Playwright routes only a redirect's first request, so the hops Chromium follows are judged when the page
    comes back: one through ``localhost`` (a loopback name the source does not trust) to a page in scope, and one
    to a name that Chromium, unlike the guard, resolves to a loopback address (DNS rebinding, played by Chromium's
    own ``--host-resolver-rules``). Both pages are refused as ``blockedAddress``; what they reached is not used."""
    spa_dir = spa.root / "spa"
    static = spa_dir / "static.html"
    static.write_text(static.read_text().replace(
        "</main>", '<p><a href="/spa/hop.html">Hop</a> <a href="/spa/rebind.html">Rebind</a></p></main>'))
    for name in ("landing", "landing2"):
        (spa_dir / f"{name}.html").write_text(
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Landed</title></head><body><main>'
            f"<h1>Landed on {name}</h1><p>The crawler's own network answered this page through a redirect.</p>"
            "</main></body></html>\n")
    routes_path = spa.root / "_routes.json"
    routes = json.loads(routes_path.read_text())
    routes["/spa/hop.html"] = {"status": 302, "location": f"http://localhost:{spa.port}/spa/inner.html"}
    routes["/spa/inner.html"] = {"status": 302, "location": "__BASE__/spa/landing.html"}
    routes["/spa/rebind.html"] = {"status": 302, "location": f"http://rebind.test:{spa.port}/spa/landing2.html"}
    routes_path.write_text(json.dumps(routes))
    launch = {"args": [*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"]}

    out = tmp_path / "items.jsonl"
    result = crawl(f"{spa.base_url}/spa/", "render=js", extra=["-O", str(out)],
                   settings={"PLAYWRIGHT_LAUNCH_OPTIONS": json.dumps(launch)})
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["result"] == "success", report["resultReason"]
    assert result.keys("skipped", "blockedAddress") == {"hop.html", "rebind.html"}
    items = report["items"]
    assert items["hop.html"]["detail"] == (
        f"redirects to http://localhost:{spa.port}/spa/inner.html: localhost resolves to 127.0.0.1 (loopback)")
    assert items["rebind.html"]["detail"] == (
        f"http://rebind.test:{spa.port}/spa/landing2.html: Chromium connected to 127.0.0.1: "
        "rebind.test resolves to 127.0.0.1 (loopback)")
    assert report["scrapy"]["docscraper/ssrf/refused"] == 2
    # Chromium did follow both (the gap that remains: a hop's request goes out), but nothing it reached is kept
    # (Chromium sends no Fetch Metadata to a plain-http name like rebind.test; only it asked for landing2.html)
    assert any(_by_browser(headers) for headers in _requests(spa, "/spa/inner.html"))
    assert _requests(spa, "/spa/landing2.html")
    assert "Landed on" not in out.read_text()
    assert set(_items(out)) == {"./", "advanced.html", "static.html"}
    assert result.keys("skipped", "redirectOutOfScope") == {"away.html"}
