"""``scrapy verify``'s work: open the state and the index, compare them, repair on request.

:func:`verify` is the library entry point (the command prints what it returns). See
:mod:`docscraper.storage.consistency` for what is compared and what a repair does. A repair touches only what
this state owns (DESIGN rule 10): it never creates a state database (a missing one, or one without a schema,
is an error), it refuses an index bound to another state database (check or repair alike), and it refuses
to delete more than ``DOCSCRAPER_MAX_DELETE_RATIO`` of a live source's chunks unless *force*. A repair
waits for no crawl: while a crawl of a source runs (or holds its lock), its pages in flight disagree for a
moment, so a repair of that source (or of all) is refused; a check only says so. A repair holds the locks of
the sources it repairs, so no crawl of them starts meanwhile. What a repair deletes is logged and appended
to ``DATA_DIR/logs/repairs.jsonl``.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from docscraper.storage.backends import open_state_store, open_vector_index
from docscraper.storage.consistency import REPAIR_LOG, Verification, check, check_mirror, claim_index, repair
from docscraper.storage.runs import SourceBusy, hold_source, running_runs
from docscraper.storage.state import database_exists, database_location, schema_revision

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig
    from docscraper.storage.state import StateStore

__all__ = ["VerifyError", "verify"]

logger = logging.getLogger(__name__)


class VerifyError(RuntimeError):
    """Verification could not be done (no state database, an index of another state, an unknown source, a
    crawl running during a repair); ``exit_code`` is the command's exit status."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _open_existing_store(config: DocscraperConfig) -> StateStore:
    """The state store, never created: a database that is not there, or has no docscraper schema yet, is
    a :class:`VerifyError` (a wrong DOCSCRAPER_STATE_URL or DATA_DIR must not pass for an empty state)."""
    where = database_location(config.state_url)
    hint = "check DOCSCRAPER_STATE_URL and DOCSCRAPER_DATA_DIR"
    if not database_exists(config.state_url):
        raise VerifyError(f"no state database at {where}; {hint}", 1)
    # an older schema is migrated as any command does; an empty database is not given one
    if schema_revision(config.state_url) is None:
        raise VerifyError(f"the state database {where} has no docscraper schema (nothing was crawled into it); "
                          f"{hint}", 1)
    return open_state_store(config)


def verify(config: DocscraperConfig, name: str | None = None, *, fix: bool = False, force: bool = False,
           mirror: Path | None = None) -> tuple[Verification, list[str]]:
    """Compare the state with the index (source *name*, or all); with *fix*, repair what disagrees: past
    ``DOCSCRAPER_MAX_DELETE_RATIO`` of a source's chunks only with *force*. Returns the verification and
    the sources whose crawls are running now (their in-flight pages may disagree). *mirror*: a Markdown
    mirror folder to check the source's live pages against."""
    store = _open_existing_store(config)
    try:
        sources = {s.source.name: s.source for s in store.list_sources()}
        if name is not None and name not in sources:
            raise VerifyError(f"unknown source {name!r}; registered and crawled sources: "
                              f"{', '.join(sorted(sources)) or '(none)'}", 1)
        if mirror is not None and name is None:
            raise VerifyError("--mirror needs a source: scrapy verify NAME --mirror DIR")
        running = sorted({state.source for state in running_runs(store, timeout=config.heartbeat_timeout)
                          if name is None or state.source == name})
        if fix and running:
            raise VerifyError(f"a crawl of {', '.join(running)} is running: its pages in flight disagree with the "
                              "index for a moment. Repair when it has finished", 1)
        with contextlib.ExitStack() as held:
            if fix:
                # the sources' locks (DESIGN rule 10): no crawl of them starts while they are repaired
                for source in [sources[name]] if name is not None else list(sources.values()):
                    try:
                        held.enter_context(hold_source(store, source, purpose="repair",
                                                       timeout=config.heartbeat_timeout, doing="repair"))
                    except SourceBusy as exc:
                        raise VerifyError(str(exc), 1) from None
            index = open_vector_index(config)
            try:
                claim_index(index, store.state_id())
                cache = config.data_dir / "lexical" / config.chroma_collection
                result = check(store, index, source=name, keyword_cache=cache)
                if mirror is not None and name is not None:
                    check_mirror(store, sources[name], mirror, result)
                if fix and not result.ok:
                    repair(store, index, result, keyword_cache=cache, max_delete_ratio=config.max_delete_ratio,
                           force=force, audit=config.data_dir / REPAIR_LOG)
            finally:
                index.close()
    finally:
        store.close()
    return result, running
