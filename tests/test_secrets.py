"""Secrets never leave memory (DESIGN rule 9): a distinct secret planted in each way one reaches docscraper,
then looked for everywhere it could leak: every file under the data directory (state database, reports,
change feeds, logs), the crawl's log at DEBUG level and its output, the process list while a background
crawl runs, and every answer of the MCP server (and its own log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from docscraper.secrets import Redactor, has_credentials, is_secret_name, redact_url
from tests.conftest import ROOT, Crawl
from tests.mockserver import DocsServer
from tests.test_mcp import CRAWL_DEADLINE, call, run, server_env, stop_if_alive

SECRETS = {
    "source_url": "pw-in-the-source-url-7f3a1b",
    "llms_url": "pw-in-the-llms-url-6a5b4c",
    "httpauth": "httpauth-pass-91c2d8e",
    "webhook_path": "webhook-path-secret-55e0aa",
    "webhook_password": "webhook-pw-2b7c44",
    "api_token": "api-token-value-0d1e2f",
    "server_webhook": "server-hook-secret-8e7d6c",
}


def leaks(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


def files_leaking(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            names = leaks(path.read_bytes().decode("utf-8", errors="replace"))
            if names:
                found[str(path.relative_to(folder))] = names
    return found


def process_list() -> str:
    """Every process's command line, as ``ps`` shows them to any local user."""
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return "\n".join(lines)


def test_redactor_and_names() -> None:
    assert is_secret_name("HTTPAUTH_PASS") and is_secret_name("AWS_SECRET_ACCESS_KEY")
    assert is_secret_name("DOCSCRAPER_WEBHOOK_URL") and is_secret_name("DOCSCRAPER_SERVER_TOKEN")
    assert not is_secret_name("DOCSCRAPER_SEARCH_KEYWORD_WEIGHT") and not is_secret_name("DOWNLOAD_TIMEOUT")
    assert has_credentials("https://u:p@h/") and has_credentials("https://u@h/") and not has_credentials("https://h/")
    assert redact_url("https://bob:pw@h/x?token=abc&q=1") == "https://***@h/x?token=***&q=1"
    redactor = Redactor.from_settings({"HTTPAUTH_PASS": "hunter22", "LOG_LEVEL": "INFO",
                                       "DOCSCRAPER_STATE_URL": "postgresql+psycopg://app:dbpass99@db/x"}, environ={})
    cleaned = redactor.redact("'HTTPAUTH_PASS': 'hunter22', url postgresql+psycopg://app:dbpass99@db/x, INFO")
    assert "hunter22" not in cleaned and "dbpass99" not in cleaned and "INFO" in cleaned


def test_credentials_in_urls_are_refused_without_being_repeated(site: DocsServer, crawl: Crawl, command: Crawl,
                                                                tmp_path: Path) -> None:
    host = site.base_url.removeprefix("http://")
    source = crawl(f"http://reader:{SECRETS['source_url']}@{host}/docs/", check=False)
    assert source.returncode == 2 and "carries credentials" in source.stderr and not leaks(source.stderr)
    llms = crawl(site.url("/docs/"), f"llms_txt=http://reader:{SECRETS['llms_url']}@{host}/llms.txt", check=False)
    assert llms.returncode == 2 and "carries credentials" in llms.stderr and not leaks(llms.stderr)
    added = command("sources", "add", "private", f"http://reader:{SECRETS['source_url']}@{host}/docs/", check=False)
    assert added.returncode == 2 and "carries credentials" in added.stderr and not leaks(added.stderr + added.stdout)
    assert site.hits("/docs/") == 0
    data_dir = tmp_path / "data"
    assert not data_dir.exists() or files_leaking(data_dir) == {}


def test_secret_settings_never_reach_a_log_a_report_or_the_state(site: DocsServer, crawl: Crawl,
                                                                 tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "logs").mkdir(parents=True)
    hook = f"http://hook:{SECRETS['webhook_password']}@{site.base_url.removeprefix('http://')}/hook/" \
           f"{SECRETS['webhook_path']}?sig=abc"
    result = crawl(site.url("/docs/"), settings={
        "HTTPAUTH_USER": "reader", "HTTPAUTH_PASS": SECRETS["httpauth"], "HTTPAUTH_DOMAIN": "127.0.0.1",
        "DOCSCRAPER_WEBHOOK_URL": hook, "DOCSCRAPER_WEBHOOK_RETRIES": "0",
        "LOG_LEVEL": "DEBUG", "LOG_FILE": str(data_dir / "logs" / "crawl.log"),
    })
    log = (data_dir / "logs" / "crawl.log").read_text()
    assert "Overridden settings" in log and "HTTPAUTH_PASS" in log  # the line is there, its value is not
    assert "Webhook" in log  # the delivery was logged, without its URL's secrets
    assert leaks(log) == [] and leaks(result.stdout + result.stderr) == []
    assert files_leaking(data_dir) == {}
    assert result.stats["success"] > 10


def test_a_background_crawl_gets_the_servers_secrets_through_its_environment(site: DocsServer,
                                                                            tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # the operator gives the server its secret settings in its environment (DOCSCRAPER_SETTINGS), not on
    # its command line; the server hands them to its crawls the same way
    secret_settings = {"SOME_API_TOKEN": SECRETS["api_token"], "DOCSCRAPER_WEBHOOK_RETRIES": "0",
                       "DOCSCRAPER_WEBHOOK_URL": f"{site.base_url}/hook/{SECRETS['server_webhook']}"}
    params = StdioServerParameters(
        command=sys.executable, cwd=ROOT, env={**server_env(data_dir), "DOCSCRAPER_SETTINGS": json.dumps(secret_settings)},
        args=["-m", "scrapy", "mcp", "-s", "DOCSCRAPER_SSRF_ALLOWED_HOSTS=127.0.0.1", "-s", "DOCSCRAPER_INDEX_ENABLED=0",
              "-s", "DOCSCRAPER_PROGRESS_INTERVAL=0.5"])
    answers: list[Any] = []
    listings: list[str] = []
    started: list[int] = []

    async def scenario(session: ClientSession) -> None:
        answers.append(await call(session, "add_source", name="relay", url=site.url("/docs/")))
        launched = await call(session, "recrawl_source", name="relay")
        answers.append(launched)
        started.append(launched["pid"])
        deadline = time.monotonic() + CRAWL_DEADLINE
        while True:
            listings.append(process_list())
            status = await call(session, "crawl_status", name="relay")
            answers.append(status)
            if status["runs"] and {r["state"] for r in status["runs"]} == {"finished"}:
                break
            assert time.monotonic() < deadline
            await anyio.sleep(0.3)
        answers.append(await call(session, "list_sources"))

    async def session_run() -> None:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listings.append(process_list())
                await scenario(session)

    try:
        run(session_run)
    finally:
        stop_if_alive(started)
    assert any("scrapy crawl docs -a source=relay" in listing for listing in listings)  # seen while it ran
    assert [leaks(listing) for listing in listings] == [[] for _ in listings]
    assert leaks(json.dumps(answers)) == []
    assert leaks((tmp_path / "server.log").read_text()) == []
    # the crawl had the server's settings (through its environment): it posted its summary to the webhook
    deadline = time.monotonic() + 60
    while site.hits(f"/hook/{SECRETS['server_webhook']}") < 1:
        assert time.monotonic() < deadline, "the background crawl never called the server's webhook"
        time.sleep(0.2)
    assert files_leaking(data_dir) == {}
    shown = subprocess.run([sys.executable, "-m", "scrapy", "status", "--json"], cwd=ROOT, capture_output=True,
                           text=True, env=dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir)), timeout=120)
    assert shown.returncode == 0 and leaks(shown.stdout + shown.stderr) == []
