"""The state store: sources, pages and crawl runs, through SQLAlchemy 2.

:class:`StateStore` is the small interface the rest of docscraper uses; :class:`SqlStateStore` its one implementation
and the only place that writes SQL. Any SQLAlchemy URL works: SQLite (the default, ``DATA_DIR/state.db``),
``sqlite://`` in memory for tests, PostgreSQL for many workers. The schema is brought to the newest Alembic revision
when the store opens. All methods are blocking; a crawl runs them on its one state thread
(:meth:`docscraper.crawl.resources.CrawlResources.db`). On PostgreSQL every write is one transaction of upserts and
row updates in page-id order, retried on a deadlock or a serialization failure, and migrations run under an advisory
lock. Why: docs/reference/output.md ("PostgreSQL state") and docs/explanation/choices.md.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, overload

from sqlalchemy import Engine, and_, bindparam, create_engine, delete, event, func, inspect, null, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from docscraper._resources import resource_dir
from docscraper.storage.errors import StateError
from docscraper.storage.state.models import (
    CrawlRunRow,
    ImageRow,
    IndexWriteRow,
    PageRow,
    RemovedSourceRow,
    SourceLockRow,
    SourceRow,
    StateInfoRow,
)

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "ImageRecord",
    "LockRecord",
    "PageFailure",
    "PageRecord",
    "PageSeen",
    "PageWrite",
    "RunRecord",
    "RunState",
    "ScheduleSummary",
    "SourceRecord",
    "SourceSummary",
    "SqlStateStore",
    "StateError",
    "StateStore",
    "database_exists",
    "database_location",
    "iso_utc",
    "migrate",
    "schema_revision",
    "utcnow",
]

logger = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def iso_utc(value: datetime) -> str: ...
@overload
def iso_utc(value: None) -> None: ...
@overload
def iso_utc(value: datetime | None) -> str | None: ...
def iso_utc(value: datetime | None) -> str | None:
    """A time as the reports, the status and the JSON outputs write it: ISO 8601 in UTC with ``Z`` (a naive
    time is UTC, as the state database stores them); None stays None."""
    if value is None:
        return None
    return _aware(value).astimezone(UTC).isoformat().replace("+00:00", "Z")


@overload
def _aware(value: datetime) -> datetime: ...
@overload
def _aware(value: datetime | None) -> datetime | None: ...
def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


@dataclass(frozen=True)
class SourceRecord:
    id: int
    name: str
    url: str
    scope: dict[str, Any]
    registered: bool
    # when the source's sitemap <lastmod> was found untrustworthy, and why (docscraper.crawl.schedule)
    lastmod_untrusted_at: datetime | None = None
    lastmod_note: str | None = None


@dataclass(frozen=True)
class SourceSummary:
    """A source with its active pages, their chunks (as the state recorded them) and its latest run."""

    source: SourceRecord
    pages: int
    chunks: int
    last_run: RunRecord | None


@dataclass(frozen=True)
class ScheduleSummary:
    """A source's revisit schedule at a moment: pages checked on a schedule (active, alias and failed ones), how
    many are due then (a null next check is due), and the earliest next check after it (None: none)."""

    scheduled: int
    due_now: int
    next_due_at: datetime | None


@dataclass(frozen=True, slots=True)  # slots: a run holds one for every page of its source
class PageRecord:
    """What a previous run stored about a page; the change detector compares against it."""

    page_id: str
    url: str
    status: str
    content_hash: str | None
    etag: str | None
    last_modified: str | None
    rel_path: str | None
    failure_count: int = 0
    not_found_runs: int = 0
    chunk_count: int | None = None
    links: tuple[str, ...] = ()
    redirects: tuple[str, ...] = ()
    reindex_requested: bool = False  # marked by `scrapy reindex`: re-process whatever the hash
    title: str | None = None  # the title its chunks carry (in their prefix and metadata)
    alias_of: str | None = None  # status alias: the page whose content this URL serves
    # its revisit schedule (docscraper.crawl.schedule); next_check_at None: due now
    next_check_at: datetime | None = None
    check_interval: int | None = None
    unchanged_checks: int = 0
    sitemap_lastmod: str | None = None
    last_changed: datetime | None = None

    def alias_current(self, pages: Mapping[str, PageRecord]) -> bool:
        """Whether this alias's page (looked up in *pages*, its source's) is live and holds its content."""
        holder = pages.get(self.alias_of or "")
        return holder is not None and holder.status == "active" and holder.content_hash == self.content_hash


@dataclass(frozen=True)
class PageWrite:
    """A new or changed page, committed after its chunks are in the index (DESIGN rule 1)."""

    page_id: str
    url: str
    canonical_url: str | None
    rel_path: str | None
    content_hash: str
    etag: str | None
    last_modified: str | None
    http_status: int | None
    title: str | None
    finder: str | None
    depth: int | None
    content_type: str | None
    fetched_at: datetime
    run_id: str
    chunk_count: int | None = None
    links: tuple[str, ...] = ()
    redirects: tuple[str, ...] = ()  # first requested URL ... final URL; () when not redirected
    forced: bool = False  # re-processed for a reindex mark: committing it clears the mark
    images: tuple[ImageRecord, ...] = ()  # the page's images in document order; replace the stored ones
    alias_of: str | None = None  # the content is this page's: stored as an alias (no chunks, no images)
    # its revisit schedule after this check (None: left as stored)
    next_check_at: datetime | None = None
    check_interval: int | None = None
    unchanged_checks: int = 0
    sitemap_lastmod: str | None = None  # the sitemap's <lastmod> for it this run (None: keep the stored one)


@dataclass(frozen=True)
class ImageRecord:
    """An image of a page's main content: absolute URL, alt text (``""`` when none), the enclosing
    figure's caption and the ``title`` attribute. Stored with its page, in document order."""

    url: str
    alt: str = ""
    caption: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class PageSeen:
    """An unchanged page: only its validators, links and last-seen marks move."""

    page_id: str
    etag: str | None
    last_modified: str | None
    http_status: int | None
    seen_at: datetime
    links: tuple[str, ...] | None = None  # None: not fetched (304), keep the stored links
    redirects: tuple[str, ...] | None = None  # None: keep the stored chain; (): not redirected
    status: str = "active"  # an unchanged alias stays an alias
    next_check_at: datetime | None = None  # its revisit schedule after this check (None: left as stored)
    check_interval: int | None = None
    unchanged_checks: int = 0
    sitemap_lastmod: str | None = None  # None: keep the stored one


@dataclass(frozen=True)
class PageFailure:
    page_id: str
    url: str
    rel_path: str | None
    http_status: int | None
    error: str
    at: datetime
    not_found: bool = False
    next_check_at: datetime | None = None  # backed off (docscraper.crawl.schedule); None: left as stored


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    source_id: int
    started_at: datetime
    finished_at: datetime | None
    close_reason: str | None
    result: str | None
    summary: dict[str, Any] | None = None
    report_path: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunState:
    """A run as ``scrapy status`` sees it: the record, its source's name, and what tells whether it is
    still alive (the last heartbeat, the host and process that run it) and how far it got."""

    run: RunRecord
    source: str
    heartbeat_at: datetime | None
    host: str | None
    pid: int | None
    progress: dict[str, Any] | None
    process_start: str | None = None


@dataclass(frozen=True)
class LockRecord:
    """Who holds a source's lock (:meth:`StateStore.acquire_lock`): *holder* (a run id, a shared run's id, or
    a removal's or repair's own id), what for (*purpose*: ``crawl``, ``remove``, ``repair``), whether the
    workers of a shared run hold it together (*shared*), and the process that took or last refreshed it."""

    source_id: int
    holder: str
    purpose: str
    shared: bool
    host: str | None
    pid: int | None
    process_start: str | None
    acquired_at: datetime
    heartbeat_at: datetime

    def describe(self) -> str:
        what = {"crawl": "a crawl", "remove": "a removal", "repair": "a repair"}.get(self.purpose, self.purpose)
        return (f"{what} ({'shared run' if self.shared else 'run' if self.purpose == 'crawl' else 'by'} "
                f"{self.holder}, host {self.host or '?'}, pid {self.pid}, since {iso_utc(self.acquired_at)})")


class StateStore(Protocol):
    """What docscraper needs from its state database."""

    def ensure_source(self, name: str, url: str, scope: dict[str, Any], *, registered: bool = False) -> SourceRecord: ...
    def get_source(self, name: str) -> SourceRecord | None: ...
    def find_source_by_url(self, url: str) -> SourceRecord | None: ...
    def source_scopes(self) -> dict[str, dict[str, Any]]:
        """Every source's name -> its stored scope (a library and version among them)."""
        ...
    def load_pages(self, source_id: int) -> dict[str, PageRecord]: ...
    def commit_page(self, source_id: int, page: PageWrite) -> None: ...
    def commit_pages(self, source_id: int, pages: Sequence[PageWrite]) -> None:
        """:meth:`commit_page` for each of *pages*, in one transaction (all or none)."""
        ...
    def mark_seen(self, source_id: int, run_id: str, pages: Sequence[PageSeen]) -> None: ...
    def record_failures(self, source_id: int, run_id: str, failures: Sequence[PageFailure]) -> None: ...
    def mark_removed(self, source_id: int, page_ids: Iterable[str], run_id: str, at: datetime) -> int: ...
    def start_run(self, run: RunRecord, *, host: str | None = None, pid: int | None = None,
                  process_start: str | None = None) -> None: ...
    def heartbeat(self, run_id: str, at: datetime, progress: dict[str, Any] | None = None) -> None: ...
    def finish_run(self, run: RunRecord) -> None: ...
    def run_states(self, source_id: int | None = None) -> list[RunState]: ...
    def last_runs(self, source_id: int, limit: int = 10) -> list[RunRecord]: ...
    def list_sources(self, name: str | None = None) -> list[SourceSummary]: ...
    def update_source(self, source_id: int, *, name: str | None = None, scope: dict[str, Any] | None = None,
                      registered: bool | None = None) -> SourceRecord: ...
    def delete_source(self, source_id: int) -> dict[str, int]:
        """Delete a source with its pages and runs, and record it as removed (:meth:`removed_sources`)."""
        ...
    def removed_sources(self) -> dict[int, str]:
        """The sources this state removed: source id -> its name then. Their ids are never given again."""
        ...
    def state_id(self) -> str:
        """The random id this state database was given when it was created (DESIGN rule 10)."""
        ...
    def mark_reindex(self, source_id: int, page_ids: Iterable[str]) -> int: ...
    def schedule_summary(self, source_id: int, now: datetime) -> ScheduleSummary:
        """How many of the source's pages are due at *now*, and when the next one falls due."""
        ...
    def set_lastmod_trust(self, source_id: int, untrusted_at: datetime | None, note: str | None) -> None:
        """Record that the source's sitemap <lastmod> is untrustworthy since *untrusted_at* (None: trusted)."""
        ...
    def content_type_counts(self, source_id: int) -> dict[str | None, int]:
        """The source's active pages by their stored Content-Type (None: unknown)."""
        ...
    def page_images(self, source: str, page_ids: Iterable[str]) -> dict[str, list[ImageRecord]]: ...
    def page_aliases(self, source: str, page_ids: Iterable[str]) -> dict[str, list[str]]:
        """The URLs serving these pages' content as aliases (status alias), by page id."""
        ...
    def linking_pages(self, source_id: int, page_ids: Iterable[str], limit: int = 10) -> dict[str, list[str]]: ...
    def acquire_lock(self, source_id: int, holder: str, *, purpose: str, host: str | None, pid: int | None,
                     process_start: str | None, shared: bool = False,
                     is_dead: Callable[[LockRecord], bool]) -> LockRecord | None:
        """Take source *source_id*'s lock for *holder*: None when taken (or held by *holder* already: a shared
        run's workers join), else the live holder's record. A holder *is_dead* judges dead is replaced."""
        ...
    def refresh_lock(self, source_id: int, holder: str, at: datetime, *, host: str | None = None,
                     pid: int | None = None, process_start: str | None = None) -> bool:
        """Mark *holder*'s lock alive at *at* (a shared lock also records who refreshed it); False when
        *holder* does not hold it."""
        ...
    def release_lock(self, source_id: int, holder: str) -> None:
        """Give up *holder*'s lock (nothing when another holds it)."""
        ...
    def get_lock(self, source_id: int) -> LockRecord | None: ...
    def begin_index_writes(self, source_id: int, page_ids: Iterable[str], run_id: str) -> None:
        """Record that *run_id* is about to write these pages' chunks to the vector index (before it does)."""
        ...
    def index_writes(self, source_id: int) -> dict[str, str]:
        """The source's index writes no state commit followed: page id -> the run that began it."""
        ...
    def end_index_writes(self, source_id: int, page_ids: Iterable[str]) -> None:
        """Forget these pages' index writes (reconciled)."""
        ...
    def close(self) -> None: ...


def _alembic_config(connection: Any) -> Config:
    from alembic.config import Config  # Alembic is imported when a database is opened, not with this module

    cfg = Config()
    # a real directory even when the package runs from a zipped egg (Scrapyd): Alembic loads files
    cfg.set_main_option("script_location", str(resource_dir("docscraper.storage.state", "migrations")))
    cfg.attributes["connection"] = connection
    return cfg


# pg_advisory_xact_lock key of the migrations: any fixed 64-bit number, the same in every release
_MIGRATION_LOCK = 0x646F637363726170  # "docscrap"


#: The newest schema revision: the head of ``migrations/versions`` (a test checks that they agree). A
#: database already there is opened without importing Alembic.
SCHEMA_HEAD = "0010"


def _current_revision(connection: Any) -> str | None:
    """The database's schema revision read with plain SQL (Alembic's ``alembic_version`` table); None when
    it has none."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    versions = list(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())
    return str(versions[0]) if len(versions) == 1 else None


#: Alembic's command API keeps its context in module globals: one migration at a time in a process (a server's
#: scheduler and a request may open a new database together).
_MIGRATING = threading.Lock()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to *revision* (the newest by default); a no-op when it is there already."""
    with _MIGRATING:
        _migrate(engine, revision)


def _migrate(engine: Engine, revision: str) -> None:
    if revision == "head":
        with engine.connect() as connection:
            if _current_revision(connection) == SCHEMA_HEAD:
                return
    # Alembic reports every step at INFO; docscraper says once what it migrates.
    logging.getLogger("alembic").setLevel(max(logging.getLogger("alembic").getEffectiveLevel(), logging.WARNING))
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Workers starting together queue here; the first migrates, the others then find the head.
            # A transaction-level lock: it goes with the commit (or rollback) of the migration.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        from alembic import command
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = _alembic_config(connection)
        current = MigrationContext.configure(connection).get_current_revision()
        head = ScriptDirectory.from_config(cfg).get_current_head()
        if revision == "head" and current == head:
            return
        logger.info("Migrating state database from %s to %s", current or "empty", revision)
        command.upgrade(cfg, revision)


def _make_engine(url: str) -> Engine:
    parsed = make_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        else:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
    elif parsed.get_backend_name() == "postgresql":
        kwargs["pool_pre_ping"] = True  # a long crawl outlives server restarts and idle-connection reaping
    engine = create_engine(url, **kwargs)
    if parsed.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # WAL lets `scrapy status` read while a crawl writes; foreign keys are off by default.
            if (parsed.database or ":memory:") != ":memory:":
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    return engine


_P = ParamSpec("_P")
_R = TypeVar("_R")
# PostgreSQL's serialization_failure and deadlock_detected: the transaction was rolled back whole
_RETRY_SQLSTATES = frozenset({"40001", "40P01"})


def _retry_conflicts(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a write again when the server aborted its transaction because another worker's crossed it.
    Its arguments must survive a second call (sequences, not iterators)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        for attempt in range(1, 6):
            try:
                return method(*args, **kwargs)
            except DBAPIError as exc:
                if attempt == 5 or getattr(exc.orig, "sqlstate", None) not in _RETRY_SQLSTATES:
                    raise
                logger.debug("Retrying %s after %s", getattr(method, "__name__", "a write"), exc.orig)
                time.sleep(random.uniform(0.01, 0.05) * attempt)
        raise AssertionError("unreachable")

    return wrapper


#: Page statuses that are checked on a schedule (a removed page is not: it comes back as new when found).
_SCHEDULED_STATUSES = ("active", "alias", "failed")


def _schedule_values(values: dict[str, Any], next_check_at: datetime | None, interval: int | None,
                     unchanged_checks: int, sitemap_lastmod: str | None) -> None:
    """Add a check's revisit schedule to a page row's new values (nothing when the check left none)."""
    if next_check_at is not None:
        values.update(next_check_at=next_check_at, check_interval=interval, unchanged_checks=unchanged_checks)
    if sitemap_lastmod is not None:
        values["sitemap_lastmod"] = sitemap_lastmod[:64]


@functools.lru_cache(maxsize=64)
def _page_upsert(dialect: str, columns: tuple[str, ...], nulls: tuple[str, ...]) -> Any:
    """The upsert of a page row that sets *columns* (bound per row, with ``source_id``, ``page_id`` and
    ``first_seen`` on insert) and *nulls* to SQL NULL."""
    stmt = _insert(dialect, PageRow)
    changes: dict[str, Any] = {name: stmt.excluded[name] for name in columns}
    changes.update({name: null() for name in nulls})
    return stmt.on_conflict_do_update(index_elements=["source_id", "page_id"], set_=changes)


@functools.lru_cache(maxsize=64)
def _page_update(columns: tuple[str, ...], nulls: tuple[str, ...]) -> Any:
    """The update of one page row (``sid``, ``pid``) that sets *columns* (bound as ``v_<column>``) and *nulls* to
    SQL NULL."""
    changes: dict[str, Any] = {name: bindparam(f"v_{name}") for name in columns}
    changes.update({name: null() for name in nulls})
    return (update(PageRow).where(PageRow.source_id == bindparam("sid"), PageRow.page_id == bindparam("pid"))
            .values(changes).execution_options(synchronize_session=False))


_STALE_ALIASES = (update(PageRow)
                  .where(PageRow.source_id == bindparam("sid"), PageRow.alias_of == bindparam("pid"),
                         PageRow.status == "alias", PageRow.content_hash != bindparam("hash"))
                  .values(reindex_requested=True)
                  .execution_options(synchronize_session=False))  # the session holds no page object to update
_END_INDEX_WRITE = (delete(IndexWriteRow)
                    .where(IndexWriteRow.source_id == bindparam("sid"), IndexWriteRow.page_id == bindparam("pid"))
                    .execution_options(synchronize_session=False))
_DELETE_IMAGES = (delete(ImageRow).where(ImageRow.source_id == bindparam("sid"), ImageRow.page_id == bindparam("pid"))
                  .execution_options(synchronize_session=False))


def _insert(dialect: str, table: Any) -> Any:
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


class SqlStateStore:
    """:class:`StateStore` on any SQLAlchemy URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self.engine = _make_engine(url)
            migrate(self.engine)
        except (SQLAlchemyError, OSError) as exc:
            safe = make_url(url).render_as_string(hide_password=True)
            raise StateError(f"cannot open state database {safe}: {exc.__class__.__name__}: {exc}") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._dialect = self.engine.dialect.name

    def _session(self) -> Session:
        return self._sessions()

    # sources ---------------------------------------------------------------------------------------

    @staticmethod
    def _source(row: SourceRow) -> SourceRecord:
        return SourceRecord(row.id, row.name, row.url, dict(row.scope or {}), bool(row.registered),
                            _aware(row.lastmod_untrusted_at), row.lastmod_note)

    @_retry_conflicts
    def ensure_source(self, name: str, url: str, scope: dict[str, Any], *, registered: bool = False) -> SourceRecord:
        """The source called *name*, created with *scope* when it does not exist yet."""
        now = utcnow()
        with self._session() as session, session.begin():
            values: dict[str, Any] = {}
            if self._dialect == "sqlite":
                # SQLite gives a new row the highest id + 1, so the id of the newest source, once removed, would
                # come back; a removed source's id stays its own (its chunks left in an index are known by it)
                taken = [select(func.coalesce(func.max(table.id), 0)).scalar_subquery()
                         for table in (SourceRow, RemovedSourceRow)]
                values["id"] = func.max(*taken) + 1
            stmt = (
                _insert(self._dialect, SourceRow)
                .values(name=name, url=url, scope=scope, registered=registered, created_at=now, updated_at=now,
                        **values)
                .on_conflict_do_nothing(index_elements=["name"])
            )
            session.execute(stmt)
            row = session.scalars(select(SourceRow).where(SourceRow.name == name)).one()
            return self._source(row)

    def get_source(self, name: str) -> SourceRecord | None:
        with self._session() as session:
            row = session.scalars(select(SourceRow).where(SourceRow.name == name)).first()
            return None if row is None else self._source(row)

    def find_source_by_url(self, url: str) -> SourceRecord | None:
        with self._session() as session:
            row = session.scalars(select(SourceRow).where(SourceRow.url == url).order_by(SourceRow.id)).first()
            return None if row is None else self._source(row)

    def source_scopes(self) -> dict[str, dict[str, Any]]:
        with self._session() as session:
            return {name: dict(scope or {}) for name, scope in session.execute(select(SourceRow.name, SourceRow.scope))}

    # pages -----------------------------------------------------------------------------------------

    def load_pages(self, source_id: int) -> dict[str, PageRecord]:
        with self._session() as session:
            rows = session.execute(
                select(
                    PageRow.page_id,
                    PageRow.url,
                    PageRow.status,
                    PageRow.content_hash,
                    PageRow.etag,
                    PageRow.last_modified,
                    PageRow.rel_path,
                    PageRow.failure_count,
                    PageRow.not_found_runs,
                    PageRow.chunk_count,
                    PageRow.links,
                    PageRow.redirects,
                    PageRow.reindex_requested,
                    PageRow.title,
                    PageRow.alias_of,
                    PageRow.next_check_at,
                    PageRow.check_interval,
                    PageRow.unchanged_checks,
                    PageRow.sitemap_lastmod,
                    PageRow.last_changed,
                ).where(PageRow.source_id == source_id)
                # streamed: the rows' decoded link lists are not all in memory at once
                .execution_options(yield_per=1000)
            )
            # Link targets repeat on every page of a site (its navigation): one string each, not one a page.
            urls: dict[str, str] = {}

            def shared(links: list[str] | None) -> tuple[str, ...]:
                return tuple(urls.setdefault(link, link) for link in links or ())

            return {
                row.page_id: PageRecord(
                    page_id=row.page_id,
                    url=row.url,
                    status=row.status,
                    content_hash=row.content_hash,
                    etag=row.etag,
                    last_modified=row.last_modified,
                    rel_path=row.rel_path,
                    failure_count=row.failure_count or 0,
                    not_found_runs=row.not_found_runs or 0,
                    chunk_count=row.chunk_count,
                    links=shared(row.links),
                    redirects=tuple(row.redirects or ()),
                    reindex_requested=bool(row.reindex_requested),
                    title=row.title,
                    alias_of=row.alias_of,
                    next_check_at=_aware(row.next_check_at),
                    check_interval=row.check_interval,
                    unchanged_checks=row.unchanged_checks or 0,
                    sitemap_lastmod=row.sitemap_lastmod,
                    last_changed=_aware(row.last_changed),
                )
                for row in rows
            }

    def commit_page(self, source_id: int, page: PageWrite) -> None:
        self.commit_pages(source_id, [page])

    @_retry_conflicts
    def commit_pages(self, source_id: int, pages: Sequence[PageWrite]) -> None:
        if not pages:
            return
        with self._session() as session, session.begin():
            # page-id order: two workers committing overlapping pages lock them in the same order
            for page in sorted(pages, key=lambda p: p.page_id):
                self._commit_page(session, source_id, page)

    def _commit_page(self, session: Session, source_id: int, page: PageWrite) -> None:
        values = {
            "url": page.url,
            "canonical_url": page.canonical_url,
            "rel_path": page.rel_path,
            "status": "alias" if page.alias_of else "active",
            "alias_of": page.alias_of,
            "content_hash": page.content_hash,
            "etag": page.etag,
            "last_modified": page.last_modified,
            "http_status": page.http_status,
            "title": page.title,
            "finder": page.finder,
            "depth": page.depth,
            "content_type": page.content_type,
            "last_seen": page.fetched_at,
            "last_changed": page.fetched_at,
            "last_run_id": page.run_id,
            "failure_count": 0,
            "last_error": None,
            "not_found_runs": 0,
            "chunk_count": page.chunk_count,
            "links": list(page.links),
        }
        nulls: tuple[str, ...] = ()
        if page.redirects:
            values["redirects"] = list(page.redirects)
        else:
            nulls = ("redirects",)  # SQL NULL, not JSON null
        _schedule_values(values, page.next_check_at, page.check_interval, page.unchanged_checks, page.sitemap_lastmod)
        if page.forced:
            values["reindex_requested"] = False
        # One statement per shape of row, built once: building one for every page cost SQLAlchemy ten times what
        # SQLite spends running it.
        session.execute(_page_upsert(self._dialect, tuple(values), nulls),
                        {"source_id": source_id, "page_id": page.page_id, "first_seen": page.fetched_at, **values})
        key = {"sid": source_id, "pid": page.page_id}
        # its aliases served its old content: the next crawl fetches them in full and decides again
        session.execute(_STALE_ALIASES, {**key, "hash": page.content_hash})
        # its index write is committed with it
        session.execute(_END_INDEX_WRITE, key)
        # The page's images are replaced wholesale, in the same transaction as its row.
        session.execute(_DELETE_IMAGES, key)
        if page.images:
            session.execute(
                _insert(self._dialect, ImageRow),
                [
                    {"source_id": source_id, "page_id": page.page_id, "position": position, "url": image.url,
                     "alt": image.alt, "caption": image.caption, "title": image.title}
                    for position, image in enumerate(page.images)
                ],
            )

    @_retry_conflicts
    def mark_seen(self, source_id: int, run_id: str, pages: Sequence[PageSeen]) -> None:
        if not pages:
            return
        with self._session() as session, session.begin():
            # page-id order: two workers updating overlapping pages lock them in the same order
            for seen in sorted(pages, key=lambda p: p.page_id):
                changes: dict[str, Any] = {
                    "last_seen": seen.seen_at,
                    "last_run_id": run_id,
                    "failure_count": 0,
                    "last_error": None,
                    "not_found_runs": 0,
                    "status": seen.status,
                }
                # A 304 carries no new validators worth losing the stored ones for.
                if seen.etag is not None:
                    changes["etag"] = seen.etag
                if seen.last_modified is not None:
                    changes["last_modified"] = seen.last_modified
                if seen.http_status is not None and seen.http_status != 304:
                    changes["http_status"] = seen.http_status
                if seen.links is not None:
                    changes["links"] = list(seen.links)
                nulls: tuple[str, ...] = ()
                if seen.redirects is not None:
                    if seen.redirects:
                        changes["redirects"] = list(seen.redirects)
                    else:
                        nulls = ("redirects",)  # SQL NULL, not JSON null
                _schedule_values(changes, seen.next_check_at, seen.check_interval, seen.unchanged_checks,
                                 seen.sitemap_lastmod)
                session.execute(_page_update(tuple(changes), nulls),
                                {"sid": source_id, "pid": seen.page_id, **{f"v_{k}": v for k, v in changes.items()}})

    @_retry_conflicts
    def record_failures(self, source_id: int, run_id: str, failures: Sequence[PageFailure]) -> None:
        """Count a failed fetch; a page never fetched before gets a ``failed`` row so its error shows."""
        if not failures:
            return
        with self._session() as session, session.begin():
            # one upsert a failure, so two workers failing on the same new page make one row, counted twice
            for failure in sorted(failures, key=lambda f: f.page_id):
                stmt = _insert(self._dialect, PageRow).values(
                    source_id=source_id,
                    page_id=failure.page_id,
                    url=failure.url,
                    rel_path=failure.rel_path,
                    status="failed",
                    http_status=failure.http_status,
                    first_seen=failure.at,
                    last_run_id=run_id,
                    failure_count=1,
                    last_error=failure.error,
                    not_found_runs=1 if failure.not_found else 0,
                    next_check_at=failure.next_check_at,
                )
                backoff = {"next_check_at": failure.next_check_at} if failure.next_check_at is not None else {}
                session.execute(stmt.on_conflict_do_update(
                    index_elements=["source_id", "page_id"],
                    set_={
                        "failure_count": func.coalesce(PageRow.failure_count, 0) + 1,
                        "last_error": failure.error,
                        "http_status": failure.http_status,
                        "last_run_id": run_id,
                        "not_found_runs": func.coalesce(PageRow.not_found_runs, 0) + 1 if failure.not_found else 0,
                        **backoff,
                    },
                ))

    def mark_removed(self, source_id: int, page_ids: Iterable[str], run_id: str, at: datetime) -> int:
        ids = sorted(set(page_ids))  # sorted: workers lock overlapping pages in the same order
        if not ids:
            return 0
        return self._mark_removed(source_id, ids, run_id, at)

    @_retry_conflicts
    def _mark_removed(self, source_id: int, ids: list[str], run_id: str, at: datetime) -> int:
        count = 0
        with self._session() as session, session.begin():
            for start in range(0, len(ids), 500):
                batch = ids[start : start + 500]
                result = session.execute(
                    update(PageRow)
                    .where(PageRow.source_id == source_id, PageRow.page_id.in_(batch))
                    .values(status="removed", last_run_id=run_id, last_changed=at, chunk_count=0)
                )
                count += getattr(result, "rowcount", 0) or 0
                session.execute(delete(ImageRow).where(ImageRow.source_id == source_id, ImageRow.page_id.in_(batch)))
                session.execute(delete(IndexWriteRow).where(IndexWriteRow.source_id == source_id,
                                                            IndexWriteRow.page_id.in_(batch)))
                # the aliases of a removed page serve content the index no longer holds: decided again
                session.execute(update(PageRow).where(PageRow.source_id == source_id, PageRow.status == "alias",
                                                      PageRow.alias_of.in_(batch))
                                .values(reindex_requested=True))
        return count

    # index writes in flight (DESIGN rule 8) ---------------------------------------------------------

    @_retry_conflicts
    def begin_index_writes(self, source_id: int, page_ids: Iterable[str], run_id: str) -> None:
        ids = sorted(set(page_ids))
        if not ids:
            return
        at = utcnow()
        with self._session() as session, session.begin():
            for pid in ids:
                stmt = _insert(self._dialect, IndexWriteRow).values(source_id=source_id, page_id=pid, run_id=run_id,
                                                                    started_at=at)
                session.execute(stmt.on_conflict_do_update(index_elements=["source_id", "page_id"],
                                                           set_={"run_id": run_id, "started_at": at}))

    def index_writes(self, source_id: int) -> dict[str, str]:
        with self._session() as session:
            rows = session.execute(select(IndexWriteRow.page_id, IndexWriteRow.run_id)
                                   .where(IndexWriteRow.source_id == source_id))
            return {pid: run_id for pid, run_id in rows}

    @_retry_conflicts
    def end_index_writes(self, source_id: int, page_ids: Iterable[str]) -> None:
        ids = sorted(set(page_ids))
        with self._session() as session, session.begin():
            for start in range(0, len(ids), 500):
                session.execute(delete(IndexWriteRow).where(IndexWriteRow.source_id == source_id,
                                                            IndexWriteRow.page_id.in_(ids[start : start + 500])))

    def linking_pages(self, source_id: int, page_ids: Iterable[str], limit: int = 10) -> dict[str, list[str]]:
        """For each page id of *page_ids*: the URLs of the source's active pages whose stored links lead to it
        (at most *limit*, sorted), from the links of each page's last full fetch. A page id nothing links to
        is left out."""
        wanted = set(page_ids)
        if not wanted:
            return {}
        from docscraper.urls import page_id

        found: dict[str, set[str]] = {}
        with self._session() as session:
            rows = session.execute(select(PageRow.url, PageRow.links).where(
                PageRow.source_id == source_id, PageRow.status == "active", PageRow.links.is_not(None)))
            for url, links in rows:
                for link in links or ():
                    try:
                        pid = page_id(link)
                    except ValueError:
                        continue
                    if pid in wanted:
                        found.setdefault(pid, set()).add(url)
        return {pid: sorted(urls)[:limit] for pid, urls in found.items()}

    def page_images(self, source: str, page_ids: Iterable[str]) -> dict[str, list[ImageRecord]]:
        """The images of these pages of the source called *source*, by page id, in document order; a
        page without images (or unknown) is left out."""
        ids = sorted(set(page_ids))
        found: dict[str, list[ImageRecord]] = {}
        if not ids:
            return found
        with self._session() as session:
            for start in range(0, len(ids), 500):
                rows = session.execute(
                    select(ImageRow.page_id, ImageRow.url, ImageRow.alt, ImageRow.caption, ImageRow.title)
                    .join(SourceRow, SourceRow.id == ImageRow.source_id)
                    .where(SourceRow.name == source, ImageRow.page_id.in_(ids[start : start + 500]))
                    .order_by(ImageRow.page_id, ImageRow.position)
                )
                for row in rows:
                    image = ImageRecord(row.url, row.alt or "", row.caption, row.title)
                    found.setdefault(row.page_id, []).append(image)
        return found

    def page_aliases(self, source: str, page_ids: Iterable[str]) -> dict[str, list[str]]:
        """The other URLs of these pages of the source called *source* (its aliases: URLs the site serves
        the same content under), by page id, sorted; a page without aliases is left out."""
        ids = sorted(set(page_ids))
        found: dict[str, list[str]] = {}
        with self._session() as session:
            for start in range(0, len(ids), 500):
                rows = session.execute(
                    select(PageRow.alias_of, PageRow.url)
                    .join(SourceRow, SourceRow.id == PageRow.source_id)
                    .where(SourceRow.name == source, PageRow.status == "alias",
                           PageRow.alias_of.in_(ids[start : start + 500]))
                    .order_by(PageRow.alias_of, PageRow.url)
                )
                for row in rows:
                    found.setdefault(row.alias_of, []).append(row.url)
        return found

    # runs ------------------------------------------------------------------------------------------

    def start_run(self, run: RunRecord, *, host: str | None = None, pid: int | None = None,
                  process_start: str | None = None) -> None:
        with self._session() as session, session.begin():
            session.add(
                CrawlRunRow(
                    run_id=run.run_id,
                    source_id=run.source_id,
                    started_at=run.started_at,
                    heartbeat_at=run.started_at,
                    args=run.args,
                    host=host,
                    pid=pid,
                    process_start=process_start,
                )
            )

    # locks -----------------------------------------------------------------------------------------

    @staticmethod
    def _lock(row: SourceLockRow) -> LockRecord:
        return LockRecord(row.source_id, row.holder, row.purpose, bool(row.shared), row.host, row.pid,
                          row.process_start, _aware(row.acquired_at) or utcnow(), _aware(row.heartbeat_at) or utcnow())

    def acquire_lock(self, source_id: int, holder: str, *, purpose: str, host: str | None, pid: int | None,
                     process_start: str | None, shared: bool = False,
                     is_dead: Callable[[LockRecord], bool]) -> LockRecord | None:
        for _ in range(10):  # another process may insert or take over between our read and our write
            now = utcnow()
            mine = {"holder": holder, "purpose": purpose, "shared": shared, "host": host, "pid": pid,
                    "process_start": process_start, "acquired_at": now, "heartbeat_at": now}
            try:
                with self._session() as session, session.begin():
                    row = session.get(SourceLockRow, source_id)
                    if row is None:
                        session.add(SourceLockRow(source_id=source_id, **mine))
                        return None
                    current = self._lock(row)
                    if current.holder == holder:
                        values: dict[str, Any] = {"heartbeat_at": now}
                        if shared:
                            values.update(host=host, pid=pid, process_start=process_start)
                        session.execute(update(SourceLockRow).where(SourceLockRow.source_id == source_id)
                                        .values(**values))
                        return None
                    if not is_dead(current):
                        return current
                    # take it over only if nobody else did since it was read
                    taken = session.execute(
                        update(SourceLockRow)
                        .where(SourceLockRow.source_id == source_id, SourceLockRow.holder == current.holder,
                               SourceLockRow.heartbeat_at == row.heartbeat_at)
                        .values(**mine)
                    )
                    if (getattr(taken, "rowcount", 0) or 0) == 1:
                        logger.warning("Took over the lock of source %d from %s: its process is gone",
                                       source_id, current.describe())
                        return None
            except IntegrityError:
                continue  # inserted by another process since we looked: look again
        raise StateError(f"cannot take the lock of source {source_id}: it changes hands too fast")

    def refresh_lock(self, source_id: int, holder: str, at: datetime, *, host: str | None = None,
                     pid: int | None = None, process_start: str | None = None) -> bool:
        values: dict[str, Any] = {"heartbeat_at": at}
        if host is not None:
            values.update(host=host, pid=pid, process_start=process_start)
        with self._session() as session, session.begin():
            result = session.execute(update(SourceLockRow).where(SourceLockRow.source_id == source_id,
                                                                 SourceLockRow.holder == holder).values(**values))
            return (getattr(result, "rowcount", 0) or 0) > 0

    def release_lock(self, source_id: int, holder: str) -> None:
        with self._session() as session, session.begin():
            session.execute(delete(SourceLockRow).where(SourceLockRow.source_id == source_id,
                                                        SourceLockRow.holder == holder))

    def get_lock(self, source_id: int) -> LockRecord | None:
        with self._session() as session:
            row = session.get(SourceLockRow, source_id)
            return self._lock(row) if row is not None else None

    def heartbeat(self, run_id: str, at: datetime, progress: dict[str, Any] | None = None) -> None:
        """Mark a running crawl alive at *at*, with its live *progress* when given."""
        values: dict[str, Any] = {"heartbeat_at": at}
        if progress is not None:
            values["progress"] = progress
        with self._session() as session, session.begin():
            session.execute(update(CrawlRunRow).where(CrawlRunRow.run_id == run_id).values(**values))

    def finish_run(self, run: RunRecord) -> None:
        with self._session() as session, session.begin():
            session.execute(
                update(CrawlRunRow)
                .where(CrawlRunRow.run_id == run.run_id)
                .values(
                    finished_at=run.finished_at,
                    heartbeat_at=run.finished_at,
                    close_reason=run.close_reason,
                    result=run.result,
                    summary=run.summary,
                    report_path=run.report_path,
                )
            )

    def last_runs(self, source_id: int, limit: int = 10) -> list[RunRecord]:
        with self._session() as session:
            rows = session.scalars(
                select(CrawlRunRow)
                .where(CrawlRunRow.source_id == source_id)
                .order_by(CrawlRunRow.started_at.desc())
                .limit(limit)
            )
            return [
                RunRecord(
                    r.run_id,
                    r.source_id,
                    _aware(r.started_at) or utcnow(),
                    _aware(r.finished_at),
                    r.close_reason,
                    r.result,
                    r.summary,
                    r.report_path,
                    dict(r.args or {}),
                )
                for r in rows
            ]

    # operating sources (docscraper.ops.sources) --------------------------------------------------------

    def list_sources(self, name: str | None = None) -> list[SourceSummary]:
        """Every source (or the one called *name*) by name, with its counts and its latest run."""
        with self._session() as session:
            query = select(SourceRow).order_by(SourceRow.name)
            if name is not None:
                query = query.where(SourceRow.name == name)
            sources = list(session.scalars(query))
            ids = [row.id for row in sources]
            if not ids:
                return []
            counts = {
                row.source_id: (int(row.pages), int(row.chunks))
                for row in session.execute(
                    select(PageRow.source_id, func.count().label("pages"),
                           func.coalesce(func.sum(PageRow.chunk_count), 0).label("chunks"))
                    .where(PageRow.source_id.in_(ids), PageRow.status == "active")
                    .group_by(PageRow.source_id)
                )
            }
            latest = (
                select(CrawlRunRow.source_id, func.max(CrawlRunRow.started_at).label("started_at"))
                .where(CrawlRunRow.source_id.in_(ids))
                .group_by(CrawlRunRow.source_id)
                .subquery()
            )
            last: dict[int, RunRecord] = {}
            for r in session.scalars(
                select(CrawlRunRow).join(latest, and_(CrawlRunRow.source_id == latest.c.source_id,
                                                      CrawlRunRow.started_at == latest.c.started_at))
            ):
                last[r.source_id] = RunRecord(r.run_id, r.source_id, _aware(r.started_at) or utcnow(),
                                              _aware(r.finished_at), r.close_reason, r.result, r.summary,
                                              r.report_path, dict(r.args or {}))
            return [
                SourceSummary(self._source(row), *counts.get(row.id, (0, 0)), last.get(row.id))
                for row in sources
            ]

    def update_source(self, source_id: int, *, name: str | None = None, scope: dict[str, Any] | None = None,
                      registered: bool | None = None) -> SourceRecord:
        """Rename a source, replace its scope or mark it registered; its pages and runs stay its own."""
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if name is not None:
            changes["name"] = name
        if scope is not None:
            changes["scope"] = scope
        if registered is not None:
            changes["registered"] = registered
        with self._session() as session, session.begin():
            session.execute(update(SourceRow).where(SourceRow.id == source_id).values(**changes))
            return self._source(session.scalars(select(SourceRow).where(SourceRow.id == source_id)).one())

    def delete_source(self, source_id: int) -> dict[str, int]:
        """Delete a source with its pages (and their images) and runs, and record it as removed (its tombstone,
        in the same transaction); returns how many of each went."""
        with self._session() as session, session.begin():
            name = session.scalars(select(SourceRow.name).where(SourceRow.id == source_id)).first()
            if name is not None:
                session.execute(_insert(self._dialect, RemovedSourceRow)
                                .values(id=source_id, name=name, removed_at=utcnow())
                                .on_conflict_do_nothing(index_elements=["id"]))
            images = session.execute(delete(ImageRow).where(ImageRow.source_id == source_id))
            session.execute(delete(IndexWriteRow).where(IndexWriteRow.source_id == source_id))
            pages = session.execute(delete(PageRow).where(PageRow.source_id == source_id))
            runs = session.execute(delete(CrawlRunRow).where(CrawlRunRow.source_id == source_id))
            session.execute(delete(SourceRow).where(SourceRow.id == source_id))
            return {"pages": getattr(pages, "rowcount", 0) or 0, "runs": getattr(runs, "rowcount", 0) or 0,
                    "images": getattr(images, "rowcount", 0) or 0}

    def removed_sources(self) -> dict[int, str]:
        with self._session() as session:
            return {int(sid): str(name) for sid, name in session.execute(
                select(RemovedSourceRow.id, RemovedSourceRow.name))}

    @_retry_conflicts
    def state_id(self) -> str:
        query = select(StateInfoRow.value).where(StateInfoRow.key == "state_id")
        with self._session() as session:
            found = session.scalars(query).first()
        if found is not None:
            return str(found)
        with self._session() as session, session.begin():
            # given by migration 0008; made here for a database whose row went missing
            session.execute(_insert(self._dialect, StateInfoRow).values(key="state_id", value=uuid.uuid4().hex)
                            .on_conflict_do_nothing(index_elements=["key"]))
            return str(session.scalars(query).one())

    def mark_reindex(self, source_id: int, page_ids: Iterable[str]) -> int:
        """Ask the next crawl to re-process these pages whatever their hash or validators."""
        ids = list(page_ids)
        count = 0
        with self._session() as session, session.begin():
            for start in range(0, len(ids), 500):
                result = session.execute(
                    update(PageRow)
                    .where(PageRow.source_id == source_id, PageRow.page_id.in_(ids[start : start + 500]))
                    .values(reindex_requested=True, next_check_at=None)  # due at once
                )
                count += getattr(result, "rowcount", 0) or 0
        return count

    def content_type_counts(self, source_id: int) -> dict[str | None, int]:
        with self._session() as session:
            return {content_type: int(count) for content_type, count in session.execute(
                select(PageRow.content_type, func.count())
                .where(PageRow.source_id == source_id, PageRow.status == "active")
                .group_by(PageRow.content_type))}

    def schedule_summary(self, source_id: int, now: datetime) -> ScheduleSummary:
        scheduled = (PageRow.source_id == source_id) & PageRow.status.in_(_SCHEDULED_STATUSES)
        due = scheduled & (PageRow.next_check_at.is_(None) | (PageRow.next_check_at <= now))
        with self._session() as session:
            total = session.scalar(select(func.count()).select_from(PageRow).where(scheduled)) or 0
            due_now = session.scalar(select(func.count()).select_from(PageRow).where(due)) or 0
            upcoming = session.scalar(select(func.min(PageRow.next_check_at))
                                      .where(scheduled, PageRow.next_check_at > now))
        return ScheduleSummary(total, due_now, _aware(upcoming))

    def set_lastmod_trust(self, source_id: int, untrusted_at: datetime | None, note: str | None) -> None:
        with self._session() as session, session.begin():
            session.execute(update(SourceRow).where(SourceRow.id == source_id)
                            .values(lastmod_untrusted_at=untrusted_at, lastmod_note=note))

    def run_states(self, source_id: int | None = None) -> list[RunState]:
        """Every run that has not finished, and each source's latest finished run (only *source_id*'s,
        when given), oldest first. Whether an unfinished run still runs is the caller's judgement."""
        with self._session() as session:
            unfinished = select(CrawlRunRow, SourceRow.name).join(SourceRow).where(CrawlRunRow.finished_at.is_(None))
            latest = (
                select(CrawlRunRow.source_id, func.max(CrawlRunRow.finished_at).label("finished_at"))
                .where(CrawlRunRow.finished_at.is_not(None))
                .group_by(CrawlRunRow.source_id)
                .subquery()
            )
            finished = (
                select(CrawlRunRow, SourceRow.name)
                .join(SourceRow)
                .join(latest, and_(CrawlRunRow.source_id == latest.c.source_id,
                                   CrawlRunRow.finished_at == latest.c.finished_at))
            )
            if source_id is not None:
                unfinished = unfinished.where(CrawlRunRow.source_id == source_id)
                finished = finished.where(CrawlRunRow.source_id == source_id)
            rows = {r.run_id: (r, name) for stmt in (unfinished, finished) for r, name in session.execute(stmt)}
            states = [
                RunState(
                    RunRecord(r.run_id, r.source_id, _aware(r.started_at) or utcnow(), _aware(r.finished_at),
                              r.close_reason, r.result, r.summary, r.report_path, dict(r.args or {})),
                    name,
                    _aware(r.heartbeat_at),
                    r.host,
                    r.pid,
                    dict(r.progress) if r.progress else None,
                    r.process_start,
                )
                for r, name in rows.values()
            ]
        return sorted(states, key=lambda s: (s.run.started_at, s.run.run_id))

    def close(self) -> None:
        self.engine.dispose()


def database_exists(url: str) -> bool:
    """False only for an SQLite file that is not there yet: a read need not create an empty database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or (parsed.database or ":memory:") == ":memory:":
        return True
    return Path(parsed.database or "").expanduser().exists()


def database_location(url: str) -> str:
    """Where *url* points, for a message: the SQLite file's path, else the URL without its password."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and (parsed.database or ":memory:") != ":memory:":
        return str(Path(parsed.database or "").expanduser())
    return parsed.render_as_string(hide_password=True)


def schema_revision(url: str) -> str | None:
    """The database's schema revision, None while it has none: not created yet, or a first crawl is
    creating it (a reader then waits for it rather than migrating the same database at the same time)."""
    if not database_exists(url):
        return None
    parsed = make_url(url)
    path = parsed.database or ":memory:"
    if parsed.get_backend_name() == "sqlite" and path != ":memory:" and Path(path).expanduser().stat().st_size == 0:
        return None  # an empty file has no schema; a connection would write to it (journal_mode=WAL)
    try:
        engine = _make_engine(url)
        try:
            with engine.connect() as connection:
                return _current_revision(connection)
        finally:
            engine.dispose()
    except (SQLAlchemyError, OSError) as exc:
        safe = make_url(url).render_as_string(hide_password=True)
        raise StateError(f"cannot open state database {safe}: {exc.__class__.__name__}: {exc}") from exc
