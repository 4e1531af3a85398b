"""Crawl status from any process: what runs now, what died, how each source's last crawl ended.

A running crawl writes its progress and a heartbeat to the state database every
``DOCSCRAPER_PROGRESS_INTERVAL`` seconds (:mod:`docscraper.crawl.progress`). :func:`crawl_status` only reads
that database, so it sees crawls in another terminal, under Scrapyd, or on another machine sharing a
PostgreSQL state database alike. ``scrapy status [NAME] [--json]`` prints it.

A run without ``finished_at`` is ``running`` while its process is (:mod:`docscraper.storage.runs`: on
this machine its pid and process identity; from another machine, a heartbeat younger than
``DOCSCRAPER_HEARTBEAT_TIMEOUT``), else ``died``. A died run that a later finished run of the same source
supersedes is history and is not listed.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from docscraper.config import DocscraperConfig
from docscraper.crawl.progress import format_duration, format_time
from docscraper.crawl.schedule import RevisitPolicy, schedule_view
from docscraper.ops.sources import page_types
from docscraper.storage.backends import open_state_store
from docscraper.storage.runs import MIN_STALE_SECONDS, State, pid_alive, run_state, stale_after
from docscraper.storage.state import RunState, iso_utc, schema_revision, utcnow

__all__ = ["MIN_STALE_SECONDS", "RunStatus", "crawl_status", "describe", "pid_alive", "run_state", "schedule_text",
           "stale_after"]

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class RunStatus:
    """One crawl run as ``scrapy status`` reports it.

    ``state`` is ``running``, ``finished`` or ``died``; ``progress`` the run's last progress snapshot (see
    the README's "Watching a crawl"), empty for runs recorded before progress existed; ``result``,
    ``close_reason`` and ``report_path`` are set once the run finished.
    """

    source: str
    run_id: str
    state: State
    started_at: datetime
    finished_at: datetime | None
    heartbeat_at: datetime | None
    elapsed_s: float
    progress: dict[str, Any] = field(default_factory=dict)
    result: str | None = None
    close_reason: str | None = None
    report_path: str | None = None
    host: str | None = None
    pid: int | None = None
    # the source's revisit schedules now (docscraper.crawl.schedule.schedule_view)
    schedule: dict[str, Any] | None = None
    # the source's active pages by document type (docscraper.ops.sources.page_types)
    types: dict[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: times in ISO 8601 (UTC, ``Z``)."""
        return {
            "source": self.source,
            "run_id": self.run_id,
            "state": self.state,
            "started_at": iso_utc(self.started_at),
            "finished_at": iso_utc(self.finished_at),
            "heartbeat_at": iso_utc(self.heartbeat_at),
            "elapsed_s": self.elapsed_s,
            "progress": self.progress,
            "result": self.result,
            "close_reason": self.close_reason,
            "report_path": self.report_path,
            "host": self.host,
            "pid": self.pid,
            "schedule": self.schedule,
            "types": self.types,
        }


def _status(run: RunState, state: State, now: datetime) -> RunStatus:
    record = run.run
    if state == "finished":
        end = record.finished_at or now
    elif state == "running":
        end = now
    else:
        end = run.heartbeat_at or record.started_at
    return RunStatus(
        source=run.source,
        run_id=record.run_id,
        state=state,
        started_at=record.started_at,
        finished_at=record.finished_at,
        heartbeat_at=run.heartbeat_at,
        elapsed_s=round(max(0.0, (end - record.started_at).total_seconds()), 3),
        progress=dict(run.progress or {}),
        result=record.result,
        close_reason=record.close_reason,
        report_path=record.report_path,
        host=run.host,
        pid=run.pid,
    )


def crawl_status(config: DocscraperConfig, name: str | None = None) -> list[RunStatus]:
    """Running and died runs, and the last finished run of each source (of source *name* only, when
    given), oldest first. Raises :class:`LookupError` for an unknown source name."""
    # Never migrate a database a first crawl is creating: until it has a schema, nothing ran.
    if schema_revision(config.state_url) is None:
        if name is not None:
            raise LookupError(f"unknown source {name!r}: nothing has been crawled yet (no state database)")
        return []
    store = open_state_store(config)
    try:
        source_id = None
        if name is not None:
            source = store.get_source(name)
            if source is None:
                known = ", ".join(s.source.name for s in store.list_sources()) or "none yet"
                raise LookupError(f"unknown source {name!r} (known sources: {known})")
            source_id = source.id
        runs = store.run_states(source_id)
        policy = RevisitPolicy(config)
        schedules: dict[str, dict[str, Any]] = {}
        types: dict[str, dict[str, int]] = {}
        for run in runs:
            if run.source not in schedules and (record := store.get_source(run.source)) is not None:
                schedules[run.source] = schedule_view(store, record, policy)
                types[run.source] = page_types(store, record.id)
    finally:
        store.close()
    now = utcnow()
    host = socket.gethostname()
    last_finished: dict[str, datetime] = {}
    for run in runs:
        if run.run.finished_at is not None:
            last_finished[run.source] = max(run.run.started_at, last_finished.get(run.source, run.run.started_at))
    statuses = []
    for run in runs:
        state = run_state(run, now=now, timeout=config.heartbeat_timeout, host=host)
        if state == "died" and run.run.started_at < last_finished.get(run.source, run.run.started_at):
            continue
        statuses.append(dataclasses.replace(_status(run, state, now), schedule=schedules.get(run.source),
                                            types=types.get(run.source)))
    return statuses


def describe(status: RunStatus, *, recent: int = 3) -> list[str]:
    """Human lines for one run: a headline, its counts, and (unless finished) its latest failures."""
    head = [status.source, status.state.upper(), f"run {status.run_id}", f"started {format_time(status.started_at)}",
            format_duration(status.elapsed_s)]
    if status.state == "finished":
        head.append(f"result {status.result or '-'} (close reason {status.close_reason or '-'})")
    elif status.state == "died":
        head.append(f"no heartbeat since {format_time(status.heartbeat_at)} (host {status.host or '?'}, pid {status.pid})")
    else:
        head.append(f"host {status.host or '?'}, pid {status.pid}")
        if status.progress.get("stopping"):
            head.append("stopping: finishing the pages in flight and in the pipelines")
    lines = ["  ".join(head)]
    progress = status.progress
    pages = progress.get("pages") or {}
    if pages:
        done = f"pages {pages.get('done', 0)} done"
        if status.state != "finished":
            done += f" of {pages.get('known', 0)} known, {pages.get('queued', 0)} queued"
        detail = ", ".join(f"{pages.get(k, 0)} {k}" for k in ("new", "changed", "unchanged"))
        if pages.get("removed"):
            detail += f", {pages['removed']} removed"
        rate = progress.get("rate") or {}
        lines.append(
            f"    {done} ({detail}); {pages.get('failed', 0)} failed, {pages.get('skipped', 0)} skipped; "
            f"{progress.get('chunks_written', 0)} chunks written, {progress.get('embeddings_computed', 0)} "
            f"embeddings; {rate.get('overall', 0):.1f} pages/s"
            + (f" ({rate.get('recent', 0):.1f} recently)" if status.state == "running" else "")
        )
    else:
        lines.append("    no progress recorded")
    if status.state != "finished":
        failures = list((progress.get("failed") or {}).get("recent") or [])[-recent:]
        for failure in reversed(failures):
            detail = f": {failure['detail']}" if failure.get("detail") else ""
            lines.append(f"    failed {failure.get('url')} ({failure.get('reason')}{detail})")
    if status.report_path:
        lines.append(f"    report {status.report_path}")
    if status.schedule and status.schedule.get("scheduled") and status.state == "finished":
        lines.append(f"    schedule {schedule_text(status.schedule)}")
    if status.types and status.state == "finished":
        lines.append("    pages    " + ", ".join(f"{n} {kind}" for kind, n in status.types.items()))
    return lines


def schedule_text(schedule: dict[str, Any]) -> str:
    """A source's revisit schedule in words: ``12 of 340 pages due now; next due 2026-11-27 10:00:00Z``."""
    text = f"{schedule.get('due_now', 0)} of {schedule.get('scheduled', 0)} pages due now"
    if schedule.get("next_due_at"):
        text += f"; next due {schedule['next_due_at'].replace('T', ' ')[:19]}Z"
    if schedule.get("lastmod_trusted") is False:
        text += "; sitemap lastmod ignored (" + str(schedule.get("lastmod_note") or "untrusted") + ")"
    return text
