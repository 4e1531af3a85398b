"""Chunking: split each new or changed page's Markdown into heading-aware chunks for embedding.

Chunks are measured with the embedding model's own tokenizer against its maximum sequence length
(DESIGN rule 5), so the model is loaded on the first page that needs it. Settings:
``DOCSCRAPER_INDEX_ENABLED``, ``DOCSCRAPER_CHUNK_TARGET_TOKENS``, ``DOCSCRAPER_CHUNK_OVERLAP_TOKENS``,
``DOCSCRAPER_CHUNK_MIN_TOKENS``. Stats: ``docscraper/chunks``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from docscraper.chunking import Chunker, ChunkingConfig
from docscraper.items import PageItem
from docscraper.run import run_for
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["ChunkingPipeline"]

logger = logging.getLogger(__name__)


class ChunkingPipeline(RunPipeline):
    enabled_setting = "DOCSCRAPER_INDEX_ENABLED"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._chunker: Chunker | None = None

    async def process_item(self, item: object) -> object:
        run = run_for(self.crawler)
        if run is None or not isinstance(item, PageItem):
            return item
        if self._chunker is None:
            embedder = await run.embedder()
            cfg = run.config
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
        item.chunks = await run.call("chunk", self._chunker.chunk, item.markdown, title=item.title)
        run.stat("chunks", len(item.chunks))
        return item
