"""Signals of a ``docs`` crawl's run, sent by :class:`~docscraper.crawl.resources.CrawlResources` (connect
with ``crawler.signals.connect(handler, signal=...)``, as for Scrapy's own signals).

- :data:`run_opened` (``resources``): the run's resources are open and its target resolved; sent once, after
  ``spider_opened``'s opening work. Handlers may be coroutines.
- :data:`run_closing` (``resources``, ``reason``): the spider is closing; the resources are still open and are
  closed once every handler has returned. Handlers may be coroutines.

Sent by :class:`~docscraper.crawl.reporter.RunReporter` while the run closes:

- :data:`pages_removed` (``resources``, ``pages``): pages were removed from the index and the state (orphans,
  and pages the site says are gone), each a dict ``{pageId, url, contentHash, chunksDeleted}``.
- :data:`run_finished` (``resources``, ``report``, ``path``): the run's report was written to ``path``; for a
  run that did not open, ``report`` holds only ``runId``, ``source``, ``closeReason``, ``result``
  (``aborted``) and ``resultReason``, and ``path`` is None. Not sent by the workers of a shared run that
  leave the report to another.
"""

from __future__ import annotations

__all__ = ["pages_removed", "run_closing", "run_finished", "run_opened"]

run_opened = object()
run_closing = object()
pages_removed = object()
run_finished = object()
