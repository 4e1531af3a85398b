"""Package data that must work from a zipped egg as well as from a folder.

Scrapyd runs the project from its egg, a zip file on ``sys.path``: nothing in the package has a file
name there, so package data is read through :mod:`importlib.resources`. Alembic needs a real directory
of migration scripts; :func:`resource_dir` gives the package's own when it is one, and otherwise
extracts the folder once per process to a temporary directory that is removed at exit.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["read_text", "resource_dir"]

logger = logging.getLogger(__name__)

_extracted: dict[tuple[str, str], Path] = {}
_lock = threading.Lock()


def read_text(package: str, *parts: str) -> str:
    """The text (UTF-8) of the resource *parts* of *package*."""
    return resources.files(package).joinpath(*parts).read_text(encoding="utf-8")


def _copy(source: Traversable, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            _copy(entry, target / entry.name)
        else:
            (target / entry.name).write_bytes(entry.read_bytes())


def resource_dir(package: str, name: str) -> Path:
    """A real directory with the contents of the folder *name* of *package*."""
    ref = resources.files(package).joinpath(name)
    if isinstance(ref, Path):
        return ref
    key = (package, name)
    with _lock:
        if key not in _extracted:
            root = Path(tempfile.mkdtemp(prefix="docscraper-resources-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            _copy(ref, root / name)
            logger.debug("Extracted %s/%s from a zipped package to %s", package, name, root)
            _extracted[key] = root / name
        return _extracted[key]
