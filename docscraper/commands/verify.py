"""``scrapy verify [NAME] [--repair] [--force] [--mirror DIR] [--json]``: does the index match the state?

Compares the state table with the vector index, for every source or source NAME, through
:mod:`docscraper.storage.consistency`: each live page must have exactly its chunks, with metadata that agrees with its
row; no chunk may belong to a page or source the state does not hold live; the keyword cache must not vouch for
another collection; with ``--mirror DIR`` each live page must have its mirror file. ``--repair`` fixes what this state
owns (``--force``: past ``DOCSCRAPER_MAX_DELETE_RATIO``), refused while a crawl of the source runs. Never creates a
state database. Exit status: 0 everything agrees (or was repaired); 3 disagreements left; 1 no state database, an
index of another state, unknown source, no index, or a repair refused; 2 bad usage. What each disagreement means:
docs/howto/verify.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docscraper.config import ConfigError
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse

#: Exit status when disagreements were found and left as they are.
DISAGREE = 3


class Command(ToolCommand):
    json_help = "print the verification as JSON"

    def syntax(self) -> str:
        return "[NAME] [--repair] [--force] [--mirror DIR] [--json]"

    def short_desc(self) -> str:
        return "Check that the vector index matches the state database; --repair fixes what disagrees"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--repair", action="store_true",
                            help="delete chunks nobody owns, mark pages whose chunks disagree for reindexing")
        parser.add_argument("--force", action="store_true",
                            help="with --repair, delete past DOCSCRAPER_MAX_DELETE_RATIO of a source's chunks")
        parser.add_argument("--mirror", metavar="DIR", help="also check the source's Markdown mirror in DIR")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) > 1 or any(a.startswith("-") or not a.strip() for a in args):
            return self.fail("usage: scrapy verify [NAME] [--repair] [--force] [--mirror DIR] [--json]", 2)
        from docscraper.ops.verify import VerifyError, verify  # (see commands/status.py)
        from docscraper.storage.errors import StateError
        from docscraper.storage.vectors import IndexError_

        name = args[0] if args else None
        try:
            config = self.config()
            if config.chroma_url is None and not config.chroma_path.exists():
                return self.fail(f"no index at {config.chroma_path}; crawl a source first", 1)
            result, running = verify(config, name, fix=opts.repair, force=opts.force,
                                     mirror=Path(opts.mirror) if opts.mirror else None)
        except ConfigError as exc:
            return self.fail(str(exc), 2)
        except VerifyError as exc:
            return self.fail(str(exc), exc.exit_code)
        except (IndexError_, StateError) as exc:
            return self.fail(str(exc), 1)
        if opts.json:
            self.print_json({**result.as_dict(), "running": running})
        else:
            self._print(result, running)
        for refused in result.refused:
            print(f"error: repair of source {refused['source']} refused: it would delete {refused['chunks']} of its "
                  f"{refused['of']} chunks in the index, more than DOCSCRAPER_MAX_DELETE_RATIO={refused['maxRatio']}; "
                  "nothing of it was touched. Check DOCSCRAPER_STATE_URL and DOCSCRAPER_DATA_DIR, then pass --force "
                  "to delete past the cap", file=sys.stderr)
        if result.refused:
            self.exitcode = 1
        elif not result.ok and (not result.repaired or result.left):
            self.exitcode = DISAGREE
        return None

    @staticmethod
    def _print(result: object, running: list[str]) -> None:
        from docscraper.storage.consistency import FOREIGN_KINDS, Verification

        assert isinstance(result, Verification)
        for source, sizes in sorted(result.sources.items()):
            print(f"{source}: {sizes['pages']} live page(s), {sizes['chunks']} chunk(s)")
        if running:
            print(f"note: a crawl of {', '.join(running)} is running; its pages in flight may disagree for a moment")
        if result.scheduled:
            print(f"{len(result.scheduled)} page(s) marked for reindexing wait for their next crawl to write their "
                  "chunks again")
        if result.ok:
            print(f"OK: the index ({result.chunks} chunks) matches the state")
            return
        kinds = ", ".join(f"{kind} {n}" for kind, n in result.counts().items())
        print(f"{len(result.disagreements)} disagreement(s): {kinds}")
        for found in result.disagreements[:50]:
            where = found.url or found.page_id or found.source or ""
            print(f"  {found.kind:16} {where}: {found.detail}")
        if len(result.disagreements) > 50:
            print(f"  ... and {len(result.disagreements) - 50} more (--json lists them all)")
        if result.repaired:
            r = result.repaired
            print(f"Repaired: {r['chunksDeleted']} chunk(s) deleted, {r['pagesMarked']} page(s) marked for "
                  f"reindexing (their next crawl writes them again){', keyword cache dropped' if r.get('keywordCacheDropped') else ''}")
            if r["chunksDeleted"]:
                print("What was deleted is logged in logs/repairs.jsonl under the data directory.")
            left = [d for d in result.left if d.kind in FOREIGN_KINDS]
            if left:
                print(f"Left as they are: {len(left)} disagreement(s) of chunks this state cannot prove are its own "
                      "(unparsableId, foreignSource, foreignChunk)")
            if any(d.kind == "mirrorStale" for d in result.disagreements):
                print("Mirror files are rewritten by the next crawl with that mirror (-a save_dir).")
        else:
            print("Run with --repair to fix what can be fixed.", file=sys.stderr)
