"""The run's change feed: ``runs/<source>/<run-id>.changes.jsonl``, one JSON line per new, changed or removed page.

:class:`ChangeFeed` creates the file when the run opens (a run without changes leaves it empty), appends a line for
each new or changed page once the pipelines committed it (Scrapy's ``item_scraped``; with the chunk ids written and
deleted) and one for each page removed at close (:data:`~docscraper.crawl.signals.pages_removed`), flushing each
line, so a reader may follow the file while the crawl runs. Each line is valid against
``docscraper/schema/changes.schema.json`` (:data:`CHANGES_SCHEMA`); ``change`` is ``new``, ``changed`` or
``removed``. Settings: ``DOCSCRAPER_CHANGES_ENABLED`` (on; off: no file). Stats: ``docscraper/changes/lines``.
The fields: docs/reference/output.md; a shared run's feed: docs/explanation/architecture.md.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals

from docscraper.crawl.signals import pages_removed, run_finished, run_opened
from docscraper.items import PageItem
from docscraper.storage.state import iso_utc, utcnow

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["CHANGES_SCHEMA", "ChangeFeed", "changes_path"]

logger = logging.getLogger(__name__)

#: The JSON Schema of one line, as package data (``docscraper.schema``).
CHANGES_SCHEMA = "changes.schema.json"


def changes_path(runs_dir: Path, source: str, run_id: str) -> Path:
    """Where the change feed of run *run_id* of *source* is written (beside its report)."""
    return runs_dir / source / f"{run_id}.changes.jsonl"


class ChangeFeed:
    """See the module docstring."""

    resources: CrawlResources | None = None

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.path: Path | None = None
        self._file: IO[str] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # the run's resources (and its parsed settings: DOCSCRAPER_CHANGES_ENABLED) come with run_opened, as
        # they do to the reporter: extensions cannot look them up while they are being built
        feed = cls(crawler)
        crawler.signals.connect(feed.run_opened, signal=run_opened)
        crawler.signals.connect(feed.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(feed.pages_removed, signal=pages_removed)
        crawler.signals.connect(feed.close, signal=run_finished)
        # not spider_closed: removals are written by a spider_closed handler that may still be running
        crawler.signals.connect(feed.close, signal=signals.engine_stopped)
        return feed

    def run_opened(self, resources: CrawlResources) -> None:
        if not resources.config.changes_enabled:
            return
        self.resources = resources
        target = resources.target
        assert target is not None
        self.path = changes_path(resources.config.runs_dir, target.source.name, resources.ledger.report_id)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is None or self.resources is None:
            return
        target = self.resources.target
        assert target is not None
        entry = {"schemaVersion": 1, "change": line.pop("change"), "source": target.source.name,
                 "runId": self.resources.ledger.report_id, **line, "at": iso_utc(utcnow())}
        self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._file.flush()
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("docscraper/changes/lines")

    def item_scraped(self, item: Any) -> None:
        if not isinstance(item, PageItem) or item.metadata.change not in ("new", "changed"):
            return
        meta = item.metadata
        line: dict[str, Any] = {"change": meta.change, "pageId": meta.page_id, "url": item.url,
                                "contentHash": meta.content_hash, "title": item.title, "nextCheck": meta.next_check}
        if meta.change == "changed" and self.resources is not None:
            target = self.resources.target
            previous = target.known.get(meta.page_id) if target is not None else None
            line["previousContentHash"] = previous.content_hash if previous is not None else None
        if item.chunk_pages:
            line["chunkPages"] = dict(item.chunk_pages)  # a PDF's chunks link to url#page=N
        self._write({**line, "chunksAdded": list(item.chunks_added), "chunksDeleted": list(item.chunks_deleted)})

    def pages_removed(self, resources: CrawlResources, pages: list[dict[str, Any]]) -> None:
        for page in pages:
            self._write({"change": "removed", "pageId": page["pageId"], "url": page["url"],
                         "contentHash": page["contentHash"], "chunksAdded": [],
                         "chunksDeleted": list(page["chunksDeleted"])})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
