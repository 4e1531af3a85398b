"""SQLAlchemy table definitions of the state database.

The schema is owned by the Alembic migrations in ``migrations/versions``; these tables are what the
newest migration produces, and a test checks that they agree.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Base", "CrawlRunRow", "ImageRow", "IndexWriteRow", "PageRow", "RemovedSourceRow", "SourceLockRow", "SourceRow",
           "StateInfoRow"]


class Base(DeclarativeBase):
    pass


class SourceRow(Base):
    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    scope: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    registered: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # set when the source's sitemap <lastmod> values were found not to say when pages change; ignored
    # until DOCSCRAPER_REVISIT_MAX_INTERVAL later (docscraper.crawl.schedule)
    lastmod_untrusted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lastmod_note: Mapped[str | None] = mapped_column(Text)


class StateInfoRow(Base):
    """Facts about the database itself, by key: ``state_id``, the random id it was given when created (a
    vector index records the id of the state it belongs to; DESIGN rule 10)."""

    __tablename__ = "state_info"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)


class RemovedSourceRow(Base):
    """A source that was removed (written with its removal, in the same transaction): its chunks are still
    this state's own, so a repair may delete what a half-finished removal left in the index. Its id is
    never given to another source."""

    __tablename__ = "removed_sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    removed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class PageRow(Base):
    __tablename__ = "pages"

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    canonical_url: Mapped[str | None] = mapped_column(Text)
    rel_path: Mapped[str | None] = mapped_column(Text)
    # active: indexed and present; alias: present, its content another page's (alias_of), no chunks;
    # failed: never fetched successfully; removed: gone from the site
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(Text)
    http_status: Mapped[int | None] = mapped_column(Integer)
    title: Mapped[str | None] = mapped_column(Text)
    finder: Mapped[str | None] = mapped_column(String(16))
    depth: Mapped[int | None] = mapped_column(Integer)
    content_type: Mapped[str | None] = mapped_column(Text)
    first_seen: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_seen: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_changed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_run_id: Mapped[str | None] = mapped_column(String(64))
    failure_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    not_found_runs: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    chunk_count: Mapped[int | None] = mapped_column(Integer)
    # outgoing links (fragment-free URLs) seen on the page's last full fetch; followed again on a 304
    links: Mapped[list[str] | None] = mapped_column(JSON)
    # redirect chain of the last fetch, from the URL first requested to the one that answered; null: none
    redirects: Mapped[list[str] | None] = mapped_column(JSON)
    # set by `scrapy reindex`: the next crawl re-processes the page whatever its hash or validators
    reindex_requested: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    # status alias: the page of the source whose content (same Markdown hash) this URL serves
    alias_of: Mapped[str | None] = mapped_column(String(32))
    # the revisit schedule (docscraper.crawl.schedule): null next check = due now
    next_check_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    check_interval: Mapped[int | None] = mapped_column(Integer)  # seconds
    unchanged_checks: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    # the sitemap's <lastmod> for the page when it was last checked, as written there
    sitemap_lastmod: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (Index("ix_pages_source_status", "source_id", "status"),
                      Index("ix_pages_source_next_check", "source_id", "next_check_at"))


class ImageRow(Base):
    """An image of a page's main content; written with its page's state row, replaced with it, deleted
    when the page is removed. No foreign key to ``pages``: SQLite's batch migrations rebuild a table by
    dropping it, and a cascade from ``pages`` would empty this one; the store deletes images itself."""

    __tablename__ = "images"

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)  # 0-based, in document order
    url: Mapped[str] = mapped_column(Text, nullable=False)  # absolute, resolved against the page URL
    alt: Mapped[str] = mapped_column(Text, nullable=False, default="")
    caption: Mapped[str | None] = mapped_column(Text)  # the enclosing <figure>'s <figcaption>
    title: Mapped[str | None] = mapped_column(Text)


class IndexWriteRow(Base):
    """A page whose chunks a run is writing to the vector index: inserted before the first index write,
    deleted in the transaction that commits the page's row (or records its removal). One left behind is a
    write the state never learnt of, reconciled by the next run (:mod:`docscraper.storage.consistency`).
    No foreign key to ``pages``: a new page has no row yet."""

    __tablename__ = "index_writes"

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64), nullable=False)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class CrawlRunRow(Base):
    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), nullable=False)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    close_reason: Mapped[str | None] = mapped_column(String(64))
    result: Mapped[str | None] = mapped_column(String(16))
    args: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    summary: Mapped[dict | None] = mapped_column(JSON)
    # a running crawl's live counters, rewritten every few seconds with heartbeat_at
    progress: Mapped[dict | None] = mapped_column(JSON)
    report_path: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    # the identity of the process (storage.runs.process_start): a reused pid is not the run's process
    process_start: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (Index("ix_runs_source_started", "source_id", "started_at"),)


class SourceLockRow(Base):
    """Who owns a source now: a crawl (its run, or a shared run's id), a removal or a repair. Taken in a
    transaction, released when the work ends; one whose process is gone (or, from another machine, whose
    heartbeat stopped) is taken over (:mod:`docscraper.storage.runs`)."""

    __tablename__ = "source_locks"

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True,
                                           autoincrement=False)
    holder: Mapped[str] = mapped_column(String(64), nullable=False)
    purpose: Mapped[str] = mapped_column(String(16), nullable=False)  # crawl, remove, repair
    # held by the workers of a shared run together (each refreshes it)
    shared: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    process_start: Mapped[str | None] = mapped_column(String(64))
    acquired_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
