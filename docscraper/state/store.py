"""The state store: sources, pages and crawl runs, through SQLAlchemy 2.

:class:`StateStore` is the small interface the rest of docscraper uses; :class:`SqlStateStore` is its
one implementation and the only place that writes SQL. Any SQLAlchemy URL works: SQLite (the default,
``DATA_DIR/state.db``), ``sqlite://`` in memory for tests, PostgreSQL for many workers. The schema is
brought to the newest Alembic revision when the store opens, so a newer release opens an older database.

All methods are blocking; callers in the reactor thread run them through :class:`StateExecutor`, one
writer thread, so SQLite never sees two writers from one process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from docscraper.state.models import CrawlRunRow, PageRow, SourceRow

__all__ = [
    "PageFailure",
    "PageRecord",
    "PageSeen",
    "PageWrite",
    "RunRecord",
    "SourceRecord",
    "SqlStateStore",
    "StateError",
    "StateStore",
    "migrate",
    "utcnow",
]

logger = logging.getLogger(__name__)


class StateError(RuntimeError):
    """The state database cannot be opened or written; the message says which and why."""


def utcnow() -> datetime:
    return datetime.now(UTC)


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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class PageSeen:
    """An unchanged page: only its validators, links and last-seen marks move."""

    page_id: str
    etag: str | None
    last_modified: str | None
    http_status: int | None
    seen_at: datetime
    links: tuple[str, ...] | None = None  # None: not fetched (304), keep the stored links


@dataclass(frozen=True)
class PageFailure:
    page_id: str
    url: str
    rel_path: str | None
    http_status: int | None
    error: str
    at: datetime
    not_found: bool = False


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


class StateStore(Protocol):
    """What docscraper needs from its state database."""

    def ensure_source(self, name: str, url: str, scope: dict[str, Any], *, registered: bool = False) -> SourceRecord: ...
    def get_source(self, name: str) -> SourceRecord | None: ...
    def find_source_by_url(self, url: str) -> SourceRecord | None: ...
    def load_pages(self, source_id: int) -> dict[str, PageRecord]: ...
    def commit_page(self, source_id: int, page: PageWrite) -> None: ...
    def mark_seen(self, source_id: int, run_id: str, pages: Sequence[PageSeen]) -> None: ...
    def record_failures(self, source_id: int, run_id: str, failures: Sequence[PageFailure]) -> None: ...
    def mark_removed(self, source_id: int, page_ids: Iterable[str], run_id: str, at: datetime) -> int: ...
    def start_run(self, run: RunRecord, *, host: str | None = None, pid: int | None = None) -> None: ...
    def heartbeat(self, run_id: str, at: datetime) -> None: ...
    def finish_run(self, run: RunRecord) -> None: ...
    def last_runs(self, source_id: int, limit: int = 10) -> list[RunRecord]: ...
    def close(self) -> None: ...


_MIGRATIONS = "docscraper.state:migrations"


def _alembic_config(connection: Any) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", _MIGRATIONS)
    cfg.attributes["connection"] = connection
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to *revision* (the newest by default); a no-op when it is there already."""
    # Alembic reports every step at INFO; docscraper says once what it migrates.
    logging.getLogger("alembic").setLevel(max(logging.getLogger("alembic").getEffectiveLevel(), logging.WARNING))
    with engine.begin() as connection:
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
        return SourceRecord(row.id, row.name, row.url, dict(row.scope or {}), bool(row.registered))

    def ensure_source(self, name: str, url: str, scope: dict[str, Any], *, registered: bool = False) -> SourceRecord:
        """The source called *name*, created with *scope* when it does not exist yet."""
        now = utcnow()
        with self._session() as session, session.begin():
            stmt = (
                _insert(self._dialect, SourceRow)
                .values(name=name, url=url, scope=scope, registered=registered, created_at=now, updated_at=now)
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
                ).where(PageRow.source_id == source_id)
            )
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
                    links=tuple(row.links or ()),
                )
                for row in rows
            }

    def commit_page(self, source_id: int, page: PageWrite) -> None:
        values = {
            "url": page.url,
            "canonical_url": page.canonical_url,
            "rel_path": page.rel_path,
            "status": "active",
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
        with self._session() as session, session.begin():
            stmt = _insert(self._dialect, PageRow).values(
                source_id=source_id, page_id=page.page_id, first_seen=page.fetched_at, **values
            )
            session.execute(stmt.on_conflict_do_update(index_elements=["source_id", "page_id"], set_=values))

    def mark_seen(self, source_id: int, run_id: str, pages: Sequence[PageSeen]) -> None:
        if not pages:
            return
        with self._session() as session, session.begin():
            for seen in pages:
                changes: dict[str, Any] = {
                    "last_seen": seen.seen_at,
                    "last_run_id": run_id,
                    "failure_count": 0,
                    "last_error": None,
                    "not_found_runs": 0,
                    "status": "active",
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
                session.execute(
                    update(PageRow)
                    .where(PageRow.source_id == source_id, PageRow.page_id == seen.page_id)
                    .values(**changes)
                )

    def record_failures(self, source_id: int, run_id: str, failures: Sequence[PageFailure]) -> None:
        """Count a failed fetch; a page never fetched before gets a ``failed`` row so its error shows."""
        if not failures:
            return
        with self._session() as session, session.begin():
            for failure in failures:
                row = session.get(PageRow, (source_id, failure.page_id))
                if row is None:
                    session.add(
                        PageRow(
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
                        )
                    )
                    continue
                row.failure_count = (row.failure_count or 0) + 1
                row.last_error = failure.error
                row.http_status = failure.http_status
                row.last_run_id = run_id
                row.not_found_runs = (row.not_found_runs or 0) + 1 if failure.not_found else 0

    def mark_removed(self, source_id: int, page_ids: Iterable[str], run_id: str, at: datetime) -> int:
        ids = list(page_ids)
        if not ids:
            return 0
        count = 0
        with self._session() as session, session.begin():
            for start in range(0, len(ids), 500):
                result = session.execute(
                    update(PageRow)
                    .where(PageRow.source_id == source_id, PageRow.page_id.in_(ids[start : start + 500]))
                    .values(status="removed", last_run_id=run_id, last_changed=at, chunk_count=0)
                )
                count += getattr(result, "rowcount", 0) or 0
        return count

    # runs ------------------------------------------------------------------------------------------

    def start_run(self, run: RunRecord, *, host: str | None = None, pid: int | None = None) -> None:
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
                )
            )

    def heartbeat(self, run_id: str, at: datetime) -> None:
        with self._session() as session, session.begin():
            session.execute(update(CrawlRunRow).where(CrawlRunRow.run_id == run_id).values(heartbeat_at=at))

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

    def close(self) -> None:
        self.engine.dispose()
