"""Does the vector index match the state? (DESIGN rule 8.) Checks, repairs, and the reconciliation of a died run.

The state table says, per source, which pages are live (``active``), with which content hash and how many
chunks; chunk ids are deterministic (``s<source id>-<page id>-<content hash[:12]>-<index>``), so the chunks
every live page must have are known without reading a vector. :func:`check` reads the state rows and every
chunk's id and metadata (no vectors, no texts) and lists each :class:`Disagreement`:

``unknownSource``     a chunk of a source id the state does not have (a source deleted half-way)
``orphanChunk``       a chunk of a page the state does not know, or holds as removed or failed
``staleChunk``        a chunk of a live page under another content hash, or past its chunk count
``missingChunks``     a live page without all of its chunks
``metadataMismatch``  a chunk whose metadata (source, page, URL, title, content hash) disagrees with its page row
``unparsableId``      a chunk whose id is not a docscraper chunk id
``keywordCache``      the keyword index's cache claims the collection's generation with another fingerprint
``danglingAlias``     an alias (a URL serving another page's content) whose page is not live, or not with that content
``mirrorStale``       a live page whose Markdown mirror file is missing or holds another content hash
                      (with a mirror folder to check; the next crawl with that mirror rewrites it)

:func:`repair` fixes what can be fixed without the site: chunks nobody owns (unknown source, orphan, stale,
unparsable) are deleted; pages whose chunks are missing or disagree are marked for reindexing (their next
crawl writes them again); a lying keyword cache is dropped. Nothing else is touched.

:func:`reconcile` is the same for a few pages only: the pages a run began writing to the index and never
committed (the state store's index writes, left by a run that died or whose write failed). The next run
of the source calls it when it opens.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docscraper.storage.state import PageRecord, SourceRecord, StateStore
    from docscraper.storage.vectors import VectorIndex

__all__ = ["CHUNK_ID", "Disagreement", "Verification", "check", "check_mirror", "reconcile", "repair"]

logger = logging.getLogger(__name__)

#: A docscraper chunk id (:func:`docscraper.storage.vectors.chunk_id`).
CHUNK_ID = re.compile(r"^s(?P<source>\d+)-(?P<page>.+)-(?P<hash>[0-9a-f]{12})-(?P<index>\d{4,})$")

#: Kinds whose chunks :func:`repair` deletes; the others mark their page for reindexing.
DELETE_KINDS = frozenset({"unknownSource", "orphanChunk", "staleChunk", "unparsableId"})
REINDEX_KINDS = frozenset({"missingChunks", "metadataMismatch", "danglingAlias"})


@dataclass(frozen=True)
class Disagreement:
    kind: str
    detail: str
    source: str | None = None
    source_id: int | None = None
    page_id: str | None = None
    url: str | None = None
    chunk_ids: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "pageId": self.page_id, "url": self.url,
                "detail": self.detail, "chunkIds": list(self.chunk_ids)}


@dataclass
class Verification:
    """What :func:`check` found: per source, the live pages and chunks it compared, and every disagreement."""

    sources: dict[str, dict[str, int]] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    # pages whose chunks are missing or disagree but that are marked for reindexing already (by a repair,
    # `scrapy reindex` or a reconciliation): their next crawl writes them again; not disagreements
    scheduled: list[Disagreement] = field(default_factory=list)
    chunks: int = 0
    repaired: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def counts(self) -> dict[str, int]:
        """Disagreements by kind."""
        counts: dict[str, int] = defaultdict(int)
        for found in self.disagreements:
            counts[found.kind] += 1
        return dict(sorted(counts.items()))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "chunks": self.chunks, "sources": self.sources, "counts": self.counts(),
                "disagreements": [d.as_dict() for d in self.disagreements],
                "scheduled": [d.as_dict() for d in self.scheduled], "repaired": self.repaired}


def _parse(cid: str) -> tuple[int, str, str, int] | None:
    match = CHUNK_ID.match(cid)
    if match is None:
        return None
    return int(match["source"]), match["page"], match["hash"], int(match["index"])


def _compare(source: SourceRecord, pages: Mapping[str, PageRecord], chunks: Mapping[str, dict[str, Any]],
             result: Verification, *, only: set[str] | None = None) -> dict[str, int]:
    """The disagreements between *source*'s page rows and *chunks* (its chunks by id: id -> metadata), into
    *result*. *only*: compare these pages alone (their rows and chunks)."""
    found = result.disagreements
    by_page: dict[str, list[tuple[str, str, int, dict[str, Any]]]] = defaultdict(list)
    for cid, meta in chunks.items():
        parsed = _parse(cid)
        assert parsed is not None and parsed[0] == source.id
        _, pid, short, index = parsed
        by_page[pid].append((cid, short, index, meta))
    live = 0
    checked = set(pages) | set(by_page) if only is None else only
    for pid in sorted(checked):
        page = pages.get(pid)
        all_stored = by_page.get(pid, [])
        url = page.url if page is not None else next((str(m.get("url", "")) for *_, m in all_stored), None)
        if page is not None and page.status == "alias" and not page.alias_current(pages):
            (result.scheduled if page.reindex_requested else found).append(Disagreement(
                "danglingAlias", f"an alias of {page.alias_of}, which does not hold its content now",
                source.name, source.id, pid, page.url))
        if page is None or page.status != "active":
            if all_stored:
                why = "unknown to the state" if page is None else f"{page.status} in the state"
                found.append(Disagreement("orphanChunk", f"{len(all_stored)} chunk(s) of a page {why}", source.name,
                                          source.id, pid, url, tuple(sorted(c for c, *_ in all_stored))))
            continue
        if page.chunk_count is None or not page.content_hash:
            continue  # active without an index (crawled with DOCSCRAPER_INDEX_ENABLED off): nothing to compare
        live += 1
        short = page.content_hash[:12]
        stored = {index: (cid, meta) for cid, chunk_short, index, meta in all_stored
                  if chunk_short == short and index < page.chunk_count}
        stale = sorted(cid for cid, chunk_short, index, _ in all_stored
                       if chunk_short != short or index >= page.chunk_count)
        if stale:
            found.append(Disagreement("staleChunk", f"{len(stale)} chunk(s) not of the page's content hash "
                                      f"{short} and chunk count {page.chunk_count}", source.name, source.id, pid,
                                      page.url, tuple(stale)))
        # a page marked for reindexing is written again by its next crawl: what it lacks is scheduled
        later = result.scheduled if page.reindex_requested else found
        missing = [index for index in range(page.chunk_count) if index not in stored]
        if missing:
            later.append(Disagreement("missingChunks", f"{len(missing)} of its {page.chunk_count} chunk(s) are not "
                                      f"in the index (first: #{missing[0]})", source.name, source.id, pid, page.url))
            continue
        wrong: list[str] = []
        fields: set[str] = set()
        for index in range(page.chunk_count):
            cid, meta = stored[index]
            expected = {"source": source.name, "page_id": pid, "url": page.url, "content_hash": page.content_hash,
                        "title": page.title or ""}
            bad = {key for key, value in expected.items() if str(meta.get(key) or "") != str(value or "")}
            if bad:
                wrong.append(cid)
                fields |= bad
        if wrong:
            later.append(Disagreement("metadataMismatch", f"{len(wrong)} chunk(s) disagree with the page row on "
                                      f"{', '.join(sorted(fields))}", source.name, source.id, pid, page.url,
                                      tuple(wrong)))
    return {"pages": live, "chunks": len(chunks)}


def check(store: StateStore, index: VectorIndex, *, source: str | None = None,
          keyword_cache: Path | None = None) -> Verification:
    """Compare the state with the index: every source, or the source named *source* (its chunks found by
    their ids, whatever their metadata says). *keyword_cache*: the folder of the keyword index's cache, to
    check that it does not claim the collection's generation with another fingerprint."""
    sources = {summary.source.id: summary.source for summary in store.list_sources()}
    wanted = None
    if source is not None:
        wanted = next((s for s in sources.values() if s.name == source), None)
        if wanted is None:
            raise LookupError(f"unknown source {source!r}")
    result = Verification()
    all_chunks = index.chunk_metadata()
    result.chunks = len(all_chunks)
    per_source: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for cid, meta in all_chunks.items():
        parsed = _parse(cid)
        if parsed is None:
            if wanted is None or meta.get("source") == wanted.name:
                result.disagreements.append(Disagreement(
                    "unparsableId", "not a docscraper chunk id", str(meta.get("source") or "") or None, None,
                    str(meta.get("page_id") or "") or None, str(meta.get("url") or "") or None, (cid,)))
            continue
        sid = parsed[0]
        if sid not in sources:
            if wanted is None:
                result.disagreements.append(Disagreement(
                    "unknownSource", f"source id {sid} is not in the state", str(meta.get("source") or "") or None,
                    sid, parsed[1], str(meta.get("url") or "") or None, (cid,)))
            continue
        per_source[sid][cid] = meta
    for sid, record in sorted(sources.items()):
        if wanted is not None and sid != wanted.id:
            continue
        pages = store.load_pages(sid)
        result.sources[record.name] = _compare(record, pages, per_source.get(sid, {}), result)
    if keyword_cache is not None and wanted is None:
        _check_keyword_cache(index, all_chunks, keyword_cache, result)
    return result


def _check_keyword_cache(index: VectorIndex, chunks: Mapping[str, dict[str, Any]], folder: Path,
                         result: Verification) -> None:
    from docscraper.storage.lexical import LexicalIndex, corpus_fingerprint

    generation = index.generation()
    if generation is None:
        return
    claimed = LexicalIndex.fingerprint_at(folder, generation)
    if claimed is None:
        return  # no claim for this generation: the next search checks every chunk id
    actual = corpus_fingerprint([(cid, str(meta.get("chunk_hash", ""))) for cid, meta in chunks.items()])
    if claimed != actual:
        result.disagreements.append(Disagreement(
            "keywordCache", f"the keyword cache in {folder} vouches for generation {generation} with fingerprint "
            f"{claimed}; the collection's is {actual}"))


def check_mirror(store: StateStore, source: SourceRecord, directory: Path, result: Verification) -> None:
    """Compare *source*'s live pages with the Markdown mirror in *directory*: each must have its file, with
    its content hash (pages removed from the index keep their files, by design: not a disagreement)."""
    from docscraper.storage.mirror import Mirror

    mirror = Mirror(directory)
    for pid, page in sorted(store.load_pages(source.id).items()):
        if page.status != "active" or not page.content_hash or page.rel_path is None:
            continue
        stored = mirror.stored_hash(page.rel_path, pid)
        if stored != page.content_hash:
            why = "has no mirror file" if stored is None else f"has a mirror file of content hash {stored[:12]}"
            result.disagreements.append(Disagreement("mirrorStale", f"{why}; the state holds {page.content_hash[:12]}",
                                                     source.name, source.id, pid, page.url))


def repair(store: StateStore, index: VectorIndex, verification: Verification, *,
           keyword_cache: Path | None = None) -> dict[str, int]:
    """Fix what :func:`check` found: delete the chunks nobody owns, mark the pages whose chunks are missing or
    disagree for reindexing, drop a lying keyword cache. Returns (and records in *verification*) how many."""
    delete: list[str] = []
    marks: dict[int, set[str]] = defaultdict(set)
    cache = False
    for found in verification.disagreements:
        if found.kind in DELETE_KINDS:
            delete.extend(found.chunk_ids)
        elif found.kind in REINDEX_KINDS and found.source_id is not None and found.page_id is not None:
            marks[found.source_id].add(found.page_id)
        elif found.kind == "keywordCache":
            cache = True
    delete = sorted(set(delete))
    if delete:
        index.delete(delete)
    marked = sum(store.mark_reindex(sid, sorted(pids)) for sid, pids in marks.items())
    if cache and keyword_cache is not None:
        shutil.rmtree(keyword_cache, ignore_errors=True)
    verification.repaired = {"chunksDeleted": len(delete), "pagesMarked": marked, "keywordCacheDropped": int(cache)}
    return verification.repaired


def reconcile(store: StateStore, index: VectorIndex, source: SourceRecord, page_ids: Iterable[str]) -> Verification:
    """Check and repair the pages *page_ids* of *source* alone, then forget their index writes: for the pages
    a run wrote to the index without committing (it died, or a write failed)."""
    ids = sorted(set(page_ids))
    result = Verification()
    if not ids:
        return result
    pages = store.load_pages(source.id)
    chunks = {cid: meta for cid, meta in index.chunk_metadata(source.name, ids).items()
              if (parsed := _parse(cid)) is not None and parsed[0] == source.id}
    result.chunks = len(chunks)
    result.sources[source.name] = _compare(source, pages, chunks, result, only=set(ids))
    repair(store, index, result)
    store.end_index_writes(source.id, ids)
    return result
