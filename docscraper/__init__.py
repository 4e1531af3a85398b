"""docscraper: keep a vector index of a documentation site in step with the site.

The Python API (README, "Python API"): :class:`WebCrawlerLoader` and :class:`CrawlerConfig` crawl a site and
yield its pages as :class:`Document`; :func:`search` and :class:`Searcher` ask the index. They are imported on
first use (PEP 562), so ``import docscraper`` loads neither Scrapy, torch nor Chroma.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from docscraper._version import USER_AGENT, __version__

# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "CombinedLoader": "docscraper.library.loader",
    "CrawlError": "docscraper.library.loader",
    "CrawlerConfig": "docscraper.library.config",
    "Document": "docscraper.library.loader",
    "RemovedPage": "docscraper.library.loader",
    "WebCrawlerLoader": "docscraper.library.loader",
    "SearchResult": "docscraper.storage.search",
    "Searcher": "docscraper.storage.search",
    "search": "docscraper.storage.search",
}

__all__ = [
    "USER_AGENT",
    "CombinedLoader",
    "CrawlError",
    "CrawlerConfig",
    "Document",
    "RemovedPage",
    "SearchResult",
    "Searcher",
    "WebCrawlerLoader",
    "__version__",
    "search",
]

if TYPE_CHECKING:
    from docscraper.library.config import CrawlerConfig
    from docscraper.library.loader import CombinedLoader, CrawlError, Document, RemovedPage, WebCrawlerLoader
    from docscraper.storage.search import Searcher, SearchResult, search


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'docscraper' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
