"""The run ledger: everything a crawl run learns while it runs, behind one small interface (:class:`RunLedger`).

Per run it holds each URL's **outcome** (:meth:`RunLedger.record`, keyed as the report's ``items``; when a key is
recorded twice a success beats a failure, which beats a skip), the **page claims** (:meth:`~RunLedger.claim`: the
first URL to claim a page id fetches it, every other is a duplicate), the pages **emitted** down the pipelines
(:meth:`~RunLedger.emit`), the pages reached, the page budget, the run's counters and the notes the close-time
decisions read. ``tally`` and ``recent`` keep the live counts and the latest failed and skipped URLs.
:class:`MemoryLedger` keeps it in the process; :class:`docscraper.crawl.distributed.RedisLedger` shares it between
the workers of a distributed run. ``DOCSCRAPER_LEDGER_CLASS`` names the implementation (a dotted path).
What each part is for: docs/explanation/architecture.md.
"""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.config import DocscraperConfig

__all__ = ["RECENT_OUTCOMES", "REQUIRED_STATS", "MemoryLedger", "RunLedger", "summarize"]

#: How many of the latest failed (and skipped) URLs a ledger keeps for the crawl status.
RECENT_OUTCOMES = 20

#: Stats keys every report carries, zero when nothing happened.
REQUIRED_STATS = (
    "uniqueUrls",
    "success",
    "success.new",
    "success.changed",
    "success.unchanged",
    "success.removed",
    "skipped",
    "skipped.outOfScope",
    "skipped.duplicate",
    "skipped.redirectOutOfScope",
    "skipped.redirectDuplicate",
    "failed",
    "failed.httpError",
)

_RANK = {"skipped": 0, "failed": 1, "success": 2}


def summarize(items: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """``stats`` from ``items`` in one pass: totals per status and per ``status.reason``."""
    counts: Counter[str] = Counter()
    for entry in items.values():
        counts[entry["status"]] += 1
        counts[f"{entry['status']}.{entry['statusReason']}"] += 1
    stats = {key: 0 for key in REQUIRED_STATS}
    stats.update(counts)
    stats["uniqueUrls"] = len(items)
    return dict(sorted(stats.items(), key=lambda kv: (kv[0] != "uniqueUrls", kv[0])))


class RunLedger:
    """The interface every ledger implements (see the module docstring); the in-memory behaviour is the
    reference, and :class:`MemoryLedger` is it. Implementations are built with
    ``from_crawler(crawler, config, run_id)``."""

    #: the id the run's report is written under, and its rows in the state database
    run_id: str
    #: the id of the run's report (a shared run's, or this process's own)
    report_id: str
    #: whether other processes share this run (a distributed run)
    shared: bool = False

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.tally: Counter[str] = Counter()
        self.recent: dict[str, deque[dict[str, Any]]] = {
            "failed": deque(maxlen=RECENT_OUTCOMES),
            "skipped": deque(maxlen=RECENT_OUTCOMES),
        }
        self.counters: Counter[str] = Counter()
        self.reached: set[str] = set()
        # page redirected to a page claimed by another request -> that page; kept if that one fails
        self.redirected_to: dict[str, str] = {}
        self.frontier_cut: str | None = None
        self.discovery: dict[str, Any] = {}
        self.discovery_error: str | None = None
        # host -> why its robots.txt was unreachable: nothing there was fetched (RFC 9309 2.3.1.4)
        self.robots_unreachable: dict[str, str] = {}
        # why this run cannot count as complete although it finished (a distributed worker died...)
        self.incomplete: str | None = None
        # pages this process took a slot for (the whole run's count may be larger: take_page)
        self.scheduled_pages = 0
        self._claims: dict[str, str] = {}
        self._emitted: set[str] = set()

    # outcomes --------------------------------------------------------------------------------------

    def record(self, key: str, status: str, reason: str, *, fetched_at: str | None = None, **details: Any) -> bool:
        """Record an outcome; returns False when an outcome of higher rank was already there."""
        current = self.items.get(key)
        if current is not None and _RANK[current["status"]] > _RANK[status]:
            return False
        entry: dict[str, Any] = {"status": status, "statusReason": reason, "fetchedAt": fetched_at}
        entry.update({k: v for k, v in details.items() if v is not None})
        if current is not None:
            self.tally[current["status"]] -= 1
            self.tally[f"{current['status']}.{current['statusReason']}"] -= 1
        self.tally[status] += 1
        self.tally[f"{status}.{reason}"] += 1
        if status in self.recent:
            self.recent[status].append(
                {"url": details.get("url") or key, "reason": reason, "detail": details.get("detail")}
            )
        self.items[key] = entry
        return True

    def get(self, key: str) -> dict[str, Any] | None:
        return self.items.get(key)

    def count(self, status: str, reason: str | None = None) -> int:
        """How many URLs ended with *status* (and *reason*)."""
        return sum(1 for e in self.items.values()
                   if e["status"] == status and (reason is None or e["statusReason"] == reason))

    # claims, emitted pages, the page budget --------------------------------------------------------

    def claim(self, pid: str, url: str) -> bool:
        """Claim page *pid* for *url*; False when another URL claimed it first."""
        if pid in self._claims:
            return False
        self._claims[pid] = url
        return True

    def claimant(self, pid: str) -> str | None:
        """The URL that claimed page *pid*, or None."""
        return self._claims.get(pid)

    def known_claimant(self, pid: str) -> str | None:
        """The URL that claimed page *pid* as far as this process knows, without asking anyone else (a
        shared ledger's claims read or made here; None may mean "claimed elsewhere")."""
        return self._claims.get(pid)

    def emit(self, pid: str) -> None:
        """Page *pid* goes down the pipelines this run."""
        self._emitted.add(pid)

    def is_emitted(self, pid: str) -> bool:
        return pid in self._emitted

    def take_page(self) -> int:
        """Pages taken against the page budget across the run, this one included."""
        return self.scheduled_pages + 1

    # lifecycle -------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def opening(self) -> AsyncIterator[None]:
        """Held while the run's resources open (workers of a shared run open them one at a time)."""
        yield

    def lead_discovery(self) -> bool:
        """Whether this process discovers the source (in a shared run, only the first worker does)."""
        return True

    def discovery_finished(self) -> None:
        """Every request discovery found is in the queue now."""

    async def withdraw(self) -> None:
        """Leave the run without a part in it: this process could not open it. (In a shared run that no
        worker opened, the last worker to leave deletes what the run shared: no report will.)"""

    async def close_worker(self, reason: str) -> str | None:
        """Publish this process's part of the run; return the run's close reason when this process writes
        the run's report (every worker's part merged into this ledger), or None when another one does."""
        return reason

    async def expire(self) -> None:
        """The report is written: what the run shared may go."""

    def scrapy_stats(self, own: Mapping[str, Any]) -> dict[str, Any]:
        """The run's Scrapy stats for the report: this process's, or every worker's added up."""
        return dict(own)


class MemoryLedger(RunLedger):
    """The ledger of a crawl in one process (the default ``DOCSCRAPER_LEDGER_CLASS``)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler, config: DocscraperConfig, run_id: str) -> MemoryLedger:
        ledger = cls()
        ledger.run_id = ledger.report_id = run_id
        return ledger
