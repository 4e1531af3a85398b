"""State database: sources, pages and crawl runs (see :mod:`docscraper.state.store`)."""

from __future__ import annotations

from docscraper.state.store import (
    ImageRecord,
    PageFailure,
    PageRecord,
    PageSeen,
    PageWrite,
    RunRecord,
    RunState,
    SourceRecord,
    SourceSummary,
    SqlStateStore,
    StateError,
    StateStore,
    database_exists,
    iso_utc,
    migrate,
    schema_revision,
    utcnow,
)

__all__ = [
    "ImageRecord",
    "PageFailure",
    "PageRecord",
    "PageSeen",
    "PageWrite",
    "RunRecord",
    "RunState",
    "SourceRecord",
    "SourceSummary",
    "SqlStateStore",
    "StateError",
    "StateStore",
    "database_exists",
    "iso_utc",
    "migrate",
    "schema_revision",
    "utcnow",
]
