"""A state store and a vector index that kill their own process at one step of DESIGN rule 1, for the
crash tests of ``scrapy verify`` and reconciliation (tests/test_verify.py). Named by dotted path in a crawl
subprocess's settings; the step and the page come from the environment:

``DOCSCRAPER_TEST_KILL``       ``after_upsert`` | ``after_delete`` | ``before_commit``
``DOCSCRAPER_TEST_KILL_PAGE``  the page id whose write ends the process (SIGKILL: nothing runs after it)
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from docscraper.storage.state import PageWrite, SqlStateStore
from docscraper.storage.vectors import ChromaIndex, ChunkRecord


def _kill_at(step: str, page_ids: set[str]) -> None:
    if os.environ.get("DOCSCRAPER_TEST_KILL") == step and os.environ.get("DOCSCRAPER_TEST_KILL_PAGE") in page_ids:
        os.kill(os.getpid(), signal.SIGKILL)


def _page_of(chunk_id: str) -> str:
    # s<source>-<page id>-<hash12>-<index>
    return chunk_id.split("-", 1)[1].rsplit("-", 2)[0]


class KillingIndex(ChromaIndex):
    def upsert(self, chunks: Sequence[ChunkRecord]) -> None:
        super().upsert(chunks)
        _kill_at("after_upsert", {_page_of(c.id) for c in chunks})

    def delete(self, ids: Sequence[str]) -> None:
        super().delete(ids)
        _kill_at("after_delete", {_page_of(cid) for cid in ids})


class KillingStore(SqlStateStore):
    def commit_pages(self, source_id: int, pages: Sequence[PageWrite]) -> None:
        _kill_at("before_commit", {page.page_id for page in pages})
        super().commit_pages(source_id, pages)
