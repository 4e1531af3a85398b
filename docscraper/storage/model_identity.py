"""Which model made an index's vectors: recorded in the collection, checked by every crawl and search.

:class:`ModelIdentity` (the model's name, the embedder class, a fingerprint of its weights, the vectors' dimension)
is kept in the collection's metadata. A crawl refuses to write with another model unless it re-embeds everything
(``-a full=1``), and a search refuses to ask with another one. The fingerprint is a SHA-256 of the model folder's
files (names and contents), cached in ``<data dir>/models/fingerprints.json`` by the files' names, sizes and
modification times; a model named by a hub id has none (its name stands for it). Only the standard library is
imported, so a search checks the model without torch. Why: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig

__all__ = ["ModelIdentity", "ModelMismatch", "model_identity", "weights_fingerprint"]

logger = logging.getLogger(__name__)

_KEYS = {"name": "docscraper_model", "embedder": "docscraper_embedder", "fingerprint": "docscraper_model_fingerprint",
         "dimension": "docscraper_dimension"}
_DEFAULT_EMBEDDER = "docscraper.storage.embedding.SentenceTransformerEmbedder"


class ModelMismatch(RuntimeError):
    """The index's vectors were made by another model than the one configured; the message says which and
    what to do."""


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    embedder: str = _DEFAULT_EMBEDDER
    fingerprint: str = ""  # "" when the model has no folder here (a hub id)
    dimension: int = 0  # 0 when not known yet (the model is not loaded)

    def metadata(self) -> dict[str, str | int]:
        """As collection metadata (Chroma's values are strings and numbers)."""
        return {_KEYS[field]: getattr(self, field) for field in _KEYS}

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any] | None) -> ModelIdentity | None:
        """The identity recorded in *metadata*, or None when the collection records none."""
        metadata = metadata or {}
        if _KEYS["name"] not in metadata:
            return None
        return cls(name=str(metadata[_KEYS["name"]]), embedder=str(metadata.get(_KEYS["embedder"], _DEFAULT_EMBEDDER)),
                   fingerprint=str(metadata.get(_KEYS["fingerprint"], "")),
                   dimension=int(metadata.get(_KEYS["dimension"], 0) or 0))

    def same_model(self, other: ModelIdentity) -> bool:
        """Whether vectors of *other* may sit beside vectors of this one (the dimension is compared only
        when both know it)."""
        if (self.name, self.embedder, self.fingerprint) != (other.name, other.embedder, other.fingerprint):
            return False
        return not (self.dimension and other.dimension and self.dimension != other.dimension)

    def with_dimension(self, dimension: int) -> ModelIdentity:
        return replace(self, dimension=int(dimension))

    def describe(self) -> str:
        parts = [self.name]
        if self.fingerprint:
            parts.append(f"weights {self.fingerprint}")
        if self.dimension:
            parts.append(f"{self.dimension} dimensions")
        if self.embedder != _DEFAULT_EMBEDDER:
            parts.append(f"embedder {self.embedder}")
        return f"{parts[0]} ({', '.join(parts[1:])})" if len(parts) > 1 else parts[0]


def _stat_key(root: Path, files: list[Path]) -> str:
    digest = hashlib.sha256(str(root.resolve()).encode())
    for path in files:
        info = path.stat()
        digest.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def weights_fingerprint(folder: str | os.PathLike[str], cache: Path | None = None) -> str:
    """A SHA-256 (16 hex digits) of the model folder's files, names and contents; remembered in *cache* (a
    JSON file) under the files' names, sizes and modification times, so it is hashed once per install."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    key = _stat_key(root, files)
    known: dict[str, str] = {}
    if cache is not None:
        try:
            known = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        if isinstance(known, dict) and isinstance(known.get(key), str):
            return known[key]
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    value = digest.hexdigest()[:16]
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            known = known if isinstance(known, dict) else {}
            known[key] = value
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
            tmp.replace(cache)
        except OSError as exc:  # a read-only data directory: hashed again next time
            logger.debug("Cannot remember the model's fingerprint in %s: %s", cache, exc)
    return value


def model_identity(config: DocscraperConfig) -> ModelIdentity:
    """The identity of the model *config* embeds with, without loading it (no dimension)."""
    from docscraper.storage.embedding import DEFAULT_MODEL, EmbeddingError, default_model_path, model_name

    spec = config.embedding_model
    folder: str | None
    if spec == DEFAULT_MODEL:
        try:
            folder = default_model_path()
        except EmbeddingError:
            folder = None
    else:
        folder = spec if os.path.isdir(spec) else None
    fingerprint = weights_fingerprint(folder, config.data_dir / "models" / "fingerprints.json") if folder else ""
    # a folder is named by its last part: the same weights moved elsewhere are the same model
    name = model_name(spec) if spec == DEFAULT_MODEL or folder is None else Path(folder).resolve().name
    return ModelIdentity(name=name, embedder=config.embedder_class, fingerprint=fingerprint)
