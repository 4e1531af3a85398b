"""Search the index: the best chunks for a question, at most one per page by default.

``scrapy search "question" [-k 5] [--source NAME] [--json] [--images]`` from the project root, or
:func:`search` from a program. A :class:`Searcher` keeps the model and the index open for many questions.

With ``with_images=True`` each result lists its page's images (``{url, alt, caption}``, in document
order) from the state database, where the crawl recorded them with the page (:mod:`docscraper.images`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from docscraper.config import DocscraperConfig
from docscraper.embedding import Embedder, SentenceTransformerEmbedder
from docscraper.state import SqlStateStore, StateStore, schema_revision
from docscraper.vectors import ChromaIndex, VectorIndex

__all__ = ["SearchResult", "Searcher", "search"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchResult:
    rank: int
    score: float
    url: str
    title: str
    heading: str
    text: str
    source: str
    page_id: str
    chunk_id: str
    # the page's images, [{url, alt, caption}], when asked for (with_images); empty otherwise
    images: list[dict[str, str | None]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Searcher:
    """The model and the index, open for many questions; the state database (for ``with_images``) is
    opened on the first question that needs it, unless *store* is given."""

    def __init__(self, config: DocscraperConfig, *, embedder: Embedder | None = None,
                 index: VectorIndex | None = None, store: StateStore | None = None) -> None:
        self.config = config
        self._store = store
        self._own_store: StateStore | None = None
        self.index = index or ChromaIndex(path=config.chroma_path, url=config.chroma_url,
                                          collection=config.chroma_collection, telemetry=config.chroma_telemetry)
        self.embedder = embedder or SentenceTransformerEmbedder(
            config.embedding_model, device=config.embedding_device, batch_size=config.embedding_batch_size
        )

    def search(self, question: str, *, k: int = 5, source: str | None = None,
               per_page: int | None = 1, with_images: bool = False) -> list[SearchResult]:
        """The *k* best chunks for *question*; at most *per_page* per page (None: no limit). With
        *with_images*, each result lists its page's images."""
        if not question.strip():
            raise ValueError("the question is empty")
        if k < 1:
            raise ValueError("k must be 1 or more")
        vector = self.embedder.embed([question])[0]
        # Asking for more than k leaves room for the per-page limit.
        wanted = k if per_page is None else k * 8
        hits = self.index.query(vector, wanted, source)
        results: list[SearchResult] = []
        per: dict[str, int] = {}
        for hit in hits:
            meta = hit.metadata
            page = str(meta.get("page_id", ""))
            if per_page is not None and per.get(page, 0) >= per_page:
                continue
            per[page] = per.get(page, 0) + 1
            results.append(SearchResult(
                rank=len(results) + 1,
                score=round(hit.score, 4),
                url=str(meta.get("url", "")),
                title=str(meta.get("title", "")),
                heading=str(meta.get("heading", "")),
                text=hit.document,
                source=str(meta.get("source", "")),
                page_id=page,
                chunk_id=hit.id,
            ))
            if len(results) >= k:
                break
        if with_images and results:
            results = self._with_images(results)
        return results

    def _state(self) -> StateStore | None:
        if self._store is None and self._own_store is None:
            # Never create (or migrate) a database a first crawl is still creating: no schema, no images.
            if schema_revision(self.config.state_url) is None:
                return None
            self._own_store = SqlStateStore(self.config.state_url)
        return self._store or self._own_store

    def _with_images(self, results: list[SearchResult]) -> list[SearchResult]:
        store = self._state()
        if store is None:
            return results
        by_source: dict[str, set[str]] = {}
        for result in results:
            by_source.setdefault(result.source, set()).add(result.page_id)
        images = {source: store.page_images(source, ids) for source, ids in by_source.items()}
        return [
            replace(result, images=[{"url": image.url, "alt": image.alt, "caption": image.caption}
                                    for image in images[result.source].get(result.page_id, [])])
            for result in results
        ]

    def close(self) -> None:
        self.index.close()
        self.embedder.close()
        if self._own_store is not None:
            self._own_store.close()
            self._own_store = None


def search(question: str, *, k: int = 5, source: str | None = None, per_page: int | None = 1,
           config: DocscraperConfig | None = None, with_images: bool = False) -> list[SearchResult]:
    """One question against the index of the current project's settings (or *config*)."""
    if config is None:
        from scrapy.utils.project import get_project_settings

        config = DocscraperConfig.from_settings(get_project_settings())
    searcher = Searcher(config)
    try:
        return searcher.search(question, k=k, source=source, per_page=per_page, with_images=with_images)
    finally:
        searcher.close()
