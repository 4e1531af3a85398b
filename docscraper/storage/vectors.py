"""The vector index: one small interface, one Chroma implementation.

One collection (``DOCSCRAPER_CHROMA_COLLECTION``, default ``docs``) in cosine space, persistent under
``DATA_DIR/chroma``, or on a Chroma server (``DOCSCRAPER_CHROMA_URL``) through the same code path. Chroma's
telemetry is off unless ``DOCSCRAPER_CHROMA_TELEMETRY``; its default embedding function is never used (docscraper
passes its own vectors). Chunk ids are ``s<source id>-<page id>-<content hash[:12]>-<chunk index>``
(:func:`chunk_id`); metadata per chunk: ``source``, ``page_id``, ``url``, ``title``, ``heading``, ``chunk_index``,
``content_hash``, ``chunk_hash``, ``token_count``, ``part``, ``path`` (and ``page``, ``page_end`` for a paged
document's chunks). All calls are blocking; a crawl runs them on its index thread. Why the source id is in the
chunk id: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import numpy as np

from docscraper.storage.model_identity import ModelIdentity

if TYPE_CHECKING:
    from chromadb.api.collection_configuration import CreateHNSWConfiguration

__all__ = [
    "GENERATION_KEY",
    "HNSW_CONFIGURATION",
    "STATE_KEY",
    "ChromaIndex",
    "ChunkRecord",
    "IndexError_",
    "SearchHit",
    "VectorIndex",
    "chunk_id",
    "forget_persistent_clients",
    "persistent_stamp",
]

logger = logging.getLogger(__name__)

#: The collection metadata key of the index's generation token (:meth:`VectorIndex.generation`).
GENERATION_KEY = "docscraper_generation"
#: The collection metadata key of the id of the state database whose chunks the index holds
#: (:meth:`VectorIndex.recorded_state`; DESIGN rule 10).
STATE_KEY = "docscraper_state_id"


#: The collection's HNSW configuration. Chroma's defaults (ef_search 100, ef_construction 100,
#: max_neighbors 16) missed chunks of the exact cosine top 3 in its top 24-100. Measured by
#: ``benchmarks/ann_recall.py`` at 15,000 vectors of 384 dimensions: recall@10 1.000 on clustered vectors
#: either way; on uniform ones (the worst case) 0.627 with the defaults, 0.944 with these, p95 11.5 ms a
#: warm query. ef_construction and max_neighbors are fixed when a collection is made (``scrapy reindex`` of
#: a fresh index gets them); ef_search is set on an existing collection when it is opened, which Chroma
#: records (in the process that changed it, its loaded HNSW index kept searching as before).
HNSW_CONFIGURATION: CreateHNSWConfiguration = {"space": "cosine", "ef_construction": 200, "max_neighbors": 32,
                                               "ef_search": 200}


class IndexError_(RuntimeError):
    """The vector index cannot be opened or written; the message says which and why."""


def chunk_id(page_id: str, content_hash: str, index: int, source_id: int | None = None) -> str:
    """The chunk's id; *source_id* (the source's id in the state database) scopes it to its source: the
    page id alone is the URL's, and one page may belong to two sources."""
    local = f"{page_id}-{content_hash[:12]}-{index:04d}"
    return local if source_id is None else f"s{source_id}-{local}"


@dataclass(frozen=True)
class ChunkRecord:
    id: str
    document: str
    embedding: np.ndarray
    metadata: Mapping[str, str | int | float | bool]


@dataclass(frozen=True)
class SearchHit:
    id: str
    document: str
    metadata: dict[str, Any]
    score: float  # cosine similarity, 1 is identical


class VectorIndex(Protocol):
    #: where the index lives (a server URL or a directory), for messages
    location: str

    def page_chunks(self, source: str, page_id: str) -> dict[str, str]:
        """The page's stored chunks: id -> chunk_hash."""
        ...
    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def vectors_by_hash(self, hashes: Sequence[str], sources: Sequence[str]) -> dict[str, np.ndarray]:
        """A stored vector for each of *hashes* (chunk hashes) that a chunk of one of *sources* has."""
        ...
    def upsert(self, chunks: Sequence[ChunkRecord]) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...
    def delete_pages(self, source: str, page_ids: Iterable[str]) -> int: ...
    def delete_source(self, source: str) -> int: ...
    def rename_source(self, old: str, new: str) -> int: ...
    def count(self, source: str | None = None, page_id: str | None = None) -> int: ...
    def query(self, vector: np.ndarray, k: int, source: str | Sequence[str] | None = None) -> list[SearchHit]:
        """The *k* chunks nearest *vector*, of *source* (a name, or any of several names; None: every source)."""
        ...
    def hits_for(self, ids: Sequence[str], vector: np.ndarray) -> list[SearchHit]:
        """The chunks *ids* (those that exist, in that order), scored against *vector*."""
        ...
    def chunk_hashes(self) -> dict[str, str]:
        """Every chunk's id -> chunk_hash."""
        ...
    def chunk_metadata(self, source: str | None = None, page_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Chunk id -> metadata (no vectors, no texts): every chunk, or those whose metadata names *source*
        (and one of *page_ids*)."""
        ...
    def documents(self) -> tuple[list[str], list[str], list[str]]:
        """Every chunk's id, source and document, aligned."""
        ...
    def stamp(self) -> object | None:
        """A cheap value that changes whenever the index is written (None: no such value, ask the index)."""
        ...
    def generation(self) -> str | None:
        """A token that changes before every write to the index, as read now (from any process); None for
        an index written before tokens were kept (ask the index)."""
        ...
    def recorded_model(self) -> ModelIdentity | None:
        """The model whose vectors the index holds, as recorded by :meth:`record_model`; None: none recorded."""
        ...
    def record_model(self, identity: ModelIdentity) -> None:
        """Record *identity* as the model of every vector in the index."""
        ...
    def recorded_state(self) -> str | None:
        """The id of the state database the index belongs to, as recorded by :meth:`record_state`; None:
        none recorded (a new collection, or one written before states had ids)."""
        ...
    def record_state(self, state_id: str) -> None:
        """Record *state_id* as the state database whose chunks the index holds."""
        ...
    def reset(self, identity: ModelIdentity) -> int:
        """Delete every chunk of every source (the collection is made anew, so vectors of another dimension
        fit), then record *identity*; the state it belongs to stays recorded. Returns how many chunks went."""
        ...
    def close(self) -> None: ...


def _where(source: str | Sequence[str] | None, page_id: str | None = None) -> dict[str, Any] | None:
    clauses: list[dict[str, Any]] = []
    if isinstance(source, str):
        clauses.append({"source": source})
    elif source is not None:
        names = sorted(set(source))
        clauses.append({"source": names[0]} if len(names) == 1 else {"source": {"$in": names}})
    if page_id is not None:
        clauses.append({"page_id": page_id})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaIndex:
    """:class:`VectorIndex` on Chroma (persistent directory, or a server)."""

    def __init__(self, *, path: Path | None = None, url: str | None = None, collection: str = "docs",
                 telemetry: bool = False) -> None:
        try:
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=telemetry)
            if url:
                parts = urlsplit(url)
                self.client = chromadb.HttpClient(
                    host=parts.hostname or "localhost",
                    port=parts.port or (443 if parts.scheme == "https" else 8000),
                    ssl=parts.scheme == "https",
                    settings=settings,
                )
                self.location = url
            else:
                assert path is not None, "a path or a url is required"
                path.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
                self.location = str(path)
            self.collection = self.client.get_or_create_collection(
                collection, configuration={"hnsw": HNSW_CONFIGURATION.copy()}, embedding_function=None
            )
            self.max_batch = int(self.client.get_max_batch_size())
        except Exception as exc:
            where = url or str(path)
            raise IndexError_(f"cannot open Chroma at {where}: {exc.__class__.__name__}: {exc}") from exc
        with warnings.catch_warnings():
            # Chroma warns that a collection without an embedding function has a "legacy" config.
            warnings.simplefilter("ignore", DeprecationWarning)
            space = (self.collection.configuration or {}).get("hnsw", {}) or {}
        if space.get("space") not in (None, "cosine"):
            raise IndexError_(f"collection {collection!r} at {self.location} uses {space.get('space')} space, "
                              "not cosine; use another DOCSCRAPER_CHROMA_COLLECTION")
        if space.get("ef_search") != HNSW_CONFIGURATION["ef_search"]:
            # a collection made before (get_or_create keeps its configuration): ef_search is the one HNSW
            # parameter Chroma lets an existing collection change
            try:
                self.collection.modify(configuration={"hnsw": {"ef_search": HNSW_CONFIGURATION["ef_search"]}})
            except Exception as exc:  # a search still works, with the collection's own ef_search
                logger.warning("Cannot set ef_search=%s on collection %r at %s (%s: %s)",
                               HNSW_CONFIGURATION["ef_search"], collection, self.location,
                               exc.__class__.__name__, exc)
            else:
                logger.info("Collection %r at %s: ef_search %s -> %s", collection, self.location,
                            space.get("ef_search"), HNSW_CONFIGURATION["ef_search"])

    def _batches(self, items: Sequence[Any]) -> Iterable[Sequence[Any]]:
        step = max(1, min(self.max_batch, 1000))
        for start in range(0, len(items), step):
            yield items[start : start + step]

    def page_chunks(self, source: str, page_id: str) -> dict[str, str]:
        result = self.collection.get(where=_where(source, page_id), include=["metadatas"])
        metadatas = result.get("metadatas") or []
        return {cid: str((meta or {}).get("chunk_hash", "")) for cid, meta in zip(result["ids"], metadatas, strict=True)}

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        # A page may hold two chunks of the same text, so one stored id can be asked for twice; Chroma
        # refuses a get() with duplicate ids.
        for batch in self._batches(list(dict.fromkeys(ids))):
            result = self.collection.get(ids=list(batch), include=["embeddings"])
            embeddings = result.get("embeddings")
            if embeddings is None:
                continue
            for cid, vector in zip(result["ids"], embeddings, strict=True):
                found[cid] = np.asarray(vector, dtype=np.float32)
        return found

    def vectors_by_hash(self, hashes: Sequence[str], sources: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        if not sources:
            return found
        for batch in self._batches(list(dict.fromkeys(h for h in hashes if h))):
            where: Any = {"$and": [{"chunk_hash": {"$in": list(batch)}}, _where(list(sources))]}
            result = self.collection.get(where=where, include=["embeddings", "metadatas"])
            embeddings = result.get("embeddings")
            if embeddings is None:
                continue
            for meta, vector in zip(result.get("metadatas") or [], embeddings, strict=True):
                found.setdefault(str((meta or {}).get("chunk_hash", "")), np.asarray(vector, dtype=np.float32))
        return found

    def generation(self) -> str | None:
        metadata = self.client.get_collection(self.collection.name, embedding_function=None).metadata or {}
        token = metadata.get(GENERATION_KEY)
        return str(token) if token is not None else None

    def _metadata(self) -> dict[str, Any]:
        return dict(self.client.get_collection(self.collection.name, embedding_function=None).metadata or {})

    def recorded_model(self) -> ModelIdentity | None:
        return ModelIdentity.from_metadata(self._metadata())

    def record_model(self, identity: ModelIdentity) -> None:
        metadata = self._metadata()
        metadata.update(identity.metadata())
        self.collection.modify(metadata=metadata)

    def recorded_state(self) -> str | None:
        value = self._metadata().get(STATE_KEY)
        return str(value) if value else None

    def record_state(self, state_id: str) -> None:
        metadata = self._metadata()
        metadata[STATE_KEY] = state_id
        self.collection.modify(metadata=metadata)

    def reset(self, identity: ModelIdentity) -> int:
        name = self.collection.name
        count = int(self.collection.count())
        state = self.recorded_state()
        self.client.delete_collection(name)
        self.collection = self.client.get_or_create_collection(
            name, configuration={"hnsw": HNSW_CONFIGURATION.copy()}, embedding_function=None
        )
        self._writing()
        self.record_model(identity)
        if state is not None:
            self.record_state(state)
        return count

    def _writing(self) -> None:
        """A new generation token before each write: whoever read the old one knows the index changed
        (searches keep their keyword index by it), even when this process dies half-way through."""
        metadata = dict(self.client.get_collection(self.collection.name, embedding_function=None).metadata or {})
        metadata[GENERATION_KEY] = secrets.token_hex(8)
        self.collection.modify(metadata=metadata)

    def upsert(self, chunks: Sequence[ChunkRecord]) -> None:
        if chunks:
            self._writing()
        for batch in self._batches(list(chunks)):
            self.collection.upsert(
                ids=[c.id for c in batch],
                embeddings=np.stack([c.embedding for c in batch]).astype(np.float32),
                documents=[c.document for c in batch],
                metadatas=[dict(c.metadata) for c in batch],
            )

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._writing()
        for batch in self._batches(list(ids)):
            self.collection.delete(ids=list(batch))

    def delete_pages(self, source: str, page_ids: Iterable[str]) -> int:
        deleted = 0
        for pid in page_ids:
            ids = list(self.page_chunks(source, pid))
            if ids:
                self.delete(ids)
                deleted += len(ids)
        return deleted

    def _source_ids(self, source: str) -> list[str]:
        return list(self.collection.get(where=_where(source), include=[])["ids"])

    def delete_source(self, source: str) -> int:
        """Delete every chunk whose metadata ``source`` is *source*; returns how many went."""
        ids = self._source_ids(source)
        self.delete(ids)
        return len(ids)

    def rename_source(self, old: str, new: str) -> int:
        """Relabel every chunk of source *old* as *new* (metadata only: ids and vectors stay)."""
        ids = self._source_ids(old)
        if ids:
            self._writing()
        for batch in self._batches(ids):
            got = self.collection.get(ids=list(batch), include=["metadatas"])
            metadatas = [{**dict(meta or {}), "source": new} for meta in got.get("metadatas") or []]
            self.collection.update(ids=list(got["ids"]), metadatas=metadatas)  # type: ignore[arg-type]
        return len(ids)

    def count(self, source: str | None = None, page_id: str | None = None) -> int:
        where = _where(source, page_id)
        if where is None:
            return int(self.collection.count())
        return len(self.collection.get(where=where, include=[])["ids"])

    def query(self, vector: np.ndarray, k: int, source: str | Sequence[str] | None = None) -> list[SearchHit]:
        if self.collection.count() == 0 or (source is not None and not isinstance(source, str) and not source):
            return []
        result = self.collection.query(
            query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
            n_results=k,
            where=_where(source),
            include=["documents", "metadatas", "distances"],
        )
        hits = []
        for cid, doc, meta, dist in zip(result["ids"][0], (result["documents"] or [[]])[0],
                                        (result["metadatas"] or [[]])[0], (result["distances"] or [[]])[0],
                                        strict=True):
            hits.append(SearchHit(cid, doc or "", dict(meta or {}), 1.0 - float(dist)))
        return hits

    def hits_for(self, ids: Sequence[str], vector: np.ndarray) -> list[SearchHit]:
        query = np.asarray(vector, dtype=np.float32)
        found: dict[str, SearchHit] = {}
        for batch in self._batches(list(ids)):
            got = self.collection.get(ids=list(batch), include=["documents", "metadatas", "embeddings"])
            embeddings = got.get("embeddings")
            if embeddings is None:
                continue
            for cid, doc, meta, emb in zip(got["ids"], got.get("documents") or [], got.get("metadatas") or [],
                                           embeddings, strict=True):
                # stored vectors are normalized (the embedder's contract): cosine is the dot product
                found[cid] = SearchHit(cid, doc or "", dict(meta or {}),
                                       float(np.dot(np.asarray(emb, dtype=np.float32), query)))
        return [found[cid] for cid in ids if cid in found]

    def _scan(self, include: list[str], where: dict[str, Any] | None = None) -> Iterable[dict[str, Any]]:
        """The whole collection (or the chunks *where* selects), a page of results at a time."""
        step = max(1, min(self.max_batch, 5000))
        offset = 0
        while True:
            got = self.collection.get(include=include, limit=step, offset=offset,  # type: ignore[arg-type]
                                      where=where)
            if not got["ids"]:
                return
            yield dict(got)
            offset += len(got["ids"])

    def chunk_metadata(self, source: str | None = None, page_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        if page_ids is not None:
            for pid in page_ids:
                got = self.collection.get(where=_where(source, pid), include=["metadatas"])
                for cid, meta in zip(got["ids"], got.get("metadatas") or [], strict=True):
                    found[cid] = dict(meta or {})
            return found
        for page in self._scan(["metadatas"], _where(source)):
            for cid, meta in zip(page["ids"], page.get("metadatas") or [], strict=True):
                found[cid] = dict(meta or {})
        return found

    def chunk_hashes(self) -> dict[str, str]:
        hashes: dict[str, str] = {}
        for got in self._scan(["metadatas"]):
            for cid, meta in zip(got["ids"], got.get("metadatas") or [], strict=True):
                hashes[cid] = str((meta or {}).get("chunk_hash", ""))
        return hashes

    def documents(self) -> tuple[list[str], list[str], list[str]]:
        ids: list[str] = []
        sources: list[str] = []
        documents: list[str] = []
        for got in self._scan(["documents", "metadatas"]):
            for cid, doc, meta in zip(got["ids"], got.get("documents") or [], got.get("metadatas") or [],
                                      strict=True):
                ids.append(cid)
                sources.append(str((meta or {}).get("source", "")))
                documents.append(doc or "")
        return ids, sources, documents

    def stamp(self) -> object | None:
        if self.location.startswith(("http://", "https://")):
            return None
        return persistent_stamp(Path(self.location))

    def close(self) -> None:
        client = self.client
        self.collection = None  # type: ignore[assignment]
        self.client = None  # type: ignore[assignment]
        if client is not None and self.location.startswith(("http://", "https://")):
            _close_http_client(client)
        # A persistent client is shared per directory (see forget_persistent_clients): dropping the
        # references lets it release its files without stopping a system another index still uses.


def _close_http_client(client: Any) -> None:
    """Close an HTTP client's connections. ``Client.close()`` only releases its systems (each HTTP client
    has its own, and an admin client with another); their HTTP sessions stay open until garbage
    collection, which leaks sockets in a long-lived process (the MCP server)."""
    servers = [getattr(client, "_server", None), getattr(getattr(client, "_admin_client", None), "_server", None)]
    try:
        client.close()
    except Exception as exc:  # closing must never fail a crawl that otherwise ended well
        logger.debug("Closing the Chroma HTTP client failed: %s", exc)
    for server in servers:
        session = getattr(server, "_session", None)
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()


def persistent_stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes whenever any process writes to the persistent Chroma directory *path*: its SQLite
    files' names, sizes and modification times (every write goes through them; reads do not touch them)."""
    stamp = []
    for file in sorted(path.glob("chroma.sqlite3*")):
        try:
            info = file.stat()
        except OSError:
            continue
        stamp.append((file.name, info.st_size, info.st_mtime_ns))
    return tuple(stamp)


def forget_persistent_clients() -> None:
    """Drop the Chroma systems this process keeps, one per directory, so that the next :class:`ChromaIndex`
    loads the index from disk again. A persistent client keeps its vector segments in memory and never sees
    what another process (a crawl) wrote since it opened them. Call it only while no index of this process
    is in use: every open client stops working."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
