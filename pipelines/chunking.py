"""Chunking: split each new or changed page's Markdown into heading-aware chunks for embedding.

Chunks are measured with the embedding model's own tokenizer against its maximum sequence length
(DESIGN rule 5), so the model is loaded on the first page that needs it. Settings:
``DOCSCRAPER_INDEX_ENABLED``, ``DOCSCRAPER_CHUNK_TARGET_TOKENS``, ``DOCSCRAPER_CHUNK_OVERLAP_TOKENS``,
``DOCSCRAPER_CHUNK_MIN_TOKENS``. Stats: ``docscraper/chunks``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from docscraper.content.chunking import Chunker, ChunkingConfig
from docscraper.content.documents import is_paged
from docscraper.items import PageItem
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["ChunkingPipeline"]

logger = logging.getLogger(__name__)


class ChunkingPipeline(RunPipeline):
    enabled_by = "index_enabled"

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        super().__init__(crawler, resources)
        self._chunker: Chunker | None = None

    async def process_item(self, item: object) -> object:
        if not isinstance(item, PageItem) or item.not_modified or item.metadata.alias_of:
            return item  # an alias has no chunks of its own
        if self._chunker is None:
            embedder = await self.resources.embedder()
            cfg = self.config
            self._chunker = Chunker(
                embedder.count_tokens,
                ChunkingConfig(
                    max_tokens=embedder.max_tokens,
                    target_tokens=min(cfg.chunk_target_tokens, embedder.max_tokens),
                    overlap_tokens=cfg.chunk_overlap_tokens,
                    min_tokens=cfg.chunk_min_tokens,
                ),
            )
        # Tokenizing is CPU work in Rust that releases the GIL: it runs beside the reactor.
        # a paged document's (a PDF's) chunks know their pages from its page markers
        paged = is_paged(item.metadata.content_type)
        item.chunks = await self.resources.call("chunk", self._chunker.chunk, item.markdown, title=item.title,
                                                paged=paged)
        self.outcomes.stat("chunks", len(item.chunks))
        return item
