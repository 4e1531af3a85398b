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
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
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


class RunLedger:
    """Every URL's outcome in one run."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

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
    with SCHEMA_PATH.open(encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema
