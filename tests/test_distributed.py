"""Several workers crawling one source together (settings.distributed, docscraper.crawl.distributed).

Each test starts its own redis-server (tests/redisserver.py) and runs the workers as
``SCRAPY_SETTINGS_MODULE=settings.distributed python -m scrapy crawl docs -a run=<id>`` subprocesses on
one data directory (one SQLite state database in WAL mode), as on one machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import redis
from scrapy.utils.test import get_crawler

from docscraper.crawl.distributed import RedisLedger
from docscraper.crawl.report import load_schema, summarize
from tests.conftest import ROOT, Crawl
from tests.mockserver import DocsServer
from tests.redisserver import RedisServer, redis_server
from tests.services import ChromaServer, chroma_server

pytestmark = [pytest.mark.services, pytest.mark.crawl]

__all__ = ["chroma_server", "redis_server"]  # the fixtures, imported for the tests below

# pages served slowly (the same bytes as on disk), so that every worker gets a share of the queue
SLOW_PAGES = [
    "/docs/guide/index.html", "/docs/guide/delivery.html", "/docs/guide/routing.html", "/docs/guide/filters.html",
    "/docs/guide/security.html", "/docs/guide/monitoring.html", "/docs/guide/transforms.html",
    "/docs/guide/deployment.html", "/docs/guide/troubleshooting.html", "/docs/reference/index.html",
    "/docs/reference/api/server.html", "/docs/reference/api/client.html", "/docs/reference/api/errors.html",
    "/docs/reference/cli.html", "/docs/glossary.html", "/docs/changelog.html", "/docs/faq.html",
]


def slow_down(root: Path, delay: float) -> list[str]:
    """Serve the fixture's pages of SLOW_PAGES that exist after *delay* seconds, unchanged."""
    routes = json.loads((root / "_routes.json").read_text())
    slowed = []
    for path in SLOW_PAGES:
        page = root / path.lstrip("/")
        if page.is_file():
            routes[path] = {"status": 200, "delay": delay, "body": page.read_text(encoding="utf-8")}
            slowed.append(path)
    (root / "_routes.json").write_text(json.dumps(routes))
    assert len(slowed) >= 6, slowed
    return slowed


def start_workers(count: int, source: str, run: str, data_dir: Path, redis_url: str, logs: Path, *,
                  index: bool = False, **env_extra: str) -> list[subprocess.Popen[str]]:
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="",
               SCRAPY_SETTINGS_MODULE="settings.distributed", DOCSCRAPER_REDIS_URL=redis_url, **env_extra)
    # at most 4 requests per worker, so that one worker cannot take the whole (small) queue at once
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={source}", "-a", f"run={run}",
               "-s", f"DOCSCRAPER_INDEX_ENABLED={int(index)}", "-s", "CONCURRENT_REQUESTS=4"]
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for i in range(count):
        with (logs / f"worker-{i}.log").open("w") as log:
            procs.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True))
    return procs


def wait(procs: list[subprocess.Popen[str]], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
            raise


def wait_until(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def run_reports(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.glob("runs/*/*.json") if p.name != "crawl-metadata.json")


def pages(data_dir: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(data_dir / "state.db")
    rows = db.execute("SELECT rel_path, status FROM pages").fetchall()
    db.close()
    return [(row[0], row[1]) for row in rows]


def page_gets(site: DocsServer) -> Counter[str]:
    """GETs of pages (discovery files and robots.txt are fetched per worker)."""
    return Counter(path.split("?")[0] for method, path, _ in site.requests
                   if method == "GET" and re.search(r"\.(html|md)$|/$", path.split("?")[0]))


def test_two_workers_crawl_each_page_once_and_report_once(site: DocsServer, shared_site: DocsServer,
                                                          redis_server: RedisServer, crawl: Crawl,
                                                          tmp_path: Path) -> None:
    # the same site, crawled by one process, is the reference
    single = crawl(f"{shared_site.base_url}/docs/")
    reference_gets = page_gets(shared_site)
    slow_down(site.root, 0.3)
    data_dir = tmp_path / "distributed"
    workers = start_workers(2, f"{site.base_url}/docs/", "run-two", data_dir, redis_server.url, tmp_path / "logs")
    wait(workers)
    logs = [p.read_text() for p in sorted((tmp_path / "logs").glob("*.log"))]
    for proc, log in zip(workers, logs, strict=True):
        assert proc.returncode == 0, log[-5000:]
        assert "Traceback" not in log, log[-5000:]
    # both took requests from the shared queue
    dequeued = [int(m.group(1)) for log in logs for m in re.finditer(r"'scheduler/dequeued/redis': (\d+)", log)]
    assert len(dequeued) == 2 and min(dequeued) > 0, dequeued

    # one report, for the shared run id, as a single process would have written it
    (path,) = run_reports(data_dir)
    assert path.name == "run-two.json"
    report = json.loads(path.read_text())
    jsonschema.validate(report, load_schema())
    assert report["runId"] == "run-two"
    assert report["stats"] == summarize(report["items"])
    reference = single.report
    assert report["stats"] == reference["stats"]
    assert report["result"] == reference["result"] == "partial"  # the fixture's 404 and 500
    assert report["closeReason"] == "finished"
    assert report["removal"]["performed"] is True
    assert len(report["discovery"]["distributed"]["workers"]) == 2
    assert report["discovery"]["distributed"]["problems"] == []
    # Scrapy's stats are the run's too, not the reporting worker's alone
    assert report["scrapy"]["scheduler/dequeued/redis"] == sum(dequeued)

    def normalized(items: dict, base: str) -> dict:
        return {key.replace(base, "BASE"): (e["status"], e["statusReason"]) for key, e in items.items()}

    assert normalized(report["items"], site.base_url) == normalized(reference["items"], shared_site.base_url)

    # one change feed for the shared run, both workers appending to it: each new page once, as in the report
    (feed,) = sorted((data_dir / "runs").glob("*/*.changes.jsonl"))
    assert feed.name == "run-two.changes.jsonl"
    lines = [json.loads(line) for line in feed.read_text().splitlines()]
    assert {line["runId"] for line in lines} == {"run-two"} and {line["change"] for line in lines} == {"new"}
    assert len(lines) == len({line["pageId"] for line in lines}) == report["stats"]["success.new"]
    db = sqlite3.connect(data_dir / "state.db")
    active = {row[0] for row in db.execute("SELECT page_id FROM pages WHERE status = 'active'")}
    db.close()
    assert {line["pageId"] for line in lines} == active  # every page of the run is new

    # every page fetched once across the workers (the 500 is retried twice, by design), as by one process
    gets = page_gets(site)
    assert gets == reference_gets
    assert gets.pop("/docs/flaky.html") == 3
    assert max(gets.values()) == 1, gets.most_common(3)

    # every page in the shared state database once
    stored = pages(data_dir)
    paths = [rel for rel, _ in stored]
    assert len(paths) == len(set(paths))
    assert sorted(stored) == sorted(pages(single.data_dir))
    db = sqlite3.connect(data_dir / "state.db")
    runs = db.execute("SELECT run_id, finished_at, result FROM runs").fetchall()
    db.close()
    assert len(runs) == 2 and all(r[0].startswith("run-two-") and r[1] is not None for r in runs), runs


def test_a_worker_killed_midway_deletes_nothing_and_reports_its_stats(site: DocsServer, redis_server: RedisServer,
                                                                     crawl: Crawl, tmp_path: Path) -> None:
    first = crawl(f"{site.base_url}/docs/")
    stored_before = dict(pages(first.data_dir))
    assert sum(1 for status in stored_before.values() if status == "active") == 35
    site.reset_requests()
    slow_down(site.root, 0.5)
    run = "run-kill"
    workers = start_workers(2, f"{site.base_url}/docs/", run, first.data_dir, redis_server.url, tmp_path / "logs",
                            DOCSCRAPER_DISTRIBUTED_TTL="2")
    victim: subprocess.Popen[str] | None = None
    victim_worker = ""
    deadline = time.monotonic() + 60

    def published_dequeued(client: redis.Redis, worker: str) -> int:
        """The worker's Scrapy stat as of its last heartbeat."""
        raw = client.get(f"docscraper:{run}:live:{worker}")
        return int(json.loads(raw)["scrapy"].get("scheduler/dequeued/redis", 0)) if raw else 0

    with redis.Redis.from_url(redis_server.url) as client:
        # a worker with requests in flight, whose heartbeat has published some of its Scrapy stats
        while victim is None and time.monotonic() < deadline:
            if client.exists(f"docscraper:{run}:discovery_done"):
                for proc in workers:
                    keys = client.keys(f"docscraper:{run}:inflight:*-{proc.pid}-*")
                    if keys and client.hlen(keys[0]) >= 2:
                        worker = keys[0].decode().split(":inflight:")[1]
                        if published_dequeued(client, worker) >= 2:
                            victim, victim_worker = proc, worker
                            break
            time.sleep(0.05)
        assert victim is not None, "no worker held requests in flight and published its stats"
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
    survivors = [p for p in workers if p is not victim]
    wait(survivors)
    logs = {p.pid: (tmp_path / "logs" / f"worker-{workers.index(p)}.log").read_text() for p in workers}
    (survivor,) = survivors
    assert survivor.returncode == 0, logs[survivor.pid][-5000:]
    assert "Traceback" not in logs[survivor.pid], logs[survivor.pid][-5000:]
    assert "went back to the queue" in logs[survivor.pid]
    survivor_dequeued = [int(m.group(1)) for m in re.finditer(r"'scheduler/dequeued/redis': (\d+)",
                                                               logs[survivor.pid])]
    assert len(survivor_dequeued) == 1, survivor_dequeued
    with redis.Redis.from_url(redis_server.url) as client:
        victim_dequeued = published_dequeued(client, victim_worker)
        victim_published_at = json.loads(client.get(f"docscraper:{run}:live:{victim_worker}") or "{}").get("at")
    assert victim_dequeued >= 2

    # one report for the run, partial: a worker died, so nothing was removed
    reports = [p for p in run_reports(first.data_dir) if p.name == f"{run}.json"]
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    jsonschema.validate(report, load_schema())
    assert report["result"] == "partial"
    assert "stopped without closing" in report["resultReason"]
    assert report["removal"]["performed"] is False
    assert report["stats"]["success.removed"] == 0
    # every page was reached by someone, the dead worker included: no page is even a candidate
    assert report["removal"]["candidates"] == 0
    # nothing deleted that still exists, and no page lost: every stored page was processed this run
    assert {k for k, v in pages(first.data_dir) if v == "active"} == {
        k for k, v in stored_before.items() if v == "active"}
    done = {key for key, e in report["items"].items() if e["status"] == "success"}
    assert {k for k, v in stored_before.items() if v == "active"} <= done
    assert report["stats"]["success.unchanged"] == 35
    # the killed worker's Scrapy stats are in the run's, as of its last heartbeat, and the report says so
    assert report["scrapy"]["scheduler/dequeued/redis"] == survivor_dequeued[0] + victim_dequeued
    distributed = report["discovery"]["distributed"]
    assert distributed["died"] == [{"worker": victim_worker, "statsAsOf": victim_published_at}]
    assert sorted(distributed["workers"]) == sorted([victim_worker, distributed["reportedBy"]])


def test_a_worker_that_cannot_open_leaves_the_run(shared_site: DocsServer, redis_server: RedisServer,
                                                  tmp_path: Path) -> None:
    # a node with a wrong setting (here an unparsable state URL) joins the run, fails to open and closes;
    # it must not stay a member that the others later declare dead (a partial run, nothing removed). The
    # only other node was killed while it waited to open: no worker opened the run, so no report will set its
    # keys to expire, and the last node to leave deletes them
    run = "run-open-failed"
    data_dir = tmp_path / "distributed"
    prefix = f"docscraper:{run}:"
    with redis.Redis.from_url(redis_server.url) as client:
        # the workers open the run one at a time: holding the run's open lock keeps both waiting
        lock = client.lock(f"{prefix}open_lock", timeout=120)
        assert lock.acquire(blocking=False)
        (killed,) = start_workers(1, f"{shared_site.base_url}/docs/", run, data_dir, redis_server.url,
                                  tmp_path / "killed", DOCSCRAPER_DISTRIBUTED_TTL="2")
        (bad,) = start_workers(1, f"{shared_site.base_url}/docs/", run, data_dir, redis_server.url, tmp_path / "bad",
                               DOCSCRAPER_STATE_URL="postgresql psycopg://nobody@127.0.0.1/none",
                               DOCSCRAPER_DISTRIBUTED_TTL="2")
        wait_until(lambda: len(client.smembers(f"{prefix}workers")) == 2, "both workers joined the run")
        (killed_worker,) = [w.decode() for w in client.smembers(f"{prefix}workers") if f"-{killed.pid}-" in w.decode()]
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        # the waiting worker declares it dead (its heartbeat expired), as a running worker would
        wait_until(lambda: client.sismember(f"{prefix}dead", killed_worker), "the killed worker was declared dead")
        lock.release()
        wait([bad])
        log = (tmp_path / "bad" / "worker-0.log").read_text()
        assert "did not open" in log and "its keys are deleted" in log, log[-5000:]
        assert client.keys(f"{prefix}*") == []

    (good,) = start_workers(1, f"{shared_site.base_url}/docs/", run, data_dir, redis_server.url, tmp_path / "good")
    wait([good])
    log = (tmp_path / "good" / "worker-0.log").read_text()
    assert good.returncode == 0 and "stopped without closing" not in log, log[-5000:]
    (path,) = run_reports(data_dir)
    report = json.loads(path.read_text())
    assert report["discovery"]["distributed"]["problems"] == []
    assert report["discovery"]["distributed"]["died"] == []
    assert len(report["discovery"]["distributed"]["workers"]) == 1
    assert report["removal"]["performed"] is True


def test_a_worker_leaving_a_run_no_worker_opened_keeps_it_for_the_others(redis_server: RedisServer) -> None:
    # RedisLedger as the workers use it, without crawling: three workers join a run; one is killed (it never
    # heartbeats again), the others fail to open and leave in turn
    def worker(ttl: float) -> RedisLedger:
        return RedisLedger(get_crawler(), "run-race", redis_server.url, heartbeat=0.5, ttl=ttl, grace=2)

    prefix = "docscraper:run-race:"
    first, second, killed = worker(60), worker(60), worker(0.5)
    with redis.Redis.from_url(redis_server.url) as client:
        for ledger in (first, second, killed):
            ledger.register()
        assert client.exists(f"{prefix}live:{first.worker}")
        first.leave()
        # the second worker may still open the run: its membership and heartbeat stay, the leaver's go
        assert {m.decode() for m in client.smembers(f"{prefix}workers")} == {second.worker, killed.worker}
        assert client.exists(f"{prefix}hb:{second.worker}", f"{prefix}live:{second.worker}") == 2
        assert not client.exists(f"{prefix}hb:{first.worker}", f"{prefix}live:{first.worker}")
        wait_until(lambda: not client.exists(f"{prefix}hb:{killed.worker}"), "the killed worker's heartbeat expired")
        second.leave()
        # the last worker alive left a run nobody opened: nothing of it stays (the killed worker's part neither)
        assert client.keys(f"{prefix}*") == []

        # a run that a worker opened is that worker's: one that fails to open leaves it alone
        first, second = worker(60), worker(0.5)
        for ledger in (first, second):
            ledger.register()
        second.mark_opened()
        wait_until(lambda: not client.exists(f"{prefix}hb:{second.worker}"), "the opener's heartbeat expired")
        first.leave()
        assert {m.decode() for m in client.smembers(f"{prefix}workers")} == {second.worker}
        assert client.exists(f"{prefix}opened", f"{prefix}live:{second.worker}") == 2


def test_a_shared_run_id_needs_the_distributed_profile(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", "run=abc", check=False)
    assert result.returncode == 2
    assert "error: docs spider: -a run= names a shared run" in result.stderr


def test_two_workers_index_into_one_chroma_server(site: DocsServer, redis_server: RedisServer,
                                                  chroma_server: ChromaServer, tmp_path: Path) -> None:
    from docscraper.storage.vectors import ChromaIndex

    slow_down(site.root, 0.2)
    data_dir = tmp_path / "distributed"
    workers = start_workers(2, f"{site.base_url}/docs/", "run-index", data_dir, redis_server.url,
                            tmp_path / "logs", index=True, DOCSCRAPER_CHROMA_URL=chroma_server.url)
    wait(workers, timeout=300)
    for i, proc in enumerate(workers):
        log = (tmp_path / "logs" / f"worker-{i}.log").read_text()
        assert proc.returncode == 0, log[-5000:]
        assert "Traceback" not in log, log[-5000:]
    (path,) = run_reports(data_dir)
    report = json.loads(path.read_text())
    assert report["stats"]["success.new"] == 35
    index = ChromaIndex(url=chroma_server.url)
    try:
        got = index.collection.get(include=["metadatas"])
    finally:
        index.close()
    chunk_pages = Counter(str((meta or {})["page_id"]) for meta in got["metadatas"] or [])
    db = sqlite3.connect(data_dir / "state.db")
    counts = dict(db.execute("SELECT page_id, chunk_count FROM pages WHERE status = 'active'").fetchall())
    db.close()
    # both workers wrote to the one server; every stored page's chunks are there once, nothing else
    assert {pid: n for pid, n in counts.items() if n} == dict(chunk_pages)
    assert report["counters"]["chunks_added"] == len(got["ids"]) == sum(counts.values())
