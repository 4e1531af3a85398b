"""Rate limits (docscraper.crawl.ratelimit): Retry-After, repeated 429s and robots.txt Crawl-delay.

First the middleware on hand-made responses and a stand-in downloader, then whole crawls of the fixture
site whose server answers 429s or sets a Crawl-delay. Timing checks measure the gaps between requests as
the server saw them and assert lower bounds only.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from itertools import pairwise
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
from scrapy.core.downloader import Slot
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, Response, TextResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from docscraper import USER_AGENT
from docscraper.config import ConfigError
from docscraper.crawl import ratelimit as ratelimit_module
from docscraper.crawl.ratelimit import (
    CLOSE_REASON,
    OriginSlotMiddleware,
    RateLimitMiddleware,
    apply_crawl_delay,
    parse_retry_after,
    ratelimit_for,
)
from docscraper.crawl.throttle import ConditionalAutoThrottle
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

HOST = "docs.example.com"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


# --- a stand-in for the engine and its downloader -------------------------------------------------------


class FakeCall:
    """What ``call_later`` returns, recorded instead of scheduled."""

    def __init__(self, delay: float, func: Any, *args: Any) -> None:
        self.delay, self.func, self.args = delay, func, args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        self.func(*self.args)


class FakeDownloader:
    def __init__(self) -> None:
        self.slots: dict[str, Slot] = {}
        self.middleware: Any = None

    def get_slot_key(self, request: Request) -> str:
        return request.meta.get("download_slot") or urlsplit(request.url).hostname or ""


class FakeEngine:
    def __init__(self) -> None:
        self.downloader = FakeDownloader()
        self.closed: list[str] = []

    def close_spider_async(self, *, reason: str) -> None:
        self.closed.append(reason)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[FakeCall]:
    made: list[FakeCall] = []

    def fake_call_later(delay: float, func: Any, *args: Any) -> FakeCall:
        made.append(FakeCall(delay, func, *args))
        return made[-1]

    monkeypatch.setattr(ratelimit_module, "call_later", fake_call_later)
    # no reactor runs here: a coroutine awaits the waiter's Deferred itself, resumed by the test's send()
    monkeypatch.setattr(ratelimit_module, "maybe_deferred_to_future", lambda deferred: deferred)
    return made


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The rate limiter's monotonic clock, moved by hand: ``clock[0] = t``."""
    now = [100.0]
    monkeypatch.setattr(ratelimit_module, "monotonic", lambda: now[0])
    return now


def make(**settings: Any) -> tuple[Crawler, RateLimitMiddleware, FakeEngine]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "USER_AGENT": USER_AGENT, **settings})
    engine = FakeEngine()
    crawler.engine = engine  # type: ignore[assignment]
    middleware = RateLimitMiddleware.from_crawler(crawler)
    engine.downloader.middleware = SimpleNamespace(middlewares=(middleware,))
    return crawler, middleware, engine


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return {k.removeprefix("docscraper/ratelimit/"): v for k, v in crawler.stats.get_stats().items()
            if k.startswith("docscraper/ratelimit/")}


def answer(status: int, path: str = "/page", **headers: str) -> tuple[Response, Request]:
    request = Request(f"https://{HOST}{path}", meta={"download_slot": HOST})
    return Response(request.url, status=status, headers=headers, request=request), request


# --- Retry-After values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (b"  7 ", 7.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("86400000", 86400000.0),  # huge: parsed as given; the middleware caps it
        ("Wed, 01 May 2024 12:00:30 GMT", 30.0),  # IMF-fixdate
        ("Wednesday, 01-May-24 12:01:00 GMT", 60.0),  # obsolete RFC 850 form
        ("Wed May  1 12:00:05 2024", 5.0),  # asctime, no zone: UTC
        ("Wed, 01 May 2024 11:00:00 GMT", 0.0),  # in the past: go now
        ("", None),
        ("   ", None),
        (None, None),
        ("soon", None),
        ("-5", None),
        ("+5", None),
        ("1e3", None),
        ("5 seconds", None),
        ("Wed, 99 May 2024 12:00:00 GMT", None),
    ],
)
def test_parse_retry_after(value: str | bytes | None, seconds: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


def test_retry_after_date_is_read_against_the_servers_clock() -> None:
    _, mw, _ = make()
    # A server whose clock is years off: the wait is the difference of its two dates, not "now".
    server_now = datetime(2001, 1, 1, tzinfo=UTC)
    response, _ = answer(429, **{"Date": format_datetime(server_now, usegmt=True),
                                 "Retry-After": format_datetime(server_now + timedelta(seconds=40), usegmt=True)})
    assert mw.retry_after(response) == 40.0
    # without a Date header, against this machine's clock
    later = datetime.now(UTC) + timedelta(seconds=100)
    response, _ = answer(503, **{"Retry-After": format_datetime(later, usegmt=True)})
    wait = mw.retry_after(response)
    assert wait is not None and 90 <= wait <= 100


def test_retry_after_is_capped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    crawler, mw, _ = make()
    with caplog.at_level(logging.WARNING, logger="docscraper.crawl.ratelimit"):
        assert mw.retry_after(answer(429, **{"Retry-After": "86400"})[0]) == 300.0
    assert "86400" in caplog.text and "DOCSCRAPER_RETRY_AFTER_MAX=300" in caplog.text
    assert stats(crawler)["retry_after_capped"] == 1
    crawler, mw, _ = make(DOCSCRAPER_RETRY_AFTER_MAX="5")
    assert mw.retry_after(answer(503, **{"Retry-After": "6"})[0]) == 5.0
    assert mw.retry_after(answer(503, **{"Retry-After": "4"})[0]) == 4.0


def test_retry_after_that_is_invalid_or_not_for_us_is_ignored() -> None:
    crawler, mw, _ = make()
    assert mw.retry_after(answer(429, **{"Retry-After": "tomorrow"})[0]) is None
    assert mw.retry_after(answer(429, **{"Retry-After": "-30"})[0]) is None
    assert stats(crawler)["retry_after_invalid"] == 2
    assert mw.retry_after(answer(429)[0]) is None  # no header
    for status in (200, 301, 500, 502):
        assert mw.retry_after(answer(status, **{"Retry-After": "10"})[0]) is None
    _, off, _ = make(DOCSCRAPER_RETRY_AFTER_MAX="0")
    assert off.retry_after(answer(429, **{"Retry-After": "10"})[0]) is None


def test_settings() -> None:
    with pytest.raises(NotConfigured):
        make(DOCSCRAPER_RATELIMIT_ENABLED="0")
    with pytest.raises(ConfigError, match="DOCSCRAPER_RETRY_AFTER_MAX must be 0 or more"):
        make(DOCSCRAPER_RETRY_AFTER_MAX="-1")
    with pytest.raises(ConfigError, match="DOCSCRAPER_MAX_CONSECUTIVE_429 must be a whole number"):
        make(DOCSCRAPER_MAX_CONSECUTIVE_429="many")
    with pytest.raises(ConfigError, match="DOCSCRAPER_CRAWL_DELAY_MAX must be a number of seconds"):
        make(DOCSCRAPER_CRAWL_DELAY_MAX="slow")
    _, mw, _ = make()
    assert (mw.retry_after_max, mw.max_consecutive_429, mw.crawl_delay_max) == (300.0, 3, 60.0)


# --- pauses ---------------------------------------------------------------------------------------------


def waiting(coro: Any) -> Any:
    """Start a coroutine that must wait; return it to be resumed."""
    assert coro.send(None) is not None, "the coroutine did not wait"
    return coro


def finished(coro: Any) -> bool:
    """Resume a coroutine: True when it finished, False when it waits again."""
    try:
        coro.send(None)
    except StopIteration:
        return True
    return False


def test_a_429_with_retry_after_holds_the_whole_origin(calls: list[FakeCall], clock: list[float]) -> None:
    crawler, mw, engine = make()
    engine.downloader.slots[HOST] = Slot(8, 0.5, 0.0)
    response, request = answer(429, **{"Retry-After": "2"})
    mw.response_downloaded(response, request)
    assert mw._hosts[HOST].not_before == 102.0
    # requests the slot had queued wait where they would be sent; a new one waits in the middleware
    queued = [waiting(mw.before_sending(Request(f"https://{HOST}/q{i}", meta={"download_slot": HOST})))
              for i in range(2)]
    incoming = waiting(mw.process_request(Request(f"https://{HOST}/new", meta={"download_slot": HOST})))
    assert [call.delay for call in calls] == [2.0, 2.0, 2.0]
    # a longer pause extends it; a shorter one changes nothing
    mw.pause(HOST, 5)
    mw.pause(HOST, 1)
    assert mw._hosts[HOST].not_before == 105.0
    clock[0] = 102.0
    for call in calls[:3]:
        call.fire()
    assert not any(finished(coro) for coro in [*queued, incoming])  # the pause was extended: they wait on
    assert [call.delay for call in calls[3:]] == [3.0, 3.0, 3.0]
    clock[0] = 105.0
    for call in calls[3:]:
        call.fire()
    # released: the first queued request goes now, the second one slot delay later (no burst); the new
    # one joins the slot's queue, where the downloader's own delay spaces it
    assert finished(queued[0]) and finished(incoming)
    assert not finished(queued[1]) and calls[-1].delay == 0.5
    clock[0] = 105.5
    calls[-1].fire()
    assert finished(queued[1])
    got = stats(crawler)
    assert got["retry_after_waits"] == 1 and got["paused_seconds"] == 5.0 and got["responses_429"] == 1
    # another origin was never held
    assert _drive(mw.before_sending(Request("https://other.example.com/", meta={"download_slot": "other"}))) is None


def test_503_pauses_but_does_not_count_towards_the_stop(calls: list[FakeCall]) -> None:
    crawler, mw, engine = make()
    for _ in range(5):
        response, request = answer(503, **{"Retry-After": "1"})
        mw.response_downloaded(response, request)
    assert engine.closed == [] and mw._hosts[HOST].consecutive_429 == 0
    assert stats(crawler)["retry_after_waits"] == 1  # the next ones lengthen the first pause
    assert mw._hosts[HOST].not_before > ratelimit_module.monotonic()


# --- stopping after repeated 429s -------------------------------------------------------------------------


def test_consecutive_429s_stop_the_crawl_and_drop_what_is_queued(calls: list[FakeCall], clock: list[float],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    crawler, mw, engine = make()
    engine.downloader.slots[HOST] = Slot(8, 0.25, 0.5)
    for status in (429, 429, 200, 429, 429):  # a non-429 answer resets the count
        mw.response_downloaded(*answer(status))
    assert engine.closed == [] and mw._hosts[HOST].consecutive_429 == 2
    mw.pause(HOST, 10)
    held = waiting(mw.before_sending(Request(f"https://{HOST}/held", meta={"download_slot": HOST})))
    with caplog.at_level(logging.ERROR, logger="docscraper.crawl.ratelimit"):
        response, request = answer(429)
        mw.response_downloaded(response, request)
    assert engine.closed == [CLOSE_REASON] == ["rate_limited"]
    assert "3 consecutive 429" in caplog.text and "nothing stored is removed" in caplog.text
    # the request waiting out the pause is woken and dropped; the ones the slot still had queued are
    # refused where they would be sent; nothing new goes out
    assert calls[-1].cancelled
    with pytest.raises(IgnoreRequest, match="rate limited"):
        held.send(None)
    for i in range(2):
        with pytest.raises(IgnoreRequest, match="rate limited"):
            _drive(mw.before_sending(Request(f"https://{HOST}/q{i}", meta={"download_slot": HOST})))
    with pytest.raises(IgnoreRequest):
        _drive(mw.process_request(Request(f"https://{HOST}/later")))
    # the 429 in hand is reported, not retried
    assert mw.process_response(request, response) is response and request.meta["dont_retry"] is True
    got = stats(crawler)
    assert got["consecutive_429_abort"] == 1 and got["responses_429"] == 5 and got["requests_dropped"] == 4
    # more 429s while closing change nothing
    mw.response_downloaded(*answer(429))
    assert engine.closed == ["rate_limited"]


def test_max_consecutive_429_zero_never_stops(calls: list[FakeCall]) -> None:
    _, mw, engine = make(DOCSCRAPER_MAX_CONSECUTIVE_429="0")
    for _ in range(10):
        mw.response_downloaded(*answer(429))
    assert engine.closed == []


def _drive(coro: Any) -> Any:
    """Run a coroutine that must finish without waiting."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine waited")


def test_process_request_passes_when_nothing_is_paused() -> None:
    _, mw, _ = make()
    assert _drive(mw.process_request(Request(f"https://{HOST}/a"))) is None


# --- one slot per origin ------------------------------------------------------------------------------


def slot_of(url: str, **meta: Any) -> str | None:
    request = Request(url, meta=meta)
    OriginSlotMiddleware().process_request(request)
    return request.meta.get("download_slot")


def test_every_origin_has_its_own_download_slot() -> None:
    assert slot_of("http://127.0.0.1:8001/a") == "http://127.0.0.1:8001"
    assert slot_of("http://127.0.0.1:8002/a") == "http://127.0.0.1:8002"
    assert slot_of("https://Docs.Example.com/a?b") == slot_of("https://docs.example.com:443/c") == \
        "https://docs.example.com:443"
    assert slot_of("http://docs.example.com/a") == "http://docs.example.com:80"
    assert slot_of("http://[::1]:8080/") == "http://[::1]:8080"
    assert slot_of("file:///tmp/docs/index.html") is None
    # a slot someone else chose stays
    assert slot_of("http://127.0.0.1:8001/a", download_slot="mine") == "mine"


def test_a_redirected_request_takes_the_slot_of_its_new_origin() -> None:
    first = Request("http://127.0.0.1:8001/old")
    OriginSlotMiddleware().process_request(first)
    # Scrapy's RedirectMiddleware copies the meta into the request for the new URL
    moved = first.replace(url="http://127.0.0.1:8002/new")
    OriginSlotMiddleware().process_request(moved)
    assert moved.meta["download_slot"] == "http://127.0.0.1:8002"
    local = moved.replace(url="file:///tmp/page.html")
    OriginSlotMiddleware().process_request(local)
    assert "download_slot" not in local.meta


def test_retry_after_from_one_port_does_not_pause_another_port_of_the_host(calls: list[FakeCall]) -> None:
    crawler, mw, _ = make()
    paused = Request("http://127.0.0.1:8001/page")
    OriginSlotMiddleware().process_request(paused)
    response = Response(paused.url, status=429, headers={"Retry-After": "30"}, request=paused)
    mw.response_downloaded(response, paused)
    assert stats(crawler)["retry_after_waits"] == 1
    # the other server of the host is not paused: its request goes out at once
    other = Request("http://127.0.0.1:8002/page")
    OriginSlotMiddleware().process_request(other)
    assert _drive(mw.process_request(other)) is None
    # the paused one is the server that answered, not its host
    now = ratelimit_module.monotonic()
    assert mw._hosts["http://127.0.0.1:8001"].not_before > now + 29
    assert "127.0.0.1" not in mw._hosts and "http://127.0.0.1:8002" not in mw._hosts


def test_the_project_gives_requests_their_origin_slot_before_any_other_middleware() -> None:
    project = Settings()
    project.setmodule("settings")
    order = {k: v for k, v in project.getwithbase("DOWNLOADER_MIDDLEWARES").items() if v is not None}
    name = "docscraper.crawl.ratelimit.OriginSlotMiddleware"
    assert order[name] < min(v for k, v in order.items() if k != name)


# --- Crawl-delay ----------------------------------------------------------------------------------------


def robots(body: str, status: int = 200, path: str = "/robots.txt") -> tuple[Response, Request]:
    request = Request(f"https://{HOST}{path}", meta={"download_slot": HOST})
    return TextResponse(request.url, status=status, body=body.encode(), encoding="utf-8", request=request), request


def test_crawl_delay_from_robots_txt_is_a_floor_under_the_slot_delay() -> None:
    crawler, mw, engine = make(AUTOTHROTTLE_ENABLED=True)
    slot = engine.downloader.slots[HOST] = Slot(8, 0.25, 0.5)
    mw.response_downloaded(*robots("User-agent: *\nCrawl-delay: 2\n"))
    assert mw.crawl_delay(HOST) == 2.0
    assert slot.delay == 2.0 and slot.jitter == 0.0  # jitter would otherwise go down to 1 s
    assert stats(crawler)["crawl_delay"] == 2.0
    # AutoThrottle lowers the delay after a fast response; the floor puts it back
    throttle = ConditionalAutoThrottle(crawler)
    page = Request(f"https://{HOST}/fast", meta={"download_slot": HOST, "download_latency": 0.001})
    for _ in range(5):
        throttle.response_downloaded(Response(page.url, request=page), page)
        assert slot.delay >= 2.0
        assert slot.delay * (1 - slot.jitter) >= 2.0
    # a slot made later (Scrapy collects idle slots) gets the floor when its first request arrives
    fresh = engine.downloader.slots[HOST] = Slot(8, 0.25, 0.5)
    mw.request_reached_downloader(page)
    assert fresh.delay == 2.0


def test_a_304_and_a_discovery_probes_404_lower_the_delay_and_a_pages_404_does_not() -> None:
    crawler, _, engine = make(AUTOTHROTTLE_ENABLED=True)
    throttle = ConditionalAutoThrottle(crawler)

    def delay_after(status: int, **meta: Any) -> float:
        slot = engine.downloader.slots[HOST] = Slot(8, 0.25, 0.5)
        request = Request(f"https://{HOST}/x", meta={"download_slot": HOST, "download_latency": 0.001, **meta})
        # as the downloader sends it: the response is bound to its request only after this signal
        throttle.response_downloaded(Response(request.url, status=status), request)
        return float(slot.delay)

    assert delay_after(200) < 0.25 and delay_after(304) < 0.25
    assert delay_after(404, docscraper_discovery="llms.txt") < 0.25
    assert delay_after(410, docscraper_discovery="sitemap") < 0.25
    assert delay_after(404) == 0.25  # a page that is gone: Scrapy's policy
    assert delay_after(500, docscraper_discovery="llms.txt") == 0.25


def test_crawl_delay_for_docscraper_wins_over_star_and_is_capped(caplog: pytest.LogCaptureFixture) -> None:
    crawler, mw, _ = make()
    mw.response_downloaded(*robots("User-agent: docscraper\nCrawl-delay: 0.5\n\nUser-agent: *\nCrawl-delay: 9\n"))
    assert mw.crawl_delay(HOST) == 0.5
    with caplog.at_level(logging.WARNING, logger="docscraper.crawl.ratelimit"):
        mw.response_downloaded(*robots("User-agent: *\nCrawl-delay: 3600\n"))
    assert mw.crawl_delay(HOST) == 60.0 and "DOCSCRAPER_CRAWL_DELAY_MAX=60" in caplog.text
    assert stats(crawler)["crawl_delay_capped"] == 1


@pytest.mark.parametrize(
    ("settings", "body", "status", "path"),
    [
        ({"ROBOTSTXT_OBEY": False}, "User-agent: *\nCrawl-delay: 2\n", 200, "/robots.txt"),
        ({"DOCSCRAPER_CRAWL_DELAY_MAX": "0"}, "User-agent: *\nCrawl-delay: 2\n", 200, "/robots.txt"),
        ({}, "User-agent: *\nCrawl-delay: 2\n", 404, "/robots.txt"),
        ({}, "User-agent: *\nCrawl-delay: 2\n", 200, "/docs/robots.txt"),
        ({}, "User-agent: *\nCrawl-delay: -2\n", 200, "/robots.txt"),
        ({}, "User-agent: *\nCrawl-delay: soon\n", 200, "/robots.txt"),
        ({}, "User-agent: other\nCrawl-delay: 2\n", 200, "/robots.txt"),
        ({}, "\x00\xff garbage", 200, "/robots.txt"),
    ],
)
def test_no_crawl_delay(settings: dict[str, Any], body: str, status: int, path: str) -> None:
    _, mw, engine = make(**settings)
    slot = engine.downloader.slots[HOST] = Slot(8, 0.25, 0.5)
    mw.response_downloaded(*robots(body, status, path))
    assert mw.crawl_delay(HOST) is None and (slot.delay, slot.jitter) == (0.25, 0.5)


def test_hook_for_a_robots_component() -> None:
    crawler, mw, engine = make()
    assert ratelimit_for(crawler) is mw
    origin = f"https://{HOST}:443"
    slot = engine.downloader.slots[origin] = Slot(8, 0.0, 0.5)
    apply_crawl_delay(crawler, f"https://{HOST}/robots.txt", 1.5)
    assert mw.crawl_delay(origin) == 1.5 and slot.delay == 1.5 and mw.crawl_delay(HOST) is None
    apply_crawl_delay(crawler, "other.example.com", 3)
    assert mw.crawl_delay("other.example.com") == 3.0
    # without the middleware, a no-op
    plain = get_crawler()
    assert ratelimit_for(plain) is None
    apply_crawl_delay(plain, f"https://{HOST}/robots.txt", 1.5)


# --- whole crawls ---------------------------------------------------------------------------------------


def set_routes(site: DocsServer, **routes: dict[str, Any]) -> None:
    path = site.root / "_routes.json"
    current = json.loads(path.read_text(encoding="utf-8"))
    current.update({k.replace("__", "/"): v for k, v in routes.items()})
    path.write_text(json.dumps(current), encoding="utf-8")


def timeline(site: DocsServer) -> list[tuple[float, str]]:
    return list(zip(site.request_times, (path for _, path, _ in site.requests), strict=True))


def ratelimit_stats(result: CrawlResult) -> dict[str, Any]:
    return {k.removeprefix("docscraper/ratelimit/"): v for k, v in result.report["scrapy"].items()
            if k.startswith("docscraper/ratelimit/")}


@pytest.mark.crawl
def test_retry_after_pauses_the_host_and_the_page_is_fetched_after(site: DocsServer, crawl: Crawl) -> None:
    routes = json.loads((site.root / "_routes.json").read_text(encoding="utf-8"))
    routes["/docs/glossary.html"] = {"status": 429, "headers": {"Retry-After": "2"}, "times": 1}
    (site.root / "_routes.json").write_text(json.dumps(routes), encoding="utf-8")
    # One request at a time, so that every request the server sees after the 429 was sent after the
    # crawler read it: the queue the slot holds is what is checked.
    result = crawl(f"{site.base_url}/docs/", settings={"CONCURRENT_REQUESTS_PER_DOMAIN": "1"})
    assert result.report["items"]["glossary.html"]["status"] == "success"
    assert result.report["items"]["glossary.html"]["statusReason"] == "new"
    events = timeline(site)
    hits = [i for i, (_, path) in enumerate(events) if path == "/docs/glossary.html"]
    assert len(hits) == 2, hits
    first, retry = hits
    paused_at = events[first][0]
    after = events[first + 1:]
    assert after, "the crawl went on after the 429"
    assert all(t - paused_at >= 1.8 for t, _ in after), [(round(t - paused_at, 3), p) for t, p in after[:5]]
    assert events[retry][0] - paused_at >= 1.8
    got = ratelimit_stats(result)
    assert got["retry_after_waits"] == 1 and got["responses_429"] == 1 and got["paused_seconds"] >= 1.9
    assert "consecutive_429_abort" not in got


def _pages_table(result: CrawlResult) -> dict[str, tuple[Any, ...]]:
    db = sqlite3.connect(result.data_dir / "state.db")
    rows = db.execute("SELECT rel_path, status, content_hash, last_changed FROM pages").fetchall()
    db.close()
    return {row[0]: row[1:] for row in rows}


@pytest.mark.crawl
def test_repeated_429s_abort_the_run_and_keep_everything(site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/", index=True)
    assert first.report["result"] == "partial"  # the fixture's 404 and 500 pages
    before = _pages_table(first)
    active = {k for k, (status, *_) in before.items() if status == "active"}
    assert len(active) == 35
    chunks_before = ChromaIndex(path=first.data_dir / "chroma").collection.count()
    assert chunks_before > 0
    # Every page (and every route the fixture had) answers 429 now; discovery files still answer.
    docs = site.root / "docs"
    paths = {"/docs/" + p.relative_to(docs).as_posix() for p in docs.rglob("*.html")}
    for index in docs.rglob("index.html"):
        folder = index.parent.relative_to(docs).as_posix()
        if folder != ".":
            paths |= {f"/docs/{folder}", f"/docs/{folder}/"}
    paths.add("/docs/")
    paths |= set(json.loads((site.root / "_routes.json").read_text(encoding="utf-8")))
    limited = {"status": 429, "headers": {"Retry-After": "1"}, "body": "slow down"}
    (site.root / "_routes.json").write_text(json.dumps(dict.fromkeys(sorted(paths), limited)), encoding="utf-8")
    site.reset_requests()

    second = crawl(f"{site.base_url}/docs/", index=True)
    report = second.report
    assert report["closeReason"] == "rate_limited"
    assert report["result"] == "aborted" and "rate_limited" in report["resultReason"]
    assert report["removal"]["performed"] is False
    assert report["stats"]["success.removed"] == 0
    got = ratelimit_stats(second)
    assert got["consecutive_429_abort"] == 1 and got["responses_429"] >= 3
    assert "3 consecutive 429 Too Many Requests" in second.stderr
    # the state and the index are as the successful crawl left them
    after = _pages_table(second)
    assert {k for k, (status, *_) in after.items() if status == "active"} == active
    assert {k: v[1:] for k, v in after.items()} == {k: v[1:] for k, v in before.items()}
    assert ChromaIndex(path=second.data_dir / "chroma").collection.count() == chunks_before
    assert sum(1 for _, path in timeline(site) if path in paths) >= 3


@pytest.mark.crawl
def test_robots_crawl_delay_spaces_requests(site: DocsServer, crawl: Crawl) -> None:
    robots_txt = site.root / "robots.txt"
    robots_txt.write_text(robots_txt.read_text().replace("User-agent: *\n", "User-agent: *\nCrawl-delay: 1\n"))
    result = crawl(f"{site.base_url}/docs/", "max_pages=3",
                   settings={"DOCSCRAPER_DISCOVERY_LLMS": "0", "DOCSCRAPER_DISCOVERY_SITEMAPS": "0"})
    assert result.report["stats"]["success"] == 3
    events = timeline(site)
    assert events[0][1] == "/robots.txt"
    pages = [(t, p) for t, p in events if p.startswith("/docs/")]
    assert len(pages) >= 3
    gaps = [round(b[0] - a[0], 3) for a, b in pairwise(events)]
    assert all(gap >= 0.9 for gap in gaps), list(zip(gaps, [p for _, p in events[1:]], strict=True))
    assert ratelimit_stats(result)["crawl_delay"] == 1.0
