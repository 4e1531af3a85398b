"""The one place the state store, the vector index and the embedder are built: each implementation is named
by a dotted path in settings (``DOCSCRAPER_STATE_STORE_CLASS``, ``DOCSCRAPER_VECTOR_INDEX_CLASS``,
``DOCSCRAPER_EMBEDDER_CLASS``), as Scrapyd chooses its job storage. The crawl, search, the source registry,
the status and the MCP server all open them here. Blocking: call them off the reactor thread in a crawl."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig
    from docscraper.storage.embedding import Embedder
    from docscraper.storage.onnx_embedding import OnnxQueryEmbedder
    from docscraper.storage.state import StateStore
    from docscraper.storage.vectors import VectorIndex

__all__ = ["export_for_questions", "export_in_child", "load_crawl_embedder", "load_embedder", "load_query_embedder",
           "open_state_store", "open_vector_index"]

logger = logging.getLogger(__name__)

#: The embedder whose model the question path can export (docscraper.storage.onnx_embedding).
_SENTENCE_TRANSFORMERS = "docscraper.storage.embedding.SentenceTransformerEmbedder"
#: Present when the machine has a GPU driver (NVIDIA's, or AMD's ROCm): torch may then run the model on it.
_ACCELERATOR_MARKS = ("/proc/driver/nvidia/version", "/dev/nvidia0", "/dev/kfd")


def open_state_store(config: DocscraperConfig) -> StateStore:
    """The state store at ``DOCSCRAPER_STATE_URL`` (migrated to the current schema when it opens)."""
    store: StateStore = load_object(config.state_store_class)(config.state_url)
    return store


def open_vector_index(config: DocscraperConfig) -> VectorIndex:
    """The vector index: the Chroma server at ``DOCSCRAPER_CHROMA_URL``, else the data directory's."""
    index: VectorIndex = load_object(config.vector_index_class)(
        path=config.chroma_path, url=config.chroma_url, collection=config.chroma_collection,
        telemetry=config.chroma_telemetry)
    return index


def load_embedder(config: DocscraperConfig) -> Embedder:
    """The embedding model named by ``DOCSCRAPER_EMBEDDING_MODEL`` (the bundled one by default)."""
    embedder: Embedder = load_object(config.embedder_class)(
        config.embedding_model, device=config.embedding_device, batch_size=config.embedding_batch_size)
    return embedder


def load_crawl_embedder(config: DocscraperConfig) -> Embedder:
    """The embedder for a crawl's chunks: the configured model's ONNX export when the model would run on the
    CPU, else the configured embedder. The export gives the model's vectors (checked when it is made) without
    importing torch into the crawl: a recrawl with a few changed pages starts embedding in a fraction of a
    second instead of ten, and a crawl holds about 300 MiB less. The first crawl with a model makes the export
    in a child process (:func:`export_in_child`, about as long as loading the model here would take), so that
    torch and the export's own peak never live in the crawl's process; when that fails, the crawl loads the
    model itself. ``DOCSCRAPER_CRAWL_ONNX=0`` (or ``DOCSCRAPER_QUERY_ONNX=0``, which makes no export): always
    the configured embedder."""
    if config.crawl_onnx and _runs_on_cpu(config):
        fast = _open_export(config, batch_size=config.embedding_batch_size)
        if fast is None and _exportable(config) and _model_folder(config) is not None \
                and not _marked_not_exportable(config) and export_in_child(config):
            fast = _open_export(config, batch_size=config.embedding_batch_size)
        if fast is not None:
            logger.info("Loaded embedding model %s from its ONNX export in %s (cpu, dim %d, max %d tokens, %d "
                        "texts per pass; torch not imported)", fast.name, fast.directory, fast.dimension,
                        fast.max_tokens, fast.batch_size)
            return fast
    return load_embedder(config)


#: The longest an export in a child process may take (importing torch, loading, tracing, checking).
EXPORT_TIMEOUT = 600.0


def _exportable(config: DocscraperConfig) -> bool:
    """Whether the configuration allows an export: on (``DOCSCRAPER_QUERY_ONNX``), of the sentence-transformers
    embedder (whether its model is a folder the export can read is :func:`export_query_model`'s to say)."""
    return config.query_onnx and config.embedder_class == _SENTENCE_TRANSFORMERS


def export_in_child(config: DocscraperConfig) -> bool:
    """Make the configured model's ONNX export in a child process (:func:`docscraper.storage.onnx_embedding.main`)
    and say whether it now exists. The child gets this process's import path and environment, and only the
    model's name and the data directory as arguments; its last lines are logged when it fails."""
    command = [sys.executable, "-c", "from docscraper.storage.onnx_embedding import main; raise SystemExit(main())",
               config.embedding_model, str(config.data_dir)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(entry or os.getcwd() for entry in sys.path))
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=EXPORT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("Cannot export %s to ONNX in a child process (%s: %s): the crawl loads the model itself",
                       config.embedding_model, exc.__class__.__name__, exc)
        return False
    if done.returncode != 0:
        tail = " | ".join(line.strip() for line in (done.stderr or "").strip().splitlines()[-3:])
        logger.warning("Cannot export %s to ONNX in a child process (exit %d: %s): the crawl loads the model "
                       "itself", config.embedding_model, done.returncode, tail or "no output")
        if done.returncode == NOT_EXPORTABLE and (mark := _not_exportable_mark(config)) is not None:
            # this model folder, as it is, never will be: later crawls load it without trying (a changed folder
            # has another fingerprint, and so another mark)
            with contextlib.suppress(OSError):
                mark.parent.mkdir(parents=True, exist_ok=True)
                mark.write_text(tail + "\n")
        return False
    logger.info("Exported %s to ONNX in a child process in %.1f s: this crawl embeds without torch",
                config.embedding_model, time.monotonic() - started)
    return True


#: The export child's exit status for a model that cannot be exported (:func:`docscraper.storage.onnx_embedding.main`)
NOT_EXPORTABLE = 3


def _not_exportable_mark(config: DocscraperConfig) -> Path | None:
    """The file that records that the configured model folder, as it is now, cannot be exported (beside where its
    export would be: ``DATA_DIR/models/<model>-<fingerprint>.not-exportable``)."""
    folder = _model_folder(config)
    if folder is None:
        return None
    from docscraper.storage.embedding import model_name
    from docscraper.storage.onnx_embedding import query_model_dir

    directory = query_model_dir(config.data_dir, model_name(config.embedding_model), folder)
    return directory.with_name(directory.name + ".not-exportable")


def _marked_not_exportable(config: DocscraperConfig) -> bool:
    mark = _not_exportable_mark(config)
    if mark is not None and mark.is_file():
        logger.info("%s cannot be exported to ONNX (%s records why); the crawl loads the model itself",
                    config.embedding_model, mark)
        return True
    return False


def _runs_on_cpu(config: DocscraperConfig) -> bool:
    """Whether the configured model would run on the CPU, decided without importing torch: the device set,
    else no GPU driver on the machine (where there is one, torch decides, as it does for searches)."""
    if config.embedding_device:
        return config.embedding_device == "cpu"
    return not any(os.path.exists(mark) for mark in _ACCELERATOR_MARKS)


def _open_export(config: DocscraperConfig, *, batch_size: int | None = None) -> OnnxQueryEmbedder | None:
    """The configured model's ONNX export, or None (none made, or ``DOCSCRAPER_QUERY_ONNX=0``, which turns
    the export off)."""
    if not config.query_onnx:
        return None
    from docscraper.storage.embedding import model_name
    from docscraper.storage.onnx_embedding import open_query_model

    return open_query_model(config.data_dir, model_name(config.embedding_model), _model_folder(config),
                            batch_size=batch_size)


def _model_folder(config: DocscraperConfig) -> str | None:
    """The configured model's folder, when the default embedder loads a model from a folder."""
    from docscraper.storage.embedding import DEFAULT_MODEL, EmbeddingError, default_model_path

    if config.embedder_class != _SENTENCE_TRANSFORMERS:
        return None
    if config.embedding_model == DEFAULT_MODEL:
        try:
            return default_model_path()
        except EmbeddingError:
            return None
    return config.embedding_model if os.path.isdir(config.embedding_model) else None


def export_for_questions(config: DocscraperConfig, embedder: Embedder) -> None:
    """Make the torch-free export of *embedder*'s model for questions, unless it exists (or cannot be made)."""
    from docscraper.storage.embedding import SentenceTransformerEmbedder
    from docscraper.storage.onnx_embedding import export_query_model

    if _exportable(config) and isinstance(embedder, SentenceTransformerEmbedder):
        export_query_model(embedder, config.data_dir)


def load_query_embedder(config: DocscraperConfig) -> Embedder:
    """The embedder for questions: the configured model's ONNX export when there is one (no torch import:
    :mod:`docscraper.storage.onnx_embedding`), else the configured embedder, which then makes the export for
    the next question asked in a new process. ``DOCSCRAPER_QUERY_ONNX=0``: always the configured embedder."""
    fast = _open_export(config)
    if fast is not None:
        return fast
    embedder = load_embedder(config)
    export_for_questions(config, embedder)
    return embedder
