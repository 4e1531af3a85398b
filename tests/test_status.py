"""Live crawl status: progress in the state database, dead-run detection, ``scrapy status``, the progress
line and the stuck-crawl watchdog."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.ledger import RECENT_OUTCOMES, MemoryLedger, summarize
from docscraper.crawl.progress import RateMeter, build_progress, format_duration, format_progress_line, format_time
from docscraper.ops.status import RunStatus, crawl_status, describe, pid_alive, run_state
from docscraper.storage.runs import process_start, this_process
from docscraper.storage.state import RunRecord, SqlStateStore, iso_utc, utcnow
from tests.conftest import ROOT, Crawl
from tests.mockserver import DocsServer

HOST = socket.gethostname()


def config_for(tmp_path: Path, **settings: Any) -> DocscraperConfig:
    return DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(tmp_path / "data"), **settings}))


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def add_run(store: SqlStateStore, source: str, run_id: str, *, age: float, heartbeat_age: float | None = None,
            host: str | None = HOST, pid: int | None = None, finished: bool = False,
            progress: dict[str, Any] | None = None, process_start: str | None = None) -> None:
    src = store.ensure_source(source, f"https://{source}.example/", {})
    started = utcnow() - timedelta(seconds=age)
    store.start_run(RunRecord(run_id, src.id, started, None, None, None), host=host, pid=pid,
                    process_start=process_start)
    if heartbeat_age is not None or progress is not None:
        at = utcnow() - timedelta(seconds=heartbeat_age if heartbeat_age is not None else 0)
        store.heartbeat(run_id, at, progress)
    if finished:
        store.finish_run(RunRecord(run_id, src.id, started, started + timedelta(seconds=age / 2), "finished",
                                   "success", {"success": 1}, f"/reports/{run_id}.json"))


# -- settings -----------------------------------------------------------------------------------------


def test_settings_defaults_and_validation(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    assert (config.progress_interval, config.progress_line, config.watchdog_seconds) == (5.0, "auto", 900.0)
    config = config_for(tmp_path, DOCSCRAPER_PROGRESS_INTERVAL="0.5", DOCSCRAPER_PROGRESS_LINE="On",
                        DOCSCRAPER_WATCHDOG_SECONDS="0")
    assert (config.progress_interval, config.progress_line, config.watchdog_seconds) == (0.5, "on", 0.0)
    assert config_for(tmp_path, DOCSCRAPER_PROGRESS_LINE="0").progress_line == "off"
    with pytest.raises(ConfigError, match="DOCSCRAPER_PROGRESS_INTERVAL must be more than 0"):
        config_for(tmp_path, DOCSCRAPER_PROGRESS_INTERVAL="0")
    with pytest.raises(ConfigError, match="DOCSCRAPER_PROGRESS_LINE must be auto, on or off"):
        config_for(tmp_path, DOCSCRAPER_PROGRESS_LINE="sometimes")
    with pytest.raises(ConfigError, match="DOCSCRAPER_WATCHDOG_SECONDS must be 0 or more"):
        config_for(tmp_path, DOCSCRAPER_WATCHDOG_SECONDS="-1")


# -- the ledger's live tallies --------------------------------------------------------------------------


def test_ledger_tally_matches_summarize_and_keeps_recent_outcomes() -> None:
    ledger = MemoryLedger()
    for i in range(RECENT_OUTCOMES + 5):
        ledger.record(f"skip{i}", "skipped", "outOfScope", url=f"https://h/skip{i}")
    ledger.record("a", "skipped", "duplicate", url="https://h/a")
    ledger.record("a", "failed", "httpError", url="https://h/a", detail="HTTP 500")
    ledger.record("a", "success", "new")  # a success replaces the failure
    ledger.record("b", "failed", "timeout", url="https://h/b", detail="took too long")
    ledger.record("b", "skipped", "duplicate")  # ranks lower: ignored
    ledger.record("c", "success", "unchanged")
    counts = {k: v for k, v in ledger.tally.items() if v}
    assert counts == {k: v for k, v in summarize(ledger.items).items() if v and k != "uniqueUrls"}
    assert len(ledger.recent["skipped"]) == RECENT_OUTCOMES
    assert ledger.recent["skipped"][-1] == {"url": "https://h/a", "reason": "duplicate", "detail": None}
    assert ledger.recent["failed"][-1] == {"url": "https://h/b", "reason": "timeout", "detail": "took too long"}


# -- progress snapshots and the progress line -----------------------------------------------------------


def snapshot(ledger: MemoryLedger, crawler: Any = None, scheduled_pages: int = 0, interval: float | None = None,
             **counters: int) -> dict[str, Any]:
    """build_progress of *ledger*, 10 s into a run whose scheduler saw 12 requests and handed out 5."""
    ledger.scheduled_pages = scheduled_pages
    ledger.counters = Counter(counters)
    return build_progress(ledger, crawler or fake_crawler(), utcnow() - timedelta(seconds=10), RateMeter(),
                          interval=interval)


def fake_crawler() -> Any:
    stats = SimpleNamespace(get_value=lambda key, default=0: {"scheduler/enqueued": 12,
                                                               "scheduler/dequeued": 5}.get(key, default))
    return SimpleNamespace(engine=None, stats=stats)


def test_build_progress_counts_pages_failures_and_refusals() -> None:
    ledger = MemoryLedger()
    ledger.record("a", "success", "new")
    ledger.record("b", "success", "changed")
    ledger.record("c", "success", "unchanged")
    ledger.record("d", "failed", "httpError", url="https://h/d", detail="HTTP 500")
    ledger.record("e", "skipped", "robots", url="https://h/e")
    progress = snapshot(ledger, chunks_added=7, embeddings_computed=5, interval=0.5)
    json.dumps(progress)
    assert progress["pages"] == {"done": 4, "known": 11, "queued": 7, "in_flight": 0, "new": 1, "changed": 1,
                                 "unchanged": 1, "failed": 1, "skipped": 1, "removed": 0}
    assert progress["failed"] == {"count": 1, "by_reason": {"httpError": 1},
                                  "recent": [{"url": "https://h/d", "reason": "httpError", "detail": "HTTP 500"}]}
    assert progress["skipped"]["by_reason"] == {"robots": 1}
    assert (progress["chunks_written"], progress["embeddings_computed"], progress["interval_s"]) == (7, 5, 0.5)
    assert progress["elapsed_s"] >= 10 and 0 < progress["rate"]["overall"] <= 0.4
    assert progress["started_at"].endswith("Z") and progress["updated_at"].endswith("Z")
    # pages fetched and waiting in the pipelines (for the model) are known though neither queued nor in flight
    waiting = snapshot(ledger, scheduled_pages=30, interval=0.5)
    assert waiting["pages"]["known"] == 30
    assert "stopping" not in progress
    # SIGTERM: the crawler stops taking pages while the in-flight ones finish; status says so
    closing = fake_crawler()
    closing.crawling = False
    assert snapshot(ledger, closing)["stopping"] is True


def test_rate_meter_measures_the_recent_window() -> None:
    meter = RateMeter(window=10)
    assert meter.sample(0, now=100.0) is None
    assert meter.sample(10, now=105.0) == pytest.approx(2.0)
    assert meter.sample(20, now=110.0) == pytest.approx(2.0)
    # the first samples leave the window: only the last ten seconds count
    assert meter.sample(20, now=120.0) == pytest.approx(0.0)
    assert meter.sample(50, now=125.0) == pytest.approx(30 / 15)


def test_format_progress_line() -> None:
    progress = {"pages": {"done": 120, "known": 450, "failed": 1, "skipped": 12}, "rate": {"recent": 3.24},
                "elapsed_s": 65}
    assert format_progress_line(progress) == (
        "docscraper 120/450 pages (27%) | 3.2 pages/s | 1 error | 12 skipped | 1m05s"
    )
    assert format_progress_line({}) == "docscraper 0/0 pages | 0.0 pages/s | 0 errors | 0s"
    short = format_progress_line(progress, width=30)
    assert len(short) == 30 and short.endswith("...")
    assert [format_duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


def test_times_are_written_in_utc_one_way_for_json_and_one_for_people() -> None:
    paris = timezone(timedelta(hours=1))
    aware = datetime(2026, 11, 27, 5, 0, 7, 250000, tzinfo=paris)
    naive = datetime(2026, 11, 27, 4, 0, 7)  # the state database's times are UTC
    assert iso_utc(aware) == "2026-11-27T04:00:07.250000Z"
    assert iso_utc(naive) == "2026-11-27T04:00:07Z"
    assert iso_utc(None) is None
    assert format_time(aware) == format_time(naive) == format_time("2026-11-27T04:00:07Z") == "2026-11-27 04:00:07Z"
    assert format_time(None) == format_time("") == "-"


# -- dead-run detection ---------------------------------------------------------------------------------


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(dead_pid())
    assert not pid_alive(0)


def test_process_start_identifies_a_process() -> None:
    mine = process_start(os.getpid())
    assert mine is not None and mine == process_start(os.getpid())
    assert this_process() == (HOST, os.getpid(), mine)
    assert process_start(dead_pid()) is None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert process_start(child.pid) not in (None, mine)
    finally:
        child.kill()
        child.wait()


def test_run_state_from_the_process_on_this_host_and_the_heartbeat_elsewhere(tmp_path: Path) -> None:
    """On this machine a run dies with its process, however old its heartbeat (a blocked reactor writes
    none); a reused pid is not its process; elsewhere only the heartbeat can tell."""
    store = SqlStateStore(f"sqlite:///{tmp_path / 'state.db'}")
    me = process_start(os.getpid())
    add_run(store, "fresh", "r-fresh", age=600, heartbeat_age=1, pid=os.getpid(), process_start=me)
    add_run(store, "blocked", "r-blocked", age=600, heartbeat_age=3600, pid=os.getpid(), process_start=me)
    add_run(store, "legacy", "r-legacy", age=600, heartbeat_age=3600, pid=os.getpid())
    add_run(store, "gone", "r-gone", age=600, heartbeat_age=1, pid=dead_pid())
    add_run(store, "reused", "r-reused", age=600, heartbeat_age=1, pid=os.getpid(), process_start="other-boot:1")
    add_run(store, "elsewhere", "r-elsewhere", age=600, heartbeat_age=1, host="other-host", pid=dead_pid())
    add_run(store, "silent", "r-silent", age=600, heartbeat_age=61, host="other-host", pid=os.getpid())
    add_run(store, "done", "r-done", age=600, finished=True)
    states = {s.run.run_id: run_state(s, now=utcnow(), timeout=60, host=HOST) for s in store.run_states()}
    store.close()
    assert states == {"r-fresh": "running", "r-blocked": "running", "r-legacy": "running", "r-gone": "died",
                      "r-reused": "died", "r-elsewhere": "running", "r-silent": "died", "r-done": "finished"}


def test_run_states_lists_unfinished_runs_and_the_last_finished_per_source(tmp_path: Path) -> None:
    store = SqlStateStore(f"sqlite:///{tmp_path / 'state.db'}")
    add_run(store, "a", "a1", age=900, finished=True)
    add_run(store, "a", "a2", age=600, finished=True)
    add_run(store, "a", "a3", age=60, heartbeat_age=1, pid=os.getpid(), progress={"pages": {"done": 3}})
    add_run(store, "b", "b1", age=300, finished=True)
    assert [s.run.run_id for s in store.run_states()] == ["a2", "b1", "a3"]
    a = store.get_source("a")
    assert a is not None
    states = store.run_states(a.id)
    assert [(s.source, s.run.run_id) for s in states] == [("a", "a2"), ("a", "a3")]
    running = states[1]
    assert (running.host, running.pid, running.progress) == (HOST, os.getpid(), {"pages": {"done": 3}})
    assert running.heartbeat_at is not None and running.heartbeat_at.tzinfo is not None
    store.close()


def test_crawl_status_reports_running_died_and_finished(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    assert crawl_status(config) == []  # no database yet, and none is created
    assert not (tmp_path / "data" / "state.db").exists()
    with pytest.raises(LookupError, match="unknown source 'docs'"):
        crawl_status(config, "docs")
    store = SqlStateStore(config.state_url)
    add_run(store, "docs", "d1", age=3600, finished=True)
    add_run(store, "docs", "d2", age=120, heartbeat_age=1, pid=dead_pid(), progress={"pages": {"done": 9}})
    add_run(store, "api", "x1", age=7200, heartbeat_age=7000, host="build-box", pid=1234)
    add_run(store, "api", "x2", age=3600, finished=True)  # supersedes the run that died before it
    add_run(store, "api", "x3", age=30, heartbeat_age=0, pid=os.getpid())
    store.close()
    statuses = crawl_status(config)
    assert [(s.source, s.run_id, s.state) for s in statuses] == [
        ("docs", "d1", "finished"), ("api", "x2", "finished"), ("docs", "d2", "died"), ("api", "x3", "running"),
    ]
    finished, _, died, running = statuses
    assert (finished.result, finished.close_reason, finished.report_path) == ("success", "finished", "/reports/d1.json")
    assert finished.elapsed_s == pytest.approx(1800, abs=1)
    assert died.progress == {"pages": {"done": 9}} and died.elapsed_s == pytest.approx(119, abs=2)
    assert running.elapsed_s >= 30 and running.pid == os.getpid()
    assert [s.run_id for s in crawl_status(config, "docs")] == ["d1", "d2"]
    with pytest.raises(LookupError, match=r"unknown source 'nope' \(known sources: api, docs\)"):
        crawl_status(config, "nope")
    data = json.loads(json.dumps([s.as_dict() for s in statuses]))
    assert set(data[0]) == set(RunStatus.__dataclass_fields__)
    assert data[0]["started_at"].endswith("Z") and data[3]["finished_at"] is None
    assert describe(died)[0].startswith("docs  DIED  run d2")
    assert "stopping" not in describe(running)[0]
    assert "stopping: finishing" in describe(replace(running, progress={"stopping": True}))[0]
    assert "result success (close reason finished)" in describe(finished)[0]


# -- whole crawls ---------------------------------------------------------------------------------------


def status_json(data_dir: Path, *args: str) -> list[dict[str, Any]]:
    proc = scrapy_status(data_dir, "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: list[dict[str, Any]] = json.loads(proc.stdout)
    return result


def scrapy_status(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir))
    return subprocess.run([sys.executable, "-m", "scrapy", "status", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


#: Settings that send every request of the fixture site at once.
ALL_AT_ONCE = ("CONCURRENT_REQUESTS=64", "CONCURRENT_REQUESTS_PER_DOMAIN=64", "AUTOTHROTTLE_ENABLED=0")


def slow_pages(site: DocsServer, delay: float) -> dict[str, Any]:
    """Serve every page of the site's docs/ after *delay* seconds (same content); returns the old routes."""
    routes_path = site.root / "_routes.json"
    original: dict[str, Any] = json.loads(routes_path.read_text())
    routes = dict(original)
    for page in (site.root / "docs").rglob("*.html"):
        path = "/" + page.relative_to(site.root).as_posix()
        routes.setdefault(path, {"status": 200, "body": page.read_text(), "delay": delay})
    routes_path.write_text(json.dumps(routes))
    return original


def start_crawl(site: DocsServer, data_dir: Path, *settings: str, text: bool = True) -> subprocess.Popen[Any]:
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={site.base_url}/docs/",
               "-s", "DOCSCRAPER_INDEX_ENABLED=0", "-s", "DOCSCRAPER_PROGRESS_INTERVAL=0.5"]
    for setting in settings:
        command += ["-s", setting]
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), PYTHONWARNINGS="")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=text)


def wait_for(predicate: Any, data_dir: Path, deadline_s: float = 180) -> dict[str, Any]:
    """Poll ``scrapy status --json`` until *predicate* holds for a run; that run."""
    deadline = time.monotonic() + deadline_s
    seen: list[Any] = []
    while time.monotonic() < deadline:
        for run in status_json(data_dir):
            seen.append((run["state"], (run["progress"].get("pages") or {}).get("done")))
            if predicate(run):
                return run
        time.sleep(0.2)
    raise AssertionError(f"status never showed the expected run; saw {seen[-10:]}")


@pytest.mark.crawl
def test_status_follows_a_running_crawl_to_its_end(site: DocsServer, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # one page a second at most, for some 30 s: time to see the counters move, then the rest goes fast
    original = slow_pages(site, delay=1.0)
    proc = start_crawl(site, data_dir, "CONCURRENT_REQUESTS_PER_DOMAIN=1")
    try:
        first = wait_for(lambda r: r["state"] == "running" and r["progress"].get("pages", {}).get("done", 0) >= 1,
                         data_dir)
        done = first["progress"]["pages"]["done"]
        later = wait_for(lambda r: r["run_id"] == first["run_id"] and r["state"] == "running"
                         and r["progress"]["pages"]["done"] > done, data_dir)
    finally:
        (site.root / "_routes.json").write_text(json.dumps(original))  # let the rest go fast
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert first["pid"] == proc.pid and first["host"] == HOST and first["finished_at"] is None
    assert first["progress"]["interval_s"] == 0.5 and first["elapsed_s"] >= 0
    assert later["progress"]["elapsed_s"] >= first["progress"]["elapsed_s"]
    (final,) = status_json(data_dir)
    report = json.loads(next(data_dir.glob("runs/*/crawl-metadata.json")).read_text())
    assert final["run_id"] == first["run_id"] == report["runId"]
    assert (final["state"], final["result"], final["close_reason"]) == ("finished", "partial", "finished")
    assert Path(final["report_path"]).is_file() and final["finished_at"].endswith("Z")
    pages = final["progress"]["pages"]
    assert pages["done"] >= later["progress"]["pages"]["done"]
    stats = report["stats"]
    assert pages["new"] == stats["success.new"] and pages["failed"] == stats["failed"] == 1
    assert pages["skipped"] == stats["skipped"] and pages["queued"] == 0
    assert final["progress"]["failed"]["by_reason"] == {"httpError": 1}
    human = scrapy_status(data_dir, report["source"])
    assert human.returncode == 0 and f"{report['source']}  FINISHED  run {report['runId']}" in human.stdout
    assert "result partial (close reason finished)" in human.stdout
    unknown = scrapy_status(data_dir, "no-such-source")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: unknown source 'no-such-source'")


@pytest.mark.crawl
def test_a_killed_crawl_shows_as_died(site: DocsServer, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    slow_pages(site, delay=5.0)
    proc = start_crawl(site, data_dir)
    try:
        running = wait_for(lambda r: r["state"] == "running" and r["progress"].get("pages") is not None, data_dir)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    (died,) = status_json(data_dir)
    assert (died["run_id"], died["state"], died["finished_at"], died["result"]) == (
        running["run_id"], "died", None, None)
    human = scrapy_status(data_dir)
    assert human.returncode == 0 and "  DIED  run " in human.stdout and "no heartbeat since" in human.stdout


@pytest.mark.crawl
def test_watchdog_closes_a_stalled_crawl_as_aborted_and_keeps_every_page(
        site: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    crawl(f"{site.base_url}/docs/")
    # every page now answers after 15 s: once discovery is done, nothing happens for far longer than 2 s;
    # all requests are sent at once, as the spider closes only when those in flight are answered
    slow_pages(site, delay=15.0)
    settings = {name: value for name, value in (item.split("=", 1) for item in ALL_AT_ONCE)}
    result = crawl(f"{site.base_url}/docs/", settings={"DOCSCRAPER_WATCHDOG_SECONDS": "2",
                                                       "DOWNLOAD_TIMEOUT": "120", **settings})
    report = result.report
    assert (report["result"], report["closeReason"]) == ("aborted", "stalled"), result.stderr[-3000:]
    assert report["scrapy"]["docscraper/watchdog/stalled"] == 1
    assert "closing the crawl with reason 'stalled'" in result.stderr
    assert report["removal"]["performed"] is False and report["stats"]["success.removed"] == 0
    db = sqlite3.connect(result.data_dir / "state.db")
    statuses = Counter(status for (status,) in db.execute("SELECT status FROM pages"))
    db.close()
    assert statuses["active"] == 35 and statuses["removed"] == 0
    (final,) = status_json(result.data_dir)
    assert (final["state"], final["result"], final["close_reason"]) == ("finished", "aborted", "stalled")


def crawl_stderr(site: DocsServer, data_dir: Path, *settings: str) -> str:
    """A whole crawl's stderr, carriage returns kept (text mode would make them newlines)."""
    proc = start_crawl(site, data_dir, "LOG_LEVEL=WARNING", *settings, text=False)
    _, stderr = proc.communicate(timeout=300)
    text = stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in text, text[-3000:]
    return text


@pytest.mark.crawl
def test_progress_line_only_on_a_terminal_unless_on(site: DocsServer, tmp_path: Path) -> None:
    auto = crawl_stderr(site, tmp_path / "data")  # stderr is a pipe here: no line by default
    assert "\r" not in auto and "pages/s" not in auto
    # the line is drawn every second, and no page now comes back in less than 3
    slow_pages(site, delay=3.0)
    on = crawl_stderr(site, tmp_path / "data", "DOCSCRAPER_PROGRESS_LINE=on", *ALL_AT_ONCE)
    assert "\rdocscraper " in on and " pages/s | " in on
    # cleared on close: blanks over the last line, and the cursor back at its start
    last = on.rsplit("\rdocscraper ", 1)[1]
    assert last.rstrip("\n").endswith(" \r")


@pytest.mark.crawl
def test_a_run_that_cannot_open_is_finished_not_died(crawl: Crawl) -> None:
    # the run row is written before the index opens; an unreachable Chroma server closes the crawl
    result = crawl("http://127.0.0.1:9/docs/", check=False, index=True,
                   settings={"DOCSCRAPER_CHROMA_URL": "http://127.0.0.1:9"})
    assert result.returncode == 1, result.stderr[-3000:]
    (run,) = status_json(result.data_dir)
    assert (run["state"], run["result"], run["close_reason"]) == ("finished", "aborted", "index_unavailable")
