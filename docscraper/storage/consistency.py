"""Does the vector index match the state? (DESIGN rules 8 and 10.) Checks, repairs, and a died run's reconciliation.

:func:`check` reads the state rows and every chunk's id and metadata (no vectors, no texts: chunk ids are
deterministic) and lists each :class:`Disagreement` (``removedSource``, ``orphanChunk``, ``staleChunk``,
``missingChunks``, ``metadataMismatch``, ``danglingAlias``, ``keywordCache``, ``mirrorStale``, and the foreign kinds
:data:`FOREIGN_KINDS`). :func:`repair` deletes this state's own chunks that no live page owns, marks pages whose
chunks are missing or disagree for reindexing and drops a lying keyword cache; foreign chunks are never touched, a
source over the deletion cap is left as it is (``Verification.refused``), and every group deleted is logged and
appended to :data:`REPAIR_LOG`. :func:`claim_index` binds an index to its state (:class:`ForeignIndex` otherwise);
:func:`reconcile` repairs the pages a died run began writing. What each kind means: docs/howto/verify.md.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docscraper.storage.vectors import IndexError_

if TYPE_CHECKING:
    from docscraper.storage.state import PageRecord, SourceRecord, StateStore
    from docscraper.storage.vectors import VectorIndex

__all__ = [
    "CHUNK_ID",
    "FOREIGN_KINDS",
    "REPAIR_LOG",
    "Disagreement",
    "ForeignIndex",
    "Verification",
    "check",
    "check_mirror",
    "claim_index",
    "reconcile",
    "repair",
]

logger = logging.getLogger(__name__)

#: A docscraper chunk id (:func:`docscraper.storage.vectors.chunk_id`).
CHUNK_ID = re.compile(r"^s(?P<source>\d+)-(?P<page>.+)-(?P<hash>[0-9a-f]{12})-(?P<index>\d{4,})$")

#: Kinds whose chunks :func:`repair` deletes; the others mark their page for reindexing.
DELETE_KINDS = frozenset({"removedSource", "orphanChunk", "staleChunk"})
REINDEX_KINDS = frozenset({"missingChunks", "metadataMismatch", "danglingAlias"})
#: Kinds a repair reports and never touches: chunks this state cannot prove are its own.
FOREIGN_KINDS = frozenset({"unparsableId", "foreignSource", "foreignChunk"})

#: The repairs' audit file, under the data directory: one JSON line per group of chunks deleted.
REPAIR_LOG = Path("logs") / "repairs.jsonl"


class ForeignIndex(IndexError_):
    """The vector index is bound to another state database (DESIGN rule 10)."""


def claim_index(index: VectorIndex, state_id: str, *, record: bool = False) -> bool:
    """Check that *index* belongs to the state database *state_id*: :class:`ForeignIndex` when it records
    another. A collection that records none (new, or written before states had ids) is bound to this state
    when *record* (a crawl, before it writes). Returns whether the index records this state now."""
    recorded = index.recorded_state()
    if recorded is None:
        if record:
            index.record_state(state_id)
        return record
    if recorded != state_id:
        raise ForeignIndex(
            f"the vector index at {index.location} belongs to another state database (state id {recorded}; this "
            f"one is {state_id}): its chunk ids would collide with this state's. Check DOCSCRAPER_STATE_URL and "
            "DOCSCRAPER_DATA_DIR, or use another DOCSCRAPER_CHROMA_COLLECTION")
    return True


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
    # each group of chunks a repair deleted: kind, source, pageId, url, chunkIds
    deleted: list[dict[str, Any]] = field(default_factory=list)
    # each live source whose repair the deletion cap refused: source, chunks (to delete), of, maxRatio
    refused: list[dict[str, Any]] = field(default_factory=list)
    # chunks in the index by the source id they were compared under (the deletion cap's denominator)
    source_chunks: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.disagreements

    @property
    def left(self) -> list[Disagreement]:
        """What a repair left as it found it: chunks this state cannot prove are its own, and every
        disagreement of a source whose repair was refused."""
        refused = {entry["sourceId"] for entry in self.refused}
        return [d for d in self.disagreements
                if d.kind in FOREIGN_KINDS or (d.source_id is not None and d.source_id in refused)]

    def counts(self) -> dict[str, int]:
        """Disagreements by kind."""
        counts: dict[str, int] = defaultdict(int)
        for found in self.disagreements:
            counts[found.kind] += 1
        return dict(sorted(counts.items()))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "chunks": self.chunks, "sources": self.sources, "counts": self.counts(),
                "disagreements": [d.as_dict() for d in self.disagreements],
                "scheduled": [d.as_dict() for d in self.scheduled], "repaired": self.repaired,
                "deleted": self.deleted, "refused": self.refused}


def _parse(cid: str) -> tuple[int, str, str, int] | None:
    match = CHUNK_ID.match(cid)
    if match is None:
        return None
    return int(match["source"]), match["page"], match["hash"], int(match["index"])


def _unowned(kind: str, detail: str, source: SourceRecord, pid: str, url: str | None,
             chunks: Iterable[tuple[str, dict[str, Any]]]) -> list[Disagreement]:
    """*chunks* (id, metadata) that no live page of *source* owns, as a *kind* disagreement; those whose
    metadata names another source than *source* as ``foreignChunk`` (this state cannot prove they are its
    own: another state's chunks under colliding ids, or an adoption's relabelling cut short)."""
    ours = sorted(cid for cid, meta in chunks if meta.get("source") == source.name)
    theirs = sorted(cid for cid, meta in chunks if meta.get("source") != source.name)
    found = []
    if ours:
        found.append(Disagreement(kind, f"{len(ours)} {detail}", source.name, source.id, pid, url, tuple(ours)))
    if theirs:
        found.append(Disagreement("foreignChunk", f"{len(theirs)} chunk(s) of source id {source.id} labelled as "
                                  "another source than its name in the state: left as they are", source.name,
                                  source.id, pid, url, tuple(theirs)))
    return found


def _text(meta: Mapping[str, Any], key: str) -> str | None:
    return str(meta.get(key) or "") or None


def _compare(source: SourceRecord, pages: Mapping[str, PageRecord], chunks: Mapping[str, dict[str, Any]],
             result: Verification, *, only: set[str] | None = None) -> dict[str, int]:
    """The disagreements between *source*'s page rows and *chunks* (its chunks by id: id -> metadata), into
    *result*. *only*: compare these pages alone (their rows and chunks)."""
    result.source_chunks[source.id] = result.source_chunks.get(source.id, 0) + len(chunks)
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
                found.extend(_unowned("orphanChunk", f"chunk(s) of a page {why}", source, pid, url,
                                      ((cid, meta) for cid, *_, meta in all_stored)))
            continue
        if page.chunk_count is None or not page.content_hash:
            continue  # active without an index (crawled with DOCSCRAPER_INDEX_ENABLED off): nothing to compare
        live += 1
        short = page.content_hash[:12]
        stored = {index: (cid, meta) for cid, chunk_short, index, meta in all_stored
                  if chunk_short == short and index < page.chunk_count}
        stale = [(cid, meta) for cid, chunk_short, index, meta in all_stored
                 if chunk_short != short or index >= page.chunk_count]
        if stale:
            found.extend(_unowned("staleChunk", f"chunk(s) not of the page's content hash {short} and chunk count "
                                  f"{page.chunk_count}", source, pid, page.url, stale))
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
    removed = {sid: name for sid, name in store.removed_sources().items() if sid not in sources}
    wanted = None
    if source is not None:
        wanted = next((s for s in sources.values() if s.name == source), None)
        if wanted is None:
            raise LookupError(f"unknown source {source!r}")
    result = Verification()
    all_chunks = index.chunk_metadata()
    result.chunks = len(all_chunks)
    per_source: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    # chunks of source ids the state does not have now, by (kind, source id, page id)
    outside: dict[tuple[str, int, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for cid, meta in all_chunks.items():
        parsed = _parse(cid)
        if parsed is None:
            if wanted is None or meta.get("source") == wanted.name:
                result.disagreements.append(Disagreement(
                    "unparsableId", "not a docscraper chunk id: left as it is", _text(meta, "source"), None,
                    _text(meta, "page_id"), _text(meta, "url"), (cid,)))
            continue
        sid = parsed[0]
        if sid in sources:
            per_source[sid][cid] = meta
        elif wanted is None:
            kind = "foreignSource" if sid not in removed else (
                "removedSource" if meta.get("source") == removed[sid] else "foreignChunk")
            outside[(kind, sid, parsed[1])].append((cid, meta))
    for (kind, sid, pid), chunks in sorted(outside.items()):
        label, url = _text(chunks[0][1], "source"), _text(chunks[0][1], "url")
        detail = {
            "removedSource": f"chunk(s) of source {removed.get(sid)!r} (id {sid}), which this state removed",
            "foreignSource": f"chunk(s) of source id {sid}, which this state never had: left as they are",
            "foreignChunk": f"chunk(s) of source id {sid}, which this state removed as {removed.get(sid)!r}, "
                            "labelled as another source: left as they are",
        }[kind]
        result.disagreements.append(Disagreement(kind, f"{len(chunks)} {detail}", label, sid, pid, url,
                                                 tuple(sorted(cid for cid, _ in chunks))))
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
           keyword_cache: Path | None = None, max_delete_ratio: float | None = None, force: bool = False,
           audit: Path | None = None) -> dict[str, int]:
    """Fix what :func:`check` found: delete this state's chunks that no live page owns, mark the pages whose
    chunks are missing or disagree for reindexing, drop a lying keyword cache; chunks it cannot prove are its
    own (:data:`FOREIGN_KINDS`) stay. *max_delete_ratio*: a live source whose deletions would exceed this
    share of its chunks in the index is left as it is, unless *force* (listed in ``verification.refused``).
    Each group deleted is logged, and appended to *audit* (a JSON Lines file) when given. Returns (and
    records in *verification*) how many chunks went, pages were marked and caches were dropped."""
    groups: dict[int | None, list[Disagreement]] = defaultdict(list)
    marks: dict[int, set[str]] = defaultdict(set)
    cache = False
    for found in verification.disagreements:
        if found.kind in DELETE_KINDS and found.chunk_ids:
            groups[found.source_id].append(found)
        elif found.kind in REINDEX_KINDS and found.source_id is not None and found.page_id is not None:
            marks[found.source_id].add(found.page_id)
        elif found.kind == "keywordCache":
            cache = True
    refused: set[int] = set()
    if max_delete_ratio is not None and not force:
        for sid, found_here in groups.items():
            if sid is None or any(f.kind == "removedSource" for f in found_here):
                continue  # a removed source's chunks: its removal was asked for
            count = len({cid for f in found_here for cid in f.chunk_ids})
            total = verification.source_chunks.get(sid, 0)
            if total and count / total > max_delete_ratio:
                refused.add(sid)
                name = found_here[0].source
                verification.refused.append({"source": name, "sourceId": sid, "chunks": count, "of": total,
                                             "maxRatio": max_delete_ratio})
                logger.error("Repair of source %s refused: it would delete %d of its %d chunks in the index, more "
                             "than DOCSCRAPER_MAX_DELETE_RATIO=%s; nothing of it was touched (--force deletes "
                             "past the cap)", name, count, total, max_delete_ratio)
    deleting = [found for sid, found_here in sorted(groups.items(), key=lambda item: item[0] or 0)
                if sid not in refused for found in found_here]
    delete = sorted({cid for found in deleting for cid in found.chunk_ids})
    if delete:
        index.delete(delete)
        _record_deleted(deleting, verification, audit)
    marked = sum(store.mark_reindex(sid, sorted(pids)) for sid, pids in marks.items() if sid not in refused)
    if cache and keyword_cache is not None:
        shutil.rmtree(keyword_cache, ignore_errors=True)
    verification.repaired = {"chunksDeleted": len(delete), "pagesMarked": marked, "keywordCacheDropped": int(cache)}
    return verification.repaired


def _record_deleted(deleted: Iterable[Disagreement], verification: Verification, audit: Path | None) -> None:
    """Log each group of chunks a repair deleted, list it in *verification*, append it to *audit*."""
    at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    lines = []
    for found in deleted:
        logger.warning("Repair deleted %d chunk(s) (%s) of source %s (id %s), page %s%s", len(found.chunk_ids),
                       found.kind, found.source, found.source_id, found.page_id, f" {found.url}" if found.url else "")
        entry = {"kind": found.kind, "source": found.source, "sourceId": found.source_id, "pageId": found.page_id,
                 "url": found.url, "chunkIds": list(found.chunk_ids)}
        verification.deleted.append(entry)
        lines.append(json.dumps({"time": at, **entry}, sort_keys=True) + "\n")
    if audit is None:
        return
    try:
        audit.parent.mkdir(parents=True, exist_ok=True)
        with audit.open("a", encoding="utf-8") as out:
            out.write("".join(lines))
    except OSError as exc:
        # the chunks are gone already: the log lines above hold what went
        logger.error("Cannot append the repair to the audit file %s: %s", audit, exc)


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
