"""Questions embedded without torch (docscraper.storage.onnx_embedding): the real bundled model, exported to
ONNX under a temporary data directory, gives the same vectors and token counts as the model itself, and a
search process that finds the export never imports torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.backends import load_crawl_embedder, load_query_embedder
from docscraper.storage.embedding import DEFAULT_MODEL, SentenceTransformerEmbedder, default_model_path, model_name
from docscraper.storage.onnx_embedding import (
    MIN_COSINE,
    OnnxQueryEmbedder,
    export_query_model,
    open_query_model,
    query_model_dir,
)

ROOT = Path(__file__).resolve().parent.parent

# none of these is among the samples the export is checked on
QUESTIONS = [
    "How do I rotate the relay's log files?",
    "What does the --dry-run flag of the sync command do?",
    "Wie setze ich das Passwort zurück?",
    "upstream timeout 504 after 30 seconds",
    "SELECT count(*) FROM events WHERE kind = 'error' GROUP BY host;",
    " ".join(["a very long question about configuration and tuning"] * 60),
]


@pytest.fixture(scope="module")
def model() -> Iterator[SentenceTransformerEmbedder]:
    embedder = SentenceTransformerEmbedder()
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def exported(model: SentenceTransformerEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("data")
    directory = export_query_model(model, data_dir)
    assert directory is not None
    return data_dir


def test_the_export_gives_the_models_vectors_and_token_counts(model: SentenceTransformerEmbedder,
                                                              exported: Path) -> None:
    fast = open_query_model(exported, model.name, default_model_path())
    assert isinstance(fast, OnnxQueryEmbedder)
    assert (fast.name, fast.dimension, fast.max_tokens) == (model.name, model.dimension, model.max_tokens)
    expected, got = model.embed(QUESTIONS), fast.embed(QUESTIONS)
    assert got.shape == expected.shape == (len(QUESTIONS), model.dimension) and got.dtype == np.float32
    assert np.min(np.sum(expected * got, axis=1)) >= MIN_COSINE
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert fast.count_tokens(QUESTIONS) == model.count_tokens(QUESTIONS)
    assert fast.count_tokens(QUESTIONS)[-1] > model.max_tokens  # counted whole, though embedded truncated
    assert fast.embed([]).shape == (0, model.dimension)
    meta = json.loads((query_model_dir(exported, model.name, default_model_path()) / "meta.json").read_text())
    assert meta["min_cosine"] >= MIN_COSINE and meta["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]


def test_the_export_is_made_once_and_follows_the_model_folder(model: SentenceTransformerEmbedder, exported: Path,
                                                              tmp_path: Path) -> None:
    directory = query_model_dir(exported, model.name, default_model_path())
    stamp = (directory / "model.onnx").stat().st_mtime_ns
    assert export_query_model(model, exported) == directory
    assert (directory / "model.onnx").stat().st_mtime_ns == stamp  # not made again
    # an identical copy of the model folder (copytree keeps times) is the same model; a changed one is not
    copy = Path(shutil.copytree(default_model_path(), tmp_path / "model"))
    assert open_query_model(exported, model.name, copy) is not None
    with (copy / "config.json").open("a") as config:
        config.write("\n")
    assert open_query_model(exported, model.name, copy) is None
    assert open_query_model(exported, model.name, None) is None
    # an export from an older layout is not used
    meta = json.loads((directory / "meta.json").read_text())
    (tmp_path / "old").mkdir()
    old = query_model_dir(tmp_path / "old", model.name, default_model_path())
    shutil.copytree(directory, old)
    (old / "meta.json").write_text(json.dumps({**meta, "version": 0}))
    assert open_query_model(tmp_path / "old", model.name, default_model_path()) is None


def test_a_search_process_with_the_export_never_imports_torch(exported: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from docscraper.config import DocscraperConfig; "
        "from docscraper.storage.backends import load_query_embedder; "
        f"e = load_query_embedder(DocscraperConfig(data_dir=Path({str(exported)!r}), state_url='sqlite://')); "
        "v = e.embed(['where are the logs?']); "
        "print(type(e).__name__, v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["OnnxQueryEmbedder", "(1,", "384)", "False", "False"]


def test_a_crawl_on_the_cpu_embeds_with_the_export_without_torch(exported: Path) -> None:
    """A recrawl's chunks are embedded by the export when it exists: no torch import, the configured pass
    size, the model's vectors; DOCSCRAPER_CRAWL_ONNX=0 keeps the model."""
    code = (
        "import logging, sys; from pathlib import Path; from docscraper.config import DocscraperConfig; "
        "from docscraper.storage.backends import load_crawl_embedder; logging.basicConfig(level=logging.INFO); "
        f"e = load_crawl_embedder(DocscraperConfig(data_dir=Path({str(exported)!r}), state_url='sqlite://', "
        "embedding_device='cpu', embedding_batch_size=8)); "
        f"v = e.embed({QUESTIONS!r}); "
        "import numpy; numpy.save(sys.argv[1], v); "
        "print(type(e).__name__, e.batch_size, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    saved = exported / "crawl-vectors.npy"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code, str(saved)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["OnnxQueryEmbedder", "8", "False", "False"]
    assert "from its ONNX export" in out.stderr  # the crawl's log says which embedder it loaded
    model = load_crawl_embedder(DocscraperConfig(data_dir=exported, state_url="sqlite://", crawl_onnx=False))
    try:
        assert isinstance(model, SentenceTransformerEmbedder)
        assert np.min(np.sum(model.embed(QUESTIONS) * np.load(saved), axis=1)) >= MIN_COSINE
    finally:
        model.close()


def test_without_an_export_questions_use_the_model_and_export_it(tmp_path: Path) -> None:
    config = DocscraperConfig(data_dir=tmp_path, state_url="sqlite://")
    first = load_query_embedder(config)
    try:
        assert isinstance(first, SentenceTransformerEmbedder)
    finally:
        first.close()
    second = load_query_embedder(config)
    assert isinstance(second, OnnxQueryEmbedder)


def test_the_first_crawl_makes_the_export_in_a_child_process_and_never_imports_torch(tmp_path: Path) -> None:
    """No export yet: the crawl's embedder is made by a child process that loads the model and exports it; the
    crawl's own process embeds with the export and never imports torch."""
    code = (
        "import logging, sys; from pathlib import Path; from docscraper.config import DocscraperConfig; "
        "from docscraper.storage.backends import load_crawl_embedder; logging.basicConfig(level=logging.INFO); "
        f"e = load_crawl_embedder(DocscraperConfig(data_dir=Path({str(tmp_path)!r}), state_url='sqlite://', "
        "embedding_device='cpu')); v = e.embed(['where are the logs?']); "
        "print(type(e).__name__, v.shape[1], 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["OnnxQueryEmbedder", "384", "False", "False"]
    assert "to ONNX in a child process" in out.stderr and "from its ONNX export" in out.stderr
    directory = query_model_dir(tmp_path, model_name(DEFAULT_MODEL), default_model_path())
    assert json.loads((directory / "meta.json").read_text())["min_cosine"] >= MIN_COSINE


def test_a_model_the_child_cannot_export_is_loaded_by_the_crawl_itself(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A model folder without tokenizer.json cannot be exported: the child says so (exit 3), the crawl logs it
    and embeds with the model; nothing is left under the data directory's models."""
    folder = Path(shutil.copytree(default_model_path(), tmp_path / "model"))
    (folder / "tokenizer.json").unlink()
    config = DocscraperConfig(data_dir=tmp_path / "data", state_url="sqlite://", embedding_device="cpu",
                              embedding_model=str(folder))
    with caplog.at_level("WARNING", logger="docscraper.storage.backends"):
        embedder = load_crawl_embedder(config)
    try:
        assert isinstance(embedder, SentenceTransformerEmbedder)
        assert embedder.embed(["where are the logs?"]).shape == (1, 384)
    finally:
        embedder.close()
    assert any("child process (exit 3" in record.getMessage() for record in caplog.records), caplog.text
    assert not list((tmp_path / "data").glob("models/*/meta.json"))
    # the folder cannot be exported as it is: the next crawl loads the model without starting a child again
    marks = list((tmp_path / "data").glob("models/*.not-exportable"))
    assert len(marks) == 1 and "tokenizer" in marks[0].read_text()
    caplog.clear()
    with caplog.at_level("INFO", logger="docscraper.storage.backends"):
        again = load_crawl_embedder(config)
    again.close()
    assert isinstance(again, SentenceTransformerEmbedder)
    assert not any("child process" in record.getMessage() for record in caplog.records), caplog.text
    assert any("cannot be exported to ONNX" in record.getMessage() for record in caplog.records)
