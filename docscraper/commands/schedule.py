"""``scrapy schedule [--list] [--max-running N] [--json]``: start the scheduled recrawls that are due, once.

Each registered source may carry a schedule (``scrapy sources add/update NAME --schedule 6h`` or a cron
expression such as ``'0 3 * * *'``, UTC). ``scrapy schedule`` starts a ``--due`` recrawl of each source whose next
run time has come, in the background (a detached process, or a Scrapyd job when ``DOCSCRAPER_SCRAPYD_URL`` is
set), never while a crawl of it runs, and at most ``--max-running`` (default ``DOCSCRAPER_SERVER_MAX_CRAWLS``)
crawls at once; run it from cron every few minutes. After downtime a source is crawled once, not once per missed
tick. ``--list`` only shows each schedule, its last start and result, its next run and whether it is due
(:mod:`docscraper.ops.schedules`).

Exit status: 0; 2 bad usage; 1 the state database cannot be read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand, whole_number

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    json_help = "print JSON"

    def syntax(self) -> str:
        return "[--list] [--max-running N] [--json]"

    def short_desc(self) -> str:
        return "Start the scheduled recrawls that are due (run it from cron), or list the schedules"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--list", action="store_true", help="show the schedules; start nothing")
        parser.add_argument("--max-running", type=whole_number(0, None), default=None, metavar="N",
                            help="at most N crawls running at once (0: no cap; default DOCSCRAPER_SERVER_MAX_CRAWLS)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            return self.fail("usage: scrapy schedule [--list] [--max-running N] [--json]", 2)
        from docscraper.ops.schedules import due_crawls, start_due  # (see commands/status.py)
        from docscraper.storage.state import StateError

        try:
            config = self.config()
            if opts.list:
                entries = due_crawls(config)
                if opts.json:
                    self.print_json([e.as_dict() for e in entries])
                    return None
                if not entries:
                    print("No source has a schedule. Give one with: scrapy sources update NAME --schedule 6h")
                for e in entries:
                    state = "running" if e.running else "due now" if e.due else "next " + e.as_dict()["next_run"]
                    last = e.as_dict()["last_start"] or "never"
                    print(f"{e.name}  every {e.schedule}  last {last} ({e.last_result or '-'})  {state}")
                return None
            cap = opts.max_running if opts.max_running is not None else config.server_max_crawls
            started = start_due(config, max_running=cap or None)
        except ConfigError as exc:
            return self.fail(str(exc), 2)
        except StateError as exc:
            return self.fail(str(exc), 1)
        if opts.json:
            self.print_json(started)
            return None
        if not started:
            print("No scheduled crawl is due.")
        for entry in started:
            if entry.get("started"):
                print(f"Started a crawl of {entry['source']} ({entry.get('how')}"
                      + (f", pid {entry['pid']}" if entry.get("pid") else "") + ")")
            else:
                print(f"Not started: {entry['source']}: {entry.get('why')}")
        return None
