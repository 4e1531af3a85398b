"""LangChain integration (``pip install ".[langchain]"``: ``langchain-core``).

- :class:`DocscraperLoader`, a LangChain ``BaseLoader``: a :class:`~docscraper.library.loader.WebCrawlerLoader`
  whose ``lazy_load`` yields LangChain documents while the crawl runs (``page_content`` is the page's Markdown;
  ``metadata`` holds ``url``, ``title`` and the document's metadata; ``id`` is the page id). An incremental
  loader's removals are not documents: they are collected in :attr:`DocscraperLoader.removed`.
- :class:`DocscraperRetriever`, a LangChain ``BaseRetriever`` over docscraper's hybrid search
  (:class:`~docscraper.storage.search.Searcher`) of the index a crawl built: ``k`` results, one chunk per page,
  optionally of one ``source``; each document's ``page_content`` is the chunk's text, its metadata ``url``,
  ``title``, ``heading``, ``source``, ``page_id``, ``chunk_id`` and ``score`` (cosine similarity).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document as LangChainDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr

from docscraper.library.config import CrawlerConfig
from docscraper.library.loader import Document, RemovedPage, WebCrawlerLoader, search_config

__all__ = ["DocscraperLoader", "DocscraperRetriever"]


class DocscraperLoader(BaseLoader):
    """Crawl *seeds* (URLs or folders) and load their pages; the arguments are
    :class:`~docscraper.library.loader.WebCrawlerLoader`'s."""

    def __init__(self, seeds: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 config: CrawlerConfig | None = None, *, incremental: bool = False,
                 metadata: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None,
                 **options: Any) -> None:
        self.loader = WebCrawlerLoader(seeds, config, incremental=incremental, metadata=metadata,
                                       settings=settings, **options)
        #: The pages an incremental crawl removed, filled as :meth:`lazy_load` reaches them.
        self.removed: list[RemovedPage] = []

    def lazy_load(self) -> Iterator[LangChainDocument]:
        self.removed = []
        for event in self.loader.lazy_load():
            if isinstance(event, Document):
                yield LangChainDocument(page_content=event.markdown, id=event.page_id,
                                        metadata={"url": event.url, "title": event.title, **event.metadata})
            else:
                self.removed.append(event)


class DocscraperRetriever(BaseRetriever):
    """docscraper's hybrid search as a LangChain retriever. ``data_dir``: the crawl's data directory (default:
    the project's, ``DOCSCRAPER_DATA_DIR`` or ``./data``). The model and the index open on the first question."""

    k: int = 4
    source: str | None = None
    # one version of each library is read: *version* of *library*, else its latest; all of them with all_versions
    library: str | None = None
    version: str | None = None
    all_versions: bool = False
    data_dir: str | None = None
    _searcher: Any = PrivateAttr(default=None)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[LangChainDocument]:
        if self._searcher is None:
            from docscraper.storage.search import Searcher

            self._searcher = Searcher(search_config(self.data_dir))
        results = self._searcher.search(query, k=self.k, source=self.source, library=self.library,
                                        version=self.version, all_versions=self.all_versions)
        return [LangChainDocument(page_content=r.text, id=r.chunk_id,
                                  metadata={"url": r.url, "title": r.title, "heading": r.heading, "source": r.source,
                                            "page_id": r.page_id, "chunk_id": r.chunk_id, "score": r.score,
                                            **({"page": r.page_number} if r.page_number is not None else {}),
                                            **({"library": r.library, "version": r.version} if r.library else {})})
                for r in results]

    def close(self) -> None:
        """Close the model and the index (they open again on the next question)."""
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
