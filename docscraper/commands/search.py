"""``scrapy search "question" [-k 5] [--source NAME] [--json] [--all-chunks] [--images] [--aliases]``: ask the
index.

Exit status 0; 2 for bad usage (one ``error:`` line: ``-k`` must be from 1 to
:data:`docscraper.storage.search.MAX_K`, 1000); 1 for no index, an unknown model or another failure."""

from __future__ import annotations

import sys
import textwrap
from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand, whole_number
from docscraper.storage.embedding import EmbeddingError
from docscraper.storage.errors import StateError
from docscraper.storage.model_identity import ModelMismatch

if TYPE_CHECKING:
    import argparse


class Command(ToolCommand):
    redact_output = False  # the documentation's own text
    json_help = "print a JSON list"


    def syntax(self) -> str:
        return '"question" [-k N] [--source NAME] [--json] [--all-chunks] [--images] [--aliases]'

    def short_desc(self) -> str:
        return "Search the vector index for the chunks that best answer a question"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # imported here, not with the module: Scrapy imports every command module to list the commands
        from docscraper.storage.search import MAX_K

        super().add_options(parser)
        parser.add_argument("-k", type=whole_number(1, MAX_K), default=5, metavar="N",
                            help=f"how many results (default 5, at most {MAX_K})")
        parser.add_argument("--source", help="only this source's pages")
        parser.add_argument("--library", help="only this library's pages, at its latest version unless --version")
        parser.add_argument("--version", dest="library_version", metavar="VERSION",
                            help="with --library: this version of it")
        parser.add_argument("--all-versions", action="store_true",
                            help="read every version of each library (one answer may then mix versions)")
        parser.add_argument("--all-chunks", action="store_true", help="allow several chunks of one page")
        parser.add_argument("--images", action="store_true", help="list each result page's images")
        parser.add_argument("--aliases", action="store_true",
                            help="list each result page's other URLs (the same content under another URL)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or not args[0].strip():
            raise UsageError('give one question, in quotes: scrapy search "how do I ..."')
        if opts.source is not None and not opts.source.strip():
            raise UsageError("--source must name a source")
        assert self.settings is not None
        # imported here: every scrapy command (a crawl too) imports each command's module, and these need numpy
        from docscraper.storage.vectors import IndexError_

        try:
            config = self.config()
            if config.chroma_url is None and not config.chroma_path.exists():
                print(f"error: no index at {config.chroma_path}; crawl a source first", file=sys.stderr)
                self.exitcode = 1
                return
            from docscraper.storage.search import Searcher

            searcher = Searcher(config)
            try:
                results = searcher.search(args[0], k=opts.k, source=opts.source,
                                          per_page=None if opts.all_chunks else 1, with_images=opts.images,
                                          with_aliases=opts.aliases, library=opts.library,
                                          version=opts.library_version, all_versions=opts.all_versions)
            finally:
                searcher.close()
        except (ConfigError, EmbeddingError, IndexError_, ModelMismatch, StateError, ValueError, LookupError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        if opts.json:
            self.print_json([r.as_dict() for r in results])
            return
        if not results:
            print("No results." + (f" (source {opts.source!r} has no chunks?)" if opts.source else ""))
            return
        for r in results:
            where = f"{r.title} > {r.heading}" if r.heading else r.title
            if r.page_number is not None:
                where += f" (page {r.page_number}" + (f"-{r.page_end}" if r.page_end and r.page_end != r.page_number
                                                      else "") + ")"
            if r.library:
                where += f"  [{r.library} {r.version}]"
            print(f"{r.rank}. [{r.score:.3f}] {where}\n   {r.url}")
            if r.aliases:
                print(f"   also at: {', '.join(r.aliases)}")
            body = " ".join(r.text.split())
            print(textwrap.indent(textwrap.fill(body[:400] + ("..." if len(body) > 400 else ""), 100), "   "))
            for image in r.images:
                words = " - ".join(filter(None, (image["alt"], image["caption"])))
                print(f"   image: {image['url']}" + (f"  {words}" if words else ""))
            print()
