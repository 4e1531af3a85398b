"""Stream a crawl's documents to the program that started it: the child side of :mod:`docscraper.library.loader`.

:class:`DocumentStream` is on only when ``DOCSCRAPER_STREAM_FD`` names a file descriptor the crawl inherited. It
writes one JSON object a line, flushed: ``{"event": "document", "url", "title", "markdown", "metadata"}``
(:func:`document_event`) for each page that went through the pipelines (new and changed pages; every page of a
``full`` run), ``{"event": "removed", "source", "pageId", "url", "contentHash", "chunksDeleted"}`` for each page
removed at close, and ``{"event": "finished", "report", "path"}`` last (the report without its ``items``; ``path``
null when the run did not open). Each line is written on a thread of its own and its sender waits for it: a slow
reader slows the crawl's items, never the reactor. A reader that goes away closes the crawl with reason
``stream_closed``. What a document's ``metadata`` holds, and why a child process: docs/howto/python-api.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro

from docscraper.crawl.signals import pages_removed, run_finished, run_opened
from docscraper.items import PageItem

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["DocumentStream", "document_event"]

logger = logging.getLogger(__name__)


def document_event(item: PageItem) -> dict[str, Any]:
    """The ``document`` line of a page."""
    meta = item.metadata
    return {
        "event": "document",
        "url": item.url,
        "title": item.title,
        "markdown": item.markdown,
        "metadata": {
            "page_id": meta.page_id, "source": meta.source, "path": meta.path, "change": meta.change,
            "content_hash": meta.content_hash, "finder": meta.finder, "depth": meta.depth,
            "fetched_at": meta.fetched_at, "canonical_url": meta.canonical_url, "language": meta.language,
            "description": meta.description, "http_status": meta.http_status, "content_type": meta.content_type,
            "images": [{"url": i.url, "alt": i.alt, "caption": i.caption, "title": i.title} for i in meta.images],
            "chunk_ids": sorted({*item.chunks_added, *(cid for cid in item.previous_chunks
                                                      if cid not in item.chunks_deleted)}),
        },
    }


class DocumentStream:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stream: IO[str] | None = None
        self.resources: CrawlResources | None = None
        self._opened = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # The run's parsed settings (DOCSCRAPER_STREAM_FD) come with its signals: extensions cannot look the
        # resources up while they are being built. Without a descriptor (any crawl but a loader's) it is idle.
        extension = cls(crawler)
        crawler.signals.connect(extension.run_opened, signal=run_opened)
        crawler.signals.connect(extension.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(extension.pages_removed, signal=pages_removed)
        crawler.signals.connect(extension.run_finished, signal=run_finished)
        # not spider_closed: the report is written by a spider_closed handler that may still be running
        crawler.signals.connect(extension.close, signal=signals.engine_stopped)
        return extension

    def _open(self, resources: CrawlResources) -> None:
        """Open the stream on the first event of the run (a run that never opened still says it finished)."""
        if self._opened:
            return
        self._opened = True
        self.resources = resources
        fd = resources.config.stream_fd
        if fd is not None:
            self.stream = os.fdopen(fd, "w", encoding="utf-8", buffering=1, closefd=True)

    def run_opened(self, resources: CrawlResources) -> None:
        self._open(resources)

    def _write(self, line: str) -> bool:
        """Write one line (on the stream's thread; blocks while the reader's pipe is full). False once the
        reader has gone."""
        stream = self.stream
        if stream is None:
            return True
        try:
            stream.write(line)
            stream.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            logger.info("The loader stopped reading (%s); closing the crawl", exc)
            self._drop()
            return False
        return True

    async def _send(self, event: dict[str, Any]) -> None:
        # Written on a thread of its own and awaited by the signal's sender: a slow reader holds the items
        # back (Scrapy waits for item_scraped's handlers, so its item and response slots fill and it fetches
        # less), never the reactor, whose timers (progress, watchdog, AutoThrottle) keep running.
        if self.stream is None or self.resources is None:
            return
        line = json.dumps(event, ensure_ascii=False, default=str) + "\n"
        if not await self.resources.call("stream", self._write, line):
            engine = self.crawler.engine
            if engine is not None:
                deferred_from_coro(engine.close_spider_async(reason="stream_closed"))

    def _drop(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    async def item_scraped(self, item: Any) -> None:
        # an alias (the content of another page, which has its own document) is no document of its own
        if isinstance(item, PageItem) and not item.metadata.alias_of:
            await self._send(document_event(item))

    async def pages_removed(self, resources: CrawlResources, pages: list[dict[str, Any]]) -> None:
        self._open(resources)
        source = resources.target.source.name if resources.target is not None else None
        for page in pages:
            await self._send({"event": "removed", "source": source, **page})

    async def run_finished(self, resources: CrawlResources, report: dict[str, Any], path: Path | None) -> None:
        self._open(resources)
        await self._send({"event": "finished", "report": {k: v for k, v in report.items() if k != "items"},
                          "path": str(path) if path is not None else None})
        self._drop()

    def close(self) -> None:
        self._drop()
