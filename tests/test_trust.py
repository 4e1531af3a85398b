"""Servers that let no one in (DESIGN rule 11), tried as an outside caller would.

The MCP server's clients reach no local file and no private address the operator did not allow: a
``file:`` source or ``llms_txt`` is refused the same way whether the path exists or not, and the add-source
probe goes through the crawl's SSRF guard without the trust the crawl gives a source's own host, so the server
is no port scanner of its loopback. Over HTTP, a bind off loopback needs a token, every request is checked for
it and for a Host header naming the server, and a client that sends too many requests is slowed down.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from docscraper.ops.mcp_server import RateLimit, host_names, is_loopback
from tests.conftest import ROOT
from tests.mockserver import DocsServer
from tests.test_mcp import call, error, run, server_env, text

TOKEN = "t0ken-for-the-trust-tests-4f9a1c"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stdio(data_dir: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "scrapy", "mcp", *args], cwd=ROOT,
                                 env=server_env(data_dir))


def test_clients_reach_no_local_file_and_no_private_address_unless_allowed(site: DocsServer, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "notes").mkdir(parents=True)
    (victim / "notes" / "secret.md").write_text("# Notes\n\npassword: hunter2-very-secret\n")
    allowed = tmp_path / "allowed"
    (allowed / "docs").mkdir(parents=True)
    (allowed / "docs" / "index.md").write_text("# Allowed docs\n\nSome words about deployment.\n")
    (allowed / "escape").symlink_to(victim / "notes")
    port = closed_port()

    async def refused(session: ClientSession) -> None:
        # file: URLs: one refusal, whether the path exists or not
        messages = {await error(session, "add_source", name="v1", url=(victim / "notes").as_uri() + "/"),
                    await error(session, "add_source", name="v2", url="file:///no/such/folder/"),
                    await error(session, "add_source", name="v3", url=(victim / "notes" / "secret.md").as_uri())}
        assert len(messages) == 1, messages
        (message,) = messages
        assert "file: URLs are refused" in message and str(victim) not in message
        llms = await error(session, "add_source", name="v4", url="https://docs.example.com/",
                           llms_txt="file:///etc/passwd")
        assert "llms_txt: file: URLs are refused" in llms and "root:" not in llms
        # private addresses: refused before any connection, open port or closed alike
        open_answer = await error(session, "add_source", name="probe", url=site.url("/docs/"))
        closed_answer = await error(session, "add_source", name="probe", url=f"http://127.0.0.1:{port}/docs/")
        assert "SSRF guard" in open_answer and "loopback" in open_answer
        assert open_answer.replace(str(site.port), "PORT") == closed_answer.replace(str(port), "PORT")
        assert "Refused" not in closed_answer and "ConnectionRefused" not in closed_answer
        assert (await call(session, "list_sources"))["sources"] == []

    async def session_run(params: StdioServerParameters, scenario: Any) -> None:
        with (tmp_path / "server.log").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await scenario(session)

    run(lambda: session_run(stdio(tmp_path / "data"), refused))
    assert site.hits("/docs/") == 0 and site.hits("/robots.txt") == 0  # nothing reached the site

    async def allowed_scenario(session: ClientSession) -> None:
        added = await call(session, "add_source", name="local", url=(allowed / "docs").as_uri() + "/")
        assert added["source"]["url"].startswith((allowed / "docs").as_uri())
        # a link inside the allowed folder that leads out of it is refused the same way
        message = await error(session, "add_source", name="escape", url=(allowed / "escape").as_uri() + "/")
        assert "file: URLs are refused" in message
        # the operator let the loopback site in: the probe reaches it, and the source keeps no trust of its own
        relay = await call(session, "add_source", name="relay", url=site.url("/docs/"))
        assert relay["probe"]["status"] == 200 and relay["source"]["scope"]["trust_host"] is False

    run(lambda: session_run(stdio(tmp_path / "data2", "--allow-folder", str(allowed),
                                  "-s", "DOCSCRAPER_SSRF_ALLOWED_HOSTS=127.0.0.1"), allowed_scenario))
    assert site.hits("/docs/") >= 1
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_a_crawl_of_a_source_a_client_registered_trusts_no_private_host(site: DocsServer, tmp_path: Path,
                                                                        crawl: Any) -> None:
    """The trust a crawl gives its source's own host (a loopback docs site the operator names) is not given
    to a source a server's client registered: its pages on loopback are refused unless allowed."""
    from docscraper.config import DocscraperConfig
    from docscraper.ops.sources import add_source

    data_dir = tmp_path / "data"
    config = DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}")
    add_source(config, "client", site.url("/docs/"), probe=False, trust_host=False)
    result = crawl("client", check=False)
    assert result.stats["success"] == 0 and result.keys("skipped", "blockedAddress"), result.stderr[-3000:]
    allowed = crawl("client", settings={"DOCSCRAPER_SSRF_ALLOWED_HOSTS": "127.0.0.1"})
    assert allowed.stats["success"] > 10


@contextmanager
def http_server(tmp_path: Path, *args: str, token: str | None = None) -> Iterator[tuple[subprocess.Popen[str], int]]:
    env = server_env(tmp_path / "data")
    env.pop("DOCSCRAPER_SERVER_TOKEN", None)
    if token is not None:
        env["DOCSCRAPER_SERVER_TOKEN"] = token
    log = tmp_path / f"http-{time.monotonic_ns()}.log"
    with log.open("w") as err:
        process = subprocess.Popen([sys.executable, "-m", "docscraper.ops.mcp_server", "--transport", "http",
                                    "--port", "0", *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                   stdout=err, stderr=err, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (match := re.search(r"streamable HTTP at http://\S+:(\d+)/mcp", log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield process, int(match.group(1))
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Traceback" not in log.read_text()


def raw(port: int, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read().decode()


def test_off_loopback_the_http_server_needs_a_token_checks_it_and_the_host(tmp_path: Path) -> None:
    started = subprocess.run([sys.executable, "-m", "docscraper.ops.mcp_server", "--transport", "http", "--host",
                              "0.0.0.0", "--port", "0"], cwd=ROOT, env={k: v for k, v in server_env(tmp_path).items()
                                                                       if k != "DOCSCRAPER_SERVER_TOKEN"},
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 2 and "needs a token" in started.stderr and "Traceback" not in started.stderr

    with http_server(tmp_path, "--host", "0.0.0.0", "-s", "DOCSCRAPER_SERVER_RATE_LIMIT=40", token=TOKEN) as (_, port):
        here = f"127.0.0.1:{port}"
        assert raw(port, {"Host": here})[0] == 401
        status, headers, _ = raw(port, {"Host": here, "Authorization": "Bearer wrong-token-of-some-length"})
        assert status == 401 and headers.get("www-authenticate", "").startswith("Bearer")
        assert raw(port, {"Host": "rebound.example", "Authorization": f"Bearer {TOKEN}"})[0] == 421
        assert raw(port, {"Host": here, "Authorization": f"Bearer {TOKEN}"})[0] not in (401, 421, 429)

        async def session_run() -> None:
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
            async with client, streamable_http_client(f"http://{here}/mcp", http_client=client) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("list_sources", {})
                assert not result.is_error and result.structured_content == {"sources": []}, text(result)

        run(session_run)
        # a client that keeps asking is slowed down, and told when to come back
        statuses = [raw(port, {"Host": here, "Authorization": f"Bearer {TOKEN}"}) for _ in range(45)]
        limited = [headers for status, headers, _ in statuses if status == 429]
        assert limited and int(limited[0]["retry-after"]) >= 1


def test_on_loopback_a_forged_host_is_refused_and_a_token_if_set_is_required(tmp_path: Path) -> None:
    with http_server(tmp_path) as (_, port):
        assert raw(port, {"Host": f"127.0.0.1:{port}"})[0] not in (401, 421)
        assert raw(port, {"Host": f"localhost:{port}"})[0] not in (401, 421)
        assert raw(port, {"Host": f"attacker.example:{port}"})[0] == 421
    with http_server(tmp_path, token=TOKEN) as (_, port):
        assert raw(port, {"Host": f"127.0.0.1:{port}"})[0] == 401


def test_host_names_rate_limit_and_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7")
    names = host_names("127.0.0.1", 8765)
    assert {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"} <= names and "evil.example:8765" not in names
    assert {"docs.internal", "docs.internal:8765"} <= host_names("10.1.2.3", 8765, ["docs.internal"])
    now = [0.0]
    limit = RateLimit(3, clock=lambda: now[0])
    assert [limit.wait("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limit.wait("a") == pytest.approx(60.0) and limit.wait("b") == 0.0
    now[0] = 60.5
    assert limit.wait("a") == 0.0


def test_recrawl_source_caps_the_crawls_a_server_starts(tmp_path: Path) -> None:
    """DOCSCRAPER_SERVER_MAX_CRAWLS: a running crawl counts (here one started by hand, recorded as running)."""
    from docscraper.config import DocscraperConfig
    from docscraper.ops.launch import start_crawl
    from docscraper.ops.sources import SourceError, add_source
    from docscraper.storage.runs import this_process
    from docscraper.storage.state import RunRecord, SqlStateStore, utcnow

    data_dir = tmp_path / "data"
    config = DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}")
    add_source(config, "one", "https://one.example/docs/", probe=False)
    add_source(config, "two", "https://two.example/docs/", probe=False)
    store = SqlStateStore(config.state_url)
    source = store.get_source("one")
    assert source is not None
    host, pid, start = this_process()
    store.start_run(RunRecord("r-one", source.id, utcnow(), None, None, None), host=host, pid=pid,
                    process_start=start)
    store.close()
    with pytest.raises(SourceError, match=r"1 crawl\(s\) are running.*DOCSCRAPER_SERVER_MAX_CRAWLS=1"):
        start_crawl(config, "two", max_running=1)
    with pytest.raises(SourceError, match="a crawl of source 'one' is running"):
        start_crawl(config, "one", max_running=5)
    assert not (data_dir / "logs").exists()  # no process was started
