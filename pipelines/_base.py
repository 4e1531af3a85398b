"""The shape all docscraper pipelines share: built from the crawler, off when their setting says so."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["RunPipeline"]


class RunPipeline:
    """A pipeline that works on the crawler's :class:`~docscraper.run.CrawlRun`.

    ``enabled_setting`` names the boolean setting (default on) that turns it off with ``NotConfigured``.
    """

    enabled_setting: ClassVar[str | None] = None

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if cls.enabled_setting and not crawler.settings.getbool(cls.enabled_setting, True):
            raise NotConfigured(f"{cls.enabled_setting} is off")
        return cls(crawler)
