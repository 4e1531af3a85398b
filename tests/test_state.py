from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from docscraper.storage.state import (
    PageFailure,
    PageSeen,
    PageWrite,
    RunRecord,
    SqlStateStore,
    StateError,
    migrate,
    utcnow,
)
from docscraper.storage.state.models import Base
from docscraper.storage.state.store import SCHEMA_HEAD, _alembic_config, schema_revision


def write(pid: str, content_hash: str, run_id: str = "r1", etag: str | None = None) -> PageWrite:
    return PageWrite(pid, f"https://h/{pid}", None, pid, content_hash, etag, None, 200, pid.title(), "link", 1,
                     "text/html", utcnow(), run_id)


@pytest.fixture
def store() -> SqlStateStore:
    s = SqlStateStore("sqlite://")
    yield s
    s.close()


def test_source_is_created_once(store: SqlStateStore) -> None:
    a = store.ensure_source("docs", "https://h/", {"prefix": "https://h/"})
    b = store.ensure_source("docs", "https://other/", {"prefix": "https://other/"})
    assert a == b and a.url == "https://h/"
    assert store.get_source("docs") == a
    assert store.find_source_by_url("https://h/") == a
    assert store.get_source("missing") is None


def test_commit_seen_fail_remove_cycle(store: SqlStateStore) -> None:
    src = store.ensure_source("docs", "https://h/", {})
    store.commit_page(src.id, write("a", "h1", etag='"e1"'))
    store.commit_page(src.id, write("a", "h2", run_id="r2"))
    pages = store.load_pages(src.id)
    assert pages["a"].content_hash == "h2" and pages["a"].status == "active"
    store.mark_seen(src.id, "r3", [PageSeen("a", '"e3"', "Mon, 01 Jan 2026 00:00:00 GMT", 200, utcnow())])
    assert store.load_pages(src.id)["a"].etag == '"e3"'
    # a 304 keeps the stored validators
    store.mark_seen(src.id, "r4", [PageSeen("a", None, None, 304, utcnow())])
    assert store.load_pages(src.id)["a"].etag == '"e3"'
    store.record_failures(src.id, "r5", [PageFailure("a", "https://h/a", "a", 404, "HTTP 404", utcnow(), True)])
    store.record_failures(src.id, "r6", [PageFailure("a", "https://h/a", "a", 404, "HTTP 404", utcnow(), True)])
    page = store.load_pages(src.id)["a"]
    assert (page.failure_count, page.not_found_runs, page.status, page.content_hash) == (2, 2, "active", "h2")
    store.record_failures(src.id, "r7", [PageFailure("b", "https://h/b", "b", 500, "HTTP 500", utcnow())])
    assert store.load_pages(src.id)["b"].status == "failed"
    assert store.mark_removed(src.id, ["a", "zzz"], "r8", utcnow()) == 1
    assert store.load_pages(src.id)["a"].status == "removed"


def test_redirect_chain_is_stored_kept_and_cleared(store: SqlStateStore) -> None:
    src = store.ensure_source("docs", "https://h/", {})
    chain = ("https://h/old", "https://h/older", "https://h/a")
    store.commit_page(src.id, replace(write("a", "h1"), redirects=chain))
    store.commit_page(src.id, write("b", "h2"))
    pages = store.load_pages(src.id)
    assert pages["a"].redirects == chain and pages["b"].redirects == ()
    with store.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT page_id, redirects FROM pages")).all())
    assert stored["b"] is None  # SQL NULL, not the JSON text 'null'
    # a 304 (None) keeps the chain; a fetch that was not redirected (()) clears it
    store.mark_seen(src.id, "r2", [PageSeen("a", None, None, 304, utcnow())])
    assert store.load_pages(src.id)["a"].redirects == chain
    store.mark_seen(src.id, "r3", [PageSeen("a", None, None, 200, utcnow(), (), ())])
    assert store.load_pages(src.id)["a"].redirects == ()
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT redirects FROM pages WHERE page_id = 'a'")).scalar() is None


def test_runs(store: SqlStateStore) -> None:
    src = store.ensure_source("docs", "https://h/", {})
    started = utcnow()
    store.start_run(RunRecord("run-1", src.id, started, None, None, None, args={"full": False}), host="x", pid=1)
    store.start_run(RunRecord("run-2", src.id, started + timedelta(seconds=5), None, None, None))
    store.finish_run(RunRecord("run-1", src.id, started, utcnow(), "finished", "success", {"success": 3}, "/r.json"))
    runs = store.last_runs(src.id)
    assert [r.run_id for r in runs] == ["run-2", "run-1"]
    assert runs[1].result == "success" and runs[1].summary == {"success": 3} and runs[1].args == {"full": False}
    assert runs[0].finished_at is None


def test_every_revision_upgrades_to_head_keeping_data(tmp_path: Path) -> None:
    """A newer release opens an older database: each past revision migrates to head, rows intact."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        script = ScriptDirectory.from_config(_alembic_config(conn))
        revisions = [r.revision for r in script.walk_revisions()]
    assert revisions, "no migrations found"
    for revision in reversed(revisions):
        path = tmp_path / f"db-{revision}.db"
        old = create_engine(f"sqlite:///{path}")
        migrate(old, revision)
        with old.begin() as conn:
            conn.execute(text(
                "INSERT INTO sources (name, url, scope, registered, created_at, updated_at) "
                "VALUES ('old', 'https://h/', '{}', 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            ))
        old.dispose()
        store = SqlStateStore(f"sqlite:///{path}")
        assert store.get_source("old") is not None
        store.close()


def test_the_schema_head_constant_is_the_migrations_head(tmp_path: Path) -> None:
    """SCHEMA_HEAD lets a database that is up to date open without Alembic: it must be the real head, and a
    database at it is left alone while one below it is migrated."""
    engine = create_engine(f"sqlite:///{tmp_path / 'h.db'}")
    with engine.begin() as conn:
        head = ScriptDirectory.from_config(_alembic_config(conn)).get_current_head()
    assert head == SCHEMA_HEAD
    migrate(engine, "0004")
    assert schema_revision(f"sqlite:///{tmp_path / 'h.db'}") == "0004"
    migrate(engine)
    assert schema_revision(f"sqlite:///{tmp_path / 'h.db'}") == SCHEMA_HEAD
    migrate(engine)  # at the head: nothing to do
    assert schema_revision(f"sqlite:///{tmp_path / 'h.db'}") == SCHEMA_HEAD
    assert schema_revision(f"sqlite:///{tmp_path / 'absent.db'}") is None


def test_models_match_migrations(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    migrate(engine)
    inspector = inspect(engine)
    for table in Base.metadata.sorted_tables:
        migrated = {c["name"] for c in inspector.get_columns(table.name)}
        assert migrated == {c.name for c in table.columns}, table.name


def test_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StateError, match="cannot open state database"):
        SqlStateStore(f"sqlite:///{blocker}/sub/state.db")


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StateError, match="cannot open state database"):
        SqlStateStore(f"sqlite:///{path}")


def test_a_removed_source_leaves_a_tombstone_and_its_id_is_never_given_again(tmp_path: Path) -> None:
    """DESIGN rule 10: chunks a removal left in the index are known by their source id, so that id stays the
    removed source's (SQLite would give the newest row's id again); the database keeps its own random id."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = SqlStateStore(url)
    first = store.ensure_source("a", "https://a/", {})
    newest = store.ensure_source("b", "https://b/", {})
    state_id = store.state_id()
    assert len(state_id) == 32 and store.state_id() == state_id and store.removed_sources() == {}
    assert store.delete_source(newest.id)["pages"] == 0
    assert store.removed_sources() == {newest.id: "b"}
    again = store.ensure_source("b", "https://b/", {})
    assert again.id not in (first.id, newest.id)
    store.close()
    reopened = SqlStateStore(url)
    assert reopened.state_id() == state_id and reopened.removed_sources() == {newest.id: "b"}
    reopened.close()
    other = SqlStateStore(f"sqlite:///{tmp_path / 'other.db'}")
    assert other.state_id() != state_id
    other.close()
