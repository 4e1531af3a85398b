"""AutoThrottle that takes a 304 Not Modified for the success it is.

Scrapy's AutoThrottle never lowers the delay on a non-200 response, so that small error pages cannot
speed a crawl up. A 304 is the normal answer to an incremental recrawl's conditional request: treated
as an error, the delay stays at ``AUTOTHROTTLE_START_DELAY`` for the whole run and an unchanged recrawl
of a site that sends validators takes longer than the cold crawl did. Here a 304 adjusts the delay as
a 200 would. So does a 404 or 410 to a discovery probe (llms.txt, llms-full.txt, sitemap.xml at the
prefix and at the root): "there is none" is the usual answer there, and the probes go one after another
before any page, so at the start delay they held every run's start by a second. Every other status keeps
Scrapy's policy.

A slot whose host sets a robots.txt ``Crawl-delay`` never goes faster than that: after each adjustment
the delay is raised back to the floor that :mod:`docscraper.crawl.ratelimit` keeps for the slot.

Files of a local folder (``file://``) are read without a delay.

Enabled in place of ``scrapy.extensions.throttle.AutoThrottle``; same settings (``AUTOTHROTTLE_*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.extensions.throttle import AutoThrottle

from docscraper.crawl.ratelimit import enforce_delay_floor

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response

__all__ = ["ConditionalAutoThrottle"]


_ABSENT = frozenset({404, 410})


class ConditionalAutoThrottle(AutoThrottle):
    def _response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        # decided on the request: the downloader binds a response to its request only after this signal
        if response.status == 304 or (response.status in _ABSENT and request.meta.get("docscraper_discovery")):
            response = response.replace(status=200)  # Scrapy's policy then lowers the delay as for a 200
        super()._response_downloaded(response, request, spider)
        key, slot = self._get_slot(request, spider)
        if request.url.startswith("file:"):
            # A local folder is nobody's server, and its answers carry no latency for AutoThrottle to
            # read: without this, every file would wait AUTOTHROTTLE_START_DELAY.
            if slot is not None:
                slot.delay = self.mindelay
            return
        if key is not None and slot is not None:
            enforce_delay_floor(self.crawler, key, slot)
