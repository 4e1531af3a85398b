"""What the dashboard of ``scrapy serve`` shows, as plain data: the sources with their last run and next scheduled
run, a source's run history (from the state database and each run's stats report), one run's report filtered, and
the history charts (drawn by matplotlib as SVG on the server). No web framework here: :mod:`docscraper.ops.server`
renders these and its JSON API returns them as they are.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docscraper.config import DocscraperConfig
from docscraper.crawl.changefeed import changes_path
from docscraper.ops.schedules import schedule_states
from docscraper.ops.sources import list_sources
from docscraper.ops.status import crawl_status
from docscraper.storage.backends import open_state_store
from docscraper.storage.state import RunRecord, database_exists, iso_utc

__all__ = ["HistoryRun", "ReportDigests", "history_charts", "run_history", "run_report", "sources_overview"]

logger = logging.getLogger(__name__)

def sources_overview(config: DocscraperConfig, now: datetime | None = None) -> list[dict[str, Any]]:
    """Every source: name, URL, library and version, pages, chunks, its last run, whether a crawl of it runs,
    and its schedule (:func:`~docscraper.ops.schedules.schedule_state`) when it has one."""
    now = now or datetime.now(UTC)
    if not database_exists(config.state_url):
        return []
    schedules = schedule_states(config, now)
    running = {status.source: status.run_id for status in crawl_status(config) if status.state == "running"}
    rows = []
    for info in list_sources(config):
        scope = info.scope
        rows.append({
            "name": info.name, "url": info.url, "registered": info.registered,
            "library": scope.get("library"), "version": scope.get("version"), "latest": bool(scope.get("latest")),
            "private": bool(scope.get("auth")), "pages": info.pages, "chunks": info.chunks,
            "last_run": info.last_run, "running": running.get(info.name),
            "schedule": schedules.get(info.name), "types": info.types or {},
        })
    return rows


@dataclass(frozen=True)
class HistoryRun:
    """One run of a source, for the history table and charts."""

    run_id: str
    started_at: datetime
    finished_at: datetime | None
    result: str | None
    close_reason: str | None
    stats: dict[str, int]
    duration_s: float | None
    embeddings: int | None
    bytes: int | None
    due: bool
    full: bool
    has_report: bool

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": iso_utc(self.started_at),
                "finished_at": iso_utc(self.finished_at) if self.finished_at else None,
                "result": self.result, "close_reason": self.close_reason, "stats": self.stats,
                "duration_s": self.duration_s, "embeddings_computed": self.embeddings, "bytes_downloaded": self.bytes,
                "due": self.due, "full": self.full, "has_report": self.has_report}


class ReportDigests:
    """What the history needs from each run's stats report (duration, embeddings computed, bytes downloaded, the
    run's mode), read once per report file and kept (a finished report never changes; a big site's report is
    megabytes)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()

    def get(self, path: str | None) -> dict[str, Any] | None:
        if not path:
            return None
        try:
            stat = Path(path).stat()
        except OSError:
            return None
        key = (path, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        report = read_report(path)
        if report is None:
            return None
        counters = report.get("counters") or {}
        digest = {"duration_s": report.get("durationSeconds"), "embeddings": counters.get("embeddings_computed", 0),
                  "bytes": (report.get("scrapy") or {}).get("downloader/response_bytes"),
                  "due": bool(report.get("due")), "full": bool(report.get("full"))}
        with self._lock:
            self._kept[key] = digest
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return digest


def read_report(path: str | Path) -> dict[str, Any] | None:
    """A run's stats report, None when it cannot be read (removed with its source, or not JSON)."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        logger.warning("Cannot read the report %s: %s", path, exc)
        return None
    return value if isinstance(value, dict) else None


def _records(config: DocscraperConfig, name: str, limit: int) -> list[RunRecord]:
    """Source *name*'s last *limit* run records, newest first; :class:`LookupError` for an unknown source."""
    if not database_exists(config.state_url):
        raise LookupError(f"unknown source {name!r}: nothing is registered yet")
    store = open_state_store(config)
    try:
        source = store.get_source(name)
        if source is None:
            raise LookupError(f"unknown source {name!r}")
        return store.last_runs(source.id, limit=limit)
    finally:
        store.close()


def run_history(config: DocscraperConfig, name: str, *, limit: int = 30,
                digests: ReportDigests | None = None) -> list[HistoryRun]:
    """Source *name*'s last *limit* runs, newest first. :class:`LookupError` for an unknown source."""
    digests = digests or ReportDigests()
    history = []
    for record in _records(config, name, limit):
        digest = (digests.get(record.report_path) if record.finished_at is not None else None) or {}
        duration = digest.get("duration_s")
        if duration is None and record.finished_at is not None:
            duration = round((record.finished_at - record.started_at).total_seconds(), 3)
        history.append(HistoryRun(
            record.run_id, record.started_at, record.finished_at, record.result, record.close_reason,
            dict(record.summary or {}), duration, digest.get("embeddings"), digest.get("bytes"),
            due=bool(digest.get("due") or record.args.get("due")),
            full=bool(digest.get("full") or record.args.get("full")), has_report=bool(digest)))
    return history


def run_report(config: DocscraperConfig, name: str, run_id: str, *, status: str | None = None,
               reason: str | None = None, offset: int = 0, limit: int = 200) -> dict[str, Any]:
    """One run's report for browsing: its head (result, times, stats, counters, discovery), the items filtered by
    *status* and *reason* (``limit`` of them from ``offset``), how many of each status and reason there are, and
    the run's change feed (the first ``limit`` lines). :class:`LookupError` when the run or its report is not
    there."""
    record = next((run for run in _records(config, name, 100_000) if run.run_id == run_id), None)
    if record is None:
        raise LookupError(f"source {name!r} has no run {run_id!r}")
    report = read_report(record.report_path) if record.report_path else None
    if report is None:
        raise LookupError(f"run {run_id} of {name!r} has no report (it did not finish, or the report was removed)")
    items: dict[str, Any] = report.get("items") or {}
    reasons = Counter(f"{entry.get('status')}.{entry.get('statusReason')}" for entry in items.values())
    chosen = [{"url": url, **entry} for url, entry in items.items()
              if (not status or entry.get("status") == status) and (not reason or entry.get("statusReason") == reason)]
    changes: list[Any] = []
    feed = changes_path(config.runs_dir, name, run_id)
    if feed.is_file():
        with feed.open(encoding="utf-8") as handle:
            for line in handle:
                if len(changes) >= limit:
                    break
                try:
                    changes.append(json.loads(line))
                except ValueError:
                    continue
    head = {key: report.get(key) for key in ("runId", "source", "seedUrl", "startedAt", "lastUpdate",
                                             "durationSeconds", "closeReason", "result", "resultReason", "full",
                                             "due", "stats", "counters", "removal", "frontierCut")}
    return {"run": head, "reasons": dict(sorted(reasons.items())), "total": len(chosen), "offset": offset,
            "limit": limit, "items": chosen[offset:offset + limit], "changes": changes}


_STATUS_SERIES = (("new", "success.new", "#2e7d32"), ("changed", "success.changed", "#f9a825"),
                  ("unchanged", "success.unchanged", "#90a4ae"), ("removed", "success.removed", "#6a1b9a"),
                  ("failed", "failed", "#c62828"))
_ONE_SERIES = "#1565c0"


def history_charts(history: list[HistoryRun]) -> dict[str, str]:
    """SVG charts of *history* (oldest run on the left), drawn by matplotlib's object API (a :class:`Figure` of its
    own per chart: no pyplot, no global state, safe on a server's threads): ``pages`` (new / changed / unchanged /
    removed / failed per run, stacked), ``duration`` (seconds), ``embeddings`` (computed) and ``bytes`` (downloaded,
    MB). Empty when no run finished."""
    runs = [run for run in reversed(history) if run.finished_at is not None]
    if not runs:
        return {}
    labels = [f"{run.started_at:%m-%d %H:%M}" for run in runs]
    charts = {}
    figure, axes = _figure("Pages per run")
    bottom = [0.0] * len(runs)
    for title, key, color in _STATUS_SERIES:
        counts = [run.stats.get(key, 0) for run in runs]
        axes.bar(range(len(runs)), counts, bottom=bottom, color=color, label=title)
        bottom = [b + v for b, v in zip(bottom, counts, strict=True)]
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    charts["pages"] = _svg(figure, axes, labels)
    series: tuple[tuple[str, str, list[float]], ...] = (
        ("duration", "Duration (s)", [float(run.duration_s or 0) for run in runs]),
        ("embeddings", "Embeddings computed", [float(run.embeddings or 0) for run in runs]),
        ("bytes", "Downloaded (MB)", [(run.bytes or 0) / 1e6 for run in runs]),
    )
    for key, title, values in series:
        figure, axes = _figure(title)
        axes.bar(range(len(runs)), values, color=_ONE_SERIES)
        charts[key] = _svg(figure, axes, labels)
    return charts


def _figure(title: str) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.6, 2.8), dpi=100, layout="constrained")
    axes = figure.subplots()
    axes.set_title(title, loc="left", fontsize=10)
    axes.spines[["top", "right"]].set_visible(False)
    axes.tick_params(labelsize=8)
    axes.grid(axis="y", color="#e0e0e0", linewidth=0.6)
    axes.set_axisbelow(True)
    return figure, axes


def _svg(figure: Any, axes: Any, labels: list[str]) -> str:
    step = max(1, len(labels) // 12)  # at most a dozen labels under the bars
    axes.set_xticks(range(0, len(labels), step), labels[::step], rotation=30, ha="right")
    axes.set_xlim(-0.6, len(labels) - 0.4)
    out = io.StringIO()
    # no date, no random ids in the SVG: the same history draws the same chart
    figure.savefig(out, format="svg", metadata={"Date": None}, transparent=True)
    return out.getvalue()
