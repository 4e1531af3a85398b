"""Revisit schedules: when each page is checked next, and which pages a due-only run fetches.

Every check leaves its page's schedule in the state store (``next_check_at``, ``check_interval``,
``unchanged_checks``, ``failure_count``, ``last_changed``). :class:`RevisitPolicy` plans it by
``DOCSCRAPER_REVISIT_POLICY``: ``steps`` (``DOCSCRAPER_REVISIT_INTERVALS``, one step on per unchanged check) or
``adaptive`` (``DOCSCRAPER_REVISIT_GROW`` / ``SHRINK`` within ``MIN_INTERVAL`` .. ``MAX_INTERVAL``); a failure backs
off from ``DOCSCRAPER_REVISIT_ERROR_BASE``; a check is planned up to ``DOCSCRAPER_REVISIT_JITTER`` early, never late.
:meth:`RevisitPolicy.why_due` says why a known page is due in a due-only run (``-a due=1``), or None;
:class:`LastmodWatch` decides whether a source's sitemap ``<lastmod>`` is believed. The clock is the wall clock plus
``DOCSCRAPER_REVISIT_CLOCK_OFFSET``. The policies in full: docs/howto/schedules.md; why: docs/explanation/flow.md.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from docscraper.storage.state import utcnow

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig
    from docscraper.storage.state import PageRecord, SourceRecord, StateStore

__all__ = [
    "LastmodWatch",
    "PageSchedule",
    "RevisitPolicy",
    "parse_lastmod",
    "schedule_view",
]

#: A source is untrusted when lastmod moved for at least this many pages of a run...
LASTMOD_MIN_MOVES = 5
#: ... and at least this share of them came back unchanged.
LASTMOD_UNTRUSTED_SHARE = 0.5


def parse_lastmod(value: str | None) -> datetime | None:
    """A sitemap ``<lastmod>`` (W3C Datetime: ``2024-05-01``, ``2024-05-01T10:00:00Z``, ``2024-05``...) as an
    aware UTC time; None when absent or unreadable. A date alone is its midnight UTC."""
    if not value:
        return None
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        for pattern in ("%Y-%m", "%Y"):
            try:
                moment = datetime.strptime(text, pattern)
                break
            except ValueError:
                continue
        else:
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@dataclass(frozen=True)
class PageSchedule:
    """What a check leaves in a page's schedule."""

    next_check_at: datetime
    interval: int  # seconds
    unchanged_checks: int


class RevisitPolicy:
    """The revisit policy of a run, from its settings (see the module docstring)."""

    def __init__(self, config: DocscraperConfig) -> None:
        self.kind = config.revisit_policy
        self.intervals = tuple(int(step) for step in config.revisit_intervals)
        self.min_interval = int(config.revisit_min_interval)
        self.max_interval = int(config.revisit_max_interval)
        self.error_base = config.revisit_error_base
        self.grow = config.revisit_grow
        self.shrink = config.revisit_shrink
        self.jitter = config.revisit_jitter
        self.offset = timedelta(seconds=config.revisit_clock_offset)

    def now(self) -> datetime:
        """The schedule's clock: now, moved by ``DOCSCRAPER_REVISIT_CLOCK_OFFSET``."""
        return utcnow() + self.offset

    @property
    def first_interval(self) -> int:
        return self.intervals[0] if self.kind == "steps" else max(self.min_interval, min(self.intervals[0],
                                                                                          self.max_interval))

    def after_check(self, previous: PageRecord | None, change: str, at: datetime, *,
                    etag: str | None = None, page: str | None = None) -> PageSchedule:
        """The schedule of a page checked at *at* whose content was ``new``, ``changed``, ``unchanged`` or an
        ``alias``'s (judged as unchanged when the page was one before); *etag*: the one the check got, a reset
        (as a change) when it is not the stored one; *page*: its id, which draws its jitter (None: none)."""
        known = previous is not None and previous.check_interval is not None
        revalidated = bool(etag and previous is not None and previous.etag and etag != previous.etag)
        unchanged = change == "unchanged" or (change == "alias" and previous is not None
                                              and previous.status == "alias")
        if not known or change == "new" or (not unchanged) or revalidated:
            if self.kind == "adaptive" and known and change != "new":
                assert previous is not None and previous.check_interval is not None
                interval = self._clamp(previous.check_interval * self.shrink)
            else:
                interval = self.first_interval
            return PageSchedule(at + timedelta(seconds=self._early(interval, page, 0)), interval, 0)
        assert previous is not None and previous.check_interval is not None
        streak = previous.unchanged_checks + 1
        if self.kind == "steps":
            interval = self.intervals[min(streak, len(self.intervals) - 1)]
        else:
            interval = self._clamp(previous.check_interval * self.grow)
        return PageSchedule(at + timedelta(seconds=self._early(interval, page, streak)), interval, streak)

    def _early(self, interval: int, page: str | None, streak: int) -> float:
        """*interval* shortened by up to the jitter share, by an amount drawn from *page* and *streak*."""
        if not page or self.jitter <= 0:
            return float(interval)
        draw = int.from_bytes(hashlib.blake2b(f"{page}|{streak}".encode(), digest_size=8).digest(), "big")
        return interval * (1.0 - self.jitter * draw / 2**64)

    def after_failure(self, failures: int, at: datetime, retry_after: float | None = None) -> datetime:
        """The next check of a page that failed its *failures*-th time in a row at *at*."""
        backoff = min(self.error_base * 2 ** max(0, min(failures, 40) - 1), float(self.max_interval))
        if retry_after is not None and math.isfinite(retry_after):
            backoff = max(backoff, min(retry_after, float(self.max_interval)))
        return at + timedelta(seconds=backoff)

    def _clamp(self, seconds: float) -> int:
        return int(max(self.min_interval, min(self.max_interval, round(seconds))))

    def why_due(self, known: PageRecord | None, now: datetime, lastmod: datetime | None) -> str | None:
        """Why a due-only run fetches a page (``new``, ``reindex``, ``unscheduled``, ``lastmod``, ``due``), or None
        when it is not due. *lastmod* is the sitemap's ``<lastmod>`` for it this run (None when absent or
        untrusted)."""
        if known is None or known.status == "removed":
            return "new"
        if known.reindex_requested:
            return "reindex"
        if known.next_check_at is None:
            return "unscheduled"
        if lastmod is not None:
            seen = parse_lastmod(known.sitemap_lastmod) or known.last_changed
            if seen is not None and lastmod > seen:
                return "lastmod"
        if known.next_check_at <= now:
            return "due"
        return None


def schedule_view(store: StateStore, source: SourceRecord, policy: RevisitPolicy) -> dict[str, object]:
    """A source's schedule now, by the policy's clock, as ``sources show``, ``status`` and the MCP tools give it:
    pages on a schedule, how many are due now, when the next falls due, and whether its sitemap lastmod is
    believed."""
    now = policy.now()
    summary = store.schedule_summary(source.id, now)
    watch = LastmodWatch(source, policy, now)
    return {
        "scheduled": summary.scheduled,
        "due_now": summary.due_now,
        "next_due_at": summary.next_due_at.isoformat().replace("+00:00", "Z") if summary.next_due_at else None,
        "lastmod_trusted": watch.trusted,
        "lastmod_note": watch.stored_note,
    }


class LastmodWatch:
    """Whether a source's sitemap ``<lastmod>`` values say when its pages change (the module docstring)."""

    def __init__(self, source: SourceRecord, policy: RevisitPolicy, now: datetime) -> None:
        since = source.lastmod_untrusted_at
        self.untrusted_since = since if since is not None and now - since < timedelta(
            seconds=policy.max_interval) else None
        self.stored_note = source.lastmod_note if self.untrusted_since is not None else None
        self.moved = 0
        self.moved_unchanged = 0
        self.uniform_files: list[str] = []

    @property
    def trusted(self) -> bool:
        """Whether this run may fetch a page because its lastmod moved."""
        return self.untrusted_since is None

    def checked(self, known: PageRecord | None, lastmod: str | None, change: str) -> None:
        """A page was checked: *lastmod* is what the sitemap said of it this run, *change* what the check found."""
        if known is None or not lastmod or not known.sitemap_lastmod:
            return
        before, now = parse_lastmod(known.sitemap_lastmod), parse_lastmod(lastmod)
        if before is None or now is None or now <= before:
            return
        self.moved += 1
        if change == "unchanged":
            self.moved_unchanged += 1

    def verdict(self) -> str | None:
        """Why this run found the source's lastmod untrustworthy, or None."""
        if self.moved >= LASTMOD_MIN_MOVES and self.moved_unchanged >= LASTMOD_UNTRUSTED_SHARE * self.moved:
            return (f"sitemap <lastmod> moved for {self.moved} pages while {self.moved_unchanged} of them did not "
                    "change: lastmod is ignored for this source")
        return None

    def report(self) -> dict[str, object]:
        """The report's ``schedule.lastmod``."""
        verdict = self.verdict()
        notes = [f"{url}: every URL carries the same <lastmod> (the file's generation date?); ignored"
                 for url in self.uniform_files]
        if verdict:
            notes.append(verdict)
        elif self.stored_note:
            notes.append(f"{self.stored_note} (since {self.untrusted_since.isoformat() if self.untrusted_since else ''})")
        return {"trusted": self.trusted and verdict is None, "moved": self.moved,
                "movedUnchanged": self.moved_unchanged, "notes": notes}
