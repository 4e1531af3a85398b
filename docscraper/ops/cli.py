"""What docscraper's own ``scrapy`` commands (:mod:`docscraper.commands`) share: no crawler process (so no
start-up log around the answer), warnings only in the log, the settings parsed once, ``--json``, and errors as
one ``error:`` line on stderr with an exit status. It lives outside the commands package: Scrapy makes a command
of every command class defined there."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand

from docscraper.config import DocscraperConfig

if TYPE_CHECKING:
    import argparse

__all__ = ["ToolCommand", "fail"]


def fail(command: ScrapyCommand, message: str, code: int) -> None:
    """One ``error:`` line on stderr, and the command's exit status (every docscraper command says errors
    this way)."""
    print(f"error: {message}", file=sys.stderr)
    command.exitcode = code


class ToolCommand(ScrapyCommand):
    """A command that answers from the state database, the index or a registry call; never crawls itself.

    ``json_help`` (when set) adds ``--json`` with that help text."""

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}
    json_help: ClassVar[str | None] = None

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        if self.json_help:
            parser.add_argument("--json", action="store_true", help=self.json_help)

    def config(self) -> DocscraperConfig:
        """The ``DOCSCRAPER_*`` settings, parsed (a ``ConfigError`` says what is wrong)."""
        assert self.settings is not None
        return DocscraperConfig.from_settings(self.settings)

    def fail(self, message: str, code: int) -> None:
        """One ``error:`` line on stderr, and the command's exit status."""
        fail(self, message, code)

    @staticmethod
    def print_json(data: Any) -> None:
        print(json.dumps(data, indent=2, ensure_ascii=False))
