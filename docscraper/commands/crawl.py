"""``scrapy crawl``, with the ``docs`` spider's arguments checked before anything starts.

A wrong argument or setting is one line on stderr and exit status 2: nothing is fetched or stored.
A crawl whose run could not open (state database unreachable, unknown source) exits with status 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler


class Command(ScrapyCrawlCommand):
    _last_crawler: Crawler | None = None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] == "docs":
            assert self.settings is not None
            try:
                CrawlArgs.parse(opts.spargs)
                DocscraperConfig.from_settings(self.settings)
            except ConfigError as exc:
                print(f"error: docs spider: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)
        run = getattr(getattr(self._last_crawler, "spider", None), "run", None)
        if run is not None and getattr(run, "open_error", None):
            self.exitcode = 1

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        self._last_crawler = super()._create_crawler(spidercls)
        return self._last_crawler
