"""A crawl's live progress: written to the state database for ``scrapy status``, shown on the terminal.

:func:`build_progress` takes a snapshot of a run from its ledger: pages done, queued and
in flight; new, changed, unchanged, failed and skipped pages (failures and refusals by reason, with the
latest URLs); chunks written, embeddings computed, the rate in pages per second over the whole run and
over the last half minute. Every count comes from the run's ledger tallies and counters, so a snapshot
costs the same after ten pages as after a hundred thousand.

:class:`ProgressRecorder` belongs to the run: opened with it, it writes a snapshot to ``runs.progress``
and ``runs.heartbeat_at`` every ``DOCSCRAPER_PROGRESS_INTERVAL`` seconds on the state thread, and once
more when the run closes. :class:`ProgressLine` is the extension that rewrites one line on stderr.
"""

from __future__ import annotations

import logging
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

from docscraper.crawl.signals import run_opened
from docscraper.storage.runs import take_lock, this_process
from docscraper.storage.state import iso_utc, utcnow

if TYPE_CHECKING:
    from datetime import datetime

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from docscraper.crawl.ledger import RunLedger
    from docscraper.crawl.resources import CrawlResources

__all__ = ["RECENT_WINDOW", "Heartbeat", "ProgressLine", "ProgressRecorder", "RateMeter", "build_progress",
           "format_duration", "format_progress_line", "format_time", "queued_requests"]

logger = logging.getLogger(__name__)

#: Seconds over which the recent rate is measured.
RECENT_WINDOW = 30.0

_CHANGES = ("new", "changed", "unchanged")


class RateMeter:
    """Pages per second over the last :data:`RECENT_WINDOW` seconds, from (time, pages done) samples."""

    def __init__(self, window: float = RECENT_WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def sample(self, done: int, now: float | None = None) -> float | None:
        """Record *done* at *now* (``time.monotonic()``); the recent rate, None until two samples."""
        now = time.monotonic() if now is None else now
        self._samples.append((now, done))
        # keep one sample at or before the window's start, so the rate spans the whole window
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()
        first_t, first_done = self._samples[0]
        if now - first_t <= 0:
            return None
        return (done - first_done) / (now - first_t)


def queued_requests(crawler: Crawler) -> tuple[int, int]:
    """Requests waiting in the scheduler, and requests in the downloader."""
    engine = crawler.engine
    scheduler = getattr(engine, "scheduler", None) if engine is not None else None
    queued: int | None = None
    if scheduler is not None and hasattr(scheduler, "__len__"):
        try:
            queued = len(scheduler)
        except Exception:  # a distributed scheduler may not know; the stats do
            queued = None
    if queued is None and crawler.stats is not None:
        stats = crawler.stats
        queued = max(0, int(stats.get_value("scheduler/enqueued", 0)) - int(stats.get_value("scheduler/dequeued", 0)))
    downloader = getattr(engine, "downloader", None) if engine is not None else None
    in_flight = len(getattr(downloader, "active", ()) or ())
    return queued or 0, in_flight


def stopping(crawler: Crawler) -> bool:
    """Whether the crawl is stopping (SIGTERM or Ctrl-C): it takes no new page, but pages in flight and in
    the pipelines still finish, which can take minutes. (A close the spider asked for itself, a close-spider
    limit or the watchdog, is not seen here: Scrapy says it through no public attribute.)"""
    if getattr(crawler, "crawling", True) is False:
        return True
    engine = crawler.engine
    if engine is None:
        return False
    return getattr(engine, "running", True) is False


def _outcomes(ledger: RunLedger, status: str) -> dict[str, Any]:
    tally = ledger.tally
    prefix = f"{status}."
    by_reason = {k[len(prefix):]: v for k, v in sorted(tally.items()) if k.startswith(prefix) and v > 0}
    return {"count": tally[status], "by_reason": by_reason, "recent": list(ledger.recent[status])}


def build_progress(ledger: RunLedger, crawler: Crawler, started_at: datetime, meter: RateMeter | None = None, *,
                   interval: float | None = None) -> dict[str, Any]:
    """A JSON-ready snapshot of a run's progress from its ledger (the ``runs.progress`` column; see the
    README)."""
    now = utcnow()
    tally = ledger.tally
    changes = {change: tally[f"success.{change}"] for change in _CHANGES}
    failed = _outcomes(ledger, "failed")
    skipped = _outcomes(ledger, "skipped")
    done = sum(changes.values()) + failed["count"]
    queued, in_flight = queued_requests(crawler)
    elapsed = max(0.0, (now - started_at).total_seconds())
    recent = meter.sample(done) if meter is not None else None
    overall = done / elapsed if elapsed > 0 else 0.0
    progress: dict[str, Any] = {
        "started_at": iso_utc(started_at),
        "updated_at": iso_utc(now),
        "elapsed_s": round(elapsed, 3),
        "pages": {
            "done": done,
            # Pages fetched and waiting in the pipelines (for the model, say) are neither queued nor in
            # flight: every page the run took a slot for is known.
            "known": max(done + queued + in_flight, ledger.scheduled_pages),
            "queued": queued,
            "in_flight": in_flight,
            **changes,
            "failed": failed["count"],
            "skipped": skipped["count"],
            "removed": tally["success.removed"],
        },
        "failed": failed,
        "skipped": skipped,
        "chunks_written": ledger.counters["chunks_added"],
        "embeddings_computed": ledger.counters["embeddings_computed"],
        "rate": {"overall": round(overall, 3), "recent": round(overall if recent is None else recent, 3)},
    }
    if stopping(crawler):
        progress["stopping"] = True
    if interval is not None:
        progress["interval_s"] = interval
    return progress


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h03m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def format_time(value: datetime | str | None) -> str:
    """``2026-11-27 04:00:07Z``: a time (or an ISO 8601 text of one in UTC, as :func:`~docscraper.storage.state.iso_utc`
    writes it) to the second; ``-`` for none."""
    if not value:
        return "-"
    text = iso_utc(value) if isinstance(value, datetime) else str(value)
    return text.replace("T", " ")[:19] + "Z"


def format_progress_line(progress: Mapping[str, Any], width: int | None = None) -> str:
    """One line from a :func:`build_progress` snapshot: done / known, rate, errors, elapsed time.

    ``docscraper 120/450 pages (27%) | 3.2 pages/s | 2 errors | 12 skipped | 1m05s``, cut to *width*.
    """
    pages = progress.get("pages") or {}
    done = int(pages.get("done", 0))
    known = max(int(pages.get("known", 0)), done)
    share = f" ({done / known:.0%})" if known else ""
    rate = (progress.get("rate") or {}).get("recent") or 0.0
    errors = int(pages.get("failed", 0))
    parts = [
        f"docscraper {done}/{known} pages{share}",
        f"{rate:.1f} pages/s",
        f"{errors} error{'' if errors == 1 else 's'}",
    ]
    if pages.get("skipped"):
        parts.append(f"{pages['skipped']} skipped")
    parts.append(format_duration(float(progress.get("elapsed_s", 0))))
    line = " | ".join(parts)
    if width is not None and len(line) > width:
        line = line[: max(0, width - 3)] + "..." if width > 3 else line[:width]
    return line


class Heartbeat:
    """A thread that marks the run alive every *interval* seconds (on the monotonic clock), whatever the
    reactor is doing: its run row's ``heartbeat_at`` and its source's lock (DESIGN rule 10). What another
    machine judges a run by (:mod:`docscraper.storage.runs`); on this one, the process itself is asked. A
    shared run's worker that finds the lock gone (another worker released it on leaving) takes it again."""

    def __init__(self, resources: CrawlResources, interval: float) -> None:
        self.resources = resources
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="docscraper-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, self.interval))
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def beat(self) -> None:
        """Mark the run and its lock alive once (called by the thread; callable from a test)."""
        resources = self.resources
        store, target, holder = resources.store, resources.target, resources.lock_holder
        if store is None:
            return
        try:
            now = utcnow()
            store.heartbeat(resources.run_id, now)
            if target is not None and holder is not None:
                shared = resources.ledger.shared
                if shared:  # who refreshed a shared lock last is who a checker asks about
                    host, pid, start = this_process()
                    held = store.refresh_lock(target.source.id, holder, now, host=host, pid=pid, process_start=start)
                else:
                    held = store.refresh_lock(target.source.id, holder, now)
                if not held and shared:
                    take_lock(store, target.source.id, holder, purpose="crawl",
                              timeout=resources.config.heartbeat_timeout, shared=True)
        except Exception as exc:
            if not self._warned:
                self._warned = True
                logger.warning("Cannot write the crawl's heartbeat to the state database: %s", exc)


class ProgressRecorder:
    """Writes the run's progress and heartbeat to the state database every *interval* seconds.

    Started by :class:`~docscraper.crawl.reporter.RunReporter` once the run's row exists, closed (one last
    write) before the run is finished. Writes go through the state thread
    (:meth:`~docscraper.crawl.resources.CrawlResources.db`), so SQL never runs on the reactor thread; a write
    that fails is logged and counted (``docscraper/progress/write_errors``), and the crawl goes on. The
    heartbeat alone is also written by a thread of its own (:class:`Heartbeat`), so a blocked reactor does
    not make the run look dead from another machine.
    """

    def __init__(self, resources: CrawlResources, interval: float) -> None:
        self.resources = resources
        self.interval = interval
        self.meter = RateMeter()
        self.heartbeat = Heartbeat(resources, interval)
        self._loop: AsyncioLoopingCall | LoopingCall | None = None
        self._writing = False
        self._warned = False

    def start(self) -> None:
        self._loop = create_looping_call(self._tick)
        self._loop.start(self.interval, now=True)
        self.heartbeat.start()

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        self.heartbeat.stop()

    async def close(self) -> None:
        """Stop the periodic writes and write the final progress."""
        self.stop()
        await self.write()

    def _tick(self) -> None:
        # A write slower than the interval (a busy database) is not queued behind itself.
        if not self._writing:
            deferred_from_coro(self.write())

    async def write(self) -> None:
        resources = self.resources
        store = resources.store
        if store is None:
            return
        self._writing = True
        try:
            progress = build_progress(resources.ledger, resources.crawler, resources.started_at, self.meter,
                                      interval=self.interval)
            await resources.db(store.heartbeat, resources.run_id, utcnow(), progress)
        except Exception as exc:
            resources.outcomes.stat("progress/write_errors")
            if not self._warned:
                self._warned = True
                logger.warning("Cannot write the crawl's progress to the state database: %s", exc)
        finally:
            self._writing = False


class ProgressLine:
    """A progress line on stderr, rewritten in place about once a second: done / known, rate, errors.

    Settings: ``DOCSCRAPER_PROGRESS_LINE`` (``auto``, the default: only when stderr is a terminal;
    ``on``; ``off``), read when the run opens (:data:`~docscraper.crawl.signals.run_opened`). The line is written with a carriage return and cleared
    before any log record reaches a handler writing to the same stream, so log lines stay whole; it is
    drawn again on the next tick, and cleared when the spider closes. Scrapy's LogStats stay in the log.
    """

    refresh = 1.0

    def __init__(self, crawler: Crawler, stream: IO[str]) -> None:
        self.crawler = crawler
        self.resources: CrawlResources | None = None
        self.stream = stream
        self.meter = RateMeter(window=10.0)
        self._shown = 0
        self._loop: AsyncioLoopingCall | LoopingCall | None = None
        self._handlers: list[logging.Handler] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressLine:
        line = cls(crawler, sys.stderr)
        crawler.signals.connect(line.run_opened, signal=run_opened)
        crawler.signals.connect(line.spider_closed, signal=signals.spider_closed)
        return line

    def run_opened(self, resources: CrawlResources) -> None:
        mode = resources.config.progress_line
        # Without a message: a crawl under Scrapyd or with its output piped is the usual case, no warning.
        if mode == "off" or (mode == "auto" and not (hasattr(self.stream, "isatty") and self.stream.isatty())):
            return
        self.resources = resources
        # Handlers are looked up now: Scrapy installs its root handler when the crawler starts.
        for handler in logging.getLogger().handlers:
            if getattr(handler, "stream", None) is self.stream:
                handler.addFilter(self._before_log)
                self._handlers.append(handler)
        self._loop = create_looping_call(self.draw)
        self._loop.start(self.refresh, now=False)

    def spider_closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        for handler in self._handlers:
            handler.removeFilter(self._before_log)
        self._handlers = []
        self.clear()

    def _before_log(self, record: logging.LogRecord) -> bool:
        self.clear()
        return True

    def draw(self) -> None:
        resources = self.resources
        if resources is None or not resources.opened:
            return
        width = shutil.get_terminal_size((100, 24)).columns - 1
        progress = build_progress(resources.ledger, self.crawler, resources.started_at, self.meter)
        text = format_progress_line(progress, width)
        self._write("\r" + text.ljust(self._shown))
        self._shown = len(text)

    def clear(self) -> None:
        if self._shown:
            self._write("\r" + " " * self._shown + "\r")
            self._shown = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken terminal is no reason to stop a crawl
            self._shown = 0
