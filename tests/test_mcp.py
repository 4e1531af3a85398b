"""The MCP server end to end, through the official SDK's own clients, and the background crawl launcher.

The stdio test spawns ``python -m scrapy mcp`` from the project root as an MCP client would, registers the
fixture site, starts a crawl (with the index: the real bundled model) that runs in the background, follows
it with ``crawl_status`` until it finished, then searches and reindexes. The HTTP test starts
``python -m docscraper.ops.mcp_server`` (what the ``docscraper-mcp`` console script runs) on a loopback port.
The Scrapyd path of :func:`docscraper.ops.launch.start_crawl` is checked against a stub of Scrapyd's
``schedule.json`` on loopback that records what it was sent.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
import numpy as np
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from docscraper.config import DocscraperConfig
from docscraper.ops.launch import start_crawl
from docscraper.ops.sources import SourceArgumentError, SourceError, add_source
from docscraper.ops.status import pid_alive
from docscraper.storage.vectors import ChromaIndex, forget_persistent_clients, persistent_stamp
from tests.conftest import ROOT
from tests.mockserver import DocsServer

TOOLS = {"add_source", "list_sources", "list_libraries", "crawl_status", "recrawl_source", "reindex_page",
         "search_docs"}
QUESTIONS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "questions.json").read_text(encoding="utf-8"))
# Generous: a crawl of the fixture site with the model loaded takes well under a minute on two cores.
CRAWL_DEADLINE = 600.0


def server_env(data_dir: Path) -> dict[str, str]:
    return dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call that must succeed: its structured result."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text(result)}"
    structured: dict[str, Any] = result.structured_content
    assert json.loads(text(result)) == structured  # the text content is the same JSON, for older clients
    return structured


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool call that must fail: its message, which never carries a traceback."""
    result = await session.call_tool(tool, arguments)
    message = text(result)
    assert result.is_error, f"{tool}({arguments}) did not fail: {message}"
    assert "Traceback" not in message
    return message


def run(main: Callable[[], Awaitable[None]]) -> None:
    """``anyio.run(main)``, with a failure inside the SDK's task groups raised as itself."""
    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        failure: BaseException = group
        while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
            failure = failure.exceptions[0]
        raise failure from None


def stop_if_alive(pids: list[int]) -> None:
    """Stop the background crawls this test started, if a failure left them running."""
    for pid in pids:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


@pytest.mark.crawl
def test_stdio_server_registers_crawls_in_the_background_searches_and_reindexes(site: DocsServer,
                                                                                tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # the fixture site is on loopback: the operator lets clients reach it (tests/test_trust.py: refused otherwise)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "scrapy", "mcp", "-s", "DOCSCRAPER_SSRF_ALLOWED_HOSTS=127.0.0.1"],
                                   cwd=ROOT, env=server_env(data_dir))
    question = next(q for q in QUESTIONS if q["expected"] == "guide/deployment.html")
    started: list[int] = []

    async def session_run() -> None:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await scenario(session)

    async def scenario(session: ClientSession) -> None:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.input_schema["type"] == "object" and tool.description
        assert set(listed["add_source"].input_schema["required"]) == {"name", "url"}
        assert set(listed["recrawl_source"].input_schema["properties"]) == {
            "name", "full", "due", "allow", "block", "max_depth", "max_pages"}
        assert listed["search_docs"].input_schema["required"] == ["question"]
        assert listed["list_sources"].annotations is not None and listed["list_sources"].annotations.read_only_hint

        # registering: bad input and unknown names are errors with the reason, nothing is stored
        assert "invalid source name" in await error(session, "add_source", name="Bad Name", url=site.url("/docs/"))
        assert "give an http(s) URL" in await error(session, "add_source", name="relay", url="ftp://example.com/")
        added = await call(session, "add_source", name="relay", url=site.url("/docs/"), block=["archive/**"])
        assert added["source"]["name"] == "relay" and added["source"]["scope"]["block"] == ["archive/**"]
        assert added["probe"]["status"] == 200 and added["probe"]["robots"]["outcome"] == "parsed"
        assert "exists already" in await error(session, "add_source", name="relay", url=site.url("/blog/"))
        (source,) = (await call(session, "list_sources"))["sources"]
        assert (source["name"], source["url"], source["pages"], source["last_run"]) == (
            "relay", site.url("/docs"), 0, None)

        for tool_name, arguments in [("recrawl_source", {}), ("reindex_page", {"url_or_glob": "faq.html"}),
                                ("crawl_status", {})]:
            assert "unknown source 'nope'" in await error(session, tool_name, name="nope", **arguments)
        assert "max_pages" in await error(session, "recrawl_source", name="relay", max_pages=0)
        assert "due=1" in await error(session, "recrawl_source", name="relay", full=True, due=True)
        assert "no index" in await error(session, "search_docs", question=question["question"])

        # a crawl in the background: the call returns while it runs, and a second one is refused
        launched = await call(session, "recrawl_source", name="relay")
        assert launched["started"] is True and launched["how"] == "process"
        assert set(launched) == {"started", "how", "source", "pid", "log"}  # no command line
        started.append(launched["pid"])
        log = Path(launched["log"])
        assert log.parent == (data_dir / "logs" / "relay").resolve() and log.exists()
        assert not [run for run in (await call(session, "crawl_status", name="relay"))["runs"]
                    if run["state"] == "finished"]
        assert "is running" in await error(session, "recrawl_source", name="relay")

        deadline = time.monotonic() + CRAWL_DEADLINE
        while True:
            runs = (await call(session, "crawl_status", name="relay"))["runs"]
            states = {run["state"] for run in runs}
            assert "died" not in states, log.read_text()[-5000:]
            if runs and states == {"finished"}:
                break
            assert time.monotonic() < deadline, f"no finished run after {CRAWL_DEADLINE} s\n{log.read_text()[-5000:]}"
            await anyio.sleep(1.0)
        (run,) = runs
        assert run["close_reason"] == "finished" and run["pid"] == launched["pid"], run
        assert run["progress"]["pages"]["done"] > 0
        assert "Traceback" not in log.read_text()
        (source,) = (await call(session, "list_sources"))["sources"]
        assert source["pages"] > 0 and source["chunks"] > 0 and source["last_run"]["run_id"] == run["run_id"]
        # the schedules of what it crawled: nothing due again before a day has passed
        assert source["schedule"]["scheduled"] >= source["pages"] and source["schedule"]["next_due_at"]
        assert run["schedule"]["due_now"] == source["schedule"]["due_now"] <= 2  # failed pages are due sooner

        # search: the model loads once, and the page that answers comes back
        found = (await call(session, "search_docs", question=question["question"], k=5))["results"]
        assert site.url("/docs/" + question["expected"]) in [r["url"] for r in found], found
        assert set(found[0]) >= {"url", "title", "heading", "score", "text"}
        assert any(question["needle"] in r["text"] for r in found)
        only = (await call(session, "search_docs", question=question["question"], k=1, source="relay"))["results"]
        assert len(only) == 1 and only[0]["source"] == "relay"
        assert "unknown source 'nope'" in await error(session, "search_docs", question="anything", source="nope")

        # reindexing: the page is marked; a pattern that names nothing is an error
        marked = await call(session, "reindex_page", name="relay", url_or_glob="faq.html")
        assert marked["marked"] == [site.url("/docs/faq.html")] and marked["count"] == 1
        assert "matches" in await error(session, "reindex_page", name="relay", url_or_glob="no-such-page.html")

    try:
        run(session_run)
    finally:
        stop_if_alive(started)
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_streamable_http_transport_on_a_loopback_port(tmp_path: Path) -> None:
    """``python -m docscraper.ops.mcp_server`` is what the docscraper-mcp console script runs."""
    stderr = tmp_path / "server.log"
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "docscraper.ops.mcp_server", "--transport", "http", "--port", "0"],
            cwd=ROOT, env=server_env(tmp_path / "data"), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while not (match := re.search(r"streamable HTTP at (http://127\.0\.0\.1:\d+/mcp)", stderr.read_text())):
            assert process.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.1)
        url = match.group(1)

        async def session_run() -> None:
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == "docscraper"
                assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
                result = await session.call_tool("list_sources", {})
                assert not result.is_error and result.structured_content == {"sources": []}
                result = await session.call_tool("crawl_status", {"name": "nope"})
                assert result.is_error and "unknown source 'nope'" in text(result)

        run(session_run)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Traceback" not in stderr.read_text()


_WRITE_CHUNKS = """
import sys
from pathlib import Path
import numpy as np
from docscraper.storage.vectors import ChromaIndex, ChunkRecord
index = ChromaIndex(path=Path(sys.argv[1]))
first = int(sys.argv[2])
rng = np.random.default_rng(first)
index.upsert([ChunkRecord(f"chunk-{i}", f"text {i}", rng.random(8, dtype=np.float32), {"source": "relay"})
              for i in range(first, first + 3)])
index.close()
"""


def test_the_search_index_is_reopened_with_what_another_process_wrote(tmp_path: Path) -> None:
    """What the server's search_docs relies on: the stamp changes when a crawl writes; a reopened
    index (after forgetting Chroma's cached clients) answers with the new chunks."""
    path = tmp_path / "chroma"

    def write(first: int) -> None:
        subprocess.run([sys.executable, "-c", _WRITE_CHUNKS, str(path), str(first)], cwd=ROOT, check=True,
                       env=server_env(tmp_path), timeout=120)

    write(0)
    index = ChromaIndex(path=path)
    stamp = persistent_stamp(path)
    probe = np.ones(8, dtype=np.float32)
    assert len(index.query(probe, 10)) == 3
    assert persistent_stamp(path) == stamp  # reading leaves it alone
    write(3)
    assert persistent_stamp(path) != stamp
    index.close()
    forget_persistent_clients()
    index = ChromaIndex(path=path)
    assert {hit.id for hit in index.query(probe, 10)} == {f"chunk-{i}" for i in range(6)}
    index.close()
    forget_persistent_clients()


# -- the Scrapyd path of the launcher ----------------------------------------------------------------


class _ScrapydStub(BaseHTTPRequestHandler):
    """Scrapyd's schedule.json as far as the launcher uses it: records each POST, answers what it is told."""

    posts: list[tuple[str, list[tuple[str, str]], dict[str, str]]]
    answer: dict[str, Any]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        self.posts.append((self.path, parse_qsl(body, keep_blank_values=True), dict(self.headers)))
        data = json.dumps(self.answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def scrapyd() -> Iterator[type[_ScrapydStub]]:
    handler = type("Handler", (_ScrapydStub,), {"posts": [], "answer": {"status": "ok", "jobid": "6487ec7a"}})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    handler.port = httpd.server_address[1]  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()


def scrapyd_config(tmp_path: Path, url: str) -> DocscraperConfig:
    data_dir = tmp_path / "data"
    config = DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}", scrapyd_url=url)
    data_dir.mkdir()
    add_source(config, "relay", "https://docs.example.com/docs/", probe=False)
    return config


def test_start_crawl_schedules_on_scrapyd_when_configured(tmp_path: Path, scrapyd: Any) -> None:
    config = scrapyd_config(tmp_path, f"http://ops:s3cret@127.0.0.1:{scrapyd.port}/")
    started = start_crawl(config, "relay", full=True,
                          overrides={"allow": ["guide/**", "faq.html"], "block": None, "max_pages": 5},
                          settings={"DOCSCRAPER_PROGRESS_INTERVAL": "1", "HTTPAUTH_PASS": "never-sent-1"})
    endpoint = f"http://127.0.0.1:{scrapyd.port}/schedule.json"
    assert started == {"started": True, "how": "scrapyd", "source": "relay", "jobid": "6487ec7a",
                       "project": "docscraper"}  # no setting's value (the Scrapyd URL) in the answer
    ((path, fields, headers),) = scrapyd.posts
    assert path == "/schedule.json" and endpoint.endswith(path)
    # a secret setting is never sent: Scrapyd shows a job's settings to anyone who lists its jobs
    assert fields == [("project", "docscraper"), ("spider", "docs"), ("source", "relay"), ("full", "1"),
                      ("allow", "guide/**,faq.html"), ("max_pages", "5"),
                      ("setting", "DOCSCRAPER_PROGRESS_INTERVAL=1")]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"ops:s3cret").decode()
    assert not (config.data_dir / "logs").exists()  # no process was started here


def test_start_crawl_refusals_name_the_reason(tmp_path: Path, scrapyd: Any) -> None:
    config = scrapyd_config(tmp_path, f"http://127.0.0.1:{scrapyd.port}")
    with pytest.raises(SourceError, match="unknown source 'nope'"):
        start_crawl(config, "nope")
    with pytest.raises(SourceArgumentError, match="max_pages must be 1 or more"):
        start_crawl(config, "relay", overrides={"max_pages": 0})
    with pytest.raises(SourceArgumentError, match="unknown argument"):
        start_crawl(config, "relay", overrides={"save_dir": "/tmp"})
    assert scrapyd.posts == []
    scrapyd.answer = {"status": "error", "message": "project 'docscraper' not found"}
    with pytest.raises(SourceError, match="refused the crawl of 'relay': project 'docscraper' not found"):
        start_crawl(config, "relay")
    assert len(scrapyd.posts) == 1
