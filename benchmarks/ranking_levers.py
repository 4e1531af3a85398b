"""Ranking levers measured on kept indexes, tuned on one half of each question set and reported on the other.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ranking_levers.py \\
        --site python /tmp/ev/python benchmarks/python_docs_questions.json \\
        --site postgresql /tmp/pgindex benchmarks/postgresql_docs_questions.json ...

Each ``--site NAME DATA_DIR QUESTIONS`` names a data folder that a crawl with the index on filled
(``retrieval_eval.py --keep DIR``, or any ``DOCSCRAPER_DATA_DIR``) and a question file whose paths are
relative to the site's root, or to a folder given after the name (``fixture@/docs/``). Nothing is re-embedded but the questions (and, for the outline lever, one
short text per page): every lever here changes how the stored chunks are ranked, not the chunks. Levers
that need new chunks (chunk size, overlap, context prefixes) need a re-crawl with ``--full`` and are
measured with ``retrieval_eval.py`` instead.

The rankings are computed here with exact cosine similarity over the collection's vectors (Chroma's HNSW
is approximate); the row ``searcher`` asks :class:`~docscraper.storage.search.Searcher` itself, so the
gap between the two is visible. Every variant is scored by :mod:`docscraper.ops.evaluate` (the code of
``scrapy evaluate``): recall@1, recall@5 and MRR@10, on the tuning half (questions 1, 3, 5... of each
file), the held-out half (2, 4, 6...) and all, per site.

Levers:

* ``K``, ``w``: reciprocal rank fusion's constant and the keyword ranking's weight (10 and 0.75 in search);
* ``multi=d``: a page is scored by several of its chunks in each ranking, ranked among chunks, the j-th
  best adding ``d**j / (K + rank)`` (``d = 0``: its best chunk alone, at its chunk rank, as search
  does; 0.3 was tried and dropped on 2026-11-24); ``multi=None`` ranks the pages themselves, each by its best
  chunk, as search did before;
* ``kw=title``: the keyword index reads each chunk's page title and heading path before its text
  (``kw=title2``: twice, weighing them more);
* ``outline=v``: one short outline text per page (title, heading paths in order, the first 300
  characters) embedded and ranked as a third list of pages, weight ``v``.

* ``late=v``: late interaction (ColBERT's MaxSim) with the model's own token vectors
  (``encode(output_value="token_embeddings")``): the first :data:`LATE_POOL` chunks of the vector and the keyword
  ranking re-scored by the mean over the question's word pieces of each piece's best cosine similarity among the
  chunk's, the pages ranked by their best such chunk as one more list, weight ``v``; ``late_idf``: the question's
  pieces weighted by their idf over the site's chunks; ``late_pages=P``: only the fused ranking's first P pages
  re-scored, each by its first chunk in each ranking; ``late_kind=static``: context-free piece vectors (the
  model's input embeddings) on both sides, ``qctx``: the question's contextual vectors against the chunks'
  context-free ones; ``late_kind=pca64`` (``pca128``, ``pca32``): the token vectors projected on their first
  principal directions and rounded to int8, as an index could keep them. ``--late`` and ``--late-pca`` list these
  variants; ``--token-cache DIR`` keeps the chunks' token vectors between runs;
* ``kwlennorm=a``: a page's keyword score (only) divided by its chunk count to the power ``a``; ``--kwlen``
  lists these variants;
* ``wcode=c``: the keyword weight ``c`` for a question that names code (:data:`CODE_RE`), ``w`` for the others;
  ``--wcode`` lists these variants;
* ``hub=h, hub_k=k``: hubness reduction (CSLS): each chunk's cosine less ``h`` times its mean cosine to its ``k``
  nearest chunks of other pages (:func:`hubness`); ``--hub`` lists these variants;
* ``prefix=KIND``: the chunks embedded again with another context before their text (:data:`PREFIXES`: the
  heading path alone, the title without the words most of the site's titles share, or nothing), instead of the
  title and heading path that ship; ``--prefix`` lists these variants (about 35 chunks a second on 2 CPUs; the
  vectors are kept in ``--token-cache``).

The shipped fusion is ``K10 w0.75 multi=0 kw=text outline=0 copies=True`` (search leaves out the chunks that copy
a smaller page, :mod:`docscraper.storage.copies`); ``copies=False`` is the lever that turns that off.

``--fit`` instead fits a linear fusion of each candidate page's :data:`FEATURES` by coordinate ascent on the
tuning halves (``--no-set-worse``: taking no step that makes a set's tuning half worse than the shipped
fusion), and prints the shipped and the fitted fusion on both halves.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docscraper.ops.evaluate import Evaluation, Hit, Question, load_questions, score  # noqa: E402

DEPTH = 10  # results per question (MRR@10)
POOL = 80  # chunks each ranking contributes, as Searcher asks for k=10 (k * 8)


@dataclass
class Site:
    name: str
    ids: list[str]
    urls: list[str]  # the page URL of each chunk
    titles: list[str]
    headings: list[str]
    documents: list[str]
    vectors: np.ndarray
    questions: list[Question]
    qvectors: np.ndarray
    folder: str = "/"  # question paths are relative to this folder of the site
    sources: list[str] = field(default_factory=list)
    copies: np.ndarray | None = None  # chunks that copy a smaller page (docscraper.storage.copies)
    centroids: tuple[list[str], np.ndarray] | None = None  # page URLs, the mean of each page's chunk vectors
    page_chunks: dict[str, int] = field(default_factory=dict)  # page URL -> its number of chunks
    keyword: dict[str, Any] = field(default_factory=dict)  # variant -> LexicalIndex
    outline: tuple[list[str], np.ndarray] | None = None  # page URLs, outline vectors
    searcher_urls: list[list[str]] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)  # chunk id -> its row
    tokens: dict[int, np.ndarray] = field(default_factory=dict)  # chunk row -> its token vectors (late interaction)
    qtokens: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # question -> vectors, ids
    idf: np.ndarray | None = None  # word-piece id -> inverse document frequency over the chunks
    piece_ids: dict[int, np.ndarray] = field(default_factory=dict)  # chunk row -> its distinct word-piece ids
    pca: dict[int, np.ndarray] = field(default_factory=dict)  # dimensions -> principal directions of token vectors
    hub: dict[int, np.ndarray] = field(default_factory=dict)  # k -> each chunk's mean cosine to its k nearest elsewhere
    embedded: dict[str, np.ndarray] = field(default_factory=dict)  # prefix kind -> the chunks embedded so

    def __post_init__(self) -> None:
        self.position = {cid: i for i, cid in enumerate(self.ids)}


def load_site(name: str, index: Any, questions_path: Path, embed: Any) -> Site:
    collection = index.collection
    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    documents: list[str] = []
    vectors: list[np.ndarray] = []
    total = collection.count()
    for offset in range(0, total, 2000):
        got = collection.get(limit=2000, offset=offset, include=["documents", "metadatas", "embeddings"])
        ids += got["ids"]
        metas += got["metadatas"]
        documents += got["documents"]
        vectors.append(np.asarray(got["embeddings"], dtype=np.float32))
    matrix = np.vstack(vectors)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    questions = [q for q in load_questions(questions_path) if q.answers]
    qvectors = np.asarray(embed([q.text for q in questions]), dtype=np.float32)
    return Site(name, ids, [str(m.get("url", "")) for m in metas], [str(m.get("title", "")) for m in metas],
                [str(m.get("heading", "")) for m in metas], documents, matrix, questions, qvectors,
                sources=[str(m.get("source", "")) for m in metas])


def copy_marks(site: Site) -> np.ndarray:
    from docscraper.storage.copies import copy_chunks

    if site.copies is None:
        site.copies = np.asarray(copy_chunks(site.ids, site.sources, site.documents), dtype=bool)
    return site.copies


def keyword_index(site: Site, variant: str) -> Any:
    from docscraper.storage.lexical import LexicalIndex

    if variant not in site.keyword:
        if variant == "text":
            docs = site.documents
        else:
            times = 2 if variant == "title2" else 1
            docs = [("\n".join([t, h] * times) + "\n" + d) for t, h, d in
                    zip(site.titles, site.headings, site.documents, strict=True)]
        site.keyword[variant] = LexicalIndex.build(variant, site.ids, ["s"] * len(site.ids), docs)
    return site.keyword[variant]


def outlines(site: Site, embed: Any) -> tuple[list[str], np.ndarray]:
    if site.outline is None:
        order: dict[str, list[int]] = defaultdict(list)
        for i, url in enumerate(site.urls):
            order[url].append(i)
        pages = sorted(order)
        texts = []
        for url in pages:
            rows = order[url]
            title = site.titles[rows[0]]
            headings = list(dict.fromkeys(site.headings[i] for i in rows if site.headings[i]))
            first = min(rows, key=lambda i: site.ids[i])  # chunk ids end in the chunk's index
            texts.append("\n".join([title, *headings[:20], site.documents[first][:300]]))
        site.outline = (pages, np.asarray(embed(texts), dtype=np.float32))
    return site.outline


def centroids(site: Site) -> tuple[list[str], np.ndarray]:
    if site.centroids is None:
        order: dict[str, list[int]] = defaultdict(list)
        for i, url in enumerate(site.urls):
            order[url].append(i)
        pages = sorted(order)
        matrix = np.vstack([site.vectors[order[url]].mean(axis=0) for url in pages])
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        site.centroids = (pages, matrix)
        site.page_chunks = {url: len(rows) for url, rows in order.items()}
    return site.centroids


def hubness(site: Site, k: int) -> np.ndarray:
    """Each chunk's mean cosine similarity to its *k* nearest chunks of other pages: how much of a hub it is.

    Subtracting it from a question's cosine is CSLS (Conneau et al. 2018, "Word translation without parallel
    data"), which lowers chunks that are near everything (generic prose, long reference pages' many chunks)
    against those near few things. It costs one float per chunk, computed at index time."""
    if k not in site.hub:
        page = np.unique(np.asarray(site.urls), return_inverse=True)[1]
        out = np.empty(len(site.ids), dtype=np.float32)
        for start in range(0, len(site.ids), 1024):
            block = site.vectors[start:start + 1024] @ site.vectors.T
            block[page[start:start + 1024, None] == page[None, :]] = -1.0
            out[start:start + 1024] = np.partition(block, -k, axis=1)[:, -k:].mean(axis=1)
        site.hub[k] = out
    return site.hub[k]


#: What goes before a chunk's text when it is embedded (``prefix=KIND``): the page title and the heading path, as
#: shipped (``docscraper.content.chunking``: ``f"{title}\\n{heading}\\n\\n{text}"``), the heading path alone, the title
#: without what every page's title of the site shares (``site_title``), or nothing.
PREFIXES = ("ship", "heading", "title-site", "text")


def site_boilerplate(titles: list[str]) -> tuple[str, str]:
    """The words that begin and end at least half of a site's page titles (``"SDL: "``, ``" (GNU M4 1.4.19 macro
    processor)"``, ``" — Python 3.11.4 documentation"``): a prefix and a suffix, each possibly empty."""
    distinct = list(dict.fromkeys(t for t in titles if t))
    found = []
    for flip in (False, True):
        words = [(t.split(" ")[::-1] if flip else t.split(" ")) for t in distinct]
        common: list[str] = []
        for depth in range(1, 12):
            counts: dict[tuple[str, ...], int] = defaultdict(int)
            for w in words:
                if len(w) > depth:  # never the whole title
                    counts[tuple(w[:depth])] += 1
            best = max(counts.items(), key=lambda kv: kv[1], default=((), 0))
            if best[1] * 2 < len(distinct):
                break
            common = list(best[0])
        found.append(" ".join(common[::-1] if flip else common))
    return found[0], found[1]


def prefixed_text(site: Site, i: int, kind: str, boilerplate: tuple[str, str] = ("", "")) -> str:
    title, heading, text = site.titles[i], site.headings[i], site.documents[i]
    if kind == "title-site":
        start, end = boilerplate
        if start and title.startswith(start + " "):
            title = title[len(start) + 1:]
        if end and title.endswith(" " + end):
            title = title[: -len(end) - 1]
    parts = {"ship": [title, heading], "heading": [heading], "title-site": [title, heading], "text": []}[kind]
    prefix = "\n".join(p for p in parts if p)
    return f"{prefix}\n\n{text}" if prefix else text


def embed_prefixed(site: Site, kind: str, embed: Any, cache: Path | None) -> np.ndarray:
    """The site's chunks embedded with another prefix (:data:`PREFIXES`), kept in *cache* between runs."""
    if kind == "ship":
        return site.vectors
    if kind in site.embedded:
        return site.embedded[kind]
    path = cache / f"{site.name}-prefix-{kind}.npz" if cache else None
    saved = load_cached(path, site)
    if saved is not None:
        site.embedded[kind] = saved["vectors"]
        return saved["vectors"]
    boilerplate = site_boilerplate(site.titles)
    started = time.monotonic()
    parts = []
    for start in range(0, len(site.ids), 512):
        texts = [prefixed_text(site, i, kind, boilerplate) for i in range(start, min(start + 512, len(site.ids)))]
        parts.append(np.asarray(embed(texts), dtype=np.float32))
    matrix = np.vstack(parts)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    site.embedded[kind] = matrix
    print(f"{site.name}: {len(site.ids)} chunks embedded with prefix {kind} (title boilerplate "
          f"{boilerplate!r}) in {time.monotonic() - started:.0f} s", flush=True)
    if path is not None:
        save_cached(path, site, {"vectors": matrix})
    return matrix


def ids_digest(site: Site) -> str:
    return hashlib.sha256("\n".join(site.ids).encode()).hexdigest()


def load_cached(path: Path | None, site: Site) -> dict[str, np.ndarray] | None:
    """The arrays :func:`save_cached` kept in *path* for the same chunks in the same rows, or None."""
    if path is None or not path.exists():
        return None
    with np.load(path) as saved:
        if str(saved["ids"]) != ids_digest(site):
            return None
        return {name: saved[name] for name in saved.files if name != "ids"}


def save_cached(path: Path, site: Site, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, ids=np.asarray(ids_digest(site)), **arrays)


#: A question that names code: a dotted name, a call, an option, snake_case or camelCase, a path.
CODE_RE = re.compile(r"\w\.\w|\w\(|(?:^|\s)--?\w|\w_\w|[a-z][A-Z]|\w/\w")
LATE_POOL = 30  # chunks of each ranking (vector, keyword) re-scored by late interaction


@functools.cache
def late_model() -> Any:
    """The bundled model, through sentence-transformers' public ``encode(output_value="token_embeddings")``."""
    from sentence_transformers import SentenceTransformer

    from docscraper.storage.embedding import default_model_path

    return SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)


def _token_vectors(texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each text's normalized token vectors and word-piece ids, [CLS] and [SEP] left out."""
    model = late_model()
    out = model.encode(texts, output_value="token_embeddings", batch_size=32, convert_to_numpy=False)
    ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    result = []
    for vectors, pieces in zip(out, ids, strict=True):
        matrix = vectors.float().numpy()[1:-1]
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        result.append((matrix, np.asarray(pieces[1:-1])))
    return result


@functools.cache
def static_vectors() -> np.ndarray:
    """The model's input word-piece embeddings (``get_input_embeddings()``), normalized: context-free token vectors."""
    table = late_model()[0].auto_model.get_input_embeddings().weight.detach().float().numpy().copy()
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-9)
    return table


def _pieces(site: Site, rows: list[int]) -> None:
    missing = [i for i in rows if i not in site.piece_ids]
    if missing:
        tokenizer = late_model().tokenizer
        ids = tokenizer([site.documents[i] for i in missing], truncation=True,
                        max_length=late_model().max_seq_length)["input_ids"]
        for i, pieces in zip(missing, ids, strict=True):
            site.piece_ids[i] = np.unique(np.asarray(pieces[1:-1]))


def pca_basis(site: Site, dims: int) -> np.ndarray:
    """The first *dims* principal directions of the site's token vectors (a sample of 500 chunks' worth)."""
    if dims not in site.pca:
        rows = sorted(site.tokens)[:: max(1, len(site.tokens) // 500)]
        sample = np.vstack([site.tokens[i].astype(np.float32) for i in rows])
        _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
        site.pca[dims] = vt[:dims].T.copy()
    return site.pca[dims]


def _int8(matrix: np.ndarray) -> np.ndarray:
    """*matrix*'s rows normalized, then rounded to int8 steps (one scale per row) and read back."""
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    scale = np.maximum(np.abs(matrix).max(axis=1, keepdims=True), 1e-9) / 127
    return np.round(matrix / scale) * scale


def late_scores(site: Site, qi: int, rows: list[int], idf: bool, kind: str = "token") -> dict[int, float]:
    """MaxSim (ColBERT's late interaction) of question *qi* against each chunk row, with the model's own token
    vectors: the mean over the question's word pieces (weighted by their idf with *idf*) of each piece's best
    cosine similarity among the chunk's pieces. *kind* ``static``: the chunks' pieces by their input (context-free)
    embeddings, and the question's too; ``qctx``: the question's contextual token vectors against the chunks'
    context-free ones (nothing to compute or store per chunk)."""
    rows = list(dict.fromkeys(rows))
    if kind == "token":
        missing = [i for i in rows if i not in site.tokens]
        if missing:
            for i, (matrix, _) in zip(missing, _token_vectors([site.documents[i] for i in missing]), strict=True):
                site.tokens[i] = matrix.astype(np.float16)
    else:
        _pieces(site, rows)
    if qi not in site.qtokens:
        site.qtokens[qi] = _token_vectors([site.questions[qi].text])[0]
    qmatrix, qids = site.qtokens[qi]
    if kind == "static":
        qmatrix = static_vectors()[qids]
    if idf:
        if site.idf is None:
            tokenizer = late_model().tokenizer
            df = np.zeros(tokenizer.vocab_size + 8, dtype=np.float64)
            for start in range(0, len(site.documents), 2000):
                for pieces in tokenizer(site.documents[start:start + 2000], truncation=True,
                                        max_length=late_model().max_seq_length)["input_ids"]:
                    df[np.unique(pieces)] += 1
            site.idf = np.log((len(site.documents) + 1) / (df + 1))
        weights = site.idf[qids]
    else:
        weights = np.ones(len(qids))
    weights = weights / max(weights.sum(), 1e-9)
    if kind == "token":
        return {i: float((site.tokens[i].astype(np.float32) @ qmatrix.T).max(axis=0) @ weights) for i in rows}
    if kind.startswith("pca"):  # what an index could keep: the token vectors projected, renormalized, in int8
        basis = pca_basis(site, int(kind[3:]))
        qp = qmatrix @ basis
        qp /= np.maximum(np.linalg.norm(qp, axis=1, keepdims=True), 1e-9)
        return {i: float((_int8(site.tokens[i].astype(np.float32) @ basis) @ qp.T).max(axis=0) @ weights)
                for i in rows}
    table = static_vectors()
    return {i: float((table[site.piece_ids[i]] @ qmatrix.T).max(axis=0) @ weights) for i in rows}


def rrf_pages(ranking: list[int], urls: list[str], K: float, decay: float) -> dict[str, float]:
    """Each page's score in one chunk ranking. *decay* None: the page's rank among pages (each ranked
    by its best chunk) gives 1 / (K + rank), as :class:`~docscraper.storage.search.Searcher` did before;
    otherwise ranks are the chunks' own, and a page's j-th chunk at rank r adds decay**j / (K + r)."""
    seen: dict[str, int] = defaultdict(int)
    scores: dict[str, float] = defaultdict(float)
    if decay is None:
        pages = list(dict.fromkeys(urls[i] for i in ranking))
        return {url: 1 / (K + rank) for rank, url in enumerate(pages, 1)}
    for rank, i in enumerate(ranking, 1):
        url = urls[i]
        j = seen[url]
        seen[url] += 1
        if j == 0 or decay > 0:
            scores[url] += (decay ** j) / (K + rank)
    return scores


def ranked_pages(site: Site, qi: int, *, K: float, w: float, decay: float | None, kw: str, outline: float,
                 embed: Any, copies: bool = False, centroid: float = 0, lennorm: float = 0,
                 rocchio: float = 0, late: float = 0, late_idf: bool = False, late_pages: int = 0,
                 late_kind: str = "token", kwlennorm: float = 0, wcode: float | None = None,
                 hub: float = 0, hub_k: int = 10, prefix: str = "ship") -> list[str]:
    if wcode is not None and CODE_RE.search(site.questions[qi].text):
        w = wcode  # a question that names code (a dotted name, a call, an option) leans on the keywords
    qv = site.qvectors[qi]
    vectors = site.vectors if prefix == "ship" else site.embedded[prefix]  # filled by embed_prefixed()
    sims = vectors @ qv
    if rocchio > 0:  # pseudo-relevance feedback: the question moved towards its three nearest chunks
        near = np.argsort(-sims, kind="stable")[:3]
        qv = qv + rocchio * vectors[near].mean(axis=0)
        qv = qv / np.linalg.norm(qv)
        sims = vectors @ qv
    if hub > 0:  # CSLS: each chunk's cosine less *hub* times its hubness
        sims = sims - hub * hubness(site, hub_k)
    dense = list(np.argsort(-sims, kind="stable")[:POOL])
    skip = copy_marks(site) if copies else None
    if skip is not None:
        dense = [i for i in dense if not skip[i]]
    total: dict[str, float] = defaultdict(float)
    order: dict[str, float] = {}
    for url, s in rrf_pages(dense, site.urls, K, decay).items():
        total[url] += s
    if w > 0:
        index = keyword_index(site, kw)
        keyword = [site.position[cid] for cid, _ in index.top(site.questions[qi].text, POOL)]
        if skip is not None:
            keyword = [i for i in keyword if not skip[i]]
        for url, s in rrf_pages(keyword, site.urls, K, decay).items():
            total[url] += w * s / site.page_chunks[url] ** kwlennorm  # page_chunks: filled by centroids()
    if outline > 0:
        pages, ov = outlines(site, embed)
        best = np.argsort(-(ov @ qv), kind="stable")[:POOL]
        for rank, p in enumerate(best, 1):
            total[pages[p]] += outline / (K + rank)
    if late > 0 and not late_pages:  # the pools' first chunks re-scored by late interaction: one more list of pages
        pool = list(dict.fromkeys(dense[:LATE_POOL] + keyword[:LATE_POOL] if w > 0 else dense[:LATE_POOL]))
        scores = late_scores(site, qi, pool, late_idf, late_kind)
        best_late: dict[str, float] = {}
        for i in pool:
            best_late[site.urls[i]] = max(best_late.get(site.urls[i], -1.0), scores[i])
        for rank, url in enumerate(sorted(best_late, key=lambda u: -best_late[u]), 1):
            total[url] += late / (K + rank)
    if centroid > 0:
        pages, cv = centroids(site)
        best = np.argsort(-(cv @ qv), kind="stable")[:POOL]
        for rank, p in enumerate(best, 1):
            total[pages[p]] += centroid / (K + rank)
    if lennorm > 0:
        centroids(site)
        for url in total:
            total[url] /= site.page_chunks[url] ** lennorm
    if late > 0 and late_pages:  # only the first *late_pages* pages re-ranked, each by its first chunk in each pool
        top = sorted(total, key=lambda u: -total[u])[:late_pages]
        first: dict[str, list[int]] = defaultdict(list)
        for ranking in (dense, keyword) if w > 0 else (dense,):
            seen: set[str] = set()
            for i in ranking:
                if site.urls[i] in top and site.urls[i] not in seen:
                    seen.add(site.urls[i])
                    first[site.urls[i]].append(i)
        scores = late_scores(site, qi, [i for rows in first.values() for i in rows], late_idf, late_kind)
        best_late = {url: max(scores[i] for i in rows) for url, rows in first.items()}
        for rank, url in enumerate(sorted(best_late, key=lambda u: -best_late[u]), 1):
            total[url] += late / (K + rank)
    # ties: the vector ranking's order
    for rank, i in enumerate(dense):
        order.setdefault(site.urls[i], rank)
    return sorted(total, key=lambda u: (-total[u], order.get(u, POOL)))[:DEPTH]


#: The features of a page for one question (``--fit``): reciprocal ranks (``1 / (K + rank)``, 0 when the page
#: is not in that list) in the vector ranking of chunks, the keyword ranking of chunks, the ranking of pages
#: by their mean chunk vector and by their outline vector; then the page's log chunk count, the share of the
#: question's words in the page's title, and the cosine similarity of the page's best chunk.
FEATURES = ("dense", "keyword", "centroid", "outline", "length", "title", "cosine")
#: The values ``--fit`` tries for each weight (the vector ranking's weight is 1); the length weight is subtracted.
WEIGHT_GRID = {
    "keyword": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
    "centroid": (0.0, 0.15, 0.3, 0.6, 1.0),
    "outline": (0.0, 0.15, 0.3, 0.6, 1.0),
    "length": (0.0, 0.001, 0.002, 0.004, 0.008, 0.016),
    "title": (0.0, 0.005, 0.01, 0.02, 0.04, 0.08),
    "cosine": (0.0, 0.025, 0.05, 0.1, 0.2),
}
_WORD_RE = re.compile(r"[a-z0-9_]{3,}")
_STOP = frozenset({
    "the", "and", "for", "with", "how", "can", "what", "which", "does", "when", "from", "that", "this", "into",
    "are", "use", "using", "get", "set", "not", "all", "its", "one", "way", "make", "without", "any", "should",
    "there", "their", "will",
})


def _words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if w not in _STOP}


def candidate_features(site: Site, qi: int, embed: Any, K: float = 10) -> tuple[list[str], list[int], np.ndarray]:
    """The candidate pages of question *qi* (those of the vector and keyword pools), their vector-ranking
    order (for ties) and their :data:`FEATURES`."""
    qv = site.qvectors[qi]
    sims = site.vectors @ qv
    dense = list(np.argsort(-sims, kind="stable")[:POOL])
    index = keyword_index(site, "text")
    keyword = [site.position[cid] for cid, _ in index.top(site.questions[qi].text, POOL)]
    dense_rr = rrf_pages(dense, site.urls, K, 0)
    keyword_rr = rrf_pages(keyword, site.urls, K, 0)
    pages = list(dict.fromkeys([site.urls[i] for i in dense] + [site.urls[i] for i in keyword]))
    cpages, cv = centroids(site)
    crank = {cpages[p]: r for r, p in enumerate(np.argsort(-(cv @ qv), kind="stable"), 1)}
    opages, ov = outlines(site, embed)
    orank = {opages[p]: r for r, p in enumerate(np.argsort(-(ov @ qv), kind="stable"), 1)}
    best: dict[str, float] = {}  # the page's first chunk in the vector ranking, else in the keyword ranking
    title: dict[str, str] = {}
    for i in (*dense, *keyword):
        best.setdefault(site.urls[i], float(sims[i]))
        title.setdefault(site.urls[i], site.titles[i])
    words = _words(site.questions[qi].text)
    rows = []
    for url in pages:
        tw = _words(title[url])
        rows.append([
            dense_rr.get(url, 0.0), keyword_rr.get(url, 0.0), 1 / (K + crank[url]), 1 / (K + orank[url]),
            float(np.log(site.page_chunks[url])), len(words & tw) / max(1, len(words)), best[url],
        ])
    order: dict[str, int] = {}
    for rank, i in enumerate(dense):
        order.setdefault(site.urls[i], rank)
    return pages, [order.get(u, POOL) for u in pages], np.asarray(rows, dtype=np.float64)


def fused(features: tuple[list[str], list[int], np.ndarray], weights: dict[str, float]) -> list[str]:
    pages, order, matrix = features
    vector = np.asarray([1.0, weights["keyword"], weights["centroid"], weights["outline"], -weights["length"],
                         weights["title"], weights["cosine"]])
    scores = matrix @ vector
    ranked = sorted(range(len(pages)), key=lambda j: (-scores[j], order[j]))
    return [pages[j] for j in ranked[:DEPTH]]


def fit(sites: list[Site], embed: Any, passes: int = 3, *,
        no_set_worse: bool = False) -> tuple[dict[str, float], list[dict[str, Evaluation]]]:
    """Coordinate ascent on the tuning halves (mean of recall@1 + MRR/2 over the sets) from the shipped fusion.
    With *no_set_worse*, a move is taken only if no set's tuning half scores below the shipped fusion's."""
    features = [[candidate_features(s, i, embed) for i in range(len(s.questions))] for s in sites]

    def results(weights: dict[str, float]) -> list[dict[str, Evaluation]]:
        return [evaluate(s, lambda i, f=f: fused(f[i], weights)) for s, f in zip(sites, features, strict=True)]

    def per_set(rs: list[dict[str, Evaluation]]) -> list[float]:
        return [r["tune"].recall(1) + 0.5 * r["tune"].mrr for r in rs]

    weights = {name: 0.0 for name in WEIGHT_GRID}
    weights["keyword"] = 0.75
    floor = per_set(results(weights))
    best = sum(floor) / len(floor)
    for _ in range(passes):
        moved = False
        for name, values in WEIGHT_GRID.items():
            for value in values:
                trial = {**weights, name: value}
                scores = per_set(results(trial))
                score = sum(scores) / len(scores)
                if no_set_worse and any(a < b - 1e-9 for a, b in zip(scores, floor, strict=True)):
                    continue
                if score > best + 1e-9:
                    best, weights, moved = score, trial, True
        if not moved:
            break
    return weights, results(weights)


def evaluate(site: Site, pages_of: Any) -> dict[str, Evaluation]:
    """Scores on the tuning half (odd lines), the held-out half (even lines) and all."""
    answers = {q.text: pages_of(i) for i, q in enumerate(site.questions)}

    def root_of(hit: Hit) -> str:
        parts = urlsplit(hit.url)
        return f"{parts.scheme}://{parts.netloc}{site.folder}"

    def search(text: str, k: int) -> list[Hit]:
        return [Hit(u) for u in answers[text][:k]]

    halves = {"tune": site.questions[0::2], "held": site.questions[1::2], "all": site.questions}
    return {name: score(qs, search, root_of, k=DEPTH) for name, qs in halves.items()}


#: The fusion search ships (``docscraper.storage.search``), as :func:`ranked_pages` arguments.
SHIPPED: dict[str, Any] = dict(K=10, w=0.75, decay=0, kw="text", outline=0, copies=True)
#: ``--levers``: each lever changed alone (or two together) from :data:`SHIPPED`.
LEVERS: list[dict[str, Any]] = [
    {}, dict(copies=False), dict(w=0.5), dict(w=1.0), dict(kw="title"), dict(outline=0.5), dict(centroid=0.3),
    dict(centroid=0.6), dict(lennorm=0.05), dict(lennorm=0.1), dict(decay=0.3), dict(K=30), dict(rocchio=0.3),
    dict(rocchio=0.7), dict(lennorm=0.15), dict(lennorm=0.2), dict(centroid=0.6, lennorm=0.1),
    dict(outline=0.5, lennorm=0.1), dict(centroid=0.3, lennorm=0.05),
]
#: ``--levers --NAME``: another list of changes instead of :data:`LEVERS`, with what it is for.
LEVER_SETS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "late": ("only the late-interaction variants (and lennorm=0.05) beside the shipped fusion", [
        {}, dict(lennorm=0.05), *(change for idf in (False, True) for change in (
            *(dict(late=v, late_idf=idf) for v in (0.5, 1.0, 2.0, 3.0, 4.0)),
            *(dict(late=v, late_idf=idf, late_pages=10) for v in (1.0, 2.0, 4.0)),
            dict(late=2.0, late_idf=idf, lennorm=0.05),
            *(dict(late=v, late_idf=idf, late_kind=kind) for kind in ("static", "qctx") for v in (1.0, 2.0)),
        )),
    ]),
    "late-pca": ("late interaction (weight 2, idf) with token vectors projected to 128, 64, 32 dimensions in "
                 "int8, as an index could keep them (needs --token-cache filled)",
                 [{}, *(dict(late=2.0, late_idf=True, late_kind=k) for k in ("token", "pca128", "pca64", "pca32"))]),
    "wcode": ("only the keyword weight chosen by whether the question names code (wcode)",
              [{}, *(dict(w=w, wcode=c) for w in (0.5, 0.6) for c in (0.75, 1.0)), dict(wcode=1.0)]),
    "hub": ("only hubness reduction of the vector ranking (CSLS: cosine less hub x the chunk's mean cosine to its "
            "hub_k nearest chunks of other pages)",
            [{}, *(dict(hub=h, hub_k=k) for k in (10, 50) for h in (0.25, 0.5, 0.75, 1.0))]),
    "prefix": ("only what goes before a chunk's text when it is embedded (PREFIXES; the chunks embedded again, "
               "kept in --token-cache)",
               [{}, *(dict(prefix=k) for k in PREFIXES[1:])]),
    "kwlen": ("only the keyword ranking's length normalization (kwlennorm) beside the shipped fusion",
              [{}, dict(lennorm=0.05), *(dict(kwlennorm=a) for a in (0.1, 0.2, 0.3, 0.5)),
               dict(kwlennorm=0.2, w=1.0), dict(kwlennorm=0.3, w=1.0), dict(kwlennorm=0.5, w=1.5)]),
}


def figures(e: Evaluation) -> str:
    return f"{e.recall(1):.3f} {e.recall(5):.3f} {e.mrr:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--site", nargs=3, action="append", metavar=("NAME", "DATA_DIR", "QUESTIONS"),
                        required=True)
    parser.add_argument("--quick", action="store_true", help="only the main variants")
    parser.add_argument("--fit", action="store_true",
                        help="fit a linear fusion of the page features (FEATURES) on the tuning halves, report held-out")
    parser.add_argument("--no-set-worse", action="store_true",
                        help="with --fit: take no step that makes any set's tuning half worse than the shipped fusion")
    parser.add_argument("--levers", action="store_true",
                        help="the shipped fusion and each lever changed alone from it (not the whole grid)")
    for name, (help_text, _) in LEVER_SETS.items():
        parser.add_argument(f"--{name}", action="store_true", help=f"with --levers: {help_text}")
    parser.add_argument("--token-cache", metavar="DIR",
                        help="keep the chunks' token vectors (late interaction) in DIR between runs (one file per site)")
    args = parser.parse_args(argv)
    flagged = [name for name in LEVER_SETS if getattr(args, name.replace("-", "_"))]
    if len(flagged) > 1:
        parser.error("one of " + ", ".join(f"--{name}" for name in LEVER_SETS) + " at a time")

    from docscraper.config import DocscraperConfig
    from docscraper.storage.backends import load_query_embedder
    from docscraper.storage.search import Searcher
    from docscraper.storage.vectors import ChromaIndex

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    sites = []
    embedder = None
    for label, data_dir, questions in args.site:
        name, _, folder = label.partition("@")
        config = DocscraperConfig(data_dir=Path(data_dir), state_url="sqlite://")
        if embedder is None:
            embedder = load_query_embedder(config)
        started = time.monotonic()
        index = ChromaIndex(path=Path(data_dir) / "chroma")
        site = load_site(name, index, Path(questions), embedder.embed)
        site.folder = folder or "/"
        searcher = Searcher(config, embedder=embedder, index=index)
        site.searcher_urls = [[r.url for r in searcher.search(q.text, k=DEPTH)] for q in site.questions]
        sites.append(site)
        print(f"{name}: {len(site.ids)} chunks, {len(set(site.urls))} pages, {len(site.questions)} questions "
              f"({time.monotonic() - started:.0f} s to load)", flush=True)
    assert embedder is not None
    for site in sites:
        centroids(site)
        if args.token_cache:
            saved = load_cached(Path(args.token_cache) / f"{site.name}.npz", site)
            if saved is not None:
                site.tokens = {int(k): v for k, v in saved.items()}

    if args.fit:
        base = [evaluate(s, lambda i, s=s: ranked_pages(s, i, embed=embedder.embed, **SHIPPED)) for s in sites]
        weights, fitted = fit(sites, embedder.embed, no_set_worse=args.no_set_worse)
        print("\nfitted on the tuning halves: " + ", ".join(f"{k}={v:g}" for k, v in weights.items()))
        print(f"{'set':12}{'shipped: tune':>22}{'held-out':>20}   {'fitted: tune':>20}{'held-out':>20}")
        for site, b, f in zip(sites, base, fitted, strict=True):
            print(f"{site.name:12}{figures(b['tune']):>22}{figures(b['held']):>20}   "
                  f"{figures(f['tune']):>20}{figures(f['held']):>20}")
        for label, rs in (("shipped", base), ("fitted", fitted)):
            for half in ("tune", "held"):
                mean = [sum(r[half].recall(k) for r in rs) / len(rs) for k in (1, 5)]
                mrr = sum(r[half].mrr for r in rs) / len(rs)
                print(f"mean {label:8} {half:5} r@1 {mean[0]:.3f} r@5 {mean[1]:.3f} MRR {mrr:.3f}")
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
        embedder.close()
        return 0

    variants: list[tuple[str, dict[str, Any]]] = [("before (pages among pages, w0.5)", dict(K=10, w=0.5, decay=None,
                                                                              kw="text", outline=0))]
    grid = [dict(K=K, w=w, decay=d, kw=kw, outline=o) for K, w, d, kw, o in itertools.product(
        (10, 30) if not args.quick else (10,), (0.5, 0.75) if not args.quick else (0.5,),
        (None, 0, 0.3, 0.5), ("text", "title", "title2"), (0, 0.5, 1.0))]
    if args.levers:
        changes = LEVER_SETS[flagged[0]][1] if flagged else LEVERS
        grid = [{**SHIPPED, **change} for change in changes]
        for kind in dict.fromkeys(str(change.get("prefix", "ship")) for change in changes):
            for site in sites:
                embed_prefixed(site, kind, embedder.embed, Path(args.token_cache) if args.token_cache else None)
    for params in grid:
        label = (f"K{params['K']} w{params['w']} multi={params['decay']} kw={params['kw']} "
                 f"outline={params['outline']}" + "".join(f" {name}={params[name]}" for name in
                                                         ("copies", "centroid", "lennorm", "rocchio", "late", "late_idf",
                                                          "late_pages", "late_kind", "kwlennorm",
                                                          "wcode", "hub", "hub_k", "prefix")
                                                         if name in params))
        variants.append((label, params))

    header = "".join(f"{s.name:^36}" for s in sites)
    print(f"\n{'':64}{header}")
    print(f"{'variant':64}" + "".join(f"{'tune':^12}{'held-out':^12}{'all':^12}" for _ in sites))
    rows: list[tuple[str, list[dict[str, Evaluation]]]] = []
    results = [evaluate(s, lambda i, s=s: s.searcher_urls[i]) for s in sites]
    rows.append(("searcher (Chroma HNSW, as shipped)", results))
    for label, params in variants:
        results = [evaluate(s, lambda i, s=s, p=params: ranked_pages(s, i, embed=embedder.embed, **p))
                   for s in sites]
        rows.append((label, results))
    for label, results in rows:
        cells = "".join(f" {figures(r['tune'])} | {figures(r['held'])} | {figures(r['all'])} ||"
                        for r in results)
        print(f"{label:64}{cells}", flush=True)

    def tune_score(results: list[dict[str, Evaluation]]) -> float:
        return sum(r["tune"].recall(1) + 0.5 * r["tune"].mrr for r in results) / len(results)

    base = rows[2] if args.levers else rows[1]
    best = max(rows[2:], key=lambda row: tune_score(row[1]))
    print(f"\nbest on the tuning halves (mean of recall@1 + MRR/2): {best[0]}")
    for site, r in zip(sites, best[1], strict=True):
        print(f"  {site.name}: held-out {figures(r['held'])}  ({base[0]}: {figures(base[1][sites.index(site)]['held'])})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if args.token_cache:
        for site in sites:
            if site.tokens:
                save_cached(Path(args.token_cache) / f"{site.name}.npz", site,
                            {str(k): v for k, v in site.tokens.items()})
    embedder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
