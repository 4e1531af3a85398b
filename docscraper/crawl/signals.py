"""Signals of a ``docs`` crawl's run, sent by :class:`~docscraper.crawl.resources.CrawlResources` (connect
with ``crawler.signals.connect(handler, signal=...)``, as for Scrapy's own signals).

- :data:`run_opened` (``resources``): the run's resources are open and its target resolved; sent once, after
  ``spider_opened``'s opening work. Handlers may be coroutines.
- :data:`run_closing` (``resources``, ``reason``): the spider is closing; the resources are still open and are
  closed once every handler has returned. Handlers may be coroutines.
"""

from __future__ import annotations

__all__ = ["run_closing", "run_opened"]

run_opened = object()
run_closing = object()
