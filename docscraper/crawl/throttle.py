"""AutoThrottle that takes a 304 Not Modified for the success it is.

:class:`ConditionalAutoThrottle` is Scrapy's documented AutoThrottle algorithm, enabled in place of
``scrapy.extensions.throttle.AutoThrottle`` with the same ``AUTOTHROTTLE_*`` settings, and three differences: a
304, and a 404 or 410 to a discovery probe (``docscraper_discovery``), adjust the delay as a 200 would; a slot whose
origin sets a robots.txt ``Crawl-delay`` never goes below it (:func:`docscraper.crawl.ratelimit.enforce_delay_floor`);
files of a local folder (``file://``) are read without a delay. The algorithm, and why it is our own copy:
docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from docscraper.crawl.ratelimit import enforce_delay_floor

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["ConditionalAutoThrottle"]

logger = logging.getLogger(__name__)

_ABSENT = frozenset({404, 410})


class ConditionalAutoThrottle:
    """Extension: per-slot download delays from response latency (module docstring). Settings:
    ``AUTOTHROTTLE_ENABLED``, ``AUTOTHROTTLE_START_DELAY``, ``AUTOTHROTTLE_MAX_DELAY``,
    ``AUTOTHROTTLE_TARGET_CONCURRENCY``, ``AUTOTHROTTLE_DEBUG``, ``DOWNLOAD_DELAY`` (the least delay) and
    ``DOWNLOAD_SLOTS`` (a slot given a delay there starts at it). Meta: ``download_slot``,
    ``download_latency``, ``autothrottle_dont_adjust_delay``, ``docscraper_discovery``."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("AUTOTHROTTLE_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.debug = settings.getbool("AUTOTHROTTLE_DEBUG")
        self.target_concurrency = settings.getfloat("AUTOTHROTTLE_TARGET_CONCURRENCY")
        if self.target_concurrency <= 0.0:
            raise NotConfigured(f"AUTOTHROTTLE_TARGET_CONCURRENCY ({self.target_concurrency!r}) must be higher than 0.")
        self.mindelay = settings.getfloat("DOWNLOAD_DELAY")
        self.maxdelay = settings.getfloat("AUTOTHROTTLE_MAX_DELAY")
        self.startdelay = max(self.mindelay, settings.getfloat("AUTOTHROTTLE_START_DELAY"))
        self.configured = {key for key, conf in settings.getdict("DOWNLOAD_SLOTS").items()
                           if isinstance(conf, dict) and "delay" in conf}
        # the slot object each key was started with: Scrapy drops idle slots and makes them again
        self.started: dict[str, Slot] = {}
        crawler.signals.connect(self.request_reached_downloader, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalAutoThrottle:
        return cls(crawler)

    def slot(self, request: Request) -> tuple[str | None, Slot | None]:
        """The download slot *request* went through, with its key."""
        key: str | None = request.meta.get("download_slot")
        if key is None or self.crawler.engine is None:
            return None, None
        return key, self.crawler.engine.downloader.slots.get(key)

    def request_reached_downloader(self, request: Request) -> None:
        """Signal handler: a new slot starts at ``AUTOTHROTTLE_START_DELAY`` (a local folder's at none)."""
        key, slot = self.slot(request)
        if key is None or slot is None or self.started.get(key) is slot:
            return
        self.started[key] = slot
        if request.url.startswith("file:"):
            slot.delay = self.mindelay
        elif key not in self.configured:
            slot.delay = max(slot.delay, self.startdelay)

    def response_downloaded(self, response: Response, request: Request) -> None:
        """Signal handler: adjust the slot's delay to the response's latency."""
        key, slot = self.slot(request)
        latency = request.meta.get("download_latency")
        if key is None or slot is None:
            return
        if request.url.startswith("file:"):
            # A local folder is nobody's server, and its answers carry no latency to read.
            slot.delay = self.mindelay
            return
        if latency is not None and request.meta.get("autothrottle_dont_adjust_delay", False) is not True:
            # decided on the request: the downloader binds a response to its request only after this signal
            status = response.status
            if status == 304 or (status in _ABSENT and request.meta.get("docscraper_discovery")):
                status = 200
            old = slot.delay
            self.adjust(slot, latency, status)
            if self.debug:
                logger.info("slot: %s | conc:%2d | delay:%5d ms (%+d) | latency:%5d ms | size:%6d bytes",
                            key, len(slot.transferring), slot.delay * 1000, (slot.delay - old) * 1000,
                            latency * 1000, len(response.body))
        enforce_delay_floor(self.crawler, key, slot)

    def adjust(self, slot: Slot, latency: float, status: int) -> None:
        """Scrapy's documented policy: halfway to ``latency / target`` (at once when higher), within the
        least and most delay; a non-200 answer never lowers it (small error pages would speed a crawl up)."""
        target = latency / self.target_concurrency
        new = max(target, (slot.delay + target) / 2.0)
        new = min(max(self.mindelay, new), self.maxdelay)
        if status != 200 and new <= slot.delay:
            return
        slot.delay = new
