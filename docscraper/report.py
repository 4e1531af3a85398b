"""The run ledger and the stats JSON report.

:class:`RunLedger` records the outcome of every URL a run touched, keyed as the report's ``items``:
the path relative to the scope prefix for in-scope URLs, the full URL otherwise. Each entry is
``{status, statusReason, fetchedAt}`` plus optional details (``url``, ``detail``, ``finder``...).
Precedence keeps the most informative outcome when a key is recorded twice: a success beats a failure,
which beats a skip.

:func:`summarize` derives ``stats`` from ``items`` in one pass; :func:`write_report` writes
``runs/<source>/<run-id>.json`` and refreshes ``runs/<source>/crawl-metadata.json`` atomically. The
report's JSON Schema is ``docscraper/schema/stats-report.schema.json``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import Counter, deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docscraper._resources import read_text

__all__ = [
    "RECENT_OUTCOMES",
    "REQUIRED_STATS",
    "SCHEMA_PATH",
    "RunLedger",
    "load_schema",
    "summarize",
    "write_report",
]

logger = logging.getLogger(__name__)

SCHEMA_PATH = Path(__file__).with_name("schema") / "stats-report.schema.json"

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

#: How many of the latest failed (and skipped) URLs a ledger keeps for the crawl status.
RECENT_OUTCOMES = 20


class RunLedger:
    """Every URL's outcome in one run.

    :attr:`tally` keeps what :func:`summarize` would count (``status`` and ``status.reason``) as outcomes
    are recorded, and :attr:`recent` the last :data:`RECENT_OUTCOMES` failed and skipped URLs, so a
    running crawl's progress costs nothing per tick however many URLs it has seen.
    """

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.tally: Counter[str] = Counter()
        self.recent: dict[str, deque[dict[str, Any]]] = {
            "failed": deque(maxlen=RECENT_OUTCOMES),
            "skipped": deque(maxlen=RECENT_OUTCOMES),
        }

    def record(
        self,
        key: str,
        status: str,
        reason: str,
        *,
        fetched_at: str | None = None,
        **details: Any,
    ) -> bool:
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
        return sum(
            1
            for e in self.items.values()
            if e["status"] == status and (reason is None or e["statusReason"] == reason)
        )


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


def _atomic_write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False, default=str)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(runs_dir: Path, source: str, run_id: str, report: Mapping[str, Any]) -> Path:
    """Write the run's report and refresh ``crawl-metadata.json``; returns the run report's path."""
    folder = runs_dir / source
    path = folder / f"{run_id}.json"
    _atomic_write_json(path, report)
    _atomic_write_json(folder / "crawl-metadata.json", report)
    return path


def load_schema() -> dict[str, Any]:
    """The report's JSON Schema, read as package data (the egg Scrapyd runs is a zip: no SCHEMA_PATH)."""
    schema: dict[str, Any] = json.loads(read_text("docscraper", "schema", "stats-report.schema.json"))
    return schema
