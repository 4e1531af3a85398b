"""``scrapy serve [--host 127.0.0.1] [--port 8766]``: the dashboard, its JSON API, the MCP endpoint and scheduled
recrawls in one long-running process (:mod:`docscraper.ops.server`). ``docscraper-serve`` is the same server as a
console script. ``-s NAME=VALUE`` settings apply to the server and are passed on to the crawls it starts.

Exit status: 0 the server was stopped; 2 bad settings or options (a host off loopback without a token); 1 the port
could not be bound.
"""

from __future__ import annotations

from docscraper.ops.cli import ServerCommand


class Command(ServerCommand):
    server_module = "docscraper.ops.server"

    def syntax(self) -> str:
        return ("[--host HOST] [--port N] [--token-file FILE] [--allowed-host NAME] [--allow-folder DIR] "
                "[--tick SECONDS] [--no-schedule]")

    def short_desc(self) -> str:
        return "Serve the dashboard, its JSON API and MCP, and start scheduled recrawls"
