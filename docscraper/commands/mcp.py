"""``scrapy mcp [--transport stdio|http] [--host 127.0.0.1] [--port 8765]``: docscraper's MCP server.

Serves the tools of :mod:`docscraper.ops.mcp_server` (sources, background crawls, their status, reindexing,
search) to an MCP client: over stdin/stdout (the default; the client spawns ``scrapy mcp`` from the project
root), or over streamable HTTP at ``http://HOST:PORT/mcp``. ``-s NAME=VALUE`` settings apply to the
server and are passed on to the crawls it starts. ``docscraper-mcp`` is the same server as a console
script.

Exit status: 0 the client left (stdio) or the server was stopped; 2 bad settings or options; 1 the port
could not be bound.
"""

from __future__ import annotations

from docscraper.ops.cli import ServerCommand


class Command(ServerCommand):
    server_module = "docscraper.ops.mcp_server"

    def syntax(self) -> str:
        return ("[--transport stdio|http] [--host HOST] [--port N] [--allow-folder DIR] [--allowed-host NAME] "
                "[--token-file FILE]")

    def short_desc(self) -> str:
        return "Serve sources, crawls and search to AI assistants over MCP (stdio or streamable HTTP)"
