"""The shape all docscraper pipelines share: built from the crawler with the run's resources, off when their
setting says so."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from scrapy.exceptions import NotConfigured

from docscraper.crawl.resources import CrawlResources

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["RunPipeline"]


class RunPipeline:
    """A pipeline of a ``docs`` crawl: it gets the crawl's :class:`~docscraper.crawl.resources.CrawlResources`
    once, in ``from_crawler`` (``NotConfigured`` in a crawl without them), and keeps what it needs.

    ``enabled_by`` names the :class:`~docscraper.config.DocscraperConfig` flag (a ``DOCSCRAPER_*_ENABLED``
    setting, default on) that turns it off with ``NotConfigured``.
    """

    enabled_by: ClassVar[str | None] = None

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        self.crawler = crawler
        self.resources = resources
        self.ledger = resources.ledger
        self.outcomes = resources.outcomes
        self.config = resources.config

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        resources = CrawlResources.of(crawler)
        if cls.enabled_by and not getattr(resources.config, cls.enabled_by):
            raise NotConfigured(f"DOCSCRAPER_{cls.enabled_by.upper()} is off")
        return cls(crawler, resources)
