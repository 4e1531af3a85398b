"""The state store on PostgreSQL: the same migrations and behaviour as on SQLite, writes from several
processes at once, and whole crawls with ``DOCSCRAPER_STATE_URL=postgresql+psycopg://...``.

A throwaway cluster is started for the session (tests/pgserver.py); each test gets a fresh database.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import traceback
from collections.abc import Iterator
from dataclasses import replace

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

import tests.test_state as sqlite_cases
from docscraper.storage.state import ImageRecord, PageFailure, PageSeen, RunRecord, SqlStateStore, migrate, utcnow
from docscraper.storage.state.models import Base
from docscraper.storage.state.store import _alembic_config
from tests.conftest import Crawl
from tests.mockserver import DocsServer
from tests.pgserver import PgServer, pg_server
from tests.test_crawl import ALLOWED_PAGES, assert_valid
from tests.test_state import write
from tests.test_status import HOST, add_run

__all__ = ["pg_server"]  # the session fixture, used by name

pytestmark = pytest.mark.services


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    return pg_server.create_database()


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlStateStore]:
    s = SqlStateStore(pg_url)
    yield s
    s.close()


# The SQLite store's own cases, run again here on PostgreSQL (the local `store` fixture wins).
test_source_is_created_once = sqlite_cases.test_source_is_created_once
test_commit_seen_fail_remove_cycle = sqlite_cases.test_commit_seen_fail_remove_cycle
test_redirect_chain_is_stored_kept_and_cleared = sqlite_cases.test_redirect_chain_is_stored_kept_and_cleared
test_runs = sqlite_cases.test_runs


def test_store_speaks_postgresql(store: SqlStateStore) -> None:
    assert store.engine.dialect.name == "postgresql"
    with store.engine.connect() as conn:
        types: dict[str, str] = dict(conn.execute(text(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'pages'")).all())
    assert types["reindex_requested"] == "boolean"
    assert types["last_seen"] == "timestamp with time zone"
    assert types["links"] == "json"


def test_every_revision_upgrades_to_head_keeping_data(pg_server: PgServer) -> None:
    """Each past revision, built on PostgreSQL, migrates to head with its rows intact."""
    engine = create_engine(pg_server.url())
    with engine.connect() as conn:
        revisions = [r.revision for r in ScriptDirectory.from_config(_alembic_config(conn)).walk_revisions()]
    engine.dispose()
    assert revisions, "no migrations found"
    for revision in reversed(revisions):
        url = pg_server.create_database()
        old = create_engine(url)
        migrate(old, revision)
        with old.begin() as conn:
            conn.execute(text(
                "INSERT INTO sources (name, url, scope, registered, created_at, updated_at) "
                "VALUES ('old', 'https://h/', '{}', false, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00')"
            ))
            conn.execute(text(
                "INSERT INTO pages (source_id, page_id, url, status, failure_count, not_found_runs) "
                "SELECT id, 'p', 'https://h/p', 'active', 0, 0 FROM sources"
            ))
        old.dispose()
        store = SqlStateStore(url)
        source = store.get_source("old")
        assert source is not None and list(store.load_pages(source.id)) == ["p"], revision
        assert store.load_pages(source.id)["p"].reindex_requested is False
        store.close()


def test_models_match_migrations(store: SqlStateStore) -> None:
    inspector = inspect(store.engine)
    for table in Base.metadata.sorted_tables:
        migrated = {c["name"]: c for c in inspector.get_columns(table.name)}
        assert set(migrated) == {c.name for c in table.columns}, table.name
        for column in table.columns:
            assert migrated[column.name]["nullable"] == column.nullable, (table.name, column.name)
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_images_progress_listing_and_delete(store: SqlStateStore) -> None:
    src = store.ensure_source("docs", "https://h/", {"prefix": "https://h/"})
    images = (ImageRecord("https://h/a.png", "A"), ImageRecord("https://h/b.png", "", "Fig. 1", "b"))
    store.commit_page(src.id, replace(write("a", "h1"), images=images, chunk_count=3))
    store.commit_page(src.id, replace(write("a", "h2"), images=images[1:], chunk_count=2))
    store.commit_page(src.id, replace(write("b", "h3"), chunk_count=4))
    assert store.page_images("docs", ["a", "b"]) == {"a": [images[1]]}
    store.mark_reindex(src.id, ["a"])
    assert store.load_pages(src.id)["a"].reindex_requested is True
    store.commit_page(src.id, replace(write("a", "h2"), forced=True))
    assert store.load_pages(src.id)["a"].reindex_requested is False
    add_run(store, "docs", "r-run", age=60, heartbeat_age=1, pid=os.getpid(), progress={"pages": {"done": 2}})
    add_run(store, "docs", "r-old", age=600, finished=True)
    states = store.run_states(src.id)
    assert [s.run.run_id for s in states] == ["r-old", "r-run"]
    assert (states[1].host, states[1].progress) == (HOST, {"pages": {"done": 2}})
    assert states[1].heartbeat_at is not None and states[1].heartbeat_at.tzinfo is not None
    [summary] = store.list_sources("docs")
    assert (summary.pages, summary.chunks) == (2, 4)
    assert summary.last_run is not None and summary.last_run.run_id == "r-run"
    renamed = store.update_source(src.id, name="docs2", scope={"prefix": "https://h/x/"}, registered=True)
    assert (renamed.name, renamed.registered, renamed.scope) == ("docs2", True, {"prefix": "https://h/x/"})
    assert store.mark_removed(src.id, iter(["b", "a", "b"]), "r9", utcnow()) == 2
    assert store.page_images("docs2", ["a"]) == {}
    assert store.delete_source(src.id) == {"pages": 2, "runs": 2, "images": 0}
    assert store.list_sources() == []


def test_string_lengths_are_enforced_like_the_models_say(store: SqlStateStore) -> None:
    """PostgreSQL, unlike SQLite, refuses a value longer than its column; the longest valid source name
    (64 characters, docscraper.config) fits."""
    name = "n" * 64
    assert store.ensure_source(name, "https://h/", {}).name == name


# -- several workers at once ----------------------------------------------------------------------------

WORKERS = 4
PAGES = [f"p{i:03d}" for i in range(40)]
FAILING = [f"f{i:02d}" for i in range(10)]


def _worker(url: str, number: int, barrier: multiprocessing.synchronize.Barrier, errors: multiprocessing.Queue) -> None:
    try:
        barrier.wait(timeout=60)
        store = SqlStateStore(url)  # every worker races the migrations of the empty database
        src = store.ensure_source("race", "https://h/", {"prefix": "https://h/"})
        run_id = f"run-{number}"
        store.start_run(RunRecord(run_id, src.id, utcnow(), None, None, None), host="h", pid=os.getpid())
        rng = random.Random(number)
        pages = PAGES[:]
        rng.shuffle(pages)
        for page_id in pages:
            image = ImageRecord(f"https://h/{page_id}.png", f"worker {number}")
            store.commit_page(src.id, replace(write(page_id, f"hash-{number}", run_id), images=(image, image)))
        rng.shuffle(pages)
        store.mark_seen(src.id, run_id, [PageSeen(p, f'"{number}"', None, 200, utcnow()) for p in pages])
        failures = [PageFailure(p, f"https://h/{p}", p, 404, "HTTP 404", utcnow(), True) for p in FAILING]
        rng.shuffle(failures)
        store.record_failures(src.id, run_id, failures)
        store.mark_removed(src.id, rng.sample(PAGES[:10], 6), run_id, utcnow())
        store.heartbeat(run_id, utcnow(), {"pages": {"done": len(pages)}})
        store.finish_run(RunRecord(run_id, src.id, utcnow(), utcnow(), "finished", "success"))
        store.close()
    except BaseException:
        errors.put(f"worker {number}: {traceback.format_exc()}")


def test_workers_racing_on_a_fresh_database(pg_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    errors = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(pg_url, n, barrier, errors)) for n in range(WORKERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=180)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert not problems, "\n".join(problems)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS
    store = SqlStateStore(pg_url)
    try:
        [source] = store.list_sources()
        assert source.source.name == "race"
        pages = store.load_pages(source.source.id)
        assert sorted(pages) == sorted(PAGES + FAILING)
        # every worker's failure was counted: four upserts on one row, none lost
        assert {(pages[p].status, pages[p].failure_count, pages[p].not_found_runs) for p in FAILING} == {
            ("failed", WORKERS, WORKERS)}
        images = store.page_images("race", PAGES)
        removed = {p for p in PAGES if pages[p].status == "removed"}
        assert removed and all(p not in images for p in removed)
        # a page's images are replaced whole; a page marked removed by one worker and seen again by
        # another (active, its images gone) is the workers' disagreement, not a torn write
        assert all(len(images.get(p, [])) in (0, 2) for p in PAGES)
        assert all(len(images[p]) == 2 for p in PAGES[10:])
        assert {r.run_id for r in store.last_runs(source.source.id)} == {f"run-{n}" for n in range(WORKERS)}
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM sources")).scalar() == 1
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
            assert conn.execute(text("SELECT count(*) FROM runs WHERE result = 'success'")).scalar() == WORKERS
    finally:
        store.close()


# -- whole crawls -----------------------------------------------------------------------------------------


@pytest.mark.crawl
def test_crawl_with_postgresql_state(shared_site: DocsServer, crawl: Crawl, pg_url: str) -> None:
    settings = {"DOCSCRAPER_STATE_URL": pg_url}
    first = crawl(f"{shared_site.base_url}/docs/", settings=settings)
    stats = assert_valid(first)["stats"]
    assert stats["success.new"] == ALLOWED_PAGES
    assert stats["success.changed"] == stats["success.unchanged"] == stats["success.removed"] == 0
    assert first.keys("failed") == {"flaky.html"} and first.keys("skipped", "brokenLink") == {"missing-page.html"}
    assert not (first.data_dir / "state.db").exists()  # the state went to PostgreSQL only
    second = crawl(f"{shared_site.base_url}/docs/", settings=settings)
    stats = assert_valid(second)["stats"]
    assert stats["success.unchanged"] == ALLOWED_PAGES
    assert stats["success.new"] == stats["success.changed"] == stats["success.removed"] == 0
    store = SqlStateStore(pg_url)
    try:
        [source] = store.list_sources()
        assert source.pages == ALLOWED_PAGES
        assert source.last_run is not None and source.last_run.result == "partial"
        pages = store.load_pages(source.source.id)
        assert pages[next(p for p, r in pages.items() if r.rel_path == "flaky.html")].failure_count == 2
    finally:
        store.close()
