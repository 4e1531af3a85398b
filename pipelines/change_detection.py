"""Change detection: hash each page's Markdown against the state table; drop what did not change.

``ChangeDetectionPipeline`` sets ``metadata.content_hash`` (SHA-256 of the normalized Markdown) and
``metadata.change`` (``new``, ``changed`` or ``unchanged``). An unchanged page is marked seen and
dropped with ``DropItem`` at DEBUG level: no chunking, no embedding, no index write (DESIGN rule 2).
With ``-a full=1`` unchanged pages go on down the pipeline and are reported with ``forced: true``; so
does a page marked by ``scrapy reindex`` (``metadata.force``), counted as ``forced``.

Settings: ``DOCSCRAPER_CHANGE_DETECTION_ENABLED`` (default on). Stats: ``docscraper/pages_unchanged``,
``docscraper/forced`` (pages re-processed for a reindex mark; the report's ``counters.forced``).
"""

from __future__ import annotations

import hashlib
import logging

from scrapy.exceptions import DropItem

from docscraper.content.extraction import normalize_markdown
from docscraper.items import PageItem
from docscraper.run import run_for
from pipelines._base import RunPipeline

__all__ = ["ChangeDetectionPipeline", "content_hash"]

logger = logging.getLogger(__name__)


def content_hash(markdown: str) -> str:
    return hashlib.sha256(normalize_markdown(markdown).encode("utf-8")).hexdigest()


class ChangeDetectionPipeline(RunPipeline):
    enabled_setting = "DOCSCRAPER_CHANGE_DETECTION_ENABLED"

    async def process_item(self, item: object) -> object:
        run = run_for(self.crawler)
        if run is None or not isinstance(item, PageItem):
            return item
        meta = item.metadata
        meta.content_hash = content_hash(item.markdown)
        previous = run.known.get(meta.page_id)
        if previous is None or previous.status != "active" or not previous.content_hash:
            meta.change = "new"
        elif previous.content_hash != meta.content_hash:
            meta.change = "changed"
        else:
            meta.change = "unchanged"
        if meta.force:
            run.count("forced")
        if meta.change == "unchanged" and not run.args.full and not meta.force:
            await run.page_unchanged(
                meta.page_id,
                meta.path,
                etag=meta.etag,
                last_modified=meta.last_modified,
                http_status=meta.http_status,
                fetched_at=meta.fetched_at,
                links=meta.links,
                redirects=meta.redirects,
                url=item.url,
                finder=meta.finder,
                depth=meta.depth,
                httpStatus=meta.http_status,
            )
            raise DropItem(f"unchanged: {item.url}", log_level="DEBUG")
        return item
