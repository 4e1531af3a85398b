"""``scrapy status [NAME] [--json]``: running crawls, died ones, and each source's last finished crawl.

It only reads the state database, so it shows crawls running in another terminal or on Scrapyd alike.
Exit status 0; an unknown source name is an ``error:`` line and exit status 2; an unreadable state
database exit status 1.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    json_help = "print a JSON list"


    def syntax(self) -> str:
        return "[NAME] [--json]"

    def short_desc(self) -> str:
        return "Show running crawls and the last finished crawl of each source"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) > 1:
            raise UsageError("give at most one source name")
        # imported here, not with the module: Scrapy imports every command module to list the commands
        from docscraper.ops.status import crawl_status, describe
        from docscraper.storage.state import StateError

        assert self.settings is not None
        try:
            config = self.config()
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
                self.print_json([s.as_dict() for s in statuses])
                return
            if not statuses:
                print("No crawls recorded yet." if not args else f"No crawls of {args[0]} recorded yet.")
                return
            for status in statuses:
                print("\n".join(describe(status)))
            sys.stdout.flush()
        except BrokenPipeError:  # `scrapy status --json | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
