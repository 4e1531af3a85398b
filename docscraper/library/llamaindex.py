"""LlamaIndex integration (``pip install ".[llamaindex]"``: ``llama-index-core``).

:class:`DocscraperReader`, a LlamaIndex reader: ``lazy_load_data(seeds)`` crawls URLs or folders with a
:class:`~docscraper.library.loader.WebCrawlerLoader` and yields LlamaIndex documents while the crawl runs (``text`` the
page's Markdown, ``id_`` its page id, ``metadata`` ``url``, ``title`` and the document's metadata, of which ``images``
and ``chunk_ids`` are kept out of what is embedded and shown to the LLM); an incremental reader's removals are in
:attr:`DocscraperReader.removed`. :class:`DocscraperRetriever`, a LlamaIndex retriever over docscraper's hybrid search
(:class:`~docscraper.storage.search.Searcher`): ``NodeWithScore`` of ``TextNode`` (the chunk's text, id and metadata),
scored by cosine similarity. Nothing here uses LlamaIndex's NLTK data, so nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import Document as LlamaDocument
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from docscraper.library.config import CrawlerConfig
from docscraper.library.loader import Document, RemovedPage, WebCrawlerLoader, search_config

__all__ = ["DocscraperReader", "DocscraperRetriever"]

_NOT_EMBEDDED = ["images", "chunk_ids", "content_hash", "page_id", "fetched_at", "http_status", "content_type"]


class DocscraperReader(BaseReader):
    """Crawl the seeds given to :meth:`lazy_load_data` / ``load_data``; the arguments are
    :class:`~docscraper.library.loader.WebCrawlerLoader`'s, but the seeds."""

    def __init__(self, config: CrawlerConfig | None = None, *, incremental: bool = False,
                 metadata: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None,
                 **options: Any) -> None:
        self.config = (config or CrawlerConfig()).replace(**options) if options else (config or CrawlerConfig())
        self.incremental = incremental
        self.metadata = dict(metadata or {})
        self.settings = dict(settings or {})
        #: The pages an incremental crawl removed, filled as :meth:`lazy_load_data` reaches them.
        self.removed: list[RemovedPage] = []

    def lazy_load_data(self, seeds: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                       **load_kwargs: Any) -> Iterator[LlamaDocument]:
        loader = WebCrawlerLoader(seeds, self.config, incremental=self.incremental, metadata=self.metadata,
                                  settings=self.settings)
        self.removed = []
        for event in loader.lazy_load():
            if isinstance(event, Document):
                yield LlamaDocument(text=event.markdown, id_=event.page_id,
                                    metadata={"url": event.url, "title": event.title, **event.metadata},
                                    excluded_embed_metadata_keys=list(_NOT_EMBEDDED),
                                    excluded_llm_metadata_keys=list(_NOT_EMBEDDED))
            else:
                self.removed.append(event)


class DocscraperRetriever(BaseRetriever):
    """docscraper's hybrid search as a LlamaIndex retriever: *k* results (one chunk per page), of one *source*
    when given, from the index under *data_dir* (default: the project's). The model and the index open on the
    first question."""

    def __init__(self, *, k: int = 4, source: str | None = None, data_dir: str | os.PathLike[str] | None = None,
                 library: str | None = None, version: str | None = None, all_versions: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.k = k
        self.source = source
        # one version of each library is read: *version* of *library*, else its latest; all with all_versions
        self.library = library
        self.version = version
        self.all_versions = all_versions
        self.data_dir = data_dir
        self._searcher: Any = None

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._searcher is None:
            from docscraper.storage.search import Searcher

            self._searcher = Searcher(search_config(self.data_dir))
        results = self._searcher.search(query_bundle.query_str, k=self.k, source=self.source, library=self.library,
                                        version=self.version, all_versions=self.all_versions)
        return [NodeWithScore(node=TextNode(text=r.text, id_=r.chunk_id,
                                            metadata={"url": r.url, "title": r.title, "heading": r.heading,
                                                      "source": r.source, "page_id": r.page_id,
                                                      **({"page": r.page_number} if r.page_number is not None
                                                         else {}),
                                                      **({"library": r.library, "version": r.version}
                                                         if r.library else {})}),
                              score=r.score)
                for r in results]

    def close(self) -> None:
        """Close the model and the index (they open again on the next question)."""
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
