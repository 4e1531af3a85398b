"""Rate limits a site asks for: ``Retry-After``, repeated 429s, and robots.txt ``Crawl-delay``, per origin.

:class:`OriginSlotMiddleware` gives every http(s) request the Scrapy download slot of its origin (scheme, host and
port) in ``download_slot``. :class:`RateLimitMiddleware` pauses an origin until a 429 or 503's ``Retry-After`` has
passed (requests wait in :meth:`~RateLimitMiddleware.process_request` and, once queued in a slot, in
:meth:`~RateLimitMiddleware.before_sending`, which the download handler awaits: :mod:`docscraper.crawl.sendgate`),
closes the crawl with reason ``rate_limited`` after ``DOCSCRAPER_MAX_CONSECUTIVE_429`` 429s in a row from one host,
and keeps a slot's delay at or above its robots.txt ``Crawl-delay`` (:func:`enforce_delay_floor`,
:func:`apply_crawl_delay`). Its class docstring names the settings and stats. Why per origin, and how a pause
ends: docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from time import monotonic
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit

from protego import Protego
from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, Response, TextResponse
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

from docscraper.crawl import sendgate
from docscraper.crawl.resources import crawl_config

if TYPE_CHECKING:
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

__all__ = [
    "CLOSE_REASON",
    "OriginSlotMiddleware",
    "RateLimitMiddleware",
    "apply_crawl_delay",
    "enforce_delay_floor",
    "origin_slot",
    "parse_retry_after",
    "ratelimit_for",
]

logger = logging.getLogger(__name__)

#: The close reason of a crawl stopped by repeated 429s.
CLOSE_REASON = "rate_limited"

#: Statuses whose ``Retry-After`` pauses the host (RFC 9110 section 10.2.3; RFC 6585 section 4).
PAUSE_STATUSES = frozenset({429, 503})

_DELAY_SECONDS = re.compile(r"\d+(?:\.\d+)?", re.ASCII)
# RFC 9309 lets a crawler stop reading robots.txt after 500 KiB.
_ROBOTS_MAX_BYTES = 500 * 1024


#: Meta flag: the request's ``download_slot`` was set by :class:`OriginSlotMiddleware` (and follows its URL).
_ORIGIN_SLOT = "docscraper_origin_slot"


def origin_slot(url: str) -> str | None:
    """The download slot of *url*'s origin, ``scheme://host:port`` (default port written out, host
    lowercased); None for a URL with no host (``file:``, ``data:``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is no number: the downloader refuses the URL anyway
        return None
    host = parts.hostname
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}:{port}"


class OriginSlotMiddleware:
    """Downloader middleware: one download slot per origin (scheme, host and port), not per host name, so
    that a ``Retry-After`` or ``Crawl-delay`` of one server pauses that server only, and concurrency and
    AutoThrottle are per server. Sets Scrapy's ``download_slot`` meta key unless something else set it;
    a redirected request (its meta is copied) gets the slot of its new URL. First in the chain
    (priority 30), before anything that reads a request's slot."""

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if "download_slot" in meta and not meta.get(_ORIGIN_SLOT):
            return  # chosen by someone else (a spider, a user's middleware)
        slot = origin_slot(request.url)
        if slot is None:  # no origin (a local file): Scrapy's own choice
            if meta.pop(_ORIGIN_SLOT, None):
                meta.pop("download_slot", None)
            return
        meta["download_slot"] = slot
        meta[_ORIGIN_SLOT] = True


def parse_retry_after(value: str | bytes | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds, or an HTTP date compared with *now*
    (default: the current time). A date in the past is 0. None when the value is missing or invalid
    (negative numbers included). Not capped."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if not text:
        return None
    if _DELAY_SECONDS.fullmatch(text):
        seconds = float(text)
        return seconds if math.isfinite(seconds) else None
    if not text[:1].isalpha():  # "-5", "+3", "1e3": not a number RFC 9110 allows, and not a date
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, with no claim about the local zone
        when = when.replace(tzinfo=UTC)
    reference = now or datetime.now(UTC)
    if reference.tzinfo is None:
        reference = reference.replace(tzinfo=UTC)
    return max(0.0, (when - reference).total_seconds())


def _response_date(response: Response) -> datetime | None:
    # Reading an HTTP-date Retry-After against the server's own clock makes it immune to clock skew.
    value = response.headers.get(b"Date")
    if not value:
        return None
    try:
        date = parsedate_to_datetime(value.decode("latin-1"))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return date if date.tzinfo is not None else date.replace(tzinfo=UTC)


def _floor_slot(slot: Slot, floor: float) -> None:
    if slot.delay < floor:
        slot.delay = floor
    # Jitter spreads each delay by +/- delay * jitter; narrow it so the low end stays at the floor.
    max_jitter = max(0.0, 1.0 - floor / slot.delay) if slot.delay > 0 else 0.0
    if slot.jitter > max_jitter:
        slot.jitter = max_jitter


@dataclass
class _Host:
    """What is known about one download slot."""

    not_before: float = 0.0  # monotonic time before which nothing is sent
    consecutive_429: int = 0
    floor: float | None = None  # robots.txt Crawl-delay, capped
    next_turn: float = 0.0  # monotonic time the next request released from a pause may go


class RateLimitMiddleware:
    """Downloader middleware: honour ``Retry-After`` and ``Crawl-delay``, stop on repeated 429s.

    Settings: ``DOCSCRAPER_RATELIMIT_ENABLED`` (on; off raises ``NotConfigured``),
    ``DOCSCRAPER_RETRY_AFTER_MAX`` (300 s; 0 ignores ``Retry-After``), ``DOCSCRAPER_MAX_CONSECUTIVE_429``
    (3; 0 never stops the crawl), ``DOCSCRAPER_CRAWL_DELAY_MAX`` (60 s; 0 ignores ``Crawl-delay``, which
    is also ignored when ``ROBOTSTXT_OBEY`` is off). Reads ``ROBOTSTXT_USER_AGENT`` / ``USER_AGENT``.

    Meta: reads Scrapy's ``download_slot``; sets ``dont_retry`` on a 429/503 once the crawl is stopping.

    Stats: ``docscraper/ratelimit/responses_429``, ``docscraper/ratelimit/retry_after_waits`` (pauses
    begun; a ``Retry-After`` during a pause may lengthen it), ``docscraper/ratelimit/paused_seconds``,
    ``docscraper/ratelimit/retry_after_capped``, ``docscraper/ratelimit/retry_after_invalid``,
    ``docscraper/ratelimit/crawl_delay`` (largest delay applied, seconds),
    ``docscraper/ratelimit/crawl_delay_capped``,
    ``docscraper/ratelimit/consecutive_429_abort`` (1 when the crawl was stopped),
    ``docscraper/ratelimit/requests_dropped`` (requests not sent because the crawl was stopping).

    Must sit between ``RetryMiddleware`` (550) and the downloader, so it sees a 429 before it is
    retried: the project registers it at 560.
    """

    def __init__(self, crawler: Crawler, stats: StatsCollector, *, retry_after_max: float,
                 max_consecutive_429: int, crawl_delay_max: float, robots_user_agent: str | None) -> None:
        self.crawler = crawler
        self.stats = stats
        self.retry_after_max = retry_after_max
        self.max_consecutive_429 = max_consecutive_429
        self.crawl_delay_max = crawl_delay_max
        self.robots_user_agent = robots_user_agent
        self.stopping = False
        self._closed = False
        self._hosts: dict[str, _Host] = {}
        self._waiters: dict[Deferred[None], CallLaterResult] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RateLimitMiddleware:
        config = crawl_config(crawler)
        if not config.ratelimit_enabled:
            raise NotConfigured("DOCSCRAPER_RATELIMIT_ENABLED is off")
        settings = crawler.settings
        robots_ua = None
        if settings.getbool("ROBOTSTXT_OBEY") and config.crawl_delay_max > 0:
            robots_ua = str(settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*")
        middleware = cls(crawler, crawler.stats, retry_after_max=config.retry_after_max,
                         max_consecutive_429=config.max_consecutive_429,
                         crawl_delay_max=config.crawl_delay_max, robots_user_agent=robots_ua)
        crawler.signals.connect(middleware.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(middleware.request_reached_downloader,
                                signal=signals.request_reached_downloader)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        sendgate.register(crawler, middleware.before_sending)
        return middleware

    # downloader middleware ---------------------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        # a request that arrives during a pause waits here, out of the download slot's queue
        await self._wait_for(self.downloader.get_slot_key(request), spaced=False)

    def process_response(self, request: Request, response: Response) -> Response:
        if self.stopping and response.status in PAUSE_STATUSES:
            request.meta["dont_retry"] = True  # the crawl is closing: report the 429, do not ask again
        return response

    # public hooks -------------------------------------------------------------------------------------

    async def before_sending(self, request: Request) -> None:
        """Wait until *request* may be sent: called by the download handler where it would send it.
        Waits out its origin's pause (the requests it releases go one slot delay apart); raises
        ``IgnoreRequest`` (counted in ``requests_dropped``) when the crawl is stopping."""
        await self._wait_for(self.downloader.get_slot_key(request), spaced=True)

    def retry_after(self, response: Response) -> float | None:
        """The pause a 429/503 asks for, capped at ``DOCSCRAPER_RETRY_AFTER_MAX``; None when none."""
        if response.status not in PAUSE_STATUSES or self.retry_after_max <= 0:
            return None
        value = response.headers.get(b"Retry-After")
        if value is None:
            return None
        seconds = parse_retry_after(value, now=_response_date(response))
        if seconds is None:
            self.stats.inc_value("docscraper/ratelimit/retry_after_invalid")
            logger.warning("Ignoring an invalid Retry-After %r on %s (HTTP %d)", value, response.url, response.status)
            return None
        if seconds > self.retry_after_max:
            self.stats.inc_value("docscraper/ratelimit/retry_after_capped")
            logger.warning("%s asks to wait %.0f s (Retry-After); waiting DOCSCRAPER_RETRY_AFTER_MAX=%.0f s",
                           response.url, seconds, self.retry_after_max)
            seconds = self.retry_after_max
        return seconds

    def pause(self, key: str, seconds: float) -> None:
        """Send nothing to slot *key* for *seconds* from now (a longer pause already set stays)."""
        if seconds <= 0 or self.stopping:
            return
        host = self._host(key)
        now = monotonic()
        until = now + seconds
        if until <= host.not_before:
            return
        if host.not_before <= now:  # a new pause, not a longer one
            self.stats.inc_value("docscraper/ratelimit/retry_after_waits")
        added = until - max(now, host.not_before)
        paused = self.stats.get_value("docscraper/ratelimit/paused_seconds", 0.0)
        self.stats.set_value("docscraper/ratelimit/paused_seconds", round(paused + added, 3))
        host.not_before = until

    def set_crawl_delay(self, key: str, seconds: float) -> None:
        """Make slot *key* wait at least *seconds* between requests (robots.txt ``Crawl-delay``)."""
        if self.crawl_delay_max <= 0 or not math.isfinite(seconds) or seconds <= 0:
            return
        if seconds > self.crawl_delay_max:
            self.stats.inc_value("docscraper/ratelimit/crawl_delay_capped")
            logger.warning("robots.txt of %s sets Crawl-delay %.0f s; using DOCSCRAPER_CRAWL_DELAY_MAX=%.0f s",
                           key, seconds, self.crawl_delay_max)
            seconds = self.crawl_delay_max
        host = self._host(key)
        if host.floor != seconds:
            logger.info("Honouring robots.txt Crawl-delay of %s: %g s between requests", key, seconds)
        host.floor = seconds
        self.stats.max_value("docscraper/ratelimit/crawl_delay", seconds)
        slot = self.downloader.slots.get(key)
        if slot is not None:
            _floor_slot(slot, seconds)

    def crawl_delay(self, key: str) -> float | None:
        host = self._hosts.get(key)
        return host.floor if host is not None else None

    def enforce_floor(self, key: str, slot: Slot) -> None:
        floor = self.crawl_delay(key)
        if floor is not None:
            _floor_slot(slot, floor)

    # signals -----------------------------------------------------------------------------------------

    def response_downloaded(self, response: Response, request: Request) -> None:
        """Signal handler: read a robots.txt's Crawl-delay, count 429s, pause on ``Retry-After``."""
        key = self.downloader.get_slot_key(request)
        if self.robots_user_agent is not None and response.status == 200 and _is_robots_txt(request):
            self._read_crawl_delay(key, response)
        host = self._host(key)
        if response.status != 429:
            host.consecutive_429 = 0
        else:
            self.stats.inc_value("docscraper/ratelimit/responses_429")
            host.consecutive_429 += 1
            if self.max_consecutive_429 and host.consecutive_429 >= self.max_consecutive_429:
                self._stop(key, host.consecutive_429)
                return
        seconds = self.retry_after(response)
        if seconds:
            logger.info("%s answered %d with Retry-After: pausing every request to %s for %.1f s",
                        response.url, response.status, key, seconds)
            self.pause(key, seconds)

    def request_reached_downloader(self, request: Request) -> None:
        """Signal handler: a slot is made (or remade, after Scrapy collects idle slots) with the default
        delay; raise it to the origin's Crawl-delay."""
        key = request.meta.get("download_slot")
        if key is None:
            return
        slot = self.downloader.slots.get(key)
        if slot is not None:
            self.enforce_floor(key, slot)

    def spider_closed(self) -> None:
        """Signal handler: release every waiting request (each is then dropped)."""
        self._closed = True
        self._wake_all()

    # internals ---------------------------------------------------------------------------------------

    @property
    def downloader(self) -> Downloader:
        """The crawl's downloader (its slots and their keys)."""
        assert self.crawler.engine is not None
        return self.crawler.engine.downloader

    def _host(self, key: str) -> _Host:
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host()
        return host

    def _read_crawl_delay(self, key: str, response: Response) -> None:
        assert self.robots_user_agent is not None
        body = response.body[:_ROBOTS_MAX_BYTES]
        encoding = response.encoding if isinstance(response, TextResponse) else "utf-8"
        try:
            delay = Protego.parse(body.decode(encoding, "replace")).crawl_delay(self.robots_user_agent)
        except Exception as exc:  # a robots.txt Protego cannot read has no Crawl-delay we could honour
            logger.debug("Cannot read Crawl-delay from %s: %s", response.url, exc)
            return
        if delay is not None:
            self.set_crawl_delay(key, float(delay))

    def _stop(self, key: str, count: int) -> None:
        if self.stopping:
            return
        self.stopping = True
        self.stats.set_value("docscraper/ratelimit/consecutive_429_abort", 1)
        logger.error(
            "Stopping the crawl: %d consecutive 429 Too Many Requests from %s (DOCSCRAPER_MAX_CONSECUTIVE_429=%d). "
            "The run is aborted; nothing stored is removed. Try again later, or slower.",
            count, key, self.max_consecutive_429,
        )
        # waiting requests see self.stopping and are dropped; queued ones are refused where they would be sent
        self._wake_all()
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=CLOSE_REASON))

    async def _wait_for(self, key: str, *, spaced: bool) -> None:
        """Return when slot *key* may send; raise IgnoreRequest when the crawl is stopping. With *spaced*, a
        request that waited out a pause takes a turn: they leave one slot delay apart."""
        waited = turned = False
        while True:
            if self.stopping or self._closed:
                self._drop()
            host = self._hosts.get(key)
            if host is None:
                return
            now = monotonic()
            if host.not_before > now:
                waited, turned = True, False
                await self._sleep(host.not_before - now)
                continue
            if not (spaced and waited) or turned:
                return
            turned = True  # one turn per pause waited out
            turn = max(now, host.next_turn)
            host.next_turn = turn + self._spacing(key)
            if turn <= now:
                return
            await self._sleep(turn - now)

    def _spacing(self, key: str) -> float:
        slot = self.downloader.slots.get(key)
        delay = slot.delay if slot is not None else 0.0
        return max(delay, self.crawl_delay(key) or 0.0)

    def _drop(self) -> NoReturn:
        self.stats.inc_value("docscraper/ratelimit/requests_dropped")
        why = "the crawl is stopping (rate limited)" if self.stopping else "the spider closed"
        raise IgnoreRequest(f"not sent: {why}")

    async def _sleep(self, seconds: float) -> None:
        waiter: Deferred[None] = Deferred()
        self._waiters[waiter] = call_later(seconds, self._wake, waiter)
        try:
            await maybe_deferred_to_future(waiter)
        finally:
            self._waiters.pop(waiter, None)

    def _wake(self, waiter: Deferred[None]) -> None:
        if not waiter.called:
            waiter.callback(None)

    def _wake_all(self) -> None:
        for waiter, call in list(self._waiters.items()):
            call.cancel()
            self._wake(waiter)
        self._waiters.clear()


def _is_robots_txt(request: Request) -> bool:
    first = (request.meta.get("redirect_urls") or [request.url])[0]  # robots.txt may redirect anywhere
    return urlsplit(first).path == "/robots.txt"


def ratelimit_for(crawler: Crawler) -> RateLimitMiddleware | None:
    """The crawler's :class:`RateLimitMiddleware`, or None when it is not enabled (or not built yet)."""
    try:
        return crawler.get_downloader_middleware(RateLimitMiddleware)
    except RuntimeError:  # no engine yet: before the crawl starts, or a crawler made by hand
        return None


def apply_crawl_delay(crawler: Crawler, url_or_key: str, seconds: float) -> None:
    """Honour a robots.txt ``Crawl-delay`` of *seconds* for the host of *url_or_key* (a URL such as the
    robots.txt URL, or a download slot key). Capped at ``DOCSCRAPER_CRAWL_DELAY_MAX``; a no-op when the
    rate-limit middleware is off. For a robots.txt component that parses the file itself; robots.txt
    responses that pass through the downloader are read without it."""
    limiter = ratelimit_for(crawler)
    if limiter is None:
        return
    key = url_or_key
    if "://" in url_or_key:
        request = Request(url_or_key)
        OriginSlotMiddleware().process_request(request)
        key = limiter.downloader.get_slot_key(request)
    limiter.set_crawl_delay(key, seconds)


def enforce_delay_floor(crawler: Crawler, key: str, slot: Slot) -> None:
    """Raise *slot*'s delay to the Crawl-delay of *key*, if one is known (for AutoThrottle)."""
    limiter = ratelimit_for(crawler)
    if limiter is not None:
        limiter.enforce_floor(key, slot)
