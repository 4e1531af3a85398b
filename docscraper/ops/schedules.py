"""Scheduled recrawls: when each source's next crawl is due, and starting the due ones.

A registered source may carry a schedule in its scope (``schedule``, set by ``scrapy sources add/update NAME --schedule
SPEC``): an interval (``30m``, ``6h``, ``1d``) or a five-field cron expression in UTC (``croniter``); ``none`` clears
it. :func:`due_crawls` says which sources are due at a moment: the next run time follows the last run's start (the
source's creation when it never ran), moved later by a share of the interval fixed by its name (*jitter*, 0.1, at most
10 minutes). :func:`start_due` starts the due ones as ``--due`` recrawls through
:func:`docscraper.ops.launch.start_crawl`, never a second crawl of a running source, at most ``max_running`` at once.
``scrapy schedule`` runs it once, ``scrapy serve`` in a loop (:class:`ScheduleLoop`). Why:
docs/explanation/operations.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.recrawls import jitter_for, parse_schedule
from docscraper.ops.launch import CrawlRunning, start_crawl
from docscraper.ops.sources import SourceError
from docscraper.storage.backends import open_state_store
from docscraper.storage.runs import running_runs
from docscraper.storage.state import StateError, database_exists, iso_utc

__all__ = ["MISSED_AFTER", "ScheduleLoop", "ScheduledSource", "due_crawls", "schedule_state", "schedule_states",
           "start_due"]

logger = logging.getLogger(__name__)

#: A scheduled run that has been due this long without starting is *missed* (no server or cron job was running,
#: or the cap on crawls at once held it back).
MISSED_AFTER = timedelta(minutes=5)
#: The results that make a scheduled source's last run *failed*.
FAILED_RESULTS = frozenset({"failed", "aborted"})

@dataclass(frozen=True)
class ScheduledSource:
    """A source with a schedule, as :func:`due_crawls` judged it at ``now``."""

    name: str
    schedule: str
    last_start: datetime | None
    next_run: datetime
    due: bool
    running: bool
    last_result: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "schedule": self.schedule,
                "last_start": iso_utc(self.last_start), "next_run": iso_utc(self.next_run), "due": self.due,
                "running": self.running, "last_result": self.last_result}


def due_crawls(config: DocscraperConfig, now: datetime | None = None, *, jitter: float = 0.1) -> list[ScheduledSource]:
    """Every registered source with a schedule, with its next run time and whether it is due at *now*."""
    now = now or datetime.now(UTC)
    if not database_exists(config.state_url):
        return []
    store = open_state_store(config)
    try:
        found = []
        for summary in store.list_sources():
            source = summary.source
            spec = source.scope.get("schedule")
            if not spec or not source.registered:
                continue
            try:
                schedule = parse_schedule(str(spec))
            except ConfigError as exc:
                logger.warning("Source %s: stored schedule %r is not valid (%s); not scheduled", source.name, spec, exc)
                continue
            if schedule is None:
                continue
            run = summary.last_run
            last = run.started_at if run is not None else None
            base = last or _created(source.scope, now)
            next_run = schedule.next_after(base) + jitter_for(source.name, schedule.period(base), jitter)
            running = bool(running_runs(store, source.id, timeout=config.heartbeat_timeout))
            found.append(ScheduledSource(source.name, schedule.text, last, next_run,
                                         due=next_run <= now and not running, running=running,
                                         last_result=run.result if run is not None else None))
        return found
    finally:
        store.close()


def schedule_state(entry: ScheduledSource, now: datetime) -> dict[str, Any]:
    """A scheduled source as ``scrapy status`` and the dashboard show it: :meth:`ScheduledSource.as_dict`, and
    ``missed`` (due for :data:`MISSED_AFTER` and not started), ``overdue_s`` and ``failed`` (its last run failed or
    was aborted)."""
    missed = entry.due and now - entry.next_run >= MISSED_AFTER
    return {**entry.as_dict(), "missed": missed,
            "overdue_s": round((now - entry.next_run).total_seconds()) if entry.due else 0,
            "failed": entry.last_result in FAILED_RESULTS}


def schedule_states(config: DocscraperConfig, now: datetime | None = None) -> dict[str, dict[str, Any]]:
    """:func:`schedule_state` of every scheduled source, by name."""
    now = now or datetime.now(UTC)
    return {entry.name: schedule_state(entry, now) for entry in due_crawls(config, now)}


def _created(scope: dict[str, Any], now: datetime) -> datetime:
    """When a never-crawled source's schedule started: ``schedule_since`` as stored, else now."""
    since = scope.get("schedule_since")
    if since:
        try:
            return datetime.fromisoformat(str(since).replace("Z", "+00:00"))
        except ValueError:
            pass
    return now


def start_due(config: DocscraperConfig, now: datetime | None = None, *, max_running: int | None = None,
              jitter: float = 0.1, settings: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Start the crawls that are due (``--due`` recrawls) and say what happened to each: ``started`` with how, or
    not with ``why`` (the cap on crawls at once, a failure to start; ``running`` when a crawl of it runs already)."""
    outcomes = []
    for entry in due_crawls(config, now, jitter=jitter):
        if not entry.due:
            continue
        try:
            started = start_crawl(config, entry.name, due=True, settings=settings, max_running=max_running)
        except CrawlRunning as exc:
            # started a moment ago and not yet recorded as running: not a skipped run
            outcomes.append({"source": entry.name, "started": False, "running": True, "why": str(exc)})
            continue
        except SourceError as exc:
            outcomes.append({"source": entry.name, "started": False, "why": str(exc)})
            continue
        outcomes.append({"source": entry.name, **started})
    return outcomes


class ScheduleLoop:
    """:func:`start_due` every *tick* seconds, as ``scrapy serve`` runs it (:meth:`run` on its event loop, each
    round on a worker thread), keeping the last rounds that started or skipped something for the dashboard."""

    def __init__(self, config: DocscraperConfig, *, tick: float, settings: dict[str, str] | None = None) -> None:
        self.config = config
        self.tick = tick
        self.settings = dict(settings or {})
        self.rounds: deque[dict[str, Any]] = deque(maxlen=50)
        self.last_tick: datetime | None = None

    def run_once(self, now: datetime | None = None) -> list[dict[str, Any]]:
        now = now or datetime.now(UTC)
        error = None
        try:
            outcomes = start_due(self.config, now, max_running=self.config.server_max_crawls or None,
                                 settings=self.settings)
        except (SourceError, StateError, ConfigError, OSError) as exc:
            outcomes, error = [], str(exc)
            logger.error("Scheduled recrawls: %s", exc)
        self.last_tick = now
        # a source whose crawl runs already is no news
        outcomes = [outcome for outcome in outcomes if not outcome.get("running")]
        if outcomes or error:
            self.rounds.appendleft({"at": iso_utc(now), "outcomes": outcomes, "error": error})
        for outcome in outcomes:
            if outcome.get("started"):
                logger.info("Scheduled recrawls: started a due recrawl of %s", outcome.get("source"))
            else:
                logger.warning("Scheduled recrawls: a due recrawl of %s did not start: %s", outcome.get("source"),
                               outcome.get("why"))
        return outcomes

    async def run(self) -> None:
        """Rounds until cancelled; a round that fails unexpectedly is logged and the next one comes."""
        while True:
            try:
                await asyncio.to_thread(self.run_once)
            except Exception:
                logger.exception("Scheduled recrawls: a round failed")
            await asyncio.sleep(self.tick)

    def as_dict(self) -> dict[str, Any]:
        return {"tick_s": self.tick, "last_tick": iso_utc(self.last_tick) if self.last_tick else None,
                "rounds": list(self.rounds)}
