"""``scrapy crawl``, with the ``docs`` spider's arguments checked before anything starts.

A wrong argument or setting is one line on stderr and exit status 2: nothing is fetched or stored.
So is ``-a render=js`` without a Chromium binary at ``DOCSCRAPER_CHROMIUM_PATH``.
A crawl whose run could not open (state database unreachable, unknown source) exits with status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.ops.cli import fail

if TYPE_CHECKING:
    import argparse



class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] != "docs":  # another spider, or a usage error Scrapy reports
            super().run(args, opts)
            return
        # imported here: Scrapy imports every command module to list the commands, and a one-shot
        # `scrapy search` should not pay for the crawl's components
        from docscraper.crawl.rendering import render_problem
        from docscraper.crawl.resources import CrawlResources

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
            fail(self, f"docs spider: {exc}", 2)
            return
        # Scrapy's own crawl command, through CrawlerProcess's public calls, keeping the crawler to ask
        # its resources whether the run opened
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler("docs")
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        resources = CrawlResources.find(crawler)
        if resources is not None and resources.open_error:
            self.exitcode = 1
