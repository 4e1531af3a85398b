"""Keyword ranking (BM25) of the indexed chunks, fused with the vector ranking by :mod:`docscraper.storage.search`.

The BM25 index is built with ``bm25s`` (English stop words, Snowball stemming) from the vector index's own chunk
texts, so the vector index stays the one store a crawl writes. It is cached under ``DATA_DIR/lexical/<collection>/``,
keyed by a fingerprint of every chunk id with its ``chunk_hash``; a search that finds another fingerprint rebuilds it,
once. A process that keeps a :class:`~docscraper.storage.search.Searcher` keeps it in memory and checks before each
question that the collection did not change. Why keywords, and what a build costs: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docscraper.storage.copies import copy_chunks

__all__ = ["LexicalIndex", "corpus_fingerprint", "tokenize"]

logger = logging.getLogger(__name__)

_STEMMER: Any = None


def _stemmer() -> Any:
    global _STEMMER
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("english")
    return _STEMMER


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens of two or more characters (``_`` is a word character, so ``string_agg``
    stays one), English stop words (NLTK's list) out, stemmed."""
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(list(texts), stopwords="en_plus", stemmer=_stemmer(),
                                            return_ids=False, show_progress=False)
    return tokens


def corpus_fingerprint(entries: Sequence[tuple[str, str]]) -> str:
    """The fingerprint of a collection from its ``(chunk id, chunk_hash)`` pairs, in any order."""
    digest = hashlib.sha256()
    for cid, chash in sorted(entries):
        digest.update(f"{cid}\t{chash}\n".encode())
    return digest.hexdigest()[:32]


@dataclass
class LexicalIndex:
    """BM25 over chunk texts; :meth:`top` ranks chunk ids for a question, within one source or all."""

    fingerprint: str
    ids: list[str]
    sources: np.ndarray  # the source of each chunk, aligned with ids
    bm25: Any
    #: the chunks of a single-page edition that copy a page it gathers (:mod:`docscraper.storage.copies`): search
    #: skips them
    copies: frozenset[str] = frozenset()

    @classmethod
    def build(cls, fingerprint: str, ids: Sequence[str], sources: Sequence[str],
              documents: Sequence[str]) -> LexicalIndex:
        import bm25s

        bm25 = bm25s.BM25()
        # An empty token list would leave a chunk out of bm25s's matrix and shift every id after it.
        bm25.index([tokens or [""] for tokens in tokenize(documents)], show_progress=False)
        marks = copy_chunks(ids, sources, documents)
        return cls(fingerprint, list(ids), np.asarray(list(sources), dtype=object), bm25,
                   frozenset(cid for cid, copy in zip(ids, marks, strict=True) if copy))

    def top(self, question: str, n: int, source: str | Sequence[str] | None = None) -> list[tuple[str, float]]:
        """At most *n* ``(chunk id, score)`` pairs, best first; chunks that share no term are left out."""
        if not self.ids:
            return []
        terms = tokenize([question])[0]
        token_ids = self.bm25.get_tokens_ids(terms)
        if not token_ids:
            return []
        scores = np.asarray(self.bm25.get_scores_from_ids(token_ids), dtype=np.float64)
        if isinstance(source, str):
            scores = np.where(self.sources == source, scores, 0.0)
        elif source is not None:
            scores = np.where(np.isin(self.sources, list(source)), scores, 0.0)
        n = min(n, len(scores))
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in best if scores[i] > 0]

    # --- the on-disk cache -------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        """Write the index to *folder* atomically (a sibling temporary folder, then a rename)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".lexical-", dir=folder.parent))
        try:
            self.bm25.save(str(tmp / "bm25"))
            (tmp / "chunks.json").write_text(json.dumps({
                "fingerprint": self.fingerprint, "ids": self.ids, "sources": [str(s) for s in self.sources],
                "copies": sorted(self.copies),
            }), encoding="utf-8")
            old = folder.with_name(folder.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            if folder.exists():
                os.replace(folder, old)
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, folder: Path, fingerprint: str) -> LexicalIndex | None:
        """The index cached in *folder* if it was built for *fingerprint*; None when absent, stale or
        unreadable (it is then rebuilt)."""
        import bm25s

        try:
            meta = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
            if meta.get("fingerprint") != fingerprint:
                return None
            bm25 = bm25s.BM25.load(str(folder / "bm25"), mmap=False)
            # a cache from before copies were marked has no "copies": it is rebuilt (KeyError), once
            return cls(fingerprint, list(meta["ids"]), np.asarray(meta["sources"], dtype=object), bm25,
                       frozenset(meta["copies"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.info("Rebuilding the keyword index: the cache in %s cannot be read (%s)", folder, exc)
            return None

    @staticmethod
    def fingerprint_at(folder: Path, generation: str) -> str | None:
        """The fingerprint the collection had at *generation* (:meth:`~docscraper.storage.vectors.VectorIndex.
        generation`), as recorded next to *folder*'s cache by :meth:`remember_generation`; None when unknown.
        A one-shot search then trusts the cache without reading every chunk id of the collection."""
        try:
            record = json.loads((folder / "generation.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("generation") != generation:
            return None
        fingerprint = record.get("fingerprint")
        return fingerprint if isinstance(fingerprint, str) else None

    @staticmethod
    def remember_generation(folder: Path, generation: str, fingerprint: str) -> None:
        """Record that the collection's fingerprint was *fingerprint* at *generation* (read before it was
        computed: a write since then changed the generation)."""
        try:
            tmp = folder / ".generation.json.tmp"
            tmp.write_text(json.dumps({"generation": generation, "fingerprint": fingerprint}), encoding="utf-8")
            os.replace(tmp, folder / "generation.json")
        except OSError as exc:  # a read-only data folder: the next search reads the chunk ids again
            logger.debug("Cannot record the index generation in %s: %s", folder, exc)

    @classmethod
    def for_index(cls, index: Any, folder: Path, fingerprint: str) -> LexicalIndex:
        """The keyword index of *index* (a :class:`~docscraper.storage.vectors.VectorIndex`) whose
        :func:`corpus_fingerprint` is *fingerprint*: from *folder*'s cache when it was built for it, else
        built from the collection's documents (and cached)."""
        cached = cls.load(folder, fingerprint)
        if cached is not None:
            return cached
        started = time.monotonic()
        ids, sources, documents = index.documents()
        built = cls.build(fingerprint, ids, sources, documents)
        logger.info("Built the keyword index of %d chunks in %.1f s", len(ids), time.monotonic() - started)
        try:
            built.save(folder)
        except OSError as exc:  # a read-only data folder still searches, only slower next time
            logger.warning("Cannot cache the keyword index in %s: %s", folder, exc)
        return built
