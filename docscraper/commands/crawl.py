"""``scrapy crawl``, with the ``docs`` spider's arguments checked before anything starts.

A wrong argument, option or setting is one ``error:`` line on stderr and exit status 2: nothing is fetched
or stored.
So is ``-a render=js`` without a Chromium binary at ``DOCSCRAPER_CHROMIUM_PATH``.
A crawl whose run could not open (state database unreachable, unknown source) exits with status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.spiderloader import get_spider_loader

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.ops.cli import check_options, fail, one_line_errors, settings_from_environment
from docscraper.secrets import redact_logs

if TYPE_CHECKING:
    import argparse



class Command(ScrapyCrawlCommand):
    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        one_line_errors(parser)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        self.check_arguments(args)
        # settings in the environment (a background crawl's, a loader's child's): not on the command line
        assert self.settings is not None
        settings_from_environment(self.settings)

    def check_arguments(self, args: list[str]) -> None:
        """``UsageError`` for an unknown option, or not one spider: said before the crawler process starts
        (and logs)."""
        check_options(args)
        if len(args) != 1:
            raise UsageError("give one spider: scrapy crawl docs -a source=URL|NAME" if not args
                             else f"one spider at a time, got {' '.join(args)}")
        assert self.settings is not None
        spiders = get_spider_loader(self.settings).list()
        if args[0] not in spiders:
            raise UsageError(f"unknown spider {args[0]!r} (spiders: {', '.join(sorted(spiders))})")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] != "docs":  # another spider, or a usage error Scrapy reports
            super().run(args, opts)
            return
        # imported here: Scrapy imports every command module to list the commands, and a one-shot
        # `scrapy search` should not pay for the crawl's components
        from docscraper.crawl.rendering import render_problem
        from docscraper.crawl.resources import CrawlResources

        assert self.settings is not None
        redact_logs(self.settings)  # the error lines below; the crawl's log is LogRedaction's
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
