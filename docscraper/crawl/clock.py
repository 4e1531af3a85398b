"""The Twisted reactor's clock on ``time.monotonic()``, so a step of the wall clock neither stalls a crawl nor
times out the downloads in flight.

:class:`MonotonicReactorClock` (an extension, on whenever a Twisted reactor runs; ``NotConfigured`` otherwise)
sets the installed reactor's ``seconds`` to a :class:`ReactorClock`: it starts at the wall time and then advances
with ``time.monotonic()``, so calls already scheduled keep their time and every later call runs after its own
delay. Wall time stays for what is stored or reported (``fetchedAt``, run rows, ``lastUpdate``). No settings.
Why, and what a clock step did before: docs/explanation/architecture.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.reactor import is_reactor_installed

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["MonotonicReactorClock", "ReactorClock", "use_monotonic_clock"]

logger = logging.getLogger(__name__)


class ReactorClock:
    """``clock()`` -> the wall time when the clock was made plus the monotonic time elapsed since. *wall*
    and *monotonic* are the two clocks it reads (``time.time`` and ``time.monotonic``; tests pass fakes)."""

    def __init__(self, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._origin = wall() - monotonic()

    def __call__(self) -> float:
        return self._origin + self._monotonic()


def use_monotonic_clock(reactor: Any, clock: ReactorClock | None = None) -> ReactorClock:
    """Make *reactor* (any ``IReactorTime`` that schedules on its ``seconds``, as Twisted's reactors do)
    schedule on *clock* (a new :class:`ReactorClock` by default); the clock it already has when that is a
    :class:`ReactorClock`. Returns the reactor's clock."""
    current = reactor.seconds
    if isinstance(current, ReactorClock):
        return current
    clock = clock or ReactorClock()
    reactor.seconds = clock
    return clock


class MonotonicReactorClock:
    """Extension: the installed reactor schedules on a monotonic clock (see the module docstring).

    No settings; ``NotConfigured`` when Scrapy runs without a Twisted reactor
    (``TWISTED_REACTOR_ENABLED=False``), where asyncio's monotonic clock schedules everything.
    """

    def __init__(self, reactor: Any) -> None:
        self.clock = use_monotonic_clock(reactor)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MonotonicReactorClock:
        # Extensions are built after Scrapy installed (or checked) the reactor and before the engine
        # schedules anything on it.
        if not crawler.settings.getbool("TWISTED_REACTOR_ENABLED", True) or not is_reactor_installed():
            raise NotConfigured("no Twisted reactor")
        from twisted.internet import reactor

        return cls(reactor)
