"""Shared fixtures: the fixture documentation site on loopback, and whole crawls in a subprocess.

Crawls run ``python -m scrapy crawl docs`` from the project root, exactly as a user would, with the
data directory in ``tmp_path``. Two ways to serve the site:

- ``shared_site``: one copy served once per session (once per pytest-xdist worker), for the tests that
  never change it. Its request log is emptied before each test, so ``requests`` and ``hits`` count only the
  test's own requests (the tests of a process run one at a time, and each waits for the crawls it starts).
  A test that changes the copy fails, and the copy is restored for the next test;
- ``site``: a copy and a server of the test's own, for the tests that edit or delete pages, change
  ``_routes.json``, or start crawls that may outlive them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.mockserver import DocsServer, copy_site
from tests.services import chroma_server, scrapyd_server  # noqa: F401  (fixtures: Scrapyd, a Chroma server)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def site(tmp_path: Path) -> Iterator[DocsServer]:
    """The test's own copy of the site, on a server of its own: edit it at will."""
    root = copy_site(tmp_path / "site")
    with DocsServer(root).start() as server:
        yield server


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under *root*, with its size and modification time: what changes if a test writes."""
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="session")
def _shared_site_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsServer]:
    root = copy_site(tmp_path_factory.mktemp("shared-site"))
    with DocsServer(root).start() as server:
        yield server


@pytest.fixture
def shared_site(_shared_site_server: DocsServer) -> Iterator[DocsServer]:
    """The site, served once per session, read-only (see the module docstring)."""
    server = _shared_site_server
    before = _tree(server.root)
    server.reset_requests()
    yield server
    if _tree(server.root) != before:
        shutil.rmtree(server.root)
        copy_site(server.root)
        pytest.fail("the test changed the shared fixture site (restored now): give it its own copy, the `site` "
                    "fixture")


@dataclass
class CrawlResult:
    returncode: int
    stdout: str
    stderr: str
    data_dir: Path

    @property
    def report(self) -> dict[str, Any]:
        paths = sorted(self.data_dir.glob("runs/*/crawl-metadata.json"), key=lambda p: p.stat().st_mtime)
        assert paths, f"no report written\n{self.stderr[-3000:]}"
        report: dict[str, Any] = json.loads(paths[-1].read_text())
        return report

    @property
    def stats(self) -> dict[str, int]:
        stats: dict[str, int] = self.report["stats"]
        return stats

    def keys(self, status: str, reason: str | None = None) -> set[str]:
        return {
            key
            for key, entry in self.report["items"].items()
            if entry["status"] == status and (reason is None or entry["statusReason"] == reason)
        }


Crawl = Callable[..., CrawlResult]


@pytest.fixture
def crawl(tmp_path: Path) -> Crawl:
    data_dir = tmp_path / "data"

    def run(source: str, *args: str, settings: dict[str, str] | None = None, check: bool = True,
            timeout: float = 300, index: bool = False, extra: list[str] | None = None) -> CrawlResult:
        """Crawl *source*; ``-a`` arguments in *args*. The vector index is off unless *index* is true:
        crawl-logic tests do not need the model, the index tests load the real one."""
        command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={source}", *(extra or [])]
        for arg in args:
            command += ["-a", arg]
        settings = {"DOCSCRAPER_INDEX_ENABLED": "1" if index else "0", **(settings or {})}
        for name, value in settings.items():
            command += ["-s", f"{name}={value}"]
        env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        result = CrawlResult(proc.returncode, proc.stdout, proc.stderr, data_dir)
        if check:
            assert proc.returncode == 0, proc.stderr[-5000:]
            assert "Traceback" not in proc.stderr, proc.stderr[-5000:]
        return result

    return run


def crawl_until(site: DocsServer, data_dir: Path, path: str, *, hits: int = 1, index: bool = False,
                timeout: float = 60) -> subprocess.Popen[str]:
    """Start a crawl of the fixture site's ``/docs/`` in the background, as the ``crawl`` fixture would,
    and return its process once the site has served *path* *hits* times (the test fails after *timeout*
    seconds otherwise). Make *path* slow first (a ``delay`` route) to stop the crawl while it waits."""
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={site.base_url}/docs/",
         "-s", f"DOCSCRAPER_INDEX_ENABLED={int(index)}", "-s", "DOWNLOAD_TIMEOUT=60"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and site.hits(path) < hits and proc.poll() is None:
        time.sleep(0.1)
    if site.hits(path) < hits:
        proc.kill()
        pytest.fail(f"the crawl never reached {path}\n{proc.communicate()[1][-3000:]}")
    return proc


@pytest.fixture
def command(tmp_path: Path) -> Crawl:
    """Run another project command (``sources``, ``recrawl``, ``reindex``...) as ``python -m scrapy ...``
    from the project root, on the same data directory as the ``crawl`` fixture. The vector index is off
    unless *index* is true, as for crawls."""
    data_dir = tmp_path / "data"

    def run(*args: str, settings: dict[str, str] | None = None, check: bool = True, timeout: float = 300,
            index: bool = False) -> CrawlResult:
        command = [sys.executable, "-m", "scrapy", *args]
        settings = {"DOCSCRAPER_INDEX_ENABLED": "1" if index else "0", **(settings or {})}
        for name, value in settings.items():
            command += ["-s", f"{name}={value}"]
        env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        result = CrawlResult(proc.returncode, proc.stdout, proc.stderr, data_dir)
        if check:
            assert proc.returncode == 0, proc.stderr[-5000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-5000:]
        return result

    return run
