"""Index: write a page's chunks to the vector index, then delete the page's other chunks.

DESIGN rule 1, per page: record the page as an index write in flight (DESIGN rule 8; the state commit clears it,
:mod:`docscraper.storage.consistency` reconciles one left behind), upsert its new chunks, delete its stale ones, and
only then let the state commit record its new hash. Chunk ids are :func:`~docscraper.storage.vectors.chunk_id`'s;
the ids written and deleted stay on the item (``chunks_added``, ``chunks_deleted``) for the change feed. The pages
that go on together after an embedding call make each of those writes as one call
(:class:`~docscraper.crawl.batching.CallGroup`), each page still awaiting its own before its next step. A page whose
content did not change never gets here. Settings: ``DOCSCRAPER_INDEX_ENABLED``. Stats: ``docscraper/chunks_added``,
``docscraper/chunks_deleted``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from docscraper.crawl.batching import CallGroup, grouped_writes
from docscraper.items import PageItem
from docscraper.storage.vectors import ChunkRecord, chunk_id
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["IndexPipeline"]

logger = logging.getLogger(__name__)


class IndexPipeline(RunPipeline):
    enabled_by = "index_enabled"

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        super().__init__(crawler, resources)
        self._begin: CallGroup[str, None] = grouped_writes(self._begin_writes, name="index write-ahead records")
        self._upsert: CallGroup[list[ChunkRecord], None] = grouped_writes(self._upsert_chunks, name="chunk upserts")
        self._delete: CallGroup[list[str], None] = grouped_writes(self._delete_chunks, name="chunk deletes")

    async def _begin_writes(self, page_ids: list[str]) -> None:
        resources = self.resources
        assert resources.store is not None and resources.target is not None
        await resources.db(resources.store.begin_index_writes, resources.target.source.id, page_ids,
                           resources.run_id)

    async def _upsert_chunks(self, pages: list[list[ChunkRecord]]) -> None:
        assert self.resources.index is not None
        await self.resources.call("index", self.resources.index.upsert, [r for records in pages for r in records])

    async def _delete_chunks(self, pages: list[list[str]]) -> None:
        assert self.resources.index is not None
        await self.resources.call("index", self.resources.index.delete, [cid for ids in pages for cid in ids])

    async def process_item(self, item: object) -> object:
        resources = self.resources
        index = resources.index
        if index is None or not isinstance(item, PageItem) or item.not_modified:
            return item
        assert resources.target is not None
        meta = item.metadata
        source = resources.target.source.name
        source_id = resources.target.source.id
        if meta.alias_of and resources.target.known.get(meta.page_id) is None:
            meta.chunk_count = 0  # an alias never indexed before: nothing to write or delete
            return item
        if not item.previous_chunks and not item.chunks:
            # (an alias: the chunks it had as a page of its own, deleted below)
            item.previous_chunks = await resources.call("index", index.page_chunks, source, meta.page_id)
        records = [
            ChunkRecord(
                id=chunk_id(meta.page_id, meta.content_hash, chunk.index, source_id),
                document=chunk.text,
                embedding=vector,
                metadata={
                    "source": source,
                    "page_id": meta.page_id,
                    "url": item.url,
                    "title": item.title,
                    "heading": chunk.heading,
                    "chunk_index": chunk.index,
                    "content_hash": meta.content_hash,
                    "chunk_hash": chunk.chunk_hash,
                    "token_count": chunk.token_count,
                    "part": chunk.part or "",
                    "path": meta.path,
                    # a paged document's (a PDF's) pages: results link to url#page=N
                    **({"page": chunk.page, "page_end": chunk.page_end or chunk.page} if chunk.page else {}),
                },
            )
            for chunk, vector in zip(item.chunks, item.embeddings, strict=True)
        ]
        new_ids = {record.id for record in records}
        stale = [cid for cid in item.previous_chunks if cid not in new_ids]
        if (records or stale) and resources.store is not None:
            # write-ahead (DESIGN rule 8): if the page's state row never commits, the next run knows to
            # reconcile its chunks; the commit clears it
            await self._begin.submit(meta.page_id)
        if records:
            await self._upsert.submit(records)
        if stale:
            await self._delete.submit(stale)
        item.chunks_added = [record.id for record in records if record.id not in item.previous_chunks]
        item.chunk_pages = {record.id: chunk.page for record, chunk in zip(records, item.chunks, strict=True)
                            if chunk.page and record.id not in item.previous_chunks}
        item.chunks_deleted = stale
        self.outcomes.count("chunks_added", len(item.chunks_added))
        self.outcomes.count("chunks_deleted", len(stale))
        meta.chunk_count = len(records)
        return item
