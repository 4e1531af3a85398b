"""State database: sources, pages and crawl runs (see :mod:`docscraper.state.store`)."""

from __future__ import annotations

from docscraper.state.store import (
    PageFailure,
    PageRecord,
    PageSeen,
    PageWrite,
    RunRecord,
    SourceRecord,
    SqlStateStore,
    StateError,
    StateStore,
    migrate,
    utcnow,
)

__all__ = [
    "PageFailure",
    "PageRecord",
    "PageSeen",
    "PageWrite",
    "RunRecord",
    "SourceRecord",
    "SqlStateStore",
    "StateError",
    "StateStore",
    "migrate",
    "utcnow",
]
