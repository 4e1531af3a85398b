"""``scrapy verify`` and the reconciliation of died runs (DESIGN rule 8), on the fixture site crawled with the
index on (the small deterministic embedder of tests/test_pipelines.py: these tests are about which chunks
exist, not about their vectors), real SQLite and real Chroma.

Crash tests kill the crawl process (SIGKILL, from tests/crashing.py) at each step of DESIGN rule 1 while it
writes one page, then change the site, crawl to a clean finish and compare the state with the index. Planted
faults damage the index and the state by hand; ``verify`` must find each one and ``--repair`` leave it clean.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.consistency import Verification, check
from docscraper.storage.state import SqlStateStore
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, forget_persistent_clients
from docscraper.urls import page_id
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

SMALL = {"DOCSCRAPER_EMBEDDER_CLASS": "tests.test_pipelines.WordEmbedder", "DOCSCRAPER_PARSE_WORKERS": "0"}


def verify_here(data_dir: Path) -> Verification:
    config = DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}")
    store = SqlStateStore(config.state_url)
    index = ChromaIndex(path=config.chroma_path)
    try:
        return check(store, index, keyword_cache=config.data_dir / "lexical" / "docs")
    finally:
        index.close()
        store.close()
        forget_persistent_clients()


def chunks_of(data_dir: Path, pid: str) -> list[str]:
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        return sorted(index.collection.get(where={"page_id": pid}, include=[])["ids"])
    finally:
        index.close()
        forget_persistent_clients()


def stored(data_dir: Path, ids: list[str]) -> list[str]:
    """Which of *ids* the index holds."""
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        return sorted(index.collection.get(ids=ids, include=[])["ids"])
    finally:
        index.close()
        forget_persistent_clients()


def audit_lines(data_dir: Path) -> list[dict[str, Any]]:
    """The repairs' audit file, each line without its time, sourceId and url, sorted by kind and page."""
    path = data_dir / "logs" / "repairs.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(line.pop("time").endswith("Z") and line.pop("sourceId") and "url" in line for line in lines)
    for line in lines:
        line.pop("url")
    return sorted(lines, key=lambda line: (line["kind"], line["pageId"] or ""))


def edit(site: DocsServer, path: str, words: str) -> None:
    page = site.root / "docs" / path
    html = page.read_text(encoding="utf-8")
    page.write_text(html.replace("</h1>", f"</h1>\n<p>{words}</p>", 1), encoding="utf-8")


def add_page(site: DocsServer) -> str:
    """A new page linked from the home page; returns its URL."""
    (site.root / "docs" / "new-page.html").write_text(
        "<html><head><title>New page</title></head><body><main><h1>New page</h1>"
        + "".join(f"<p>Paragraph {i} about the new relay option number {i}.</p>" for i in range(12))
        + "</main></body></html>", encoding="utf-8")
    home = site.root / "docs" / "index.html"
    home.write_text(home.read_text(encoding="utf-8").replace(
        '<a href="faq.html">FAQ</a>', '<a href="faq.html">FAQ</a> (and <a href="new-page.html">new</a>)', 1),
        encoding="utf-8")
    return f"{site.base_url}/docs/new-page.html"


def remove_page(site: DocsServer) -> None:
    (site.root / "docs" / "new-page.html").unlink()
    home = site.root / "docs" / "index.html"
    home.write_text(home.read_text(encoding="utf-8").replace(' (and <a href="new-page.html">new</a>)', "", 1),
                    encoding="utf-8")


def indexed(crawl: Crawl, site: DocsServer, **kwargs: Any) -> CrawlResult:
    return crawl(f"{site.base_url}/docs/", index=True, settings={**SMALL, **kwargs.pop("settings", {})}, **kwargs)


# --- crashes at each step of DESIGN rule 1 --------------------------------------------------------------


@pytest.mark.parametrize("step", ["after_upsert", "after_delete", "before_commit"])
def test_a_crawl_killed_at_each_write_step_is_reconciled_by_the_next_one(
        site: DocsServer, crawl: Crawl, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    first = indexed(crawl, site)
    assert verify_here(first.data_dir).ok
    edited = f"{site.base_url}/docs/guide/troubleshooting.html"
    edit(site, "guide/troubleshooting.html", "A new paragraph about restarting the relay after an upgrade.")
    new_url = add_page(site)
    # killed while writing the new page (a page the state has never held) or the edited one
    target = new_url if step == "after_upsert" else edited
    monkeypatch.setenv("DOCSCRAPER_TEST_KILL", step)
    monkeypatch.setenv("DOCSCRAPER_TEST_KILL_PAGE", page_id(target))
    killed = indexed(crawl, site, check=False, settings={
        "DOCSCRAPER_VECTOR_INDEX_CLASS": "tests.crashing.KillingIndex",
        "DOCSCRAPER_STATE_STORE_CLASS": "tests.crashing.KillingStore"})
    assert killed.returncode == -9, killed.stderr[-3000:]
    monkeypatch.delenv("DOCSCRAPER_TEST_KILL")
    # what the killed run wrote disagrees with the state until a run reconciles it
    died = verify_here(first.data_dir)
    if step == "after_upsert":
        # the new page's chunks went in without its row; the pages embedded with it wrote theirs in the same
        # upsert (CallGroup), so the edited page's old chunks may still be there beside its new ones
        assert "orphanChunk" in {d.kind for d in died.disagreements}
        assert {d.kind for d in died.disagreements} <= {"orphanChunk", "staleChunk"}
        # and the new page leaves the site before anything crawls again
        remove_page(site)
    else:
        assert died.disagreements
    after = indexed(crawl, site)
    report = after.report
    assert report["result"] == "partial"  # the fixture's 500 page; nothing else failed
    reconciled = report["reconciled"]
    assert reconciled is not None and reconciled["pages"] >= 1 and len(reconciled["runs"]) == 1
    result = verify_here(after.data_dir)
    assert result.ok, [d.as_dict() for d in result.disagreements]
    assert not result.scheduled
    # no chunk outlives its page (the new page left the site after the crash that wrote it; else it stays)
    assert bool(chunks_of(after.data_dir, page_id(new_url))) is (step != "after_upsert")
    # the edited page has its new chunks, and only those
    db = sqlite3.connect(after.data_dir / "state.db")
    try:
        (count, content_hash), = db.execute("SELECT chunk_count, content_hash FROM pages WHERE page_id = ?",
                                            (page_id(edited),)).fetchall()
        pending = db.execute("SELECT COUNT(*) FROM index_writes").fetchone()[0]
    finally:
        db.close()
    assert pending == 0
    ids = chunks_of(after.data_dir, page_id(edited))
    assert len(ids) == count and all(f"-{content_hash[:12]}-" in cid for cid in ids)


# --- planted faults ---------------------------------------------------------------------------------------


def test_verify_finds_every_planted_fault_and_repair_leaves_the_index_clean(
        shared_site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    first = crawl(f"{shared_site.base_url}/docs/", index=True, settings=SMALL)
    data_dir = first.data_dir
    clean = command("verify", "--json", settings=SMALL)
    assert clean.returncode == 0 and json.loads(clean.stdout)["ok"] is True
    db = sqlite3.connect(data_dir / "state.db")
    rows = db.execute("SELECT page_id, url, content_hash, chunk_count, source_id FROM pages "
                      "WHERE status = 'active' AND chunk_count >= 2 ORDER BY page_id").fetchall()
    (missing, *_), (stale, _, _, _, sid), (relabelled, *_), (retired, _, _, retired_chunks, _) = rows[:4]
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        def ids_of(pid: str) -> list[str]:
            return sorted(index.collection.get(where={"page_id": pid}, include=[])["ids"])

        vector = np.full(16, 0.25, dtype=np.float32)
        meta = {"source": first.report["source"], "page_id": "url_nosuchpage", "url": "http://x/", "title": "x",
                "heading": "", "chunk_index": 0, "content_hash": "0" * 64, "chunk_hash": "x"}
        index.delete([ids_of(missing)[0]])  # 1. a live page loses a chunk
        index.upsert([  # 2. a page the state does not know; 3. a source it does not know; 4. no chunk id
            ChunkRecord(f"s{sid}-url_nosuchpage-{'0' * 12}-0000", "orphan", vector, meta),
            ChunkRecord(f"s999-{stale}-{'0' * 12}-0000", "unknown source", vector, meta),
            ChunkRecord("not-a-chunk-id", "garbage", vector, meta),
            # 5. a live page's chunk under another content hash
            ChunkRecord(f"s{sid}-{stale}-{'f' * 12}-0000", "stale", vector,
                        {**meta, "page_id": stale, "content_hash": "f" * 64}),
        ])
        # 6. a chunk whose title disagrees with its page row
        cid = ids_of(relabelled)[0]
        got = index.collection.get(ids=[cid], include=["metadatas"])
        index.collection.update(ids=[cid], metadatas=[{**dict(got["metadatas"][0]), "title": "Wrong title"}])
    finally:
        index.close()
        forget_persistent_clients()
    # 7. a page the state retired whose chunks stayed
    db.execute("UPDATE pages SET status = 'removed' WHERE page_id = ?", (retired,))
    db.commit()
    db.close()
    # 8. a keyword cache that vouches for the collection with another fingerprint
    search = command("search", "relay", settings=SMALL)
    assert search.returncode == 0
    cache = data_dir / "lexical" / "docs" / "generation.json"
    record = json.loads(cache.read_text())
    cache.write_text(json.dumps({**record, "fingerprint": "0" * 32}))

    found = command("verify", "--json", check=False, settings=SMALL)
    assert found.returncode == 3, found.stderr[-2000:]
    report = json.loads(found.stdout)
    kinds = {(d["kind"], d["pageId"]) for d in report["disagreements"]}
    assert ("missingChunks", missing) in kinds
    assert ("orphanChunk", "url_nosuchpage") in kinds
    assert ("foreignSource", stale) in kinds  # a source id this state never had
    assert ("unparsableId", "url_nosuchpage") in kinds
    assert ("staleChunk", stale) in kinds
    assert ("metadataMismatch", relabelled) in kinds
    assert ("orphanChunk", retired) in kinds
    assert ("keywordCache", None) in kinds
    assert len(report["disagreements"]) == 8, report["disagreements"]
    human = command("verify", check=False, settings=SMALL)
    assert human.returncode == 3 and "8 disagreement(s)" in human.stdout and "--repair" in human.stderr

    repaired = command("verify", "--repair", "--json", check=False, settings=SMALL)
    # what this state cannot prove is its own is left: exit 3
    assert repaired.returncode == 3, repaired.stderr[-2000:]
    repair_report = json.loads(repaired.stdout)
    fixed = repair_report["repaired"]
    assert fixed["pagesMarked"] == 2 and fixed["keywordCacheDropped"] == 1
    # the orphan and the stale chunk, and the retired page's; not the unparsable one, nor the never-had source's
    assert fixed["chunksDeleted"] == 2 + retired_chunks
    assert chunks_of(data_dir, retired) == []
    foreign = ["not-a-chunk-id", f"s999-{stale}-{'0' * 12}-0000"]
    assert stored(data_dir, foreign) == foreign
    deleted = {(d["kind"], d["pageId"]): d["chunkIds"] for d in repair_report["deleted"]}
    assert deleted == {("orphanChunk", "url_nosuchpage"): [f"s{sid}-url_nosuchpage-{'0' * 12}-0000"],
                       ("staleChunk", stale): [f"s{sid}-{stale}-{'f' * 12}-0000"],
                       ("orphanChunk", retired): deleted[("orphanChunk", retired)]}
    assert len(deleted[("orphanChunk", retired)]) == retired_chunks
    assert audit_lines(data_dir) == [{"kind": kind, "pageId": pid, "chunkIds": ids, "source": first.report["source"]}
                                     for (kind, pid), ids in sorted(deleted.items())]
    assert {d["kind"] for d in json.loads(command("verify", "--json", check=False, settings=SMALL).stdout)[
        "disagreements"]} == {"unparsableId", "foreignSource"}
    # the other application removes its own chunks
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        index.collection.delete(ids=foreign)
    finally:
        index.close()
        forget_persistent_clients()
    after = command("verify", "--json", settings=SMALL)
    report = json.loads(after.stdout)
    assert report["ok"] is True and {d["pageId"] for d in report["scheduled"]} == {missing, relabelled}
    # the next crawl writes the marked pages again: nothing disagrees, nothing waits
    crawl(f"{shared_site.base_url}/docs/", index=True, settings=SMALL)
    final = json.loads(command("verify", "--json", settings=SMALL).stdout)
    assert final["ok"] is True and final["scheduled"] == []
    assert command("verify", "no-such-source", check=False, settings=SMALL).returncode == 1


# --- a repair touches only what this state owns (DESIGN rule 10) -----------------------------------------


def chunk_ids(data_dir: Path) -> list[str]:
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        return sorted(index.collection.get(include=[])["ids"])
    finally:
        index.close()
        forget_persistent_clients()


def test_a_removal_cut_short_leaves_chunks_that_a_repair_deletes_past_the_cap(
        shared_site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    first = indexed(crawl, shared_site)
    data_dir = first.data_dir
    every = chunk_ids(data_dir)
    # `scrapy sources remove` cut short after the state's half: the source's row went (and its tombstone was
    # written with it), its chunks stayed
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    try:
        source = store.get_source(first.report["source"])
        assert source is not None
        store.delete_source(source.id)
        assert store.removed_sources() == {source.id: source.name}
    finally:
        store.close()
    # one chunk under the same id is labelled as another source (another state's, under a colliding id)
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        theirs = every[0]
        got = index.collection.get(ids=[theirs], include=["metadatas"])
        index.collection.update(ids=[theirs], metadatas=[{**dict(got["metadatas"][0]), "source": "someone-else"}])
    finally:
        index.close()
        forget_persistent_clients()
    found = command("verify", "--json", check=False, settings=SMALL)
    assert found.returncode == 3
    kinds = {d["kind"] for d in json.loads(found.stdout)["disagreements"]}
    assert kinds == {"removedSource", "foreignChunk"}
    # every chunk of the removed source goes: its removal was asked for, so no cap applies; not the other's
    repaired = command("verify", "--repair", "--json", check=False, settings=SMALL)
    assert repaired.returncode == 3  # the chunk it cannot prove is its own is left
    assert json.loads(repaired.stdout)["repaired"]["chunksDeleted"] == len(every) - 1
    assert chunk_ids(data_dir) == [theirs]
    lines = audit_lines(data_dir)
    assert {line["kind"] for line in lines} == {"removedSource"}
    assert sorted(cid for line in lines for cid in line["chunkIds"]) == every[1:]
    assert "Repair deleted" in repaired.stderr  # and each group is logged


def test_a_repair_past_the_deletion_cap_is_refused_unless_forced(
        shared_site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    first = indexed(crawl, shared_site)
    data_dir = first.data_dir
    every = chunk_ids(data_dir)
    # a state that lost track of most of its pages (or is not the one the index was written with)
    db = sqlite3.connect(data_dir / "state.db")
    try:
        pages = [pid for pid, in db.execute("SELECT page_id FROM pages WHERE status = 'active' AND chunk_count > 0 "
                                            "ORDER BY page_id")]
        lost = pages[: len(pages) * 3 // 4]
        db.execute(f"UPDATE pages SET status = 'removed' WHERE page_id IN ({','.join('?' * len(lost))})", lost)
        db.commit()
        counted = db.execute("SELECT SUM(chunk_count) FROM pages WHERE status = 'removed'").fetchone()[0]
    finally:
        db.close()
    refused = command("verify", "--repair", "--json", check=False, settings=SMALL)
    assert refused.returncode == 1, refused.stderr[-2000:]
    report = json.loads(refused.stdout)
    [entry] = report["refused"]
    assert entry["source"] == first.report["source"] and entry["chunks"] == counted and entry["of"] == len(every)
    assert entry["maxRatio"] == 0.5 and report["deleted"] == [] and report["repaired"]["chunksDeleted"] == 0
    assert "DOCSCRAPER_MAX_DELETE_RATIO=0.5" in refused.stderr and "--force" in refused.stderr
    assert chunk_ids(data_dir) == every and audit_lines(data_dir) == []
    forced = command("verify", "--repair", "--force", "--json", settings=SMALL)
    assert json.loads(forced.stdout)["repaired"]["chunksDeleted"] == counted
    assert len(chunk_ids(data_dir)) == len(every) - counted
    assert sum(len(line["chunkIds"]) for line in audit_lines(data_dir)) == counted


def test_verify_never_creates_a_state_and_refuses_an_index_of_another_state(
        shared_site: DocsServer, crawl: Crawl, command: Crawl, tmp_path: Path) -> None:
    first = indexed(crawl, shared_site)
    data_dir = first.data_dir
    every = chunk_ids(data_dir)
    store = SqlStateStore(f"sqlite:///{data_dir / 'state.db'}")
    index = ChromaIndex(path=data_dir / "chroma")
    try:
        assert index.recorded_state() == store.state_id()  # the crawl bound the collection to its state
    finally:
        index.close()
        store.close()
        forget_persistent_clients()

    # a wrong DOCSCRAPER_STATE_URL: nothing there, nothing created, nothing deleted
    missing = tmp_path / "elsewhere" / "state.db"
    wrong = command("verify", "--repair", "--force", check=False,
                    settings={**SMALL, "DOCSCRAPER_STATE_URL": f"sqlite:///{missing}"})
    assert wrong.returncode == 1 and f"no state database at {missing}" in wrong.stderr
    assert not missing.parent.exists()
    # an empty database file (a first crawl creating it, or a stray file): not given a schema
    empty = tmp_path / "empty.db"
    empty.touch()
    wrong = command("verify", "--repair", check=False, settings={**SMALL, "DOCSCRAPER_STATE_URL": f"sqlite:///{empty}"})
    assert wrong.returncode == 1 and "has no docscraper schema" in wrong.stderr and empty.stat().st_size == 0
    # a wrong DOCSCRAPER_DATA_DIR
    nothing = tmp_path / "nothing"
    wrong = command("verify", "--repair", check=False, settings={**SMALL, "DOCSCRAPER_DATA_DIR": str(nothing)})
    assert wrong.returncode == 1 and not nothing.exists()
    assert chunk_ids(data_dir) == every

    # another docscraper's state (its own crawl of the same site, into its own data directory) pointed at this
    # collection: its chunk ids (s1-...) collide with this state's; refused, check and repair alike
    other = tmp_path / "other"
    crawl(f"{shared_site.base_url}/docs/", index=True, settings={**SMALL, "DOCSCRAPER_DATA_DIR": str(other)})
    foreign = {**SMALL, "DOCSCRAPER_STATE_URL": f"sqlite:///{other / 'state.db'}"}
    for args in (("verify", "--repair", "--force"), ("verify",)):
        refused = command(*args, check=False, settings=foreign)
        assert refused.returncode == 1, refused.stderr[-2000:]
        assert "belongs to another state database" in refused.stderr and "DOCSCRAPER_STATE_URL" in refused.stderr
    # and so is its crawl (close reason index_unavailable): it would write and delete chunks under this state's ids
    crawled = crawl(f"{shared_site.base_url}/docs/", "full=1", index=True, check=False, settings=foreign)
    assert crawled.returncode == 1 and "belongs to another state database" in crawled.stderr
    assert "(index_unavailable)" in crawled.stderr
    assert chunk_ids(data_dir) == every and audit_lines(data_dir) == []
    assert json.loads(command("verify", "--json", settings=SMALL).stdout)["ok"] is True
