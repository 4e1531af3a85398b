"""``scrapy status [NAME] [--json]``: running crawls, died ones, and each source's last finished crawl.

It only reads the state database, so it shows crawls running in another terminal or on Scrapyd alike.
Exit status 0; an unknown source name is an ``error:`` line and exit status 2; an unreadable state
database exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.state import StateError
from docscraper.status import crawl_status, describe

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    # No crawl: no crawler process, so no Scrapy start-up log around the answer.
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[NAME] [--json]"

    def short_desc(self) -> str:
        return "Show running crawls and the last finished crawl of each source"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print a JSON list")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) > 1:
            raise UsageError("give at most one source name")
        assert self.settings is not None
        try:
            config = DocscraperConfig.from_settings(self.settings)
            statuses = crawl_status(config, args[0] if args else None)
        except LookupError as exc:
            print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
            self.exitcode = 2
            return
        except (ConfigError, StateError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        try:
            if opts.json:
                print(json.dumps([s.as_dict() for s in statuses], indent=2, ensure_ascii=False))
                return
            if not statuses:
                print("No crawls recorded yet." if not args else f"No crawls of {args[0]} recorded yet.")
                return
            for status in statuses:
                print("\n".join(describe(status)))
            sys.stdout.flush()
        except BrokenPipeError:  # `scrapy status --json | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
