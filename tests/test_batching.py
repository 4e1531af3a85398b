"""CallGroup: the calls of many pages made as one, each caller getting its own result or its own error."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f, deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.reactor import install_reactor, is_reactor_installed
from twisted.internet.defer import Deferred, DeferredList
from twisted.trial.unittest import TestCase

from docscraper.crawl.batching import CallGroup


@pytest.fixture(scope="module", autouse=True)
def reactor() -> None:
    if not is_reactor_installed():
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


class Squares:
    """A grouped call that records its calls; one it is told to hold waits until released."""

    def __init__(self, bad: int | None = None) -> None:
        self.calls: list[list[int]] = []
        self.bad = bad
        self.gate: Deferred[None] | None = None

    async def __call__(self, values: list[int]) -> list[int]:
        self.calls.append(list(values))
        if self.gate is not None:
            gate, self.gate = self.gate, None
            await maybe_deferred_to_future(gate)
        if self.bad in values:
            raise ValueError(f"{self.bad} is bad")
        return [v * v for v in values]


async def gather(group: CallGroup[int, int], values: list[int]) -> list[tuple[bool, object]]:
    results = await maybe_deferred_to_future(DeferredList(
        [deferred_from_coro(group.submit(v)) for v in values], consumeErrors=True))
    return [(ok, value if ok else value.value) for ok, value in results]


class CallGroupTests(TestCase):
    @deferred_f_from_coro_f
    async def test_values_submitted_in_one_turn_are_one_call_and_each_gets_its_result(self) -> None:
        call = Squares()
        group: CallGroup[int, int] = CallGroup(call, name="squares")
        assert await gather(group, [3, 1, 2]) == [(True, 9), (True, 1), (True, 4)]
        assert call.calls == [[3, 1, 2]]

    @deferred_f_from_coro_f
    async def test_values_submitted_while_a_call_runs_are_the_next_call(self) -> None:
        call = Squares()
        gate: Deferred[None] = Deferred()
        call.gate = gate  # the first call waits here
        group: CallGroup[int, int] = CallGroup(call, name="squares")
        first = deferred_from_coro(group.submit(1))
        await maybe_deferred_to_future(_next_turn())
        later = [deferred_from_coro(group.submit(v)) for v in (2, 3, 4)]
        await maybe_deferred_to_future(_next_turn())
        assert call.calls == [[1]] and not first.called  # the three wait for the running call
        gate.callback(None)
        assert await maybe_deferred_to_future(first) == 1
        assert [await maybe_deferred_to_future(d) for d in later] == [4, 9, 16]
        assert call.calls == [[1], [2, 3, 4]]

    @deferred_f_from_coro_f
    async def test_a_failed_group_is_made_again_one_value_at_a_time_and_only_the_bad_one_fails(self) -> None:
        call = Squares(bad=2)
        group: CallGroup[int, int] = CallGroup(call, name="squares")
        results = await gather(group, [1, 2, 3])
        assert results[0] == (True, 1) and results[2] == (True, 9)
        ok, error = results[1]
        assert not ok and isinstance(error, ValueError) and str(error) == "2 is bad"
        assert call.calls == [[1, 2, 3], [1], [2], [3]]

    @deferred_f_from_coro_f
    async def test_a_call_takes_at_most_limit_values(self) -> None:
        call = Squares()
        group: CallGroup[int, int] = CallGroup(call, name="squares", limit=2)
        assert [v for _, v in await gather(group, [1, 2, 3, 4, 5])] == [1, 4, 9, 16, 25]
        assert call.calls == [[1, 2], [3, 4], [5]]
        assert (group.calls, group.values) == (3, 5)


def _next_turn() -> Deferred[None]:
    from twisted.internet import reactor

    done: Deferred[None] = Deferred()
    reactor.callLater(0.01, done.callback, None)  # type: ignore[attr-defined]
    return done
