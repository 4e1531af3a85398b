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

from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.exceptions import UsageError

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    # Crawls run in processes of their own (docscraper.ops.launch); the server logs as the settings say.
    default_settings: ClassVar[dict[str, Any]] = {}

    def syntax(self) -> str:
        return ("[--transport stdio|http] [--host HOST] [--port N] [--allow-folder DIR] [--allowed-host NAME] "
                "[--token-file FILE]")

    def short_desc(self) -> str:
        return "Serve sources, crawls and search to AI assistants over MCP (stdio or streamable HTTP)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # the server is imported when this command runs: Scrapy imports every command module to list them
        from docscraper.ops.mcp_server import add_server_options

        super().add_options(parser)
        add_server_options(parser)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        if not 0 <= opts.port <= 65535:
            raise UsageError(f"--port must be between 0 and 65535, got {opts.port}")
        from docscraper.ops.mcp_server import serve, serve_options

        assert self.settings is not None
        try:
            serve(self.settings, **serve_options(opts))
        except ConfigError as exc:
            self.fail(str(exc), 2)
        except OSError as exc:
            self.fail(f"cannot serve on {opts.host}:{opts.port}: {exc}", 1)
        except KeyboardInterrupt:
            pass
