"""Search the index: the best chunks for a question, at most one per page by default.

``scrapy search "question" [-k 5] [--source NAME] [--json] [--images]`` from the project root, or :func:`search` from
a program; a :class:`Searcher` keeps the model and the index open for many questions. Ranking is hybrid: the vector
ranking (weight 1) and the BM25 keyword ranking of :mod:`docscraper.storage.lexical` (weight
``DOCSCRAPER_SEARCH_KEYWORD_WEIGHT``, 0.75; 0 turns it off) are fused by reciprocal rank, each adding ``weight /
(RRF_K + rank)``: pages at the rank of their best chunk (with ``per_page=None``, the chunks themselves), less the
chunks of a single-page edition that copy a smaller page (:mod:`docscraper.storage.copies`). A result's ``score``
stays its chunk's cosine similarity. ``with_images`` and ``with_aliases`` add its page's images and other URLs; a
search reads one version of each library (:mod:`docscraper.storage.libraries`) unless ``all_versions``. Why, and
how it was measured: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from docscraper.config import DocscraperConfig
from docscraper.storage.backends import load_query_embedder, open_state_store, open_vector_index
from docscraper.storage.embedding import Embedder
from docscraper.storage.lexical import LexicalIndex, corpus_fingerprint
from docscraper.storage.libraries import SourceVersions, search_sources
from docscraper.storage.model_identity import ModelMismatch, model_identity
from docscraper.storage.vectors import SearchHit, VectorIndex

if TYPE_CHECKING:
    from docscraper.storage.state import StateStore

__all__ = ["MAX_CANDIDATES", "MAX_K", "SearchResult", "Searcher", "check_model", "search"]

logger = logging.getLogger(__name__)

#: Reciprocal rank fusion's constant: a list's item at rank r adds weight / (RRF_K + r).
RRF_K = 10
#: The most results one question may ask for (``k``; ``scrapy search -k``, ``scrapy evaluate -k``).
MAX_K = 1000
#: The most chunks one question asks each ranking for, however few pages they fall on (at least ``MAX_K``).
MAX_CANDIDATES = 2000


@dataclass(frozen=True)
class SearchResult:
    rank: int
    score: float
    url: str
    title: str
    heading: str
    text: str
    source: str
    page_id: str
    chunk_id: str
    # the page's images, [{url, alt, caption}], when asked for (with_images); empty otherwise
    images: list[dict[str, str | None]] = field(default_factory=list)
    # the page's other URLs (aliases: the site serves the same content there), when asked for (with_aliases)
    aliases: list[str] = field(default_factory=list)
    # the page of a paged document (a PDF) the chunk starts on, and its last; url then ends with #page=N
    page_number: int | None = None
    page_end: int | None = None
    # the library and version of the result's source, when it is a version of a library
    library: str | None = None
    version: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_model(config: DocscraperConfig, index: VectorIndex) -> None:
    """:class:`ModelMismatch` when the index's vectors were made by another model than *config*'s: a
    question embedded by one model is no nearer to the right chunks of another's."""
    recorded = index.recorded_model()
    if recorded is None:
        return
    mine = model_identity(config)
    if not recorded.same_model(mine):
        raise ModelMismatch(
            f"the index at {index.location} holds vectors of model {recorded.describe()}, but "
            f"DOCSCRAPER_EMBEDDING_MODEL names {mine.describe()}: its answers would be meaningless. Search with "
            "the index's model, or recrawl the sources with --full to embed them with the new one")


class Searcher:
    """The model and the index, open for many questions; the state database (for ``with_images``) is
    opened on the first question that needs it, unless *store* is given. The index's model is checked
    against the configured one (:func:`check_model`) unless the caller brings its own *embedder*
    (*check* says otherwise)."""

    def __init__(self, config: DocscraperConfig, *, embedder: Embedder | None = None,
                 index: VectorIndex | None = None, store: StateStore | None = None,
                 check: bool | None = None) -> None:
        self.config = config
        self._store = store
        self._own_store: StateStore | None = None
        self._lexical: LexicalIndex | None = None
        self._lexical_stamp: object | None = None
        self.index = index or open_vector_index(config)
        if check if check is not None else embedder is None:
            check_model(config, self.index)
        self.embedder = embedder or load_query_embedder(config)

    def search(self, question: str, *, k: int = 5, source: str | None = None,
               per_page: int | None = 1, with_images: bool = False,
               with_aliases: bool = False, library: str | None = None, version: str | None = None,
               all_versions: bool = False) -> list[SearchResult]:
        """The *k* best chunks for *question*; at most *per_page* per page (None: no limit). With
        *with_images*, each result lists its page's images; with *with_aliases*, its page's other URLs
        (both read from the state database). *source* reads one source; otherwise one version of each library
        is read (:func:`~docscraper.storage.libraries.search_sources`): *library* alone, at *version* (default:
        the latest), or all of its versions (*all_versions*). ``ValueError`` for an empty question, *k* not
        from 1 to :data:`MAX_K`, *per_page* below 1, or a source with a library; ``LookupError`` for an unknown
        library or version."""
        if not question.strip():
            raise ValueError("the question is empty")
        k = _whole(k, "k", 1, MAX_K)
        if per_page is not None:
            per_page = _whole(per_page, "per_page", 1, None)
        sources, versions = self._sources(source, library, version, all_versions)
        if sources is not None and not sources:
            return []
        vector = self.embedder.embed([question])[0]
        weight = self.config.search_keyword_weight
        # Asking for more than k leaves room for the per-page limit; when a few pages hold all those
        # chunks, ask again for more, so that k pages come back whenever the index has them.
        wanted = k if per_page is None else min(k * 8, MAX_CANDIDATES)
        while True:
            hits = self.index.query(vector, wanted, sources)
            exhausted = len(hits) < wanted
            if weight > 0 and hits:
                lexical = self.keywords()
                # a copy of a smaller page's passage (a single-page edition's) gives way to that page
                hits = [hit for hit in hits if hit.id not in lexical.copies] if lexical.copies else hits
                hits = self._fuse(question, vector, hits, wanted, sources, weight, per_page, lexical)
            results = _results(hits, k, per_page)
            if len(results) >= k or exhausted or wanted >= MAX_CANDIDATES:
                break
            wanted = min(wanted * 4, MAX_CANDIDATES)
        if (with_images or with_aliases) and results:
            results = self._with_state(results, images=with_images, aliases=with_aliases)
        if versions is not None and versions.versions:
            results = [replace(r, library=versions.versions[r.source].library, version=versions.versions[r.source].version)
                       if r.source in versions.versions else r for r in results]
        return results

    def _sources(self, source: str | None, library: str | None, version: str | None,
                 all_versions: bool) -> tuple[str | list[str] | None, SourceVersions | None]:
        """What the index is asked for: one source, the sources of the versions read, or every source (None);
        and the sources' libraries and versions, when read from the state."""
        if source is not None:
            if library is not None or version is not None:
                raise ValueError("search one source, or a library (and version): not both")
            return source, None
        store = self._state()
        versions = SourceVersions.from_scopes(store.source_scopes() if store is not None else {})
        return search_sources(versions, library=library, version=version, all_versions=all_versions), versions

    def _fuse(self, question: str, vector: Any, hits: list[SearchHit], wanted: int, source: str | list[str] | None,
              weight: float, per_page: int | None, lexical: LexicalIndex) -> list[SearchHit]:
        """*hits* (the vector ranking) fused with the keyword ranking of as many chunks (copies left out).
        Results one page apiece (*per_page* set) fuse the two rankings of pages, each page ranked by its best
        chunk in either list, and keep each page's chunks in their own order; otherwise the chunks themselves."""
        keyword = [cid for cid, _ in lexical.top(question, wanted, source) if cid not in lexical.copies]
        by_id = {hit.id: hit for hit in hits}
        missing = [cid for cid in keyword if cid not in by_id]
        if missing:
            by_id.update((hit.id, hit) for hit in self.index.hits_for(missing, vector))
        keyword = [cid for cid in keyword if cid in by_id]  # deleted since the keyword index was built
        dense = [hit.id for hit in hits]
        if per_page is None:
            score = _rrf([dense, keyword], [1.0, weight])
            return [by_id[cid] for cid in sorted(score, key=lambda cid: -score[cid])]

        def page(cid: str) -> str:
            return str(by_id[cid].metadata.get("page_id", cid))

        page_score = _page_rrf([dense, keyword], [1.0, weight], page)
        # within a page: its vector-ranked chunks first, then those only the keywords found
        own = {cid: i for i, cid in enumerate(dict.fromkeys(dense + keyword))}
        return [by_id[cid] for cid in sorted(own, key=lambda cid: (-page_score[page(cid)], own[cid]))]

    def keywords(self) -> LexicalIndex:
        """The keyword index of the collection, rebuilt when the collection changed since it was built."""
        # A persistent index tells cheaply that nothing wrote to it; otherwise every chunk id is read.
        stamp = self.index.stamp()
        if self._lexical is not None and stamp is not None and stamp == self._lexical_stamp:
            return self._lexical
        folder = self.config.data_dir / "lexical" / self.config.chroma_collection
        # the generation changes before every write: read before the fingerprint, it vouches for it
        generation = self.index.generation()
        known = LexicalIndex.fingerprint_at(folder, generation) if generation is not None else None
        if known is not None and self._lexical is not None and self._lexical.fingerprint == known:
            self._lexical_stamp = stamp
            return self._lexical
        cached = LexicalIndex.load(folder, known) if known is not None else None
        if cached is not None:
            self._lexical, self._lexical_stamp = cached, stamp
            return cached
        fingerprint = corpus_fingerprint(list(self.index.chunk_hashes().items()))
        if self._lexical is None or self._lexical.fingerprint != fingerprint:
            self._lexical = LexicalIndex.for_index(self.index, folder, fingerprint)
        if generation is not None:
            LexicalIndex.remember_generation(folder, generation, fingerprint)
        self._lexical_stamp = stamp
        return self._lexical

    def _state(self) -> StateStore | None:
        # imported on the first question with images: a one-shot search without them never loads the drivers
        from docscraper.storage.state import schema_revision

        if self._store is None and self._own_store is None:
            # Never create (or migrate) a database a first crawl is still creating: no schema, no images.
            if schema_revision(self.config.state_url) is None:
                return None
            self._own_store = open_state_store(self.config)
        return self._store or self._own_store

    def _with_state(self, results: list[SearchResult], *, images: bool, aliases: bool) -> list[SearchResult]:
        store = self._state()
        if store is None:
            return results
        by_source: dict[str, set[str]] = {}
        for result in results:
            by_source.setdefault(result.source, set()).add(result.page_id)
        found_images = {source: store.page_images(source, ids) for source, ids in by_source.items()} if images else {}
        found_aliases = {source: store.page_aliases(source, ids) for source, ids in by_source.items()} if aliases else {}
        return [
            replace(result,
                    images=[{"url": image.url, "alt": image.alt, "caption": image.caption}
                            for image in found_images.get(result.source, {}).get(result.page_id, [])],
                    aliases=list(found_aliases.get(result.source, {}).get(result.page_id, [])))
            for result in results
        ]

    def close(self) -> None:
        self.index.close()
        self.embedder.close()
        if self._own_store is not None:
            self._own_store.close()
            self._own_store = None


def _whole(value: Any, name: str, low: int, high: int | None) -> int:
    """*value* as an int from *low* to *high* (None: no bound); ``ValueError`` naming *name* otherwise."""
    wanted = f"from {low} to {high}" if high is not None else f"{low} or more"
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a whole number {wanted}, got {value!r}") from None
    if isinstance(value, bool) or number < low or (high is not None and number > high):
        raise ValueError(f"{name} must be a whole number {wanted}, got {value!r}")
    return number


def _results(hits: list[SearchHit], k: int, per_page: int | None) -> list[SearchResult]:
    """The first *k* of *hits* as results, at most *per_page* of each page (None: no limit)."""
    results: list[SearchResult] = []
    per: dict[str, int] = {}
    for hit in hits:
        meta = hit.metadata
        page = str(meta.get("page_id", ""))
        if per_page is not None and per.get(page, 0) >= per_page:
            continue
        per[page] = per.get(page, 0) + 1
        number = _page_number(meta.get("page"))
        url = str(meta.get("url", ""))
        results.append(SearchResult(
            rank=len(results) + 1,
            score=round(hit.score, 4),
            # a PDF viewer (a browser's) opens file.pdf#page=N at that page
            url=f"{url}#page={number}" if number is not None and "#" not in url else url,
            title=str(meta.get("title", "")),
            heading=str(meta.get("heading", "")),
            text=hit.document,
            source=str(meta.get("source", "")),
            page_id=page,
            chunk_id=hit.id,
            page_number=number,
            page_end=_page_number(meta.get("page_end")) if number is not None else None,
        ))
        if len(results) >= k:
            break
    return results


def _page_number(value: object) -> int | None:
    """A chunk's stored page number (an int in Chroma's metadata), or None for a web page's chunk."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _rrf(rankings: list[list[str]], weights: list[float]) -> dict[str, float]:
    """Reciprocal rank fusion: each ranking adds ``weight / (RRF_K + rank)`` to each of its items."""
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, 1):
            score[item] = score.get(item, 0.0) + weight / (RRF_K + rank)
    return score


def _page_rrf(rankings: list[list[str]], weights: list[float], page: Callable[[str], str]) -> dict[str, float]:
    """Reciprocal rank fusion of pages, each at the rank of its best chunk among all the chunks of a
    ranking: a page whose best chunk is r-th adds ``weight / (RRF_K + r)``. (Ranking the pages among pages
    instead lifts a page that only one weak chunk reached; measured in ``benchmarks/ranking_levers.py``.)"""
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        for rank, cid in enumerate(ranking, 1):
            pid = page(cid)
            if pid not in seen:
                seen.add(pid)
                score[pid] = score.get(pid, 0.0) + weight / (RRF_K + rank)
    return score


def search(question: str, *, k: int = 5, source: str | None = None, per_page: int | None = 1,
           config: DocscraperConfig | None = None, with_images: bool = False,
           with_aliases: bool = False, library: str | None = None, version: str | None = None,
           all_versions: bool = False) -> list[SearchResult]:
    """One question against the index of the current project's settings (or *config*)."""
    if config is None:
        from scrapy.utils.project import get_project_settings

        config = DocscraperConfig.from_settings(get_project_settings())
    searcher = Searcher(config)
    try:
        return searcher.search(question, k=k, source=source, per_page=per_page, with_images=with_images,
                               with_aliases=with_aliases, library=library, version=version,
                               all_versions=all_versions)
    finally:
        searcher.close()
