"""Change detection: hash each page's Markdown against the state table; drop what did not change.

``ChangeDetectionPipeline`` sets ``metadata.content_hash`` (SHA-256 of the normalized Markdown) and
``metadata.change``: ``new``, ``changed`` (another hash, or the same hash under a new title), ``unchanged``, or
``alias`` (``metadata.alias_of``) when another live page of the source holds the same content. An unchanged page (the
same hash, or a 304) is reported, marked seen (written in batches of ``DOCSCRAPER_SEEN_FLUSH_SIZE`` and at close),
its revisit schedule moved on, and dropped with ``DropItem`` at DEBUG level: no chunking, embedding or index write
(DESIGN rule 2). With ``-a full=1``, or a page marked by ``scrapy reindex`` (``metadata.force``), it goes on.
Settings: ``DOCSCRAPER_CHANGE_DETECTION_ENABLED`` (on). Stats: ``docscraper/pages_unchanged``, ``docscraper/forced``
(the report's ``counters.forced``). Why a title counts, and aliases: docs/explanation/rules.md.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DropItem

from docscraper.content.extraction import normalize_markdown
from docscraper.items import PageItem
from docscraper.storage.state import PageSeen, iso_utc, utcnow
from pipelines._base import RunPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["ChangeDetectionPipeline", "content_hash"]

logger = logging.getLogger(__name__)


def content_hash(markdown: str) -> str:
    return hashlib.sha256(normalize_markdown(markdown).encode("utf-8")).hexdigest()


class ChangeDetectionPipeline(RunPipeline):
    enabled_by = "change_detection_enabled"

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        super().__init__(crawler, resources)
        self._seen: list[PageSeen] = []
        # content hash -> the live page that holds it (the index's first, then this run's): (page id, URL);
        # built at first use
        self._holders: dict[str, tuple[str, str]] | None = None
        crawler.signals.connect(self._item_error, signal=signals.item_error)

    def _holder(self, digest: str) -> tuple[str, str] | None:
        if self._holders is None:
            target = self.resources.target
            assert target is not None
            self._holders = {}
            for pid, page in sorted(target.known.items(), key=lambda kv: (kv[1].url, kv[0])):
                if page.status == "active" and page.content_hash and not page.reindex_requested:
                    self._holders.setdefault(page.content_hash, (pid, page.url))
        return self._holders.get(digest)

    def _release(self, digest: str, pid: str) -> None:
        """Page *pid* no longer holds content *digest* (it changed, or failed on its way to the index)."""
        if self._holders is not None and self._holders.get(digest, ("",))[0] == pid:
            del self._holders[digest]

    def _item_error(self, item: Any, response: Any, spider: Any, failure: Any) -> None:
        # a page that failed on its way to the index holds no content: its duplicates must not point at it
        if isinstance(item, PageItem) and item.metadata.change in ("new", "changed"):
            meta = item.metadata
            previous = self.resources.target.known.get(meta.page_id) if self.resources.target else None
            if previous is None or previous.content_hash != meta.content_hash:
                self._release(meta.content_hash, meta.page_id)

    async def process_item(self, item: object) -> object:
        if not isinstance(item, PageItem):
            return item
        target = self.resources.target
        assert target is not None
        meta = item.metadata
        if item.not_modified:
            # a 304: no body; the stored hash, links and redirects stay as they are
            await self._unchanged(item, links=None, redirects=None, details={"httpStatus": 304})
            raise DropItem(f"unchanged (304): {item.url}", log_level="DEBUG")
        meta.content_hash = content_hash(item.markdown)
        previous = target.known.get(meta.page_id)
        if previous is not None and previous.reindex_requested:
            meta.force = True  # marked when the run opened (scrapy reindex, a model change, a reconciliation)
        if previous is None or previous.status != "active" or not previous.content_hash:
            meta.change = "new"
        elif previous.content_hash != meta.content_hash or (previous.title or None) != (item.title or None):
            # the title is in every chunk's prefix and metadata: a new title alone is a change
            meta.change = "changed"
        else:
            meta.change = "unchanged"
        holder = self._holder(meta.content_hash)
        if meta.change == "changed" and previous is not None and previous.content_hash:
            self._release(previous.content_hash, meta.page_id)  # it no longer holds its old content
        if holder is not None and holder[0] != meta.page_id:
            # another live page of the source has this content: this URL is its alias
            meta.change = "alias"
            meta.alias_of, meta.alias_of_url = holder
            return item
        assert self._holders is not None
        self._holders.setdefault(meta.content_hash, (meta.page_id, item.url))
        if meta.force:
            self.outcomes.count("forced")
        if meta.change == "unchanged" and not target.args.full and not meta.force:
            await self._unchanged(item, links=meta.links, redirects=meta.redirects,
                                  details={"httpStatus": meta.http_status, "hint": item.hint,
                                           "detail": item.truncated})
            raise DropItem(f"unchanged: {item.url}", log_level="DEBUG")
        return item

    async def _unchanged(self, item: PageItem, *, links: list[str] | None, redirects: list[str] | None,
                         details: dict[str, object]) -> None:
        """A page whose content did not change: reached, reported, and marked seen. *links* and *redirects*
        are None when not fetched (304): the stored ones are kept. An alias that answered 304 stays one."""
        meta = item.metadata
        self.ledger.reached.add(meta.page_id)
        target = self.resources.target
        known = target.known.get(meta.page_id) if target is not None else None
        revisit = self.resources.revisit
        schedule = revisit.after_check(known, "unchanged", revisit.now(), etag=meta.etag, page=meta.page_id)
        if self.resources.lastmod is not None:
            self.resources.lastmod.checked(known, meta.sitemap_lastmod, "unchanged")
        details = {**details, "nextCheck": iso_utc(schedule.next_check_at), "revisit": meta.revisit}
        status = "active"
        if item.not_modified and known is not None and known.status == "alias" and known.alias_of:
            status = "alias"
            holder = target.known.get(known.alias_of) if target is not None else None
            self.outcomes.duplicate_content(meta.path, item.url, meta.page_id,
                                            of=holder.url if holder else known.alias_of,
                                            holder=known.alias_of, fetched_at=meta.fetched_at, **details)
        else:
            self.outcomes.processed(meta.path, "unchanged", meta.fetched_at, pageId=meta.page_id,
                                    redirects=redirects or None, url=item.url, finder=meta.finder, depth=meta.depth,
                                    **details)
        self._seen.append(PageSeen(meta.page_id, meta.etag, meta.last_modified, meta.http_status, utcnow(),
                                   None if links is None else tuple(links),
                                   None if redirects is None else tuple(redirects), status,
                                   schedule.next_check_at, schedule.interval, schedule.unchanged_checks,
                                   meta.sitemap_lastmod))
        if len(self._seen) >= self.config.seen_flush_size:
            await self.flush()

    async def flush(self) -> None:
        """Write buffered seen-marks to the state database."""
        resources = self.resources
        seen, self._seen = self._seen, []
        if seen and resources.store is not None and resources.target is not None:
            await resources.db(resources.store.mark_seen, resources.target.source.id, resources.run_id, seen)

    async def close_spider(self) -> None:
        await self.flush()
