"""``scrapy crawl``, with the ``docs`` spider's arguments checked before anything starts.

A wrong argument or setting is one line on stderr and exit status 2: nothing is fetched or stored.
So is ``-a render=js`` without a Chromium binary at ``DOCSCRAPER_CHROMIUM_PATH``.
A crawl whose run could not open (state database unreachable, unknown source) exits with status 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.crawl.rendering import render_problem
from docscraper.crawl.resources import CrawlResources

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
                crawl_args = CrawlArgs.parse(opts.spargs)
                config = DocscraperConfig.from_settings(self.settings)
                # -a render=js without a Chromium to render with: said now, not once per page
                problem = render_problem(self.settings, config) if crawl_args.render == "js" else None
                if problem:
                    raise ConfigError(f"render=js: {problem}")
                # a distributed run (settings.distributed) is named by every worker; nothing else is
                if crawl_args.run and not config.distributed:
                    raise ConfigError("-a run= names a shared run: crawl with SCRAPY_SETTINGS_MODULE=settings.distributed")
                if config.distributed and not crawl_args.run:
                    raise ConfigError("the distributed profile needs a shared run id: -a run=<id> on every worker")
            except ConfigError as exc:
                print(f"error: docs spider: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)
        resources = CrawlResources.find(self._last_crawler) if self._last_crawler is not None else None
        if resources is not None and resources.open_error:
            self.exitcode = 1

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        self._last_crawler = super()._create_crawler(spidercls)
        return self._last_crawler
