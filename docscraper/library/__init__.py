"""docscraper as a library: a streaming document loader (:mod:`docscraper.library.loader`), its
configuration (:mod:`docscraper.library.config`), and integrations with LangChain
(:mod:`docscraper.library.langchain`, ``pip install ".[langchain]"``) and LlamaIndex
(:mod:`docscraper.library.llamaindex`, ``pip install ".[llamaindex]"``), imported only when asked for."""

from __future__ import annotations

from docscraper.library.config import CrawlerConfig
from docscraper.library.loader import CombinedLoader, CrawlError, Document, RemovedPage, WebCrawlerLoader

__all__ = ["CombinedLoader", "CrawlError", "CrawlerConfig", "Document", "RemovedPage", "WebCrawlerLoader"]
