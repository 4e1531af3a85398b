"""``scrapy recrawl NAME [--full | --due] [--allow GLOBS] [--block GLOBS] [--max-depth N] [--max-pages N] [--render M]``.

Crawl a source by name, in this process: exactly ``scrapy crawl docs -a source=NAME ...`` with the options as the
spider's arguments (the same checks and exit codes, :mod:`docscraper.commands.crawl`). Incremental unless ``--full``;
``--due`` (``-a due=1``) checks only new pages, pages whose sitemap ``<lastmod>`` moved and known pages whose next check
has come (:mod:`docscraper.crawl.schedule`). Scope options apply to this run only, and a run that narrows the scope
removes no page. Feed options (``-O pages.jsonl``) and other spider arguments work as with ``scrapy crawl``. Exit
status: 0 the crawl ran (its report says how); 2 bad usage or arguments, nothing fetched; 1 unknown source, or the run
could not open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from docscraper.commands.crawl import Command as CrawlCommand
from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.ops.cli import check_options, fail

if TYPE_CHECKING:
    import argparse


class Command(CrawlCommand):
    def syntax(self) -> str:
        return ("NAME [--full | --due] [--allow GLOBS] [--block GLOBS] [--max-depth N] [--max-pages N] [--render MODE] "
                "[-O FILE]")

    def short_desc(self) -> str:
        return "Crawl a source again by name (incremental unless --full; only what is due with --due)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--full", action="store_true", help="process every page as changed")
        parser.add_argument("--due", action="store_true",
                            help="check only new pages, pages whose sitemap lastmod moved, and pages due by their "
                                 "revisit schedule")
        parser.add_argument("--allow", action="append", default=[], metavar="GLOBS",
                            help="this run only: globs a page must match (repeatable)")
        parser.add_argument("--block", action="append", default=[], metavar="GLOBS",
                            help="this run only: globs that exclude pages (repeatable)")
        parser.add_argument("--max-depth", metavar="N", help="this run only: link depth limit")
        parser.add_argument("--max-pages", metavar="N", help="this run only: at most N pages")
        parser.add_argument("--render", metavar="MODE", help="this run only: js (Chromium) or none")

    def check_arguments(self, args: list[str]) -> None:
        check_options(args)
        if len(args) != 1:
            raise UsageError("give one source name" + (f", got {' '.join(args)}" if args else ""))
        if "://" in args[0]:
            raise UsageError(f"recrawl takes a source name; crawl a URL with scrapy crawl docs -a source={args[0]}")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        name = args[0]
        from docscraper.ops.sources import SourceError, get_source_info  # (see commands/status.py)

        if "source" in opts.spargs:
            return fail(self, "the source is NAME; -a source= is not allowed here", 2)
        spargs = dict(opts.spargs, source=name)
        if opts.full:
            spargs["full"] = "1"
        if opts.due:
            spargs["due"] = "1"
        for key in ("allow", "block"):
            if getattr(opts, key):
                spargs[key] = ",".join(getattr(opts, key))
        for key in ("max_depth", "max_pages", "render"):
            if getattr(opts, key) is not None:
                spargs[key] = getattr(opts, key)
        assert self.settings is not None
        try:
            CrawlArgs.parse(spargs)  # a bad option is bad usage (2), whether or not the source exists
            get_source_info(DocscraperConfig.from_settings(self.settings), name)
        except ConfigError as exc:
            return fail(self, f"docs spider: {exc}", 2)
        except SourceError as exc:
            return fail(self, str(exc), exc.exit_code)
        opts.spargs = spargs
        super().run(["docs"], opts)
        return None
