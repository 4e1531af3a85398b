"""Questions (and a recrawl's chunks) embedded without torch: the indexing model's own computation, exported once to
ONNX and run with onnxruntime and the model's ``tokenizer.json``.

:func:`export_query_model` exports a loaded :class:`~docscraper.storage.embedding.SentenceTransformerEmbedder`'s whole
module stack to ``<data dir>/models/<model>-<fingerprint>/model.onnx`` and keeps it only when sample texts get the same
vectors both ways (cosine >= :data:`MIN_COSINE`); :func:`main` makes it in a child process. :func:`open_query_model`
finds the export of the configured model (keyed by a fingerprint of its files), or None. Only models given as a folder
are exported; a hub id, or a model whose inputs the tokenizer file cannot produce, keeps the torch path. The bundled
model's files are checked against their pins before an export is made; the export itself is not hashed when it opens.
When each is made and used, and what was measured: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from docscraper.storage.embedding import SentenceTransformerEmbedder

__all__ = ["EXPORT_VERSION", "OnnxQueryEmbedder", "export_query_model", "main", "model_fingerprint",
           "open_query_model", "query_model_dir"]

logger = logging.getLogger(__name__)

#: Bumped when the export's layout or checks change: older exports are then made again.
EXPORT_VERSION = 1
#: The least cosine similarity between a sample text's torch and ONNX vectors for an export to be kept.
MIN_COSINE = 0.99999
# what the export must agree with the model on: every kind of text a question or a chunk can be
SAMPLES = (
    "How do I configure the server to listen on another port?",
    "x",
    "CREATE TABLE measurements (id bigint GENERATED ALWAYS AS IDENTITY, taken_at timestamptz NOT NULL);",
    "def parse(self, response):\n    for link in self.links.extract_links(response):\n        yield link",
    "Les index partiels ne couvrent qu'une partie des lignes d'une table. Größe, Übersicht, naïve café.",
    "配置文件位于哪里？ Где находится файл конфигурации? 設定ファイルはどこにありますか",
    " ".join(f"word{i} with some context about option {i}" for i in range(120)),  # past the token limit
    "ERROR:  duplicate key value violates unique constraint \"users_pkey\"\nDETAIL:  Key (id)=(1) already exists.",
)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_fingerprint(folder: str | os.PathLike[str]) -> str:
    """A fingerprint of a model folder's files (relative names, sizes, modification times)."""
    root = Path(folder)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        info = path.stat()
        digest.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def query_model_dir(data_dir: Path, model_name: str, folder: str | os.PathLike[str]) -> Path:
    """Where the export of the model in *folder* lives under *data_dir*."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(model_name).name or "model").strip("-")[:60] or "model"
    return data_dir / "models" / f"{slug}-{model_fingerprint(folder)}"


def open_query_model(data_dir: Path, model_name: str, folder: str | os.PathLike[str] | None, *,
                     batch_size: int | None = None) -> OnnxQueryEmbedder | None:
    """The ONNX export of the model in *folder*, ready to embed questions (or a crawl's chunks, in passes of
    *batch_size* texts); None when there is none (or it is incomplete, from another export version, or
    cannot load)."""
    if folder is None or not Path(folder).is_dir():
        return None
    directory = query_model_dir(data_dir, model_name, folder)
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("version") != EXPORT_VERSION:
        return None
    try:
        return OnnxQueryEmbedder(directory, meta, batch_size=batch_size)
    except Exception as exc:  # a damaged export: the torch path answers, and the next one re-exports
        logger.warning("Cannot load the query model in %s (%s: %s); using the full model", directory,
                       exc.__class__.__name__, exc)
        return None


class OnnxQueryEmbedder:
    """:class:`~docscraper.storage.embedding.Embedder` on an export made by :func:`export_query_model`."""

    def __init__(self, directory: Path, meta: dict[str, Any], *, batch_size: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from docscraper.storage.embedding import default_batch_size

        self.directory = directory
        # onnxruntime runs on the CPU here: passes of similar lengths, as the model itself takes on a CPU
        self._batch_size = int(batch_size or default_batch_size("cpu"))
        self._name = str(meta["model"])
        self._dimension = int(meta["dimension"])
        self._max_tokens = int(meta["max_tokens"])
        self._inputs = [str(name) for name in meta["inputs"]]
        self._counter = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(self._max_tokens)
        self._tokenizer.enable_padding(pad_id=int(meta["pad_id"]), pad_token=str(meta["pad_token"]))
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only
        if meta.get("optimized_by") == onnxruntime.__version__:
            # optimized once at export (_optimize): loading skips the graph optimizations
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        self._session = onnxruntime.InferenceSession(str(directory / "model.onnx"), options,
                                                     providers=["CPUExecutionProvider"])

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(encoding.ids) for encoding in self._counter.encode_batch(texts)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        if len(texts) <= self.batch_size:
            return self._embed(list(texts))
        # longest first, in passes of batch_size: each pass is padded to its own longest text only
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            vectors[rows] = self._embed([texts[i] for i in rows])
        return vectors

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        columns = {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }
        feed = {name: np.asarray(columns[name], dtype=np.int64) for name in self._inputs}
        vectors = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)

    def close(self) -> None:
        self._session = None


def export_query_model(embedder: SentenceTransformerEmbedder, data_dir: Path) -> Path | None:
    """Export *embedder*'s model for torch-free questions, once; return the export's folder, or None when
    this model cannot be exported (the reason is logged) or the export disagreed with the model."""
    folder = embedder.model_folder
    if folder is None:
        logger.info("Model %s is not a local folder: questions keep the full model", embedder.name)
        return None
    target = query_model_dir(data_dir, embedder.name, folder)
    if (target / "meta.json").exists():
        return target
    if embedder.bundled:
        # the files the export copies (tokenizer.json) are read again now: they must still be the pinned ones
        from docscraper.storage.embedding import verify_bundled_model

        verify_bundled_model(folder)
    if not (Path(folder) / "tokenizer.json").is_file():
        logger.info("Model %s has no tokenizer.json: questions keep the full model", embedder.name)
        return None
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        inputs = embedder.export_onnx(work / "traced.onnx", _INPUTS)
        if inputs is None:
            return None
        optimized_by = _optimize(work / "traced.onnx", work / "model.onnx")
        (work / "traced.onnx").unlink()
        shutil.copyfile(Path(folder) / "tokenizer.json", work / "tokenizer.json")
        meta: dict[str, Any] = {
            "version": EXPORT_VERSION,
            "model": embedder.name,
            "source": str(folder),
            "fingerprint": model_fingerprint(folder),
            "dimension": embedder.dimension,
            "max_tokens": embedder.max_tokens,
            "inputs": list(inputs),
            "pad_id": int(embedder.tokenizer.pad_token_id or 0),
            "pad_token": str(embedder.tokenizer.pad_token or "[PAD]"),
            "optimized_by": optimized_by,
        }
        exported = OnnxQueryEmbedder(work, meta)
        try:
            agreement = _agreement(embedder.embed(SAMPLES), exported.embed(SAMPLES))
        finally:
            exported.close()
        meta.update(min_cosine=agreement[0], max_abs_diff=agreement[1])
        if agreement[0] < MIN_COSINE:
            logger.warning("The ONNX export of %s disagrees with the model (cosine %.6f < %s): not kept; "
                           "questions keep the full model", embedder.name, agreement[0], MIN_COSINE)
            return None
        (work / "meta.json").write_text(json.dumps(meta, indent=2))
        try:
            work.rename(target)
        except OSError:  # another process made it meanwhile
            if not (target / "meta.json").exists():
                raise
        logger.info("Exported %s for questions without torch to %s in %.1f s (cosine >= %.6f on %d samples)",
                    embedder.name, target, time.monotonic() - started, agreement[0], len(SAMPLES))
        return target
    except Exception as exc:  # never fail a crawl or a search over an optional speed-up
        logger.warning("Cannot export %s to ONNX (%s: %s): questions keep the full model", embedder.name,
                       exc.__class__.__name__, exc)
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``MODEL DATA_DIR``: make *MODEL*'s export under *DATA_DIR* in this process, once (a crawl runs this in a
    child process, :func:`docscraper.storage.backends.export_in_child`, so that torch never loads in its own).
    Exit 0 when the export exists, 3 when this model cannot be exported, 1 when it cannot load, 2 on bad
    usage."""
    import sys

    from docscraper.storage.embedding import SentenceTransformerEmbedder

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: MODEL DATA_DIR", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        embedder = SentenceTransformerEmbedder(args[0], device="cpu")
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        return 0 if export_query_model(embedder, Path(args[1])) is not None else 3
    finally:
        embedder.close()


def _optimize(traced: Path, optimized: Path) -> str:
    """Write *traced* with onnxruntime's graph optimizations applied (the portable ``extended`` level, not the
    machine-specific layouts of ``all``), so that a search process loads it without optimizing it again;
    return the onnxruntime version that did."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimized)
    onnxruntime.InferenceSession(str(traced), options, providers=["CPUExecutionProvider"])
    return str(onnxruntime.__version__)


def _agreement(expected: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """The least cosine similarity and the largest absolute difference between two sets of normalized rows."""
    import numpy as np

    if expected.shape != got.shape:
        return 0.0, float("inf")
    return float(np.min(np.sum(expected * got, axis=1))), float(np.max(np.abs(expected - got)))
