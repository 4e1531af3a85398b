"""Signals of a ``docs`` crawl's run (connect with ``crawler.signals.connect(handler, signal=...)``).

Sent by :class:`~docscraper.crawl.resources.CrawlResources`: :data:`run_opened` (``resources``), once the run's
resources are open and its target resolved; :data:`run_closing` (``resources``, ``reason``), when the spider closes,
the resources closed only once every handler returned. Both accept coroutine handlers. Sent by
:class:`~docscraper.crawl.reporter.RunReporter` while the run closes: :data:`pages_removed` (``resources``,
``pages``: dicts ``{pageId, url, contentHash, chunksDeleted}``) and :data:`run_finished` (``resources``, ``report``,
``path``: the report written; for a run that did not open, ``report`` holds only ``runId``, ``source``,
``closeReason``, ``result`` ``aborted`` and ``resultReason``, and ``path`` is None). A worker of a shared run that
leaves the report to another does not send :data:`run_finished`.
"""

from __future__ import annotations

__all__ = ["pages_removed", "run_closing", "run_finished", "run_opened"]

run_opened = object()
run_closing = object()
pages_removed = object()
run_finished = object()
