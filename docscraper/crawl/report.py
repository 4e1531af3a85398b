"""The stats JSON report.

The run's outcomes are recorded in its ledger (:mod:`docscraper.crawl.ledger`); :func:`summarize` derives
``stats`` from them in one pass. :func:`write_report` writes ``runs/<source>/<run-id>.json`` and refreshes
``runs/<source>/crawl-metadata.json`` atomically. The report's JSON Schema is
``docscraper/schema/stats-report.schema.json``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docscraper._resources import read_text
from docscraper.crawl.ledger import RECENT_OUTCOMES, REQUIRED_STATS, summarize

__all__ = [
    "RECENT_OUTCOMES",
    "REQUIRED_STATS",
    "SCHEMA_PATH",
    "load_schema",
    "summarize",
    "write_report",
]

logger = logging.getLogger(__name__)

SCHEMA_PATH = Path(__file__).with_name("schema") / "stats-report.schema.json"


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
