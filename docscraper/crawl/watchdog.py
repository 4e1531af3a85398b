"""The stuck-crawl watchdog: a crawl that stops making progress closes itself with reason ``stalled``.

Scrapy's ``CLOSESPIDER_TIMEOUT_NO_ITEM`` watches items only, and an unchanged recrawl produces none;
this one counts any sign of life: a response received, an item scraped, dropped (unchanged) or failed,
a page finished or refused in the run's ledger.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

from docscraper.crawl.progress import format_duration, queued_requests
from docscraper.crawl.signals import run_opened

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from docscraper.crawl.ledger import RunLedger
    from docscraper.crawl.resources import CrawlResources

__all__ = ["STALLED", "Watchdog"]

logger = logging.getLogger(__name__)

#: The close reason of a crawl the watchdog stopped.
STALLED = "stalled"


class Watchdog:
    """Closes the spider with reason ``stalled`` after ``DOCSCRAPER_WATCHDOG_SECONDS`` without progress.

    Settings: ``DOCSCRAPER_WATCHDOG_SECONDS`` (900; 0 turns the watchdog off). It watches from the moment the
    run is open (:data:`~docscraper.crawl.signals.run_opened`).
    Progress is any response received, item scraped, dropped or failed, or a new outcome in the run's
    ledger. A stalled run is an ``aborted`` run: what it stored stays, and it removes nothing (DESIGN
    rule 3). Requests already in flight still finish (or time out) before the spider closes.

    Stats: ``docscraper/watchdog/stalled`` (1 when the watchdog found the crawl stalled and asked it to
    close; a close already under way then keeps its own reason).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ledger: RunLedger | None = None
        self.timeout = 0.0
        self.check_every = 15.0
        self.last_progress = time.monotonic()
        self.fired = False
        self._marker: tuple[int, ...] = ()
        self._loop: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Watchdog:
        watchdog = cls(crawler)
        for signal in (signals.response_received, signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(watchdog.progressed, signal=signal)
        crawler.signals.connect(watchdog.run_opened, signal=run_opened)
        crawler.signals.connect(watchdog.spider_closed, signal=signals.spider_closed)
        return watchdog

    def progressed(self) -> None:
        self.last_progress = time.monotonic()

    def run_opened(self, resources: CrawlResources) -> None:
        """Start watching once the run is open (``DOCSCRAPER_WATCHDOG_SECONDS`` 0: never)."""
        timeout = resources.config.watchdog_seconds
        if not timeout:
            return
        self.ledger = resources.ledger
        self.timeout = timeout
        self.check_every = max(0.05, min(timeout / 4, 15.0))
        download_timeout = self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        if download_timeout > timeout:
            logger.warning(
                "DOCSCRAPER_WATCHDOG_SECONDS (%s) is shorter than DOWNLOAD_TIMEOUT (%s): one slow page may "
                "close the crawl as stalled", timeout, download_timeout,
            )
        self.last_progress = time.monotonic()
        self._loop = create_looping_call(self.check)
        self._loop.start(self.check_every, now=False)

    def spider_closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def check(self) -> None:
        now = time.monotonic()
        assert self.ledger is not None
        tally = self.ledger.tally
        marker = (len(self.ledger.items), tally["success"], tally["failed"])
        if marker != self._marker:
            self._marker = marker
            self.last_progress = now
        idle = now - self.last_progress
        if self.fired or idle < self.timeout:
            return
        engine = self.crawler.engine
        if engine is None or engine.spider is None:
            return
        # A close already under way keeps its own reason: close_spider_async then only waits for it.
        self.fired = True
        queued, in_flight = queued_requests(self.crawler)
        logger.error(
            "No progress for %s (no response received, no item processed, no page finished; "
            "DOCSCRAPER_WATCHDOG_SECONDS=%s, %d request(s) in flight, %d queued): closing the crawl with "
            "reason %r; stored pages are kept and nothing is removed",
            format_duration(idle), f"{self.timeout:g}", in_flight, queued, STALLED,
        )
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("docscraper/watchdog/stalled", 1)
        deferred_from_coro(engine.close_spider_async(reason=STALLED))
