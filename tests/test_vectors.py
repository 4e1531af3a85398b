"""The Chroma index on a temporary directory, and the real bundled embedder."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from docscraper.storage.embedding import SentenceTransformerEmbedder
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, IndexError_, chunk_id


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.random((n, 384), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def records(page: str, n: int, rng: np.random.Generator, source: str = "s") -> list[ChunkRecord]:
    vectors = unit(rng, n)
    return [ChunkRecord(chunk_id(page, "abcdef0123456789", i), f"{page} text {i}", vectors[i],
                        {"source": source, "page_id": page, "chunk_hash": f"{page}-{i}", "chunk_index": i})
            for i in range(n)]


def test_upsert_count_query_delete_and_persist(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    index = ChromaIndex(path=tmp_path / "chroma")
    assert index.client.get_settings().anonymized_telemetry is False
    index.max_batch = 2  # force several batches
    a, b = records("url_a", 5, rng), records("url_b", 3, rng, source="t")
    index.upsert(a + b)
    assert index.count() == 8 and index.count("s") == 5 and index.count("t", "url_b") == 3
    assert index.page_chunks("s", "url_a") == {r.id: f"url_a-{i}" for i, r in enumerate(a)}
    hits = index.query(a[2].embedding, 3)
    assert hits[0].id == a[2].id and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert all(h.metadata["source"] == "t" for h in index.query(a[2].embedding, 3, source="t"))
    got = index.vectors_for([a[1].id, "missing"])
    assert set(got) == {a[1].id} and np.allclose(got[a[1].id], a[1].embedding, atol=1e-6)
    # two chunks of one page with the same text ask for one stored vector twice
    assert set(index.vectors_for([a[1].id, a[1].id, a[3].id])) == {a[1].id, a[3].id}
    # the same ids again replace, not duplicate
    index.upsert(a[:2])
    assert index.count() == 8
    assert index.delete_pages("s", ["url_a"]) == 5 and index.count() == 3
    index.close()
    reopened = ChromaIndex(path=tmp_path / "chroma")
    assert reopened.count() == 3 and reopened.count("t") == 3


def test_cosine_space_is_required(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "c"), settings=Settings(anonymized_telemetry=False))
    client.create_collection("docs", configuration={"hnsw": {"space": "l2"}}, embedding_function=None)
    del client
    with pytest.raises(IndexError_, match="uses l2 space"):
        ChromaIndex(path=tmp_path / "c")


def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(IndexError_, match=r"cannot open Chroma at http://127\.0\.0\.1:9"):
        ChromaIndex(url="http://127.0.0.1:9")


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_bundled_model_embeds_normalized_vectors(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder.name == "all-MiniLM-L6-v2" and embedder.dimension == 384 and embedder.max_tokens == 256
    vectors = embedder.embed(["How do I rotate the signing secret?", "Rotating webhook secrets", "bananas"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert embedder.count_tokens(["hello world"]) == [4]  # [CLS] hello world [SEP]
    assert embedder.count_tokens(["word " * 600]) == [602]  # counted, not truncated


def test_counting_and_embedding_from_two_threads(embedder: SentenceTransformerEmbedder) -> None:
    """The chunker counts tokens on its thread while the model encodes on another."""
    errors: list[BaseException] = []
    texts = [f"sentence number {i} " * (i % 40 + 1) for i in range(200)]

    def count() -> None:
        try:
            for _ in range(20):
                assert embedder.count_tokens(texts) == embedder.count_tokens(texts)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=count)
    thread.start()
    for _ in range(3):
        assert embedder.embed(texts).shape == (200, 384)
    thread.join()
    assert errors == []
