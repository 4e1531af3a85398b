"""State database: sources, pages and crawl runs (see :mod:`docscraper.storage.state.store`)."""

from __future__ import annotations

from docscraper.storage.state.store import (
    ImageRecord,
    LockRecord,
    PageFailure,
    PageRecord,
    PageSeen,
    PageWrite,
    RunRecord,
    RunState,
    ScheduleSummary,
    SourceRecord,
    SourceSummary,
    SqlStateStore,
    StateError,
    StateStore,
    database_exists,
    database_location,
    iso_utc,
    migrate,
    schema_revision,
    utcnow,
)

__all__ = [
    "ImageRecord",
    "LockRecord",
    "PageFailure",
    "PageRecord",
    "PageSeen",
    "PageWrite",
    "RunRecord",
    "RunState",
    "ScheduleSummary",
    "SourceRecord",
    "SourceSummary",
    "SqlStateStore",
    "StateError",
    "StateStore",
    "database_exists",
    "database_location",
    "iso_utc",
    "migrate",
    "schema_revision",
    "utcnow",
]
