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
    assert ("unknownSource", stale) in kinds
    assert ("unparsableId", "url_nosuchpage") in kinds
    assert ("staleChunk", stale) in kinds
    assert ("metadataMismatch", relabelled) in kinds
    assert ("orphanChunk", retired) in kinds
    assert ("keywordCache", None) in kinds
    assert len(report["disagreements"]) == 8, report["disagreements"]
    human = command("verify", check=False, settings=SMALL)
    assert human.returncode == 3 and "8 disagreement(s)" in human.stdout and "--repair" in human.stderr

    repaired = command("verify", "--repair", "--json", settings=SMALL)
    assert repaired.returncode == 0
    fixed = json.loads(repaired.stdout)["repaired"]
    assert fixed["pagesMarked"] == 2 and fixed["keywordCacheDropped"] == 1
    # the orphan, the unknown source's, the unparsable and the stale chunk, and the retired page's
    assert fixed["chunksDeleted"] == 4 + retired_chunks
    assert chunks_of(data_dir, retired) == []
    after = command("verify", "--json", settings=SMALL)
    report = json.loads(after.stdout)
    assert report["ok"] is True and {d["pageId"] for d in report["scheduled"]} == {missing, relabelled}
    # the next crawl writes the marked pages again: nothing disagrees, nothing waits
    crawl(f"{shared_site.base_url}/docs/", index=True, settings=SMALL)
    final = json.loads(command("verify", "--json", settings=SMALL).stdout)
    assert final["ok"] is True and final["scheduled"] == []
    assert command("verify", "no-such-source", check=False, settings=SMALL).returncode == 1
