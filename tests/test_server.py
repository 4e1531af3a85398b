"""``scrapy serve`` (docscraper.ops.server, .web, .dashboard) over real HTTP on loopback: who gets in (the token,
the session cookie, the CSRF token, the Origin, the Host header), binding off loopback, the JSON API, the scheduled
recrawls' state in ``scrapy status``, and a server killed in the middle of a scheduled crawl and started again.
The pages themselves are driven in a real browser in ``test_dashboard_browser.py``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from scrapy.settings import Settings

from docscraper.commands.status import recrawl_line
from docscraper.config import DocscraperConfig
from docscraper.ops.dashboard import HistoryRun, history_charts
from docscraper.ops.schedules import MISSED_AFTER, ScheduledSource, ScheduleLoop, schedule_state
from docscraper.ops.sources import add_source
from docscraper.ops.web import Access
from tests.mockserver import DocsServer

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "a-token-for-the-tests-0123456789"


@dataclass
class Served:
    base: str
    port: int
    token: str
    process: subprocess.Popen[bytes]
    log: Path
    clients: list[httpx.Client]

    def client(self, **kwargs: object) -> httpx.Client:
        """A client of this server, closed when the server stops."""
        client = httpx.Client(base_url=self.base, follow_redirects=False, timeout=60, **kwargs)  # type: ignore[arg-type]
        self.clients.append(client)
        return client

    def logged_in(self) -> httpx.Client:
        client = self.client()
        answer = client.get("/login", params={"token": self.token})
        assert answer.status_code == 303, answer.text
        return client


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DOCSCRAPER_SERVER_TOKEN"}
    return {**env, "DOCSCRAPER_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "", **extra}


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str, env: dict[str, str] | None = None, name: str = "server") -> Iterator[Served]:
    """``python -m docscraper.ops.server --port 0 ARGS`` (what ``docscraper-serve`` runs), until the block ends."""
    log = tmp_path / f"{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "docscraper.ops.server", "--port", "0", *args], cwd=ROOT,
                                   env=env or server_env(tmp_path / "data"), stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=out)
    try:
        deadline = time.monotonic() + 90
        while not (found := re.search(r"dashboard at (http://[^/\s]+:(\d+))/ ", log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        login = re.search(r"login\?token=(\S+)", log.read_text())
        served = Served(found.group(1), int(found.group(2)), login.group(1) if login else TOKEN, process, log, [])
        try:
            yield served
        finally:
            for client in served.clients:
                client.close()
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert "Traceback" not in log.read_text(), log.read_text()


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, page[:2000]
    return found.group(1)


def test_tokens_sessions_and_csrf_tokens_are_derived_and_checked() -> None:
    access = Access("s3cret-token-0123456789", port=8766)
    assert access.token_ok("s3cret-token-0123456789") and access.token_ok("  s3cret-token-0123456789 ")
    assert not access.token_ok("s3cret-token-012345678") and not access.token_ok("") and not access.token_ok(None)
    assert access.session_ok(access.session) and not access.session_ok(access.csrf) and not access.session_ok(None)
    assert access.csrf_ok(access.csrf) and not access.csrf_ok(access.session)
    assert "s3cret" not in access.session + access.csrf + access.cookie
    other = Access("another-token-0123456789", port=8766)
    assert other.session != access.session and other.csrf != access.csrf
    assert Access("s3cret-token-0123456789", port=8767).cookie != access.cookie


def test_the_login_the_session_and_every_refusal(tmp_path: Path) -> None:
    with serving(tmp_path, "--no-schedule") as served:
        assert len(served.token) >= 24  # made at start: none was configured
        anonymous = served.client()
        answer = anonymous.get("/sources/x?y=1")
        assert answer.status_code == 303 and answer.headers["location"] == "/login?next=%2Fsources%2Fx%3Fy%3D1"
        assert anonymous.get("/api/sources").status_code == 401
        assert anonymous.post("/sources", data={"name": "x", "url": "http://127.0.0.1:1/"}).status_code == 401
        assert anonymous.get("/static/dashboard.css").status_code == 200
        login = anonymous.get("/login")
        assert login.status_code == 200 and 'type="password"' in login.text
        assert anonymous.get("/login", params={"token": "wrong-token-0123456789"}).status_code == 401
        # the next page is a path of this server only
        for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
            answer = anonymous.get("/login", params={"token": served.token, "next": target})
            assert answer.status_code == 303 and answer.headers["location"] == "/"
        cookie = answer.headers["set-cookie"]
        assert f"docscraper_session_{served.port}=" in cookie and "HttpOnly" in cookie
        assert "samesite=strict" in cookie.lower() and served.token not in cookie
        assert "secure" not in cookie.lower()  # plain HTTP: a Secure cookie would never come back
        # behind a TLS proxy on this machine (uvicorn trusts X-Forwarded-Proto from 127.0.0.1): Secure
        answer = anonymous.get("/login", params={"token": served.token}, headers={"X-Forwarded-Proto": "https"})
        assert answer.status_code == 303 and "; secure" in answer.headers["set-cookie"].lower()

        client = served.logged_in()
        page = client.get("/")
        assert page.status_code == 200 and "No source yet" in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
        assert served.token not in page.text
        csrf = csrf_of(page.text)
        form = {"action": "add", "name": "docs", "url": "http://127.0.0.1:9/docs/"}
        # a form without the CSRF token, or one another site's page sent, is refused before it does anything
        refused = client.post("/sources", data=form)
        assert refused.status_code == 403 and "did not come from this dashboard" in refused.text
        assert client.post("/sources", data={**form, "csrf": "0" * 64}).status_code == 403
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            answer = client.post("/sources", data={**form, "csrf": csrf}, headers=headers)
            assert answer.status_code == 403 and "cross-site" in answer.text, headers
        # the real form: the site is down, which the page says, escaped
        answer = client.post("/sources", data={**form, "csrf": csrf},
                             headers={"Origin": served.base, "Sec-Fetch-Site": "same-origin"})
        assert answer.status_code == 400 and "not added" in answer.text
        # the Host header must name this server (DNS rebinding), whatever the credentials
        for path in ("/", "/api/sources", "/login", "/mcp", "/static/live.js"):
            assert client.get(path, headers={"Host": f"evil.example:{served.port}"}).status_code == 421, path
        assert client.get("/", headers={"Host": f"localhost:{served.port}"}).status_code == 200
        # the bearer token works for the API, and needs no CSRF token
        api = served.client(headers={"Authorization": f"Bearer {served.token}"})
        assert api.get("/api/sources").json() == {"sources": []}
        assert api.post("/api/sources/nope/crawl", json={"mode": "full"}).status_code == 404
        answer = api.post("/api/sources/docs/crawl", json={"mode": "sideways"})
        assert answer.status_code in (400, 404)
        assert served.client(headers={"Authorization": "Bearer wrong"}).get("/api/status").status_code == 401
        # logging out needs the CSRF token too, then the cookie is gone
        assert client.post("/logout").status_code == 403
        answer = client.post("/logout", data={"csrf": csrf})
        assert answer.status_code == 303 and 'Max-Age=0' in answer.headers["set-cookie"]
        assert client.get("/").status_code == 303
    assert served.token in served.log.read_text()  # the login address it printed, and nothing else logs it
    assert served.log.read_text().count(served.token) == 1


def test_a_configured_token_guards_mcp_too_and_is_never_printed(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with serving(tmp_path, "--no-schedule", "--token-file", str(token_file)) as served:
        assert "(token required)" in served.log.read_text()
        mcp = served.client()
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        assert mcp.post("/mcp", json=initialize, headers=headers).status_code == 401
        answer = mcp.post("/mcp", json=initialize, headers={**headers, "Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200 and "docscraper" in answer.text
        assert served.logged_in().get("/").status_code == 200
    assert TOKEN not in served.log.read_text()


def test_off_loopback_a_token_is_required(tmp_path: Path) -> None:
    refused = subprocess.run([sys.executable, "-m", "docscraper.ops.server", "--host", "0.0.0.0", "--port", "0"],
                             cwd=ROOT, env=server_env(tmp_path / "data"), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "needs a token" in refused.stderr and "Traceback" not in refused.stderr
    env = server_env(tmp_path / "data", DOCSCRAPER_SERVER_TOKEN=TOKEN)
    with serving(tmp_path, "--host", "0.0.0.0", "--no-schedule", env=env) as served:
        anonymous = served.client()
        assert anonymous.get("/api/sources").status_code == 401
        assert anonymous.get("/").status_code == 303
        assert anonymous.post("/api/sources/x/crawl", json={}).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert anonymous.get("/api/sources", headers=bearer).status_code == 200
        assert anonymous.get("/api/sources", headers={**bearer, "Host": "rebound.example"}).status_code == 421


def _history(*results: tuple[str, dict[str, int]]) -> list[HistoryRun]:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    runs = [HistoryRun(f"run-{i}", start + timedelta(hours=i), start + timedelta(hours=i, minutes=1), result, None,
                       stats, 60.0 + i, 10 * i, 1000 * i, due=False, full=False, has_report=True)
            for i, (result, stats) in enumerate(results)]
    return list(reversed(runs))  # newest first, as run_history gives them


def test_history_charts_are_drawn_by_matplotlib_from_the_runs() -> None:
    charts = history_charts(_history(("success", {"success.new": 35, "failed": 1}),
                                     ("success", {"success.unchanged": 30, "success.changed": 5})))
    assert set(charts) == {"pages", "duration", "embeddings", "bytes"}
    for svg in charts.values():
        assert "<svg" in svg and "<script" not in svg and 'href="http' not in svg  # nothing to run or fetch
    # the legend names every series, each drawn in its colour, and the runs are labelled (as text: svg.fonttype)
    for name, colour in (("new", "#2e7d32"), ("changed", "#f9a825"), ("unchanged", "#90a4ae"), ("failed", "#c62828")):
        assert colour in charts["pages"], name
    assert "Pages per run" in charts["pages"] and "11-01 01:00" in charts["pages"]
    assert history_charts(_history(("success", {"success.new": 1}),)) != history_charts(
        _history(("success", {"success.new": 9}),))
    assert history_charts([]) == {}


def test_a_missed_or_failed_scheduled_run_is_said() -> None:
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    waiting = ScheduledSource("docs", "1h", now - timedelta(minutes=30), now + timedelta(minutes=30), due=False,
                              running=False, last_result="success")
    late = ScheduledSource("docs", "1h", now - timedelta(hours=2), now - MISSED_AFTER, due=True, running=False,
                           last_result="aborted")
    just_due = ScheduledSource("docs", "1h", now - timedelta(hours=1), now - timedelta(seconds=30), due=True,
                               running=False, last_result="partial")
    assert not schedule_state(waiting, now)["missed"] and not schedule_state(waiting, now)["failed"]
    assert schedule_state(just_due, now)["missed"] is False and schedule_state(just_due, now)["overdue_s"] == 30
    state = schedule_state(late, now)
    assert state["missed"] and state["failed"] and state["overdue_s"] == MISSED_AFTER.total_seconds()
    line = recrawl_line("docs", state)
    assert "MISSED: due since 2026-11-26 11:55:00Z" in line and "last run FAILED (aborted)" in line
    assert "MISSED" not in recrawl_line("docs", schedule_state(waiting, now))


def test_the_schedule_loop_records_what_it_started(site: DocsServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("DOCSCRAPER_DATA_DIR", str(data_dir))
    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(data_dir),
                                                      "DOCSCRAPER_INDEX_ENABLED": "0"}))
    add_source(config, "docs", site.url("/docs/"), probe=False, schedule="1h")
    loop = ScheduleLoop(config, tick=1.0, settings={"DOCSCRAPER_INDEX_ENABLED": "0"})
    assert loop.run_once() == [] and not loop.rounds and loop.last_tick is not None
    later = datetime.now(UTC) + timedelta(hours=2)
    (outcome,) = loop.run_once(later)
    try:
        assert outcome["started"] and outcome["source"] == "docs"
        (round_,) = loop.rounds
        assert round_["outcomes"] == [outcome] and round_["error"] is None
        # while that crawl runs, the next round starts nothing, and keeps no round for it
        assert loop.run_once(later) == [] and len(loop.rounds) == 1
        assert json.loads(json.dumps(loop.as_dict()))["rounds"][0]["outcomes"][0]["source"] == "docs"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(outcome["pid"], signal.SIGKILL)


@pytest.mark.crawl
def test_a_server_killed_mid_crawl_and_restarted_starts_no_second_run(site: DocsServer, tmp_path: Path) -> None:
    """The scheduled crawl outlives the server; the restarted server sees it running and starts nothing; when it
    has finished, the source has one run, and the next is an interval away."""
    data_dir = tmp_path / "data"
    env = server_env(data_dir, DOCSCRAPER_SERVER_TOKEN=TOKEN, DOCSCRAPER_SSRF_ALLOWED_HOSTS="127.0.0.1")
    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(data_dir)}))
    add_source(config, "docs", site.url("/docs/"), probe=False, schedule="1h")
    # made due: its schedule began two hours ago
    from docscraper.storage.backends import open_state_store

    store = open_state_store(config)
    try:
        record = store.get_source("docs")
        assert record is not None
        since = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
        store.update_source(record.id, scope={**record.scope, "schedule_since": since})
    finally:
        store.close()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with serving(tmp_path, "--tick", "1", env=env, name="first") as first:
        api = first.client(headers=bearer)
        deadline = time.monotonic() + 120
        while not any(r["state"] == "running" for r in api.get("/api/status").json()["runs"]):
            assert time.monotonic() < deadline, first.log.read_text()
            time.sleep(0.5)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
    with serving(tmp_path, "--tick", "1", env=env, name="second") as second:
        api = second.client(headers=bearer)
        deadline = time.monotonic() + 300
        while True:
            runs = api.get("/api/status").json()["runs"]
            assert sum(r["state"] == "running" for r in runs) <= 1, runs
            if runs and all(r["state"] == "finished" for r in runs):
                break
            assert time.monotonic() < deadline, second.log.read_text()
            time.sleep(1)
        time.sleep(3)  # three more rounds of the scheduler
        history = api.get("/api/sources/docs").json()["history"]
        assert len(history) == 1 and history[0]["due"] and history[0]["result"] in ("success", "partial")
        (schedule,) = api.get("/api/status").json()["schedules"]
        assert not schedule["due"] and not schedule["missed"]
        assert "started a due recrawl" not in second.log.read_text()


def test_a_private_source_takes_only_the_references_the_operator_listed(tmp_path: Path) -> None:
    env = server_env(tmp_path / "data", DOCS_TOKEN="Authorization: Bearer value-that-must-not-show")
    with serving(tmp_path, "--no-schedule", "-s", "DOCSCRAPER_SERVER_CREDENTIALS=env:DOCS_TOKEN", env=env) as served:
        client = served.logged_in()
        page = client.get("/").text
        assert '<option value="env:DOCS_TOKEN"' in page and "value-that-must-not-show" not in page
        form = {"csrf": csrf_of(page), "action": "add", "name": "private", "url": "http://127.0.0.1:9/docs/"}
        refused = client.post("/sources", data={**form, "auth_headers": "env:HOME"})
        assert refused.status_code == 400 and "not allowed for this server" in refused.text
        # an allowed reference is read, and the site is probed with it (here: down); the value never shows
        answer = client.post("/sources", data={**form, "auth_headers": "env:DOCS_TOKEN"})
        assert answer.status_code == 400 and "not added" in answer.text
        assert "value-that-must-not-show" not in answer.text
    assert "value-that-must-not-show" not in served.log.read_text()
