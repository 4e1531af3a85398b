"""The vector index on a Chroma server (``DOCSCRAPER_CHROMA_URL``): a real ``chroma run`` on loopback,
one indexed crawl of the fixture site, search through the server, and an unchanged recrawl."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest

from docscraper.storage.vectors import ChromaIndex
from tests.conftest import ROOT, Crawl, CrawlResult
from tests.mockserver import DocsServer
from tests.services import ChromaServer, free_port

pytestmark = [pytest.mark.services, pytest.mark.crawl]

ALLOWED_PAGES = 35


def chunk_rows(url: str) -> dict[str, dict]:
    index = ChromaIndex(url=url)
    try:
        got = index.collection.get(include=["metadatas"])
        return {cid: dict(meta or {}) for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=True)}
    finally:
        index.close()


def state_chunk_counts(result: CrawlResult) -> dict[str, int]:
    db = sqlite3.connect(result.data_dir / "state.db")
    try:
        return dict(db.execute("SELECT page_id, chunk_count FROM pages WHERE status = 'active'").fetchall())
    finally:
        db.close()


def test_crawl_search_and_recrawl_through_a_chroma_server(shared_site: DocsServer, crawl: Crawl,
                                                          chroma_server: ChromaServer) -> None:
    settings = {"DOCSCRAPER_CHROMA_URL": chroma_server.url}
    first = crawl(f"{shared_site.base_url}/docs/", index=True, settings=settings)
    assert not (first.data_dir / "chroma").exists()  # nothing went to the embedded directory
    rows = chunk_rows(chroma_server.url)
    counts = state_chunk_counts(first)
    assert len(counts) == ALLOWED_PAGES
    # each page's chunks on the server equal its state row's count
    assert {pid: n for pid, n in counts.items() if n} == dict(Counter(m["page_id"] for m in rows.values()))
    assert first.report["counters"]["chunks_added"] == len(rows)
    assert len({cid.split('-', 1)[0] for cid in rows}) == 1
    for cid, meta in rows.items():
        # s<source id>-<page id>-<content hash[:12]>-<index>: one source, so one prefix for all
        assert re.fullmatch(rf"s\d+-{meta['page_id']}-{meta['content_hash'][:12]}-{meta['chunk_index']:04d}", cid)

    # `scrapy search` with the same setting (from the environment here) asks the server
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(first.data_dir), DOCSCRAPER_CHROMA_URL=chroma_server.url,
               HF_HUB_OFFLINE="1", PYTHONWARNINGS="")
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "search", "How long are dead letters kept?", "-k", "3", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    hits = json.loads(proc.stdout)
    assert hits and hits[0]["url"].endswith("/docs/guide/delivery.html"), hits

    # an unchanged recrawl writes nothing to the server
    second = crawl(f"{shared_site.base_url}/docs/", index=True, settings=settings)
    counters = second.report["counters"]
    assert second.report["stats"]["success.unchanged"] == ALLOWED_PAGES
    assert counters.get("embeddings_computed", 0) == 0
    assert counters.get("chunks_added", 0) == 0 and counters.get("chunks_deleted", 0) == 0
    assert chunk_rows(chroma_server.url) == rows


def test_an_unreachable_chroma_server_stops_the_crawl_clearly(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", index=True, check=False,
                   settings={"DOCSCRAPER_CHROMA_URL": f"http://127.0.0.1:{free_port()}"})
    assert result.returncode == 1
    assert "cannot open Chroma at http://127.0.0.1:" in result.stderr
    assert "nothing was stored" in result.stderr and "Traceback" not in result.stderr
