"""Group calls: the per-page writes of many pages made as one call, each page still awaiting its own.

After the model finishes a batch, the pages whose chunks it embedded go on together through the index and
state-commit pipelines, each with its own Chroma upsert and its own state transaction. Made one by one, those
calls cost more than they do (a transaction, a Chroma write each) and run beside the model, on the same
cores. :class:`CallGroup` makes the calls that come in while one runs, or in the same turn of the reactor,
into one call of the grouped function, and gives each caller its own part of the result: page A still awaits
its upsert before it commits its state row, so DESIGN rule 1 holds per page.

A grouped call that raises is made again one value at a time, so that one bad page fails alone (DESIGN
rule 7) and the others are written.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from twisted.internet.base import DelayedCall

__all__ = ["CallGroup", "grouped_writes"]

logger = logging.getLogger(__name__)

V = TypeVar("V")
R = TypeVar("R")


class CallGroup(Generic[V, R]):
    """``await group.submit(value)`` -> the result for *value*, from one call of *call* over every value
    submitted meanwhile (``call(values)`` returns one result per value, in order). At most *limit* values go
    in one call; *name* names the group in log lines."""

    def __init__(self, call: Callable[[list[V]], Awaitable[Sequence[R]]], *, name: str, limit: int = 512) -> None:
        self._call = call
        self.name = name
        self.limit = limit
        self._pending: list[tuple[V, Deferred[R]]] = []
        self._running = False
        self._scheduled: DelayedCall | None = None
        #: grouped calls made, and values they carried (for tests and stats)
        self.calls = 0
        self.values = 0

    async def submit(self, value: V) -> R:
        waiter: Deferred[R] = Deferred()
        self._pending.append((value, waiter))
        self._schedule()
        result: R = await maybe_deferred_to_future(waiter)
        return result

    def _schedule(self) -> None:
        """Run the pending calls on the reactor's next turn (so that every page resumed in this turn joins),
        unless a call is running: its end runs them."""
        from twisted.internet import reactor

        if self._running or (self._scheduled is not None and self._scheduled.active()):
            return
        self._scheduled = cast("Any", reactor).callLater(0, self._start)

    def _start(self) -> None:
        self._scheduled = None
        if self._running or not self._pending:
            return
        batch, self._pending = self._pending[: self.limit], self._pending[self.limit :]
        self._running = True
        deferred_from_coro(self._run(batch))

    async def _run(self, batch: list[tuple[V, Deferred[R]]]) -> None:
        try:
            self.calls += 1
            self.values += len(batch)
            try:
                results = list(await self._call([value for value, _ in batch]))
            except Exception as exc:
                if len(batch) == 1:
                    batch[0][1].errback(exc)
                    return
                logger.warning("%s of %d values failed (%s: %s); making them one at a time", self.name,
                               len(batch), exc.__class__.__name__, exc)
                await self._one_by_one(batch)
                return
            for (_, waiter), result in zip(batch, results, strict=True):
                waiter.callback(result)
        finally:
            self._running = False
            if self._pending:
                self._start()

    async def _one_by_one(self, batch: list[tuple[V, Deferred[R]]]) -> None:
        for value, waiter in batch:
            try:
                (result,) = await self._call([value])
            except Exception as exc:
                waiter.errback(exc)
            else:
                waiter.callback(result)


def grouped_writes(write: Callable[[list[V]], Awaitable[object]], *, name: str) -> CallGroup[V, None]:
    """A :class:`CallGroup` over a write that returns nothing: ``await group.submit(value)`` returns once
    *write* took *value* with the others submitted meanwhile."""

    async def call(values: list[V]) -> list[None]:
        await write(values)
        return [None] * len(values)

    return CallGroup(call, name=name)
