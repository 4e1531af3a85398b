"""How each kind of outcome is written into the run ledger, with its Scrapy stat.

:class:`RunOutcomes` is the one place that turns "this URL was refused", "this URL stands for a page already
claimed", "this page failed" and "this page was processed" into ledger entries under the right report key,
so every component records them the same way. It also keeps the failures the state database must learn at
close (404 and 410 counts, DESIGN rule 4).

Stats (``docscraper/...``): ``pages_refused/<reason>`` (``noindex`` included), ``pages_failed``, ``pages_<change>``, and every
counter of the report's ``counters`` (:meth:`RunOutcomes.count`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from docscraper.storage.state import PageFailure, iso_utc, utcnow
from docscraper.urls import page_id

if TYPE_CHECKING:
    from datetime import datetime

    from scrapy.statscollectors import StatsCollector

    from docscraper.crawl.ledger import RunLedger
    from docscraper.crawl.schedule import RevisitPolicy
    from docscraper.crawl.scope import Refusal
    from docscraper.crawl.target import CrawlTarget

__all__ = ["RunOutcomes"]


class RunOutcomes:
    """Records outcomes for one run: built with the run's ledger and stats, bound to its target at open."""

    def __init__(self, ledger: RunLedger, stats: StatsCollector | None, gone_after: int,
                 revisit: RevisitPolicy | None = None) -> None:
        self.ledger = ledger
        self.stats = stats
        self.gone_after = gone_after
        # the revisit policy that backs a failed page off (docscraper.crawl.schedule)
        self.revisit = revisit
        self.target: CrawlTarget | None = None
        # failures for the state database (consecutive 404s), written when the run closes
        self.failures: list[PageFailure] = []

    def bind(self, target: CrawlTarget) -> None:
        self.target = target

    def key(self, url: str) -> str:
        assert self.target is not None
        return self.target.key(url)

    def stat(self, name: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"docscraper/{name}", count)

    def count(self, name: str, amount: int = 1) -> None:
        """A run counter: in the report's ``counters`` and in Scrapy's stats (``docscraper/<name>``)."""
        self.ledger.counters[name] += amount
        self.stat(name, amount)

    def refuse(self, url: str, refusal: Refusal, **details: Any) -> None:
        """Record a URL that will not be crawled, with its reason."""
        self.stat(f"pages_refused/{refusal.reason}")
        self.ledger.record(self.key(url), "skipped", refusal.reason, url=url, detail=refusal.detail, **details)

    def is_quiet_link(self, url: str) -> bool:
        """Whether a link to *url* would be refused as a duplicate with nothing to record: its page was claimed
        this run (as far as this process knows) by the same URL as written, give or take a fragment. A page's
        links mostly lead to pages claimed already (navigation), so the spider makes no request of them."""
        assert self.target is not None
        try:
            pid = page_id(url)
        except ValueError:
            return False
        first = self.ledger.known_claimant(pid)
        return first is not None and self._same_request(url, first)

    def _same_request(self, url: str, first: str) -> bool:
        """Whether *url* is the URL that claimed its page (*first*) as written, give or take a fragment: a
        duplicate of that kind is not recorded."""
        assert self.target is not None
        return url == first or self.target.scope.raw_key(url) == self.target.scope.raw_key(first)

    def duplicate(self, url: str, *, redirect: bool = False, of: str | None = None) -> None:
        """Record a URL that stands for a page already claimed (*of*, when known), under the key of the URL
        as written. Variants that differ only by a fragment are the same request: not recorded."""
        assert self.target is not None
        try:
            pid = page_id(url)
        except ValueError:
            return
        first = of or self.ledger.claimant(pid)
        if first is not None and not redirect and self._same_request(url, first):
            return
        key = self.target.scope.raw_key(url)
        reason = "redirectDuplicate" if redirect else "duplicate"
        if redirect and first is not None:
            with contextlib.suppress(ValueError):
                self.ledger.redirected_to[pid] = page_id(first)
        self.stat(f"pages_refused/{reason}")
        self.ledger.record(key, "skipped", reason, url=url, detail=f"same page as {first}" if first else None)

    def duplicate_content(self, key: str, url: str, pid: str, *, of: str, holder: str, fetched_at: str | None,
                          **details: Any) -> None:
        """Page *pid*, whose content is another page's (*of*, page id *holder*): kept as its alias, not indexed."""
        self.ledger.reached.add(pid)
        self.stat("pages_refused/duplicateContent")
        self.ledger.record(key, "skipped", "duplicateContent", fetched_at=fetched_at, url=url, pageId=pid,
                           detail=f"same content as {of}", aliasOf=holder, **details)

    def noindex(self, key: str, url: str, pid: str, detail: str, *, fetched_at: str | None, **details: Any) -> None:
        """Page *pid*, fetched, asks not to be indexed (robots ``noindex``): reached, skipped, never chunked. If the
        index holds it, :meth:`noindex_retirements` names it at close."""
        self.ledger.reached.add(pid)
        self.stat("pages_refused/noindex")
        self.ledger.record(key, "skipped", "noindex", fetched_at=fetched_at, url=url, pageId=pid, detail=detail,
                           **details)

    def noindex_retirements(self) -> dict[str, str]:
        """Pages the index holds that said ``noindex`` this run: page id -> report key. The page said so itself,
        so they are retired at close whether or not the run may remove orphans (DESIGN rule 3 is about pages
        not reached)."""
        assert self.target is not None
        retire: dict[str, str] = {}
        for key, entry in self.ledger.items.items():
            pid = entry.get("pageId")
            if entry["status"] != "skipped" or entry["statusReason"] != "noindex" or not pid:
                continue
            prev = self.target.known.get(pid)
            if prev is not None and prev.status == "active":
                retire.setdefault(pid, key)
        return retire

    def not_due(self, url: str, pid: str, next_check: datetime | None, **details: Any) -> None:
        """A known page a due-only run does not check (its next check has not come): reached, never an orphan."""
        self.ledger.reached.add(pid)
        self.stat("pages_refused/notDue")
        self.ledger.record(self.key(url), "skipped", "notDue", url=url, pageId=pid,
                           nextCheck=iso_utc(next_check) if next_check is not None else None, **details)

    def processed(self, key: str, change: str, fetched_at: str | None, **details: Any) -> None:
        """A page that went through the pipelines (or was found unchanged)."""
        self.stat(f"pages_{change}")
        self.ledger.record(key, "success", change, fetched_at=fetched_at, **details)

    def failed(self, url: str, reason: str, detail: str, *, http_status: int | None = None,
               pid: str | None = None, fetched_at: str | None = None, seed: bool = False,
               linked_from: str | None = None, retry_after: float | None = None, **details: Any) -> None:
        """A page that could not be fetched or parsed. It is not an orphan; 410 and repeated 404s of a page
        the index holds retire it at a clean close (DESIGN rule 4). A 410 from a page the index does not hold
        (retired already, or never indexed) is no failure: the site says it is gone on purpose, so it is
        skipped as ``gone`` and does not make every later run partial while a link to it stays. A 404 from
        such a page (*seed* excepted: a missing seed is the source's failure) is skipped as ``brokenLink``,
        with *linked_from*, the page whose link led to it, when known. A failed page is backed off by the revisit
        policy (its next check: the report's ``nextCheck``), *retry_after* (seconds) when the server asked for longer."""
        assert self.target is not None
        pid = pid or page_id(url)
        self.ledger.reached.add(pid)
        key = self.key(url)
        prev = self.target.known.get(pid)
        if http_status == 410 and (prev is None or prev.status != "active"):
            self.stat("pages_refused/gone")
            self.ledger.record(key, "skipped", "gone", fetched_at=fetched_at, url=url, detail=detail,
                               httpStatus=http_status, pageId=pid, **details)
            return
        if http_status == 404 and not seed and (prev is None or prev.status != "active"):
            # A link to a page that does not exist and that the index does not hold: the site's broken
            # link, not a page that failed (which would make every run partial while the link stays).
            # The pages that link to it are added at close (RunReporter), the one that led here now.
            self.stat("pages_refused/brokenLink")
            self.ledger.record(key, "skipped", "brokenLink", fetched_at=fetched_at, url=url, detail=detail,
                               httpStatus=http_status, pageId=pid, linkedFrom=[linked_from] if linked_from else None,
                               **details)
            return
        next_check = None
        if self.revisit is not None:
            next_check = self.revisit.after_failure((prev.failure_count if prev else 0) + 1, self.revisit.now(),
                                                    retry_after)
        self.stat("pages_failed")
        self.ledger.record(key, "failed", reason, fetched_at=fetched_at, url=url, detail=detail,
                           httpStatus=http_status, pageId=pid,
                           nextCheck=iso_utc(next_check) if next_check is not None else None, **details)
        self.failures.append(PageFailure(pid, url, self.target.scope.relative_path(url), http_status, detail,
                                         utcnow(), http_status == 404, next_check))

    def retirements(self) -> dict[str, str]:
        """Pages the site says are gone (410, or 404 on ``DOCSCRAPER_GONE_AFTER`` consecutive runs) that the
        index holds: page id -> report key. Read from the ledger's failures at close."""
        assert self.target is not None
        retire: dict[str, str] = {}
        for key, entry in self.ledger.items.items():
            status = entry.get("httpStatus")
            pid = entry.get("pageId")
            if entry["status"] != "failed" or status not in (404, 410) or not pid:
                continue
            prev = self.target.known.get(pid)
            if prev is None or prev.status != "active":
                continue
            if status == 410 or prev.not_found_runs + 1 >= self.gone_after:
                retire.setdefault(pid, key)
        return retire
