"""Hybrid search: the BM25 keyword index derived from Chroma, its cache, and its fusion with the vectors.

A small deterministic embedder stands in for the model here (pipeline logic only); the real model's
retrieval is measured in tests/test_retrieval.py and benchmarks/retrieval_eval.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.lexical import LexicalIndex, corpus_fingerprint, tokenize
from docscraper.storage.search import Searcher
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, chunk_id

DIM = 16


def axis(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


class FixedEmbedder:
    """Every question embeds to one fixed direction: the vector ranking is known in advance."""

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self.vector for _ in texts])

    def close(self) -> None:
        pass


PAGES = {
    # page: (text, direction of its vector)
    "url_errors": ("Error codes. SQLSTATE 23505 unique_violation: a duplicate key value violates a unique "
                   "constraint.", 5),
    "url_agg": ("Aggregate functions. string_agg concatenates the input values into a string, separated "
                "by a delimiter.", 6),
}


def fill(index: ChromaIndex, n_distractors: int = 30, source: str = "pg") -> None:
    """Distractor pages near direction 0 (where every question points), and the two answer pages far away."""
    records = []
    for i in range(n_distractors):
        v = axis(0) + 0.01 * (i + 1) * axis(1)
        records.append(ChunkRecord(chunk_id(f"url_d{i:02d}", "0" * 12, 0),
                                   f"General notes {i} about tables, rows and queries.",
                                   v / np.linalg.norm(v),
                                   {"source": source, "page_id": f"url_d{i:02d}", "url": f"http://x/d{i}.html",
                                    "chunk_hash": f"d{i}", "title": f"D{i}", "heading": ""}))
    for page, (text, direction) in PAGES.items():
        records.append(ChunkRecord(chunk_id(page, "1" * 12, 0), text, axis(direction),
                                   {"source": source, "page_id": page, "url": f"http://x/{page}.html",
                                    "chunk_hash": page, "title": page, "heading": ""}))
    index.upsert(records)


@pytest.fixture
def index(tmp_path: Path):
    index = ChromaIndex(path=tmp_path / "chroma")
    fill(index)
    yield index
    index.close()


def config(tmp_path: Path, weight: float = 1.0) -> DocscraperConfig:
    return DocscraperConfig(data_dir=tmp_path, state_url="sqlite://", search_keyword_weight=weight)


def test_tokens_keep_identifiers_and_codes_and_drop_stop_words() -> None:
    tokens = tokenize(["What does the SQLSTATE error code 23505 mean in string_agg?"])[0]
    assert "23505" in tokens and "string_agg" in tokens and "sqlstate" in tokens
    assert not {"the", "what", "does", "doe", "in"} & set(tokens)


def test_keyword_index_ranks_exact_terms_and_filters_by_source(index: ChromaIndex) -> None:
    ids, sources, documents = index.documents()
    assert len(ids) == len(sources) == len(documents) == 32
    lexical = LexicalIndex.build("fp", ids, sources, documents)
    top = lexical.top("What does error code 23505 mean?", 5)
    assert top[0][0].startswith("url_errors-") and top[0][1] > 0
    assert lexical.top("string_agg with a delimiter", 5)[0][0].startswith("url_agg-")
    assert lexical.top("23505", 5, source="other") == []
    assert lexical.top("the of and", 5) == []  # only stop words: nothing to rank


def test_vector_ranking_alone_misses_the_exact_term_page(tmp_path: Path, index: ChromaIndex) -> None:
    searcher = Searcher(config(tmp_path, weight=0), embedder=FixedEmbedder(axis(0)), index=index)
    urls = [r.url for r in searcher.search("What does error code 23505 mean?", k=5)]
    assert "http://x/url_errors.html" not in urls
    assert not (tmp_path / "lexical").exists()  # weight 0: no keyword index is built


def test_hybrid_search_finds_it_and_keeps_cosine_scores(tmp_path: Path, index: ChromaIndex) -> None:
    searcher = Searcher(config(tmp_path), embedder=FixedEmbedder(axis(0)), index=index)
    results = searcher.search("What does error code 23505 mean?", k=5)
    assert [r.url for r in results].count("http://x/url_errors.html") == 1
    hit = next(r for r in results if r.url == "http://x/url_errors.html")
    # the score is still the chunk's cosine to the question (orthogonal here), not a fusion score
    assert hit.score == pytest.approx(0.0, abs=1e-4)
    assert hit.text.startswith("Error codes.") and hit.title == "url_errors" and hit.rank <= 5
    # distractors keep their vector order around it
    scores = [r.score for r in results if r.url != hit.url]
    assert scores == sorted(scores, reverse=True)
    assert len({r.page_id for r in results}) == len(results) == 5


def test_keyword_index_is_cached_and_rebuilt_when_the_collection_changes(tmp_path: Path,
                                                                         index: ChromaIndex) -> None:
    searcher = Searcher(config(tmp_path), embedder=FixedEmbedder(axis(0)), index=index)
    first = searcher.keywords()
    folder = tmp_path / "lexical" / "docs"
    assert (folder / "chunks.json").is_file()
    assert searcher.keywords() is first  # unchanged collection: the same index, not rebuilt
    # a fresh searcher loads the cache instead of rebuilding
    again = Searcher(config(tmp_path), embedder=FixedEmbedder(axis(0)), index=index).keywords()
    assert again.fingerprint == first.fingerprint and again.ids == first.ids
    # a crawl adds a page: the next question sees it
    index.upsert([ChunkRecord(chunk_id("url_new", "2" * 12, 0), "Checksums detect data corruption on disk.",
                              axis(7), {"source": "pg", "page_id": "url_new", "url": "http://x/new.html",
                                        "chunk_hash": "new", "title": "new", "heading": ""})])
    results = searcher.search("How are checksums enabled?", k=5)
    assert "http://x/new.html" in [r.url for r in results]
    assert searcher.keywords().fingerprint != first.fingerprint
    # a chunk deleted from Chroma after the keyword index was built is never returned
    index.delete([chunk_id("url_new", "2" * 12, 0)])
    stale = searcher._lexical
    assert stale is not None
    assert "http://x/new.html" not in [r.metadata["url"] for r in searcher._fuse(
        "checksums", axis(0), index.query(axis(0), 8), 8, None, 1.0, 1, stale)]


class CountingIndex(ChromaIndex):
    """The real index, counting how often every chunk id is read (the fingerprint scan)."""

    scans = 0

    def chunk_hashes(self) -> dict[str, str]:
        CountingIndex.scans += 1
        return super().chunk_hashes()


def test_a_new_process_trusts_the_keyword_cache_while_the_generation_holds(tmp_path: Path) -> None:
    """Every write changes the index's generation first; a search in a new process (a fresh client on the
    same directory) that finds the generation the cache was checked at skips reading every chunk id."""
    writer = ChromaIndex(path=tmp_path / "chroma")
    fill(writer)
    generation = writer.generation()
    assert generation is not None
    CountingIndex.scans = 0

    def fresh_search(question: str) -> list[str]:
        index = CountingIndex(path=tmp_path / "chroma")
        try:
            return [r.url for r in Searcher(config(tmp_path), embedder=FixedEmbedder(axis(0)), index=index)
                    .search(question, k=5)]
        finally:
            index.close()

    first = fresh_search("unique_violation 23505")
    assert CountingIndex.scans == 1 and "http://x/url_errors.html" in first
    assert fresh_search("unique_violation 23505") == first and CountingIndex.scans == 1  # no scan
    # a crawl writes: a new generation, so the next process reads the ids again and finds the new page
    writer.upsert([ChunkRecord(chunk_id("url_new", "2" * 12, 0), "Checksums detect data corruption on disk.",
                               axis(7), {"source": "pg", "page_id": "url_new", "url": "http://x/new.html",
                                         "chunk_hash": "new", "title": "new", "heading": ""})])
    assert writer.generation() not in (None, generation)
    assert "http://x/new.html" in fresh_search("checksums corruption")
    assert CountingIndex.scans == 2
    writer.delete([chunk_id("url_new", "2" * 12, 0)])
    assert "http://x/new.html" not in fresh_search("checksums corruption")
    assert CountingIndex.scans == 3
    writer.close()


def test_a_damaged_cache_is_rebuilt(tmp_path: Path, index: ChromaIndex) -> None:
    fingerprint = corpus_fingerprint(list(index.chunk_hashes().items()))
    folder = tmp_path / "lexical" / "docs"
    LexicalIndex.for_index(index, folder, fingerprint)
    (folder / "chunks.json").write_text("{not json", encoding="utf-8")
    assert LexicalIndex.load(folder, fingerprint) is None
    rebuilt = LexicalIndex.for_index(index, folder, fingerprint)
    assert rebuilt.top("23505", 1)[0][0].startswith("url_errors-")
    assert LexicalIndex.load(folder, fingerprint) is not None
    # a cache written before copies were marked (no "copies" key) is rebuilt once, then kept
    meta = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
    assert meta["copies"] == []
    del meta["copies"]
    (folder / "chunks.json").write_text(json.dumps(meta), encoding="utf-8")
    assert LexicalIndex.load(folder, fingerprint) is None
    LexicalIndex.for_index(index, folder, fingerprint)
    assert LexicalIndex.load(folder, fingerprint) is not None


def test_keyword_weight_is_validated() -> None:
    from scrapy.settings import Settings

    from docscraper.config import ConfigError

    assert DocscraperConfig.from_settings(Settings()).search_keyword_weight == 0.75
    assert DocscraperConfig.from_settings(Settings({"DOCSCRAPER_SEARCH_KEYWORD_WEIGHT": "0"})).search_keyword_weight == 0
    with pytest.raises(ConfigError, match="DOCSCRAPER_SEARCH_KEYWORD_WEIGHT"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_SEARCH_KEYWORD_WEIGHT": "-1"}))


@pytest.mark.parametrize("weight", [0.0, 0.5])
def test_k_pages_come_back_when_one_page_holds_all_the_nearest_chunks(tmp_path: Path, weight: float) -> None:
    index = ChromaIndex(path=tmp_path / "chroma")
    big = []
    for i in range(60):  # one long page: every one of its chunks is nearer the question than any other page
        v = axis(0) + 0.0001 * i * axis(1)
        big.append(ChunkRecord(chunk_id("url_big", "3" * 12, i), f"Long page part {i}.", v / np.linalg.norm(v),
                               {"source": "pg", "page_id": "url_big", "url": "http://x/big.html",
                                "chunk_hash": f"big{i}", "title": "big", "heading": ""}))
    index.upsert(big)
    fill(index, n_distractors=4)
    searcher = Searcher(config(tmp_path, weight=weight), embedder=FixedEmbedder(axis(0)), index=index)
    results = searcher.search("a question", k=4)
    assert len(results) == 4 and len({r.page_id for r in results}) == 4
    assert results[0].url == "http://x/big.html"
    # more pages asked for than the index holds: every page, once
    assert len(searcher.search("a question", k=50)) == 7
    index.close()


def test_results_list_their_pages_aliases_from_the_state_database(tmp_path: Path, index: ChromaIndex) -> None:
    """One page under several URLs is one result that names its other URLs (DESIGN's identity rule)."""
    from datetime import UTC, datetime

    from docscraper.storage.state import PageWrite, SqlStateStore

    def write(pid: str, url: str, alias_of: str | None = None) -> PageWrite:
        return PageWrite(pid, url, None, None, "h-" + (alias_of or pid), None, None, 200, pid, "link", 1,
                         "text/html", datetime.now(UTC), "r1", alias_of=alias_of)

    store = SqlStateStore(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        pg = store.ensure_source("pg", "http://x/", {})
        other = store.ensure_source("other", "http://o/", {})
        store.commit_page(pg.id, write("url_errors", "http://x/url_errors.html"))
        store.commit_page(pg.id, write("e2", "http://x/latest/url_errors.html", alias_of="url_errors"))
        store.commit_page(pg.id, write("e1", "http://x/errors/index.html", alias_of="url_errors"))
        # the same page id in another source is not this page
        store.commit_page(other.id, write("e3", "http://o/errors.html", alias_of="url_errors"))
        searcher = Searcher(config(tmp_path), embedder=FixedEmbedder(axis(0)), index=index, store=store)
        results = {r.page_id: r for r in searcher.search("error code 23505", k=40, with_aliases=True)}
        assert len(results) == 32  # one result per page, aliases or not
        assert results["url_errors"].aliases == ["http://x/errors/index.html", "http://x/latest/url_errors.html"]
        assert all(r.aliases == [] for pid, r in results.items() if pid != "url_errors")
        assert all(r.aliases == [] for r in searcher.search("error code 23505", k=40))  # not asked for
        # an alias that becomes a page of its own (its content changed) is no longer listed
        store.commit_page(pg.id, write("e1", "http://x/errors/index.html"))
        assert store.page_aliases("pg", ["url_errors"]) == {"url_errors": ["http://x/latest/url_errors.html"]}
    finally:
        store.close()
