"""The Chroma collection's HNSW configuration: a new collection is made with docscraper's, and a collection made
before (Chroma's defaults) gets its ef_search when opened. Recall and latency are measured by
``benchmarks/ann_recall.py``, not here."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.config import Settings

from docscraper.storage.vectors import HNSW_CONFIGURATION, ChromaIndex


def _hnsw(collection: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        # Chroma warns that a collection without an embedding function has a "legacy" config
        warnings.simplefilter("ignore", DeprecationWarning)
        return dict((collection.configuration or {}).get("hnsw") or {})


def test_a_new_collection_carries_the_configured_hnsw_parameters(tmp_path: Path) -> None:
    index = ChromaIndex(path=tmp_path / "chroma")
    try:
        hnsw = _hnsw(index.client.get_collection("docs", embedding_function=None))
    finally:
        index.close()
    for key in ("space", "ef_search", "ef_construction", "max_neighbors"):
        assert hnsw[key] == HNSW_CONFIGURATION[key], key  # type: ignore[literal-required]
    assert hnsw["ef_search"] > 100  # more than Chroma's default


def test_an_existing_collection_gets_the_configured_ef_search(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    old = client.create_collection("docs", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
    old.add(ids=["a", "b"], embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert _hnsw(old)["ef_search"] != HNSW_CONFIGURATION["ef_search"]

    index = ChromaIndex(path=path)
    try:
        hnsw = _hnsw(index.client.get_collection("docs", embedding_function=None))
        assert hnsw["ef_search"] == HNSW_CONFIGURATION["ef_search"]
        assert hnsw["space"] == "cosine"
        assert index.count() == 2  # the collection was changed, not made anew
        assert [hit.id for hit in index.query(np.array([1.0, 0.0, 0.0]), 1)] == ["a"]
    finally:
        index.close()
    # it stays so: opening it again changes nothing
    again = ChromaIndex(path=path)
    try:
        assert _hnsw(again.client.get_collection("docs", embedding_function=None))["ef_search"] == \
            HNSW_CONFIGURATION["ef_search"]
    finally:
        again.close()
