"""The vector index end to end: real crawls, the real bundled model, real Chroma in tmp_path."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.embedding import SentenceTransformerEmbedder
from docscraper.storage.search import Searcher
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import ROOT, Crawl, CrawlResult, crawl_until
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl

ALLOWED_PAGES = 35


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def chroma(result: CrawlResult) -> ChromaIndex:
    return ChromaIndex(path=result.data_dir / "chroma")


def chunk_rows(result: CrawlResult) -> dict[str, dict]:
    index = chroma(result)
    got = index.collection.get(include=["metadatas"])
    return dict(zip(got["ids"], got["metadatas"], strict=True))


def state_chunk_counts(result: CrawlResult) -> dict[str, int]:
    db = sqlite3.connect(result.data_dir / "state.db")
    rows = db.execute("SELECT page_id, chunk_count FROM pages WHERE status = 'active'").fetchall()
    db.close()
    return dict(rows)


def test_crawl_indexes_every_page_within_the_model_limit(shared_site: DocsServer, crawl: Crawl,
                                                          embedder: SentenceTransformerEmbedder) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", index=True)
    report = result.report
    rows = chunk_rows(result)
    per_page = Counter(meta["page_id"] for meta in rows.values())
    counts = state_chunk_counts(result)
    assert len(counts) == ALLOWED_PAGES
    # each page's chunk count in Chroma equals its state row's count
    assert {pid: n for pid, n in counts.items() if n} == dict(per_page)
    assert report["counters"]["chunks_added"] == len(rows)
    assert report["counters"]["embeddings_computed"] == len(rows)
    assert len({cid.split('-', 1)[0] for cid in rows}) == 1
    for cid, meta in rows.items():
        for key in ("source", "page_id", "url", "title", "heading", "chunk_index", "content_hash"):
            assert key in meta, (cid, key)
        # s<source id>-<page id>-<content hash[:12]>-<index>: one source, so one prefix for all
        assert re.fullmatch(rf"s\d+-{meta['page_id']}-{meta['content_hash'][:12]}-{meta['chunk_index']:04d}", cid)
    # no chunk is longer than the model's limit, measured with its own tokenizer
    got = chroma(result).collection.get(include=["documents", "metadatas"])
    texts = [f"{m['title']}\n{m['heading']}\n\n{d}" if m["heading"] else f"{m['title']}\n\n{d}"
             for d, m in zip(got["documents"], got["metadatas"], strict=True)]
    assert max(embedder.count_tokens(texts)) <= embedder.max_tokens
    # the robots-disallowed page's content never reaches the index
    assert not any("private" in meta["url"] for meta in rows.values())


def test_unchanged_recrawl_writes_nothing_and_edits_replace_only_their_chunks(
        site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/", index=True)
    before = chunk_rows(first)
    second = crawl(f"{site.base_url}/docs/", index=True)
    counters = second.report["counters"]
    assert counters.get("embeddings_computed", 0) == 0
    assert counters.get("chunks_added", 0) == 0 and counters.get("chunks_deleted", 0) == 0
    assert "Loaded embedding model" not in second.stderr  # nothing to embed: the model is never loaded
    assert chunk_rows(second) == before

    # edit one section of one page: only that page's chunks change, and unchanged chunks keep vectors
    page = site.root / "docs" / "guide" / "delivery.html"
    page.write_text(page.read_text().replace("</article>",
                                             "<h2>Batching</h2><p>Deliveries are batched per sink.</p></article>"))
    third = crawl(f"{site.base_url}/docs/", index=True)
    assert third.keys("success", "changed") == {"guide/delivery.html"}
    # the first crawl made the model's ONNX export at its end: this one embeds with it, without torch
    assert "from its ONNX export" in third.stderr and "Loaded embedding model" in first.stderr
    after = chunk_rows(third)
    delivery = {cid for cid, meta in after.items() if meta["path"] == "guide/delivery.html"}
    old_delivery = {cid for cid, meta in before.items() if meta["path"] == "guide/delivery.html"}
    assert {cid: m for cid, m in after.items() if cid not in delivery} == {
        cid: m for cid, m in before.items() if cid not in old_delivery}
    assert not (delivery & old_delivery)  # the page's stale chunks are gone
    c = third.report["counters"]
    assert c["chunks_deleted"] == len(old_delivery) and c["chunks_added"] == len(delivery)
    assert c["embeddings_reused"] >= 1 and c["embeddings_computed"] < len(delivery)
    assert c["embeddings_computed"] + c["embeddings_reused"] == len(delivery)


def test_a_forced_stop_exits_and_leaves_the_state_behind_the_index(site: DocsServer, crawl: Crawl,
                                                                   tmp_path: Path) -> None:
    """A second SIGTERM (Scrapy's "Send again to force") stops the reactor without closing the spider:
    the process must still exit (the run's worker threads must not keep it alive), no state row may be
    ahead of the index (DESIGN rule 1), and the next run indexes every page."""
    routes_path = site.root / "_routes.json"
    original = routes_path.read_text()
    routes = json.loads(original)
    routes["/docs/guide/delivery.html"] = {"status": 200, "delay": 20,
                                           "body": "<html><body><main><p>slow</p></main></body></html>"}
    routes_path.write_text(json.dumps(routes))
    proc = crawl_until(site, tmp_path / "data", "/docs/guide/delivery.html", index=True, timeout=120)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        pytest.fail(f"the crawl did not exit after a forced shutdown\n{stderr[-3000:]}")
    assert "forcing unclean shutdown" in stderr, stderr[-3000:]
    data_dir = tmp_path / "data"
    if (data_dir / "chroma").exists():
        index = ChromaIndex(path=data_dir / "chroma")
        stored = Counter(meta["page_id"] for meta in index.collection.get(include=["metadatas"])["metadatas"])
        index.close()
        db = sqlite3.connect(data_dir / "state.db")
        committed = db.execute("SELECT page_id, chunk_count FROM pages WHERE status = 'active'").fetchall()
        db.close()
        # a committed row never names chunks the index lacks
        assert all(stored[pid] == (n or 0) for pid, n in committed)
    routes_path.write_text(original)
    second = crawl(f"{site.base_url}/docs/", index=True)
    assert second.report["closeReason"] == "finished"
    rows = chunk_rows(second)
    counts = state_chunk_counts(second)
    assert len(counts) == ALLOWED_PAGES
    assert {pid: n for pid, n in counts.items() if n} == dict(Counter(m["page_id"] for m in rows.values()))


def test_removed_page_loses_its_chunks_and_search_finds_pages(site: DocsServer, crawl: Crawl,
                                                              embedder: SentenceTransformerEmbedder) -> None:
    first = crawl(f"{site.base_url}/docs/", index=True)
    victim = site.root / "docs" / "reference" / "api" / "pagination.html"
    victim.unlink()
    for path in site.root.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".xml", ".txt") and "pagination.html" in path.read_text():
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if "pagination.html" not in line))
    second = crawl(f"{site.base_url}/docs/", index=True)
    assert second.keys("success", "removed") == {"reference/api/pagination.html"}
    rows = chunk_rows(second)
    assert not any(meta["path"] == "reference/api/pagination.html" for meta in rows.values())
    assert second.report["counters"]["chunks_deleted"] >= 1
    config = DocscraperConfig(data_dir=first.data_dir, state_url="sqlite://")
    searcher = Searcher(config, embedder=embedder)
    results = searcher.search("Which advisory lock id does leader election use?", k=5)
    assert any(r.url.endswith("/docs/guide/deployment.html") for r in results)
    assert not any("pagination" in r.url for r in searcher.search("How long does a pagination cursor stay valid?"))
    assert len({r.page_id for r in results}) == len(results)  # one chunk per page
    many = searcher.search("Which advisory lock id does leader election use?", k=5, per_page=None)
    assert len(many) == 5


def test_search_command_json(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", index=True)
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(result.data_dir), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "search", "How long are dead letters kept?", "-k", "3", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    hits = json.loads(proc.stdout)
    assert len(hits) == 3 and hits[0]["url"].endswith("/docs/guide/delivery.html")
    assert set(hits[0]) >= {"url", "title", "heading", "score", "text"}
    plain = subprocess.run([sys.executable, "-m", "scrapy", "search", "dead letters"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "1. [" in plain.stdout
    assert "INFO" not in plain.stderr  # the answer is not buried under Scrapy's start-up log
    empty = subprocess.run([sys.executable, "-m", "scrapy", "search", "x"], cwd=ROOT,
                           env=dict(env, DOCSCRAPER_DATA_DIR=str(Path(result.data_dir) / "nothing")),
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 1 and "no index" in empty.stderr
