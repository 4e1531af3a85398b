"""Recall and latency of Chroma's HNSW search against an exact cosine search, per HNSW configuration.

Builds persistent Chroma collections (in a temporary folder) from the same vectors and asks them the same
queries: Chroma's top-k is compared with the exact NumPy cosine top-k (recall@k), and each query is timed
(one query at a time, as ``scrapy search`` asks: a warm question). Three collections:

* ``default``: Chroma's defaults (ef_construction 100, max_neighbors 16, ef_search 100), as docscraper made
  its collections before;
* ``default + modify``: the same collection after ``collection.modify(configuration={"hnsw": {"ef_search":
  N}})``, what :class:`docscraper.storage.vectors.ChromaIndex` does to an index made before;
* ``docscraper``: a collection made with :data:`docscraper.storage.vectors.HNSW_CONFIGURATION`.

Measured on a 2-core machine (other work running), chromadb 1.5.9, 15,000 vectors, recall@10:

    clustered, 300 queries  default 1.000 (p95 5.5 ms); docscraper 1.000 (p95 11.5 ms)
    uniform, 200 queries    default 0.627 (p95 5.5 ms); docscraper 0.944 (p95 11.5 ms)

In the process that modified them, ef_search changes made no difference to recall (the default collection
after ``modify`` stayed at 0.627; the docscraper one gave 0.944 at ef_search 100, 200 and 400): Chroma
records the new ef_search, but the HNSW index it has loaded searches as before. Whether a fresh process
honours it is not measured here.

Vectors: by default unit vectors in 384 dimensions (all-MiniLM-L6-v2's) drawn around a few hundred random
centres (``--spread`` says how tightly), which is harder for HNSW than real chunk embeddings are; with
``--uniform`` they are uniform on the sphere (the worst case). Queries are perturbed stored vectors, like a
question whose nearest chunks are close but not equal to it.

    .venv/bin/python benchmarks/ann_recall.py [--count 15000] [--queries 300] [--k 10] [--ef 400 ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docscraper.storage.vectors import HNSW_CONFIGURATION


def vectors(count: int, dim: int, *, uniform: bool, spread: float, rng: np.random.Generator) -> np.ndarray:
    if uniform:
        data = rng.standard_normal((count, dim))
    else:
        centres = rng.standard_normal((max(1, count // 50), dim))
        data = centres[rng.integers(0, len(centres), count)] + spread * rng.standard_normal((count, dim))
    data = data.astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def build(client: Any, name: str, data: np.ndarray, configuration: dict[str, Any]) -> tuple[Any, float]:
    collection = client.create_collection(name, configuration=configuration, embedding_function=None)
    ids = [f"c{i}" for i in range(len(data))]
    start = time.perf_counter()
    step = 1000
    for i in range(0, len(data), step):
        collection.add(ids=ids[i:i + step], embeddings=data[i:i + step].tolist())
    return collection, time.perf_counter() - start


def measure(collection: Any, queries: np.ndarray, exact: np.ndarray, k: int) -> dict[str, float]:
    hits = 0
    times: list[float] = []
    for query, truth in zip(queries, exact, strict=True):
        start = time.perf_counter()
        result = collection.query(query_embeddings=[query.tolist()], n_results=k, include=[])
        times.append((time.perf_counter() - start) * 1000)
        found = {int(cid[1:]) for cid in result["ids"][0]}
        hits += len(found & set(truth.tolist()))
    ms = np.array(times)
    return {"recall": hits / (len(queries) * k), "p50": float(np.percentile(ms, 50)),
            "p95": float(np.percentile(ms, 95))}


def ef_search_of(collection: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return (collection.configuration or {}).get("hnsw", {}).get("ef_search")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=15000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--uniform", action="store_true", help="uniform random unit vectors (the worst case)")
    parser.add_argument("--spread", type=float, default=0.12, help="spread around the centres (clustered data)")
    parser.add_argument("--noise", type=float, default=0.6, help="how far a query is from the vector it comes from")
    parser.add_argument("--ef", type=int, nargs="*", default=[],
                        help="more ef_search values to try on the docscraper collection")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    import chromadb
    from chromadb.config import Settings

    rng = np.random.default_rng(args.seed)
    data = vectors(args.count, args.dim, uniform=args.uniform, spread=args.spread, rng=rng)
    picks = rng.integers(0, args.count, args.queries)
    queries = data[picks] + args.noise * rng.standard_normal((args.queries, args.dim)).astype(np.float32) / np.sqrt(
        args.dim)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = np.argsort(-(queries @ data.T), axis=1)[:, : args.k]

    rows: list[tuple[str, dict[str, Any], float, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp, settings=Settings(anonymized_telemetry=False))
        default, built = build(client, "default", data, {"hnsw": {"space": "cosine"}})
        rows.append(("default", {"ef_search": ef_search_of(default)}, built, measure(default, queries, exact, args.k)))
        default.modify(configuration={"hnsw": {"ef_search": HNSW_CONFIGURATION["ef_search"]}})
        default = client.get_collection("default", embedding_function=None)
        rows.append(("default + modify", {"ef_search": ef_search_of(default)}, 0.0,
                     measure(default, queries, exact, args.k)))
        ours, built = build(client, "docscraper", data, {"hnsw": dict(HNSW_CONFIGURATION)})
        rows.append(("docscraper", dict(HNSW_CONFIGURATION), built, measure(ours, queries, exact, args.k)))
        for ef in args.ef:
            ours.modify(configuration={"hnsw": {"ef_search": ef}})
            ours = client.get_collection("docscraper", embedding_function=None)
            rows.append((f"docscraper, ef {ef}", {"ef_search": ef_search_of(ours)}, 0.0,
                         measure(ours, queries, exact, args.k)))

    kind = "uniform" if args.uniform else f"clustered (spread {args.spread})"
    print(f"{args.count} vectors of {args.dim} dimensions, {kind}; {args.queries} queries, recall@{args.k} "
          f"against exact cosine; one query at a time")
    print(f"{'collection':<22} {'configuration':<58} {'build s':>8} {'recall':>7} {'p50 ms':>7} {'p95 ms':>7}")
    for name, config, built, m in rows:
        shown = ", ".join(f"{k}={v}" for k, v in config.items() if k != "space")
        print(f"{name:<22} {shown:<58} {built:>8.1f} {m['recall']:>7.3f} {m['p50']:>7.2f} {m['p95']:>7.2f}")


if __name__ == "__main__":
    main()
