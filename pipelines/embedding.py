"""Embedding: vectors for each page's chunks, batched across pages, off the reactor thread.

A chunk whose text did not change since its page was last indexed keeps its stored vector (looked up by
``chunk_hash``; not for a page marked by ``scrapy reindex``), and a version of a library also takes the vector of a
chunk of the same text from the library's other versions. The other texts are queued and sent to the model, on the
run's ``model`` thread, when :data:`CALL_MIN` are waiting, when the oldest has waited
``DOCSCRAPER_EMBEDDING_FLUSH_SECONDS``, or when the previous call ends with texts waiting; a call takes at most
:func:`call_limit` texts. Settings: ``DOCSCRAPER_INDEX_ENABLED``, ``DOCSCRAPER_EMBEDDING_*``. Stats:
``docscraper/embeddings_computed``, ``docscraper/embeddings_reused`` (``embeddings_shared`` included),
``docscraper/embeddings_shared``, ``docscraper/embedding_batches``. Why calls of this size:
docs/explanation/vector-index.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList

from docscraper.items import PageItem
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import DelayedCall

    from docscraper.crawl.resources import CrawlResources

__all__ = ["CALL_MAX", "CALL_MIN", "EmbeddingPipeline", "call_limit"]

logger = logging.getLogger(__name__)

#: Texts queued that make a call at once (fewer wait DOCSCRAPER_EMBEDDING_FLUSH_SECONDS for more).
CALL_MIN = 64
#: The most texts in one call to the model (or four of its forward passes, when that is more).
CALL_MAX = 256


def call_limit(batch_size: int) -> int:
    """The most texts in one call to a model that embeds *batch_size* texts per forward pass."""
    return max(CALL_MAX, 4 * batch_size)


class EmbeddingPipeline(RunPipeline):
    enabled_by = "index_enabled"

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        super().__init__(crawler, resources)
        self._pending: list[tuple[str, Deferred[Any]]] = []
        self._timer: DelayedCall | None = None
        self._busy = False

    def close_spider(self) -> None:
        self._disarm()

    async def process_item(self, item: object) -> object:
        resources = self.resources
        index = resources.index
        if index is None or not isinstance(item, PageItem) or not item.chunks:
            return item
        assert resources.target is not None
        source = resources.target.source.name
        previous = await resources.call("index", index.page_chunks, source, item.metadata.page_id)
        item.previous_chunks = previous
        # A page marked by `scrapy reindex` is embedded afresh: no stored vector is trusted.
        by_hash = {} if item.metadata.force else {h: cid for cid, h in previous.items() if h}
        reusable = [by_hash[c.chunk_hash] for c in item.chunks if c.chunk_hash in by_hash]
        stored = await resources.call("index", index.vectors_for, reusable) if reusable else {}
        # the other versions of the source's library: a chunk of the same text there has its vector already
        shared: dict[str, Any] = {}
        if resources.siblings and not item.metadata.force:
            others = [c.chunk_hash for c in item.chunks
                      if c.chunk_hash and stored.get(by_hash.get(c.chunk_hash, "")) is None]
            if others:
                shared = await resources.call("index", index.vectors_by_hash, others, resources.siblings)
        vectors: list[Any] = []
        waiting: list[tuple[int, Deferred[Any]]] = []
        for position, chunk in enumerate(item.chunks):
            vector = stored.get(by_hash.get(chunk.chunk_hash, ""))
            if vector is None:
                vector = shared.get(chunk.chunk_hash)
                if vector is not None:
                    self.outcomes.count("embeddings_shared")
            if vector is not None:
                vectors.append(vector)
                continue
            vectors.append(None)
            waiting.append((position, self._submit(chunk.embed_text)))
        reused = len(item.chunks) - len(waiting)
        self.outcomes.count("embeddings_reused", reused)
        if waiting:
            results = await maybe_deferred_to_future(
                DeferredList([d for _, d in waiting], fireOnOneErrback=True, consumeErrors=True)
            )
            for (position, _), (_, vector) in zip(waiting, results, strict=True):
                vectors[position] = vector
        item.embeddings = vectors
        return item

    # batching ------------------------------------------------------------------------------------

    def _submit(self, text: str) -> Deferred[Any]:
        result: Deferred[Any] = Deferred()
        self._pending.append((text, result))
        if len(self._pending) >= CALL_MIN:
            self._flush()
        else:
            self._arm()
        return result

    def _arm(self) -> None:
        """Flush a partial batch after DOCSCRAPER_EMBEDDING_FLUSH_SECONDS, unless a flush is due already."""
        from twisted.internet import reactor

        if self._timer is None or not self._timer.active():
            self._timer = cast("Any", reactor).callLater(self.config.embedding_flush_seconds, self._flush)

    def _disarm(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _flush(self) -> None:
        if self._busy or not self._pending:
            return
        self._disarm()
        self._busy = True
        done = deferred_from_coro(self._encode())
        done.addErrback(lambda failure: logger.error("Embedding batch failed: %s", failure.value))

    async def _encode(self) -> None:
        batch: list[tuple[str, Deferred[Any]]] = []
        try:
            embedder = await self.resources.embedder()
            # the call is made of what is queued now that the model is ready
            limit = call_limit(embedder.batch_size)
            batch, self._pending = self._pending[:limit], self._pending[limit:]
            self.outcomes.stat("embedding_batches")
            vectors = await self.resources.call("model", embedder.embed, [text for text, _ in batch])
        except Exception as exc:
            if not batch:  # the model did not load: every text queued fails with it
                batch, self._pending = self._pending, []
            for _, waiter in batch:
                waiter.errback(exc)
            return
        finally:
            self._busy = False
            if len(self._pending) >= CALL_MIN:
                self._flush()
            elif self._pending:
                self._arm()
        self.outcomes.count("embeddings_computed", len(batch))
        for (_, waiter), vector in zip(batch, vectors, strict=True):
            waiter.callback(vector)
