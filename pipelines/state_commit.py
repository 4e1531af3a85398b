"""State commit: the last pipeline; writes the page's state row once everything before it succeeded.

DESIGN rule 1: the index is written first, the state row (hash, validators, status) last, so a crash leaves the state
behind the index and the next run redoes the page. An item that failed in an earlier pipeline is recorded as a failed
page (:meth:`StateCommitPipeline.item_error`). The page's images (``metadata.images``) replace its stored ones in the
same transaction, and its revisit schedule starts again (new, changed) or moves one step on (re-processed unchanged).
The pages that arrive together after one embedding call commit in one transaction
(:class:`~docscraper.crawl.batching.CallGroup`); one that fails is committed again alone. Settings: none. Stats:
``docscraper/pages_new``, ``docscraper/pages_changed``, ``docscraper/images`` (the report's ``counters.images``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from scrapy import signals

from docscraper.crawl.batching import CallGroup, grouped_writes
from docscraper.items import PageItem
from docscraper.storage.state import ImageRecord, PageWrite, iso_utc
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["StateCommitPipeline"]

logger = logging.getLogger(__name__)


class StateCommitPipeline(RunPipeline):
    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        super().__init__(crawler, resources)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        self._commits: CallGroup[PageWrite, None] = grouped_writes(self._commit, name="state commits")

    async def _commit(self, pages: list[PageWrite]) -> None:
        resources = self.resources
        assert resources.store is not None and resources.target is not None
        await resources.db(resources.store.commit_pages, resources.target.source.id, pages)

    async def process_item(self, item: object) -> object:
        if not isinstance(item, PageItem) or item.not_modified:
            return item
        resources = self.resources
        assert resources.store is not None and resources.target is not None
        meta = item.metadata
        revisit = resources.revisit
        known = resources.target.known.get(meta.page_id)
        change = meta.change or "new"
        schedule = revisit.after_check(known, change, revisit.now(), etag=meta.etag, page=meta.page_id)
        if resources.lastmod is not None:
            resources.lastmod.checked(known, meta.sitemap_lastmod, "unchanged" if change == "unchanged" else "changed")
        await self._commits.submit(
            PageWrite(
                page_id=meta.page_id,
                url=item.url,
                canonical_url=meta.canonical_url,
                rel_path=meta.path,
                content_hash=meta.content_hash,
                etag=meta.etag,
                last_modified=meta.last_modified,
                http_status=meta.http_status,
                title=item.title,
                finder=meta.finder,
                depth=meta.depth,
                content_type=meta.content_type,
                fetched_at=datetime.fromisoformat(meta.fetched_at.replace("Z", "+00:00")),
                run_id=resources.run_id,
                chunk_count=meta.chunk_count,
                links=tuple(meta.links),
                redirects=tuple(meta.redirects),
                forced=meta.force,
                images=() if meta.alias_of else tuple(ImageRecord(i.url, i.alt, i.caption, i.title)
                                                      for i in meta.images),
                alias_of=meta.alias_of,
                next_check_at=schedule.next_check_at,
                check_interval=schedule.interval,
                unchanged_checks=schedule.unchanged_checks,
                sitemap_lastmod=meta.sitemap_lastmod,
            )
        )
        next_check = meta.next_check = iso_utc(schedule.next_check_at)
        if meta.alias_of:
            self.outcomes.duplicate_content(meta.path, item.url, meta.page_id, holder=meta.alias_of,
                                            of=meta.alias_of_url or meta.alias_of,
                                            fetched_at=meta.fetched_at, finder=meta.finder, depth=meta.depth,
                                            httpStatus=meta.http_status, nextCheck=next_check, revisit=meta.revisit)
            return item
        if meta.images:
            self.outcomes.count("images", len(meta.images))
        self.ledger.reached.add(meta.page_id)
        forced = meta.change == "unchanged" or meta.force or None
        self.outcomes.processed(meta.path, meta.change, meta.fetched_at, url=item.url, finder=meta.finder,
                                depth=meta.depth, httpStatus=meta.http_status, pageId=meta.page_id, forced=forced,
                                redirects=meta.redirects or None, hint=item.hint, detail=item.truncated,
                                nextCheck=next_check,
                                revisit=meta.revisit)
        return item

    def item_error(self, item: Any, response: Any, spider: Any, failure: Any) -> None:
        if not isinstance(item, PageItem):
            return
        error = f"{failure.type.__name__}: {failure.getErrorMessage()}"
        logger.error("Page %s was not indexed: %s", item.url, error)
        self.outcomes.failed(item.url, "error", error, pid=item.metadata.page_id, fetched_at=item.metadata.fetched_at)
