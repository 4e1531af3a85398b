"""Markdown mirror: write each page's Markdown, with YAML front matter, under ``-a save_dir=DIR``.

``MirrorPipeline`` runs before change detection (``ITEM_PIPELINES`` order 50), so it sees every page
whose body was fetched this run, changed or not, and restores a file deleted by hand; a page whose file
already holds its content hash is not rewritten. Layout, path safety and the report's ``mirror`` object:
:mod:`docscraper.mirror`. A page that cannot be mirrored is counted and reported, and still indexed.

Settings: ``DOCSCRAPER_SAVE_DIR`` (unset: off, ``NotConfigured``); the spider argument ``save_dir`` wins.
Stats: ``docscraper/mirror/written``, ``docscraper/mirror/unchanged``, ``docscraper/mirror/refused``,
``docscraper/mirror/errors``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from docscraper.config import ConfigError
from docscraper.items import PageItem
from docscraper.mirror import Mirror
from docscraper.run import run_for
from pipelines._base import RunPipeline
from pipelines.change_detection import content_hash

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["MirrorPipeline"]

logger = logging.getLogger(__name__)


class MirrorPipeline(RunPipeline):
    def __init__(self, crawler: Crawler, mirror: Mirror) -> None:
        super().__init__(crawler)
        self.mirror = mirror

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = run_for(crawler)
        if run is None:
            raise NotConfigured("not a docs crawl")
        directory = run.args.save_dir or run.config.save_dir
        if directory is None:
            raise NotConfigured("no save_dir / DOCSCRAPER_SAVE_DIR")
        try:
            mirror = Mirror(directory, stats=crawler.stats)
        except OSError as exc:
            raise ConfigError(f"save_dir {str(directory)!r}: cannot create it: {exc}") from None
        run.mirror = mirror
        logger.info("Markdown mirror in %s", directory)
        return cls(crawler, mirror)

    async def process_item(self, item: object) -> object:
        run = run_for(self.crawler)
        if run is None or not isinstance(item, PageItem):
            return item
        try:
            await run.call("mirror", self.mirror.save, item, content_hash(item.markdown))
        except Exception:  # the mirror must never cost the page its place in the index
            logger.exception("Mirror of %s failed", item.url)
        return item
