"""The last check before a request is sent: a component that may hold or refuse requests already queued in a
download slot (the rate limiter: an origin's ``Retry-After`` pause, a crawl stopped by 429s) registers a gate
for its crawler; docscraper's download handler awaits :func:`before_sending` where it would send. A gate
returns when the request may go, or raises ``IgnoreRequest``. No gate registered: nothing is held."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["Gate", "before_sending", "register"]

Gate = Callable[["Request"], Awaitable[None]]

_GATES: weakref.WeakKeyDictionary[Crawler, Gate] = weakref.WeakKeyDictionary()


def register(crawler: Crawler, gate: Gate) -> None:
    """Make *gate* the crawler's last check before sending (one per crawler; a later one replaces it)."""
    _GATES[crawler] = gate


async def before_sending(crawler: Crawler, request: Request) -> None:
    """Wait until *request* may be sent, as the crawler's gate decides; raise what the gate raises."""
    gate = _GATES.get(crawler)
    if gate is not None:
        await gate(request)
