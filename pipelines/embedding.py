"""Embedding: vectors for each page's chunks, batched across pages, off the reactor thread.

A chunk whose text did not change since the page was last indexed keeps its vector: the page's stored
chunks are looked up by ``chunk_hash`` and their vectors read back from the index (not for a page marked
by ``scrapy reindex``, ``metadata.force``: all of its chunks are embedded again). The others are queued;
the queue goes to the model (on the run's ``model`` thread) when it holds
``DOCSCRAPER_EMBEDDING_BATCH_SIZE`` texts, when its oldest text has waited
``DOCSCRAPER_EMBEDDING_FLUSH_SECONDS``, or when the previous batch finishes with texts waiting. Pages
from many responses share a batch, and fetching and parsing go on while the model works.

Settings: ``DOCSCRAPER_INDEX_ENABLED``, ``DOCSCRAPER_EMBEDDING_*``. Stats:
``docscraper/embeddings_computed``, ``docscraper/embeddings_reused``, ``docscraper/embedding_batches``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList

from docscraper.items import PageItem
from docscraper.run import CrawlRun, run_for
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import DelayedCall

__all__ = ["EmbeddingPipeline"]

logger = logging.getLogger(__name__)


class EmbeddingPipeline(RunPipeline):
    enabled_setting = "DOCSCRAPER_INDEX_ENABLED"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._pending: list[tuple[str, Deferred[Any]]] = []
        self._timer: DelayedCall | None = None
        self._busy = False

    def close_spider(self) -> None:
        self._disarm()

    async def process_item(self, item: object) -> object:
        run = run_for(self.crawler)
        if run is None or run.vectors is None or not isinstance(item, PageItem) or not item.chunks:
            return item
        source = run.source.name if run.source else ""
        previous = await run.call("index", run.vectors.page_chunks, source, item.metadata.page_id)
        item.previous_chunks = previous
        # A page marked by `scrapy reindex` is embedded afresh: no stored vector is trusted.
        by_hash = {} if item.metadata.force else {h: cid for cid, h in previous.items() if h}
        reusable = [by_hash[c.chunk_hash] for c in item.chunks if c.chunk_hash in by_hash]
        stored = await run.call("index", run.vectors.vectors_for, reusable) if reusable else {}
        vectors: list[Any] = []
        waiting: list[tuple[int, Deferred[Any]]] = []
        for position, chunk in enumerate(item.chunks):
            vector = stored.get(by_hash.get(chunk.chunk_hash, ""))
            if vector is not None:
                vectors.append(vector)
                continue
            vectors.append(None)
            waiting.append((position, self._submit(run, chunk.embed_text)))
        reused = len(item.chunks) - len(waiting)
        run.count("embeddings_reused", reused)
        if waiting:
            results = await maybe_deferred_to_future(
                DeferredList([d for _, d in waiting], fireOnOneErrback=True, consumeErrors=True)
            )
            for (position, _), (_, vector) in zip(waiting, results, strict=True):
                vectors[position] = vector
        item.embeddings = vectors
        return item

    # batching ------------------------------------------------------------------------------------

    def _submit(self, run: CrawlRun, text: str) -> Deferred[Any]:
        result: Deferred[Any] = Deferred()
        self._pending.append((text, result))
        if len(self._pending) >= run.config.embedding_batch_size:
            self._flush(run)
        else:
            self._arm(run)
        return result

    def _arm(self, run: CrawlRun) -> None:
        """Flush a partial batch after DOCSCRAPER_EMBEDDING_FLUSH_SECONDS, unless a flush is due already."""
        from twisted.internet import reactor

        if self._timer is None or not self._timer.active():
            self._timer = cast("Any", reactor).callLater(run.config.embedding_flush_seconds, self._flush, run)

    def _disarm(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _flush(self, run: CrawlRun) -> None:
        if self._busy or not self._pending:
            return
        self._disarm()
        # Large batches keep the model busy; the model splits them into its own batch size.
        limit = run.config.embedding_batch_size * 4
        batch, self._pending = self._pending[:limit], self._pending[limit:]
        self._busy = True
        run.stat("embedding_batches")
        done = deferred_from_coro(self._encode(run, batch))
        done.addErrback(lambda failure: logger.error("Embedding batch failed: %s", failure.value))

    async def _encode(self, run: CrawlRun, batch: list[tuple[str, Deferred[Any]]]) -> None:
        try:
            embedder = await run.embedder()
            vectors = await run.call("model", embedder.embed, [text for text, _ in batch])
        except Exception as exc:
            for _, waiter in batch:
                waiter.errback(exc)
            return
        finally:
            self._busy = False
            if len(self._pending) >= run.config.embedding_batch_size:
                self._flush(run)
            elif self._pending:
                self._arm(run)
        run.count("embeddings_computed", len(batch))
        for (_, waiter), vector in zip(batch, vectors, strict=True):
            waiter.callback(vector)
