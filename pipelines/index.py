"""Index: write a page's chunks to the vector index, then delete the page's other chunks.

DESIGN rule 1, per page: upsert the new chunks, delete the page's stale chunks, and only then let the
state commit (the next pipeline) record the page's new hash. A page whose content did not change never
gets here. Chunk ids are ``s<source id>-<page id>-<content hash[:12]>-<index>``
(:func:`~docscraper.vectors.chunk_id`); metadata per DESIGN.

Settings: ``DOCSCRAPER_INDEX_ENABLED``. Stats: ``docscraper/chunks_added``, ``docscraper/chunks_deleted``.
"""

from __future__ import annotations

import logging

from docscraper.items import PageItem
from docscraper.run import run_for
from docscraper.vectors import ChunkRecord, chunk_id
from pipelines._base import RunPipeline

__all__ = ["IndexPipeline"]

logger = logging.getLogger(__name__)


class IndexPipeline(RunPipeline):
    enabled_setting = "DOCSCRAPER_INDEX_ENABLED"

    async def process_item(self, item: object) -> object:
        run = run_for(self.crawler)
        if run is None or run.vectors is None or not isinstance(item, PageItem):
            return item
        meta = item.metadata
        source = run.source.name if run.source else ""
        source_id = run.source.id if run.source else None
        if not item.previous_chunks and not item.chunks:
            item.previous_chunks = await run.call("index", run.vectors.page_chunks, source, meta.page_id)
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
                },
            )
            for chunk, vector in zip(item.chunks, item.embeddings, strict=True)
        ]
        new_ids = {record.id for record in records}
        stale = [cid for cid in item.previous_chunks if cid not in new_ids]
        if records:
            await run.call("index", run.vectors.upsert, records)
        if stale:
            await run.call("index", run.vectors.delete, stale)
        added = len(new_ids - set(item.previous_chunks))
        run.count("chunks_added", added)
        run.count("chunks_deleted", len(stale))
        meta.chunk_count = len(records)
        return item
