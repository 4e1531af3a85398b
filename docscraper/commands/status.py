"""``scrapy status [NAME] [--json]``: running crawls, died ones, and each source's last finished crawl; then each
scheduled source's next run, with a missed run (due for 5 minutes and not started) or a failed last run said
(``--json``: each run's ``recrawl``, None for a source without a schedule).

It only reads the state database, so it shows crawls running in another terminal or on Scrapyd alike.
Exit status 0; an unknown source name is an ``error:`` line and exit status 2; an unreadable state
database exit status 1.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError

from docscraper.config import ConfigError
from docscraper.crawl.progress import format_time
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse


def recrawl_line(name: str, state: dict[str, Any]) -> str:
    """A scheduled source's line: its schedule and next run, and a missed run or a failed last run in capitals."""
    line = f"{name}  scheduled {state['schedule']}: next run {format_time(state['next_run'])}"
    if state.get("running"):
        line += ", a crawl of it is running"
    if state.get("missed"):
        line += f"; MISSED: due since {format_time(state['next_run'])} and not started (is `scrapy serve` running?)"
    if state.get("failed"):
        line += f"; last run FAILED ({state.get('last_result')})"
    return line


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
        from docscraper.ops.schedules import schedule_states
        from docscraper.ops.status import crawl_status, describe
        from docscraper.storage.state import StateError

        assert self.settings is not None
        try:
            config = self.config()
            statuses = crawl_status(config, args[0] if args else None)
            recrawls = {name: state for name, state in schedule_states(config).items()
                        if not args or name == args[0]}
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
                self.print_json([{**s.as_dict(), "recrawl": recrawls.get(s.source)} for s in statuses])
                return
            if not statuses:
                print("No crawls recorded yet." if not args else f"No crawls of {args[0]} recorded yet.")
            for status in statuses:
                print("\n".join(describe(status)))
            for name, state in recrawls.items():
                print(recrawl_line(name, state))
            sys.stdout.flush()
        except BrokenPipeError:  # `scrapy status --json | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
