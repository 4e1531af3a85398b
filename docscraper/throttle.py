"""AutoThrottle that takes a 304 Not Modified for the success it is.

Scrapy's AutoThrottle never lowers the delay on a non-200 response, so that small error pages cannot
speed a crawl up. A 304 is the normal answer to an incremental recrawl's conditional request: treated
as an error, the delay stays at ``AUTOTHROTTLE_START_DELAY`` for the whole run and an unchanged recrawl
of a site that sends validators takes longer than the cold crawl did. Here a 304 adjusts the delay as
a 200 would; every other status keeps Scrapy's policy.

Enabled in place of ``scrapy.extensions.throttle.AutoThrottle``; same settings (``AUTOTHROTTLE_*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.extensions.throttle import AutoThrottle

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot
    from scrapy.http import Response

__all__ = ["ConditionalAutoThrottle"]


class ConditionalAutoThrottle(AutoThrottle):
    def _adjust_delay(self, slot: Slot, latency: float, response: Response) -> None:
        if response.status == 304:
            response = response.replace(status=200)
        super()._adjust_delay(slot, latency, response)
