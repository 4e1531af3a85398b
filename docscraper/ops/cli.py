"""What docscraper's own ``scrapy`` commands (:mod:`docscraper.commands`) share: no crawler process (so no
start-up log around the answer), warnings only in the log, the settings parsed once, ``--json``, and errors as
one ``error:`` line on stderr with an exit status. It lives outside the commands package: Scrapy makes a command
of every command class defined there.

Bad usage is one ``error: ...; usage: scrapy CMD SYNTAX`` line and exit status 2, whoever finds it: argparse
(a value of the wrong type, an option without its value), a :class:`~scrapy.exceptions.UsageError`, or
:func:`check_options` (an option the command does not take, named)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from docscraper.config import SETTINGS_ENV, DocscraperConfig
from docscraper.secrets import redact_data, redact_logs, redact_text

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = ["ServerCommand", "ToolCommand", "check_options", "fail", "one_line_errors", "settings_from_environment", "whole_number"]


def settings_from_environment(settings: Settings) -> None:
    """Apply the settings of ``$DOCSCRAPER_SETTINGS`` (a JSON object) at command-line priority, and take the
    variable out of this process's environment (:data:`docscraper.config.SETTINGS_ENV`)."""
    carried = os.environ.pop(SETTINGS_ENV, None)
    if not carried:
        return
    try:
        values = json.loads(carried)
        if not isinstance(values, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        raise UsageError(f"{SETTINGS_ENV} must be a JSON object of settings: {exc}", print_help=False) from None
    settings.setdict({str(k): v for k, v in values.items()}, priority="cmdline")


def fail(command: ScrapyCommand, message: str, code: int) -> None:
    """One ``error:`` line on stderr, and the command's exit status (every docscraper command says errors
    this way)."""
    print(f"error: {redact_text(message)}", file=sys.stderr)
    command.exitcode = code


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make *parser* report bad usage as one ``error: MESSAGE; usage: ...`` line on stderr and exit status 2.

    Scrapy's :func:`scrapy.cmdline.execute` sends argparse's own errors and every ``UsageError`` a command
    raises to ``parser.error``, which prints the usage block and ``__main__.py: error: ...`` over several
    lines; argparse documents ``error`` as the method to replace for another report."""

    def error(message: str) -> NoReturn:
        usage = " ".join((parser.usage or parser.prog).split())
        print(f"error: {redact_text(message)}; usage: {usage}", file=sys.stderr)
        parser.exit(2)

    parser.error = error  # type: ignore[method-assign]


def check_options(args: list[str]) -> None:
    """``UsageError`` naming the options among *args* that the command does not take: Scrapy parses with
    ``parse_known_args``, which leaves them among the positional arguments."""
    unknown = [arg for arg in args if arg.startswith("-") and arg != "-"]
    if unknown:
        raise UsageError(f"unknown option{'s' if len(unknown) > 1 else ''} {' '.join(unknown)}")


def whole_number(low: int, high: int | None = None) -> Any:
    """An argparse ``type`` for an integer option from *low* to *high* (None: no upper bound); a value out of
    range or not a number is an error that names the range."""
    wanted = f"a whole number from {low} to {high}" if high is not None else f"a whole number, {low} or more"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {value}")
        return value

    return parse


class ToolCommand(ScrapyCommand):
    """A command that answers from the state database, the index or a registry call; never crawls itself.

    ``json_help`` (when set) adds ``--json`` with that help text."""

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}
    json_help: ClassVar[str | None] = None

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        one_line_errors(parser)
        if self.json_help:
            parser.add_argument("--json", action="store_true", help=self.json_help)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        check_options(args)
        assert self.settings is not None
        settings_from_environment(self.settings)

    def config(self) -> DocscraperConfig:
        """The ``DOCSCRAPER_*`` settings, parsed (a ``ConfigError`` says what is wrong)."""
        assert self.settings is not None
        redact_logs(self.settings)  # its error lines and log records never carry a secret setting's value
        return DocscraperConfig.from_settings(self.settings)

    def fail(self, message: str, code: int) -> None:
        """One ``error:`` line on stderr, and the command's exit status."""
        fail(self, message, code)

    #: whether ``--json`` output is cleaned of secrets (:func:`docscraper.secrets.redact_data`: secret settings'
    #: values, credentials in URLs); off for commands that print the documentation's own text (search)
    redact_output: ClassVar[bool] = True

    def print_json(self, data: Any) -> None:
        print(json.dumps(redact_data(data) if self.redact_output else data, indent=2, ensure_ascii=False))


class ServerCommand(ToolCommand):
    """A command that runs a server until it is stopped (``scrapy mcp``, ``scrapy serve``): *server_module* has
    ``add_options(parser)``, ``serve(settings, **serve_options(opts))`` and ``serve_options``. Exit status 2 for bad
    settings or options, 1 when the port cannot be bound."""

    # the server logs what it does as the settings say; crawls run in processes of their own
    default_settings: ClassVar[dict[str, Any]] = {}
    server_module: ClassVar[str]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # imported when the command runs: Scrapy imports every command module to list them
        from importlib import import_module

        super().add_options(parser)
        import_module(self.server_module).add_options(parser)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from importlib import import_module

        from docscraper.config import ConfigError

        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        if not 0 <= opts.port <= 65535:
            raise UsageError(f"--port must be between 0 and 65535, got {opts.port}")
        server = import_module(self.server_module)
        assert self.settings is not None
        try:
            server.serve(self.settings, **server.serve_options(opts))
        except ConfigError as exc:
            self.fail(str(exc), 2)
        except OSError as exc:
            self.fail(f"cannot serve on {opts.host}:{opts.port}: {exc}", 1)
        except KeyboardInterrupt:
            pass
