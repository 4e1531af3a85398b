"""``scrapy reindex NAME URL|GLOB [--json]``: force the next crawl to re-process some pages.

Marks the source's stored pages that the argument names: a page URL, an absolute path
(``/docs/guide/**``) or a path relative to the source's prefix (``guide/**``, ``faq.html``), globs as in
the scope rules. The next crawl of the source fetches them without validators, keeps them even when their
content is unchanged, and embeds every chunk afresh (no stored vector is reused); the mark clears when the
page is committed. See :func:`docscraper.ops.sources.request_reindex`.

Exit status: 0 pages marked; 2 bad usage or name; 1 unknown source, or no stored page matches (nothing
is marked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    json_help = "print the URLs marked as a JSON list"


    def syntax(self) -> str:
        return "NAME URL|GLOB [--json]"

    def short_desc(self) -> str:
        return "Mark pages of a source to be re-processed and re-embedded by the next crawl"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2 or any(a.startswith("-") for a in args):
            return self.fail("usage: scrapy reindex NAME URL|GLOB (e.g. scrapy reindex docs 'guide/**')", 2)
        name, pattern = args
        from docscraper.ops.sources import SourceError, request_reindex  # (see commands/status.py)

        assert self.settings is not None
        try:
            marked = request_reindex(self.config(), name, pattern)
        except ConfigError as exc:
            return self.fail(str(exc), 2)
        except SourceError as exc:
            return self.fail(str(exc), exc.exit_code)
        if opts.json:
            self.print_json(marked)
            return None
        print(f"Marked {len(marked)} page(s) of {name} for reindexing; the next crawl re-processes them "
              f"(scrapy recrawl {name}):")
        for url in marked:
            print(f"  {url}")
        return None
