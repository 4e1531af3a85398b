"""Markdown mirror: write each page's Markdown, with YAML front matter, under ``-a save_dir=DIR``.

``MirrorPipeline`` runs before change detection (``ITEM_PIPELINES`` order 50), so it sees every page
whose body was fetched this run, changed or not, and restores a file deleted by hand; a page whose file
already holds its content hash is not rewritten. Layout, path safety and the report's ``mirror`` object:
:mod:`docscraper.storage.mirror`. A page that cannot be mirrored is counted and reported, and still indexed.

Settings: ``DOCSCRAPER_SAVE_DIR`` (unset: off, ``NotConfigured``); the spider argument ``save_dir`` wins.
Stats: ``docscraper/mirror/written``, ``docscraper/mirror/unchanged``, ``docscraper/mirror/refused``,
``docscraper/mirror/errors``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from docscraper.crawl.resources import CrawlResources
from docscraper.items import PageItem
from pipelines._base import RunPipeline
from pipelines.change_detection import content_hash

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.storage.mirror import Mirror

__all__ = ["MirrorPipeline"]

logger = logging.getLogger(__name__)


class MirrorPipeline(RunPipeline):
    def __init__(self, crawler: Crawler, resources: CrawlResources, mirror: Mirror) -> None:
        super().__init__(crawler, resources)
        self.mirror = mirror

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        resources = CrawlResources.of(crawler)
        if resources.mirror is None:
            raise NotConfigured  # no save_dir / DOCSCRAPER_SAVE_DIR: off, as by default (no warning)
        return cls(crawler, resources, resources.mirror)

    async def process_item(self, item: object) -> object:
        if not isinstance(item, PageItem) or item.not_modified:
            return item
        try:
            await self.resources.call("mirror", self.mirror.save, item, content_hash(item.markdown))
        except Exception:  # the mirror must never cost the page its place in the index
            logger.exception("Mirror of %s failed", item.url)
        return item
