"""Secrets out of a crawl's log (DESIGN rule 9).

:class:`LogRedaction` is an extension, first in ``EXTENSIONS``: when the crawler is built it puts a
filter on the root logger's handlers (Scrapy installs its handler when the crawler is made) that replaces
the values of secret settings (``HTTPAUTH_PASS``, any ``*_TOKEN``, ``*_SECRET``, ``*_KEY``, webhook URLs;
see :mod:`docscraper.secrets`) and credentials in URLs with ``***`` in every record, Scrapy's own
"Overridden settings" line and tracebacks included; Scrapy installs its handler again once the settings are
applied, and that one gets the filter when the spider opens. It has no settings and no stats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

from docscraper.secrets import redact_logs

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["LogRedaction"]


class LogRedaction:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.redactor = redact_logs(crawler.settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(crawler)
        # Scrapy installs its root handler anew once the settings are applied (after the extensions are built
        # and "Overridden settings" is logged): the new handler gets the filter when the spider opens
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        return extension

    def spider_opened(self) -> None:
        redact_logs(self.crawler.settings)
