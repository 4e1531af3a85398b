"""robots.txt per RFC 9309 (docscraper.crawl.robots): the middleware on hand-made answers, then whole crawls of
the fixture site with robots.txt answering 503, 404, 401, 403, redirects or nothing at all."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import jsonschema
import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest, NotConfigured
from scrapy.http import Request, TextResponse
from scrapy.robotstxt import ProtegoRobotParser, PythonRobotParser
from scrapy.utils.test import get_crawler

from docscraper import USER_AGENT, __version__
from docscraper.crawl.report import load_schema, summarize
from docscraper.crawl.robots import RobotsDenied, RobotsTxtMiddleware
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

T = TypeVar("T")

ALLOWED_PAGES = 35  # tests/site/README.md
ALL_PAGES = 36  # ... and the page robots.txt disallows

ROBOTS = b"""\
User-agent: docscraper
Disallow: /only-docscraper/
Crawl-delay: 2.5

User-agent: *
Disallow: /everyone/
Crawl-delay: 9

Sitemap: https://docs.example.com/sitemap.xml
"""


class FakeEngine:
    """``download_async`` answering every request with one canned status and body, or raising."""

    def __init__(self, status: int = 200, body: bytes = ROBOTS, error: Exception | None = None) -> None:
        self.status, self.body, self.error = status, body, error
        self.requests: list[Request] = []

    async def download_async(self, request: Request) -> TextResponse:
        self.requests.append(request)
        await asyncio.sleep(0)  # let concurrent callers in while the "download" runs
        if self.error is not None:
            raise self.error
        return TextResponse(request.url, status=self.status, body=self.body, request=request,
                            headers={"Content-Type": "text/plain"})


def make(engine: FakeEngine, **settings: Any) -> tuple[Crawler, RobotsTxtMiddleware]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "USER_AGENT": USER_AGENT, **settings})
    crawler.engine = engine  # type: ignore[assignment]
    return crawler, RobotsTxtMiddleware.from_crawler(crawler)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def allowed(mw: RobotsTxtMiddleware, url: str) -> bool | str:
    try:
        await mw.process_request(Request(url))
    except RobotsDenied as exc:
        return exc.detail
    return True


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return {k.removeprefix("docscraper/robots/"): v for k, v in crawler.stats.get_stats().items()
            if k.startswith("docscraper/robots/")}


# --- the middleware ---------------------------------------------------------------------------------


def test_off_when_robotstxt_obey_is_off() -> None:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": False})
    with pytest.raises(NotConfigured):
        RobotsTxtMiddleware.from_crawler(crawler)


def test_default_user_agent_names_the_product_and_version() -> None:
    assert f"docscraper/{__version__}" == USER_AGENT


def test_docscraper_group_applies_to_docscraper() -> None:
    crawler, mw = make(FakeEngine())

    async def go() -> list[bool | str]:
        return [await allowed(mw, f"https://docs.example.com/{p}/x.html") for p in ("only-docscraper", "everyone")]

    assert run(go()) == ["disallowed by robots.txt", True]
    assert mw.crawl_delay("docs.example.com") == 2.5
    assert mw.crawl_delay("https://docs.example.com/anything") == 2.5
    assert stats(crawler)["disallowed"] == 1


def test_star_group_applies_to_other_agents() -> None:
    _, mw = make(FakeEngine(), USER_AGENT="otherbot/1.0")

    async def go() -> list[bool | str]:
        return [await allowed(mw, f"https://docs.example.com/{p}/x.html") for p in ("only-docscraper", "everyone")]

    assert run(go()) == [True, "disallowed by robots.txt"]
    assert mw.crawl_delay("docs.example.com") == 9


def test_robotstxt_user_agent_overrides_the_user_agent() -> None:
    _, mw = make(FakeEngine(), ROBOTSTXT_USER_AGENT="otherbot")
    assert run(allowed(mw, "https://docs.example.com/everyone/")) == "disallowed by robots.txt"


def test_robotstxt_parser_setting_is_honoured() -> None:
    _, mw = make(FakeEngine(), ROBOTSTXT_PARSER="scrapy.robotstxt.PythonRobotParser")
    robots = run(mw.robots_for("https://docs.example.com/"))
    assert isinstance(robots.parser, PythonRobotParser)
    _, mw = make(FakeEngine())
    assert isinstance(run(mw.robots_for("https://docs.example.com/")).parser, ProtegoRobotParser)


def test_fetched_once_per_host_and_shared_with_concurrent_callers() -> None:
    engine = FakeEngine()
    crawler, mw = make(engine)

    async def go() -> None:
        await asyncio.gather(*(mw.process_request(Request(f"https://docs.example.com/p{i}")) for i in range(5)),
                             mw.robots_for("https://docs.example.com/"))
        await mw.process_request(Request("https://other.example.com/"))
        await mw.process_request(Request("https://docs.example.com/later"))

    run(go())
    assert [r.url for r in engine.requests] == ["https://docs.example.com/robots.txt",
                                                 "https://other.example.com/robots.txt"]
    assert all(r.meta["dont_obey_robotstxt"] and not r.meta.get("handle_httpstatus_all") for r in engine.requests)
    assert stats(crawler)["fetched"] == 2


def test_robots_text_is_kept_for_its_sitemap_lines() -> None:
    _, mw = make(FakeEngine())
    robots = run(mw.robots_for("https://docs.example.com/docs/"))
    assert "Sitemap: https://docs.example.com/sitemap.xml" in robots.text
    assert robots.outcome == "parsed" and robots.status == 200
    assert mw.get("docs.example.com") is robots


def test_dont_obey_and_non_http_requests_are_not_checked() -> None:
    engine = FakeEngine(status=503)
    _, mw = make(engine)
    run(mw.process_request(Request("https://docs.example.com/x", meta={"dont_obey_robotstxt": True})))
    run(mw.process_request(Request("data:,hello")))
    assert engine.requests == []


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_is_unavailable_and_allows_everything(status: int) -> None:
    crawler, mw = make(FakeEngine(status=status, body=b"User-agent: *\nDisallow: /\n"))
    # the body of an error page is never read as rules
    assert run(allowed(mw, "https://docs.example.com/everyone/")) is True
    robots = mw.get("docs.example.com")
    assert robots is not None and robots.outcome == "unavailable" and robots.parser is None
    assert mw.crawl_delay("docs.example.com") is None
    assert stats(crawler)["unavailable"] == 1 and stats(crawler)[f"status/{status}"] == 1


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_5xx_and_429_disallow_the_whole_host(status: int) -> None:
    crawler, mw = make(FakeEngine(status=status, body=b""))
    detail = run(allowed(mw, "https://docs.example.com/any/page.html"))
    assert detail == f"robots.txt unreachable (HTTP {status}): nothing on docs.example.com is fetched (RFC 9309 2.3.1.4)"
    assert run(allowed(mw, "https://docs.example.com/robots-free-page")) == detail
    assert stats(crawler)["unreachable"] == 1 and stats(crawler)["disallowed_unreachable"] == 2


@pytest.mark.parametrize("error", [DownloadTimeoutError("took longer than 1.0 seconds"),
                                   ConnectionRefusedError("Connection refused"),
                                   IgnoreRequest("refused by some middleware")])
def test_network_errors_disallow_the_whole_host(error: Exception) -> None:
    _, mw = make(FakeEngine(error=error))
    with pytest.raises(RobotsDenied, match=r"robots\.txt of docs\.example\.com unreachable") as caught:
        run(mw.process_request(Request("https://docs.example.com/")))
    assert type(error).__name__ in caught.value.detail
    assert isinstance(caught.value, IgnoreRequest)


def test_endless_redirects_are_unavailable() -> None:
    _, mw = make(FakeEngine(error=IgnoreRequest("max redirections reached")))
    assert run(allowed(mw, "https://docs.example.com/x")) is True
    robots = mw.get("docs.example.com")
    assert robots is not None and robots.outcome == "unavailable"


# --- whole crawls -----------------------------------------------------------------------------------


def set_route(site: DocsServer, path: str, route: dict[str, Any] | None) -> None:
    routes_file = site.root / "_routes.json"
    routes = json.loads(routes_file.read_text())
    if route is None:
        routes.pop(path, None)
    else:
        routes[path] = route
    routes_file.write_text(json.dumps(routes))


def checked(result: CrawlResult) -> dict[str, Any]:
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["stats"] == summarize(report["items"])
    return report


def active_pages(data_dir: Path) -> int:
    db = sqlite3.connect(data_dir / "state.db")
    (count,) = db.execute("SELECT count(*) FROM pages WHERE status = 'active'").fetchone()
    db.close()
    return int(count)


def netloc(site: DocsServer) -> str:
    return site.base_url.removeprefix("http://")


@pytest.mark.crawl
def test_robots_503_fetches_nothing_and_removes_nothing(site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/")
    report = checked(first)
    # one robots.txt request per run: the spider reads its Sitemap: lines from the middleware
    assert site.hits("/robots.txt") == 1
    assert first.keys("skipped", "robots") == {"private/secret.html"}
    assert report["items"]["private/secret.html"]["detail"] == "disallowed by robots.txt"
    assert report["discovery"]["robots"][netloc(site)]["outcome"] == "parsed"
    assert report["discovery"]["sitemap"]["fromRobots"] is True
    assert active_pages(first.data_dir) == ALLOWED_PAGES

    set_route(site, "/robots.txt", {"status": 503})
    site.reset_requests()
    second = crawl(f"{site.base_url}/docs/")
    report = checked(second)
    # robots.txt (retried by Scrapy's RetryMiddleware) and nothing else
    assert {path for _, path, _ in site.requests} == {"/robots.txt"}
    assert report["result"] == "partial"
    assert "robots.txt unreachable (HTTP 503)" in report["resultReason"]
    assert report["discovery"]["robots"][netloc(site)] == {
        "url": f"{site.base_url}/robots.txt", "outcome": "unreachable", "httpStatus": 503,
        "detail": f"robots.txt unreachable (HTTP 503): nothing on {netloc(site)} is fetched (RFC 9309 2.3.1.4)",
        "crawlDelay": None,
    }
    seed = report["items"]["./"]
    assert seed["status"] == "skipped" and seed["statusReason"] == "robots" and "HTTP 503" in seed["detail"]
    assert report["stats"]["success"] == 0
    assert report["removal"]["performed"] is False and "robots.txt unreachable" in report["removal"]["reason"]
    assert report["removal"]["candidates"] == ALLOWED_PAGES
    assert active_pages(second.data_dir) == ALLOWED_PAGES
    assert report["scrapy"]["docscraper/robots/unreachable"] == 1


@pytest.mark.crawl
@pytest.mark.parametrize("status", [404, 401, 403])
def test_robots_4xx_crawls_everything(site: DocsServer, crawl: Crawl, status: int) -> None:
    set_route(site, "/robots.txt", {"status": status})
    result = crawl(f"{site.base_url}/docs/")
    report = checked(result)
    assert site.hits("/robots.txt") == 1
    assert report["discovery"]["robots"][netloc(site)]["outcome"] == "unavailable"
    assert "private/secret.html" in result.keys("success", "new")
    assert result.keys("skipped", "robots") == set()
    assert report["stats"]["success.new"] == ALL_PAGES
    assert report["result"] == "partial" and "failed" in report["resultReason"]  # the 404 and 500 routes


@pytest.mark.crawl
def test_robots_timeout_fetches_nothing(site: DocsServer, crawl: Crawl) -> None:
    set_route(site, "/robots.txt", {"delay": 3, "body": "User-agent: *\nDisallow:\n"})
    result = crawl(f"{site.base_url}/docs/", settings={"DOWNLOAD_TIMEOUT": "1", "RETRY_TIMES": "0"})
    report = checked(result)
    assert {path for _, path, _ in site.requests} == {"/robots.txt"}
    robots = report["discovery"]["robots"][netloc(site)]
    assert robots["outcome"] == "unreachable" and robots["httpStatus"] is None
    assert "DownloadTimeoutError" in robots["detail"]
    assert report["result"] == "partial" and "robots.txt unreachable" in report["resultReason"]
    assert report["items"]["./"]["statusReason"] == "robots"
    assert "DownloadTimeoutError" in report["items"]["./"]["detail"]


@pytest.mark.crawl
def test_robots_redirects_are_followed_and_apply_to_the_first_host(site: DocsServer, crawl: Crawl) -> None:
    # five hops, the RFC's minimum, to a file that also forbids the glossary
    hops = ["/robots.txt", "/r1", "/r2", "/r3", "/r4"]
    for here, there in zip(hops, [*hops[1:], "/moved-robots.txt"], strict=True):
        set_route(site, here, {"status": 301, "location": f"__BASE__{there}"})
    rules = (site.root / "robots.txt").read_text() + "\nUser-agent: docscraper\nDisallow: /docs/glossary.html\n" \
        "Disallow: /docs/private/\nCrawl-delay: 0.01\n"
    (site.root / "moved-robots.txt").write_text(rules)
    result = crawl(f"{site.base_url}/docs/", "max_depth=1")
    report = checked(result)
    assert site.hits("/robots.txt") == 1 and site.hits("/moved-robots.txt") == 1
    robots = report["discovery"]["robots"][netloc(site)]
    assert robots["outcome"] == "parsed" and robots["finalUrl"] == f"{site.base_url}/moved-robots.txt"
    assert robots["crawlDelay"] == 0.01
    assert result.keys("skipped", "robots") == {"glossary.html"}
    assert site.hits("/docs/glossary.html") == 0
    # the Sitemap: line of the moved file led discovery
    assert report["discovery"]["sitemap"]["fromRobots"] is True


@pytest.mark.crawl
def test_robots_not_obeyed_still_reads_sitemap_lines(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", "max_depth=1", settings={"ROBOTSTXT_OBEY": "0"})
    report = checked(result)
    assert shared_site.hits("/robots.txt") == 1  # fetched by the spider itself, for its Sitemap: lines
    assert report["discovery"]["sitemap"]["fromRobots"] is True
    assert "robots" not in report["discovery"]
    assert not any(k.startswith("docscraper/robots/") for k in report["scrapy"])
