"""Liveness that cannot be fooled, and one crawl of a source at a time (DESIGN rule 10).

A crawl holds its source's lock in the state database: a second crawl of the source started beside it stops
at once (``source_busy``), and so are ``sources remove`` and ``verify --repair`` of that source refused, with
the holder named. A killed crawl's lock is taken over by the next crawl. A loader whose reader is slow holds
the crawl's items back, never its reactor: the crawl's progress keeps being written, and it is never taken
for dead.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from docscraper import WebCrawlerLoader
from tests.conftest import ROOT, Crawl
from tests.mockserver import DocsServer
from tests.test_status import slow_pages, start_crawl, status_json, wait_for


def lock_rows(data_dir: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(data_dir / "state.db")
    try:
        return list(db.execute("SELECT source_id, holder, purpose, pid FROM source_locks"))
    finally:
        db.close()


@pytest.mark.crawl
def test_a_second_crawl_removal_or_repair_of_a_running_source_is_refused(site: DocsServer, tmp_path: Path,
                                                                        command: Crawl) -> None:
    data_dir = tmp_path / "data"
    # three seconds a page, one at a time: the first crawl runs for minutes unless the routes are put back
    original = slow_pages(site, delay=3.0)
    first = start_crawl(site, data_dir, "CONCURRENT_REQUESTS_PER_DOMAIN=1")
    try:
        running = wait_for(lambda r: r["state"] == "running" and r["progress"].get("pages") is not None, data_dir)
        source = running["source"]
        (lock,) = lock_rows(data_dir)
        assert (lock[1], lock[2], lock[3]) == (running["run_id"], "crawl", first.pid)
        removed = command("sources", "remove", source, "--yes", check=False)
        assert removed.returncode == 1 and f"cannot remove source {source!r}" in removed.stderr
        assert running["run_id"] in removed.stderr
        # a second crawl of the same source, started while the first runs
        second = start_crawl(site, data_dir)
        _, stderr = second.communicate(timeout=300)
        assert second.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
        assert f"source {source!r} is busy: a crawl (run {running['run_id']}" in stderr
        assert "source_busy" in stderr
        assert [r["state"] for r in status_json(data_dir) if r["run_id"] == running["run_id"]] == ["running"]
        assert lock_rows(data_dir) == [lock]
    finally:
        (site.root / "_routes.json").write_text(json.dumps(original))
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0 and "Traceback" not in stderr, stderr[-3000:]
    assert lock_rows(data_dir) == []  # given up at close
    runs = {r["run_id"]: r for r in status_json(data_dir)}
    assert runs[running["run_id"]]["close_reason"] == "finished"
    assert command("sources", "remove", source, "--yes").returncode == 0


@pytest.mark.crawl
def test_the_lock_of_a_killed_crawl_is_taken_over(site: DocsServer, tmp_path: Path, crawl: Crawl) -> None:
    data_dir = tmp_path / "data"
    original = slow_pages(site, delay=5.0)
    proc = start_crawl(site, data_dir)
    try:
        wait_for(lambda r: r["state"] == "running", data_dir)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        (site.root / "_routes.json").write_text(json.dumps(original))
    assert len(lock_rows(data_dir)) == 1  # left behind by the killed process
    result = crawl(site.url("/docs/"))
    assert "Took over the lock of source" in result.stderr and result.report["closeReason"] == "finished"
    assert lock_rows(data_dir) == []


@pytest.mark.crawl
def test_a_slow_loader_reader_holds_items_back_not_the_reactor(site: DocsServer, tmp_path: Path) -> None:
    """The loader's pipe fills while its reader sleeps; the crawl's reactor goes on writing its progress
    (a timer), and the crawl is running all along, never died."""
    data_dir = tmp_path / "data"
    loader = WebCrawlerLoader(site.url("/docs/"), incremental=True, data_dir=data_dir,
                              settings={"DOCSCRAPER_INDEX_ENABLED": "0", "DOCSCRAPER_PROGRESS_INTERVAL": "0.5",
                                        "DOCSCRAPER_HEARTBEAT_TIMEOUT": "1"})
    documents = loader.lazy_load()
    first = next(documents)
    # pages are large enough that the 64 KiB pipe is full long before the crawl ends
    deadline = time.monotonic() + 120
    updates: list[str] = []
    while time.monotonic() < deadline and len(updates) < 8:
        runs = [r for r in status_json(data_dir) if r["state"] != "finished"]
        assert runs and all(r["state"] == "running" for r in runs), runs
        stamp = runs[0]["progress"].get("updated_at")
        if stamp and stamp not in updates:
            updates.append(stamp)
        time.sleep(0.7)
    assert len(updates) >= 8, "the crawl's progress stopped being written while its reader slept"
    rest = list(documents)
    assert first.url and len(rest) >= 30 and loader.last_report is not None
    assert loader.last_report["closeReason"] == "finished"
    assert os.environ.get("DOCSCRAPER_SETTINGS") is None


def test_the_crawl_command_takes_settings_from_its_environment(tmp_path: Path) -> None:
    """What a background crawl and a loader's child receive instead of ``-s`` options; a bad value is one
    error line."""
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(tmp_path / "data"),
               DOCSCRAPER_SETTINGS=json.dumps({"DOCSCRAPER_GONE_AFTER": "0"}))
    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "source=https://docs.example.com/"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "DOCSCRAPER_GONE_AFTER must be 1 or more" in proc.stderr
    env["DOCSCRAPER_SETTINGS"] = "[1, 2]"
    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", "source=https://docs.example.com/"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "must be a JSON object" in proc.stderr and "Traceback" not in proc.stderr


def test_a_repair_or_removal_is_refused_while_another_process_holds_the_source(tmp_path: Path) -> None:
    """The lock alone (no run row): what a crawl of any machine holds from its open to its close."""
    from docscraper.config import DocscraperConfig
    from docscraper.ops.sources import SourceError, remove_source
    from docscraper.ops.verify import VerifyError, verify
    from docscraper.storage.runs import take_lock
    from docscraper.storage.state import SqlStateStore
    from docscraper.storage.vectors import ChromaIndex

    data_dir = tmp_path / "data"
    config = DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}")
    store = SqlStateStore(config.state_url)
    source = store.ensure_source("held", "https://held.example/docs", {}, registered=True)
    # held by a live process (this one), under another holder's name: as a crawl elsewhere would hold it
    assert take_lock(store, source.id, "run-elsewhere", purpose="crawl", timeout=60) is None
    ChromaIndex(path=config.chroma_path).close()
    with pytest.raises(VerifyError, match=r"cannot repair source 'held': a crawl \(run run-elsewhere"):
        verify(config, "held", fix=True)
    with pytest.raises(VerifyError, match="cannot repair source 'held'"):
        verify(config, None, fix=True)
    verify(config, "held")  # a check alone is not refused
    with pytest.raises(SourceError, match=r"cannot remove source 'held': a crawl \(run run-elsewhere"):
        remove_source(config, "held")
    store.release_lock(source.id, "run-elsewhere")
    assert remove_source(config, "held")["pages"] == 0
    store.close()
