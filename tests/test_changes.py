"""The change feed (runs/<source>/<run-id>.changes.jsonl) and the run webhook: real crawls of the fixture site,
the real model and Chroma for the chunk ids, a webhook receiver on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from docscraper._resources import read_text
from docscraper.crawl.webhook import deliver
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import ROOT, Crawl, CrawlResult
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl

CHANGES_SCHEMA = json.loads(read_text("docscraper", "schema", "changes.schema.json"))
WEBHOOK_SCHEMA = json.loads(read_text("docscraper", "schema", "webhook.schema.json"))


def feed(result: CrawlResult) -> list[dict[str, Any]]:
    report = result.report
    path = result.data_dir / "runs" / report["source"] / f"{report['runId']}.changes.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        jsonschema.validate(line, CHANGES_SCHEMA, format_checker=jsonschema.FormatChecker())
        assert line["runId"] == report["runId"] and line["source"] == report["source"]
    return lines


def report_changes(result: CrawlResult) -> set[tuple[str, str]]:
    return {(entry["statusReason"], entry["url"]) for entry in result.report["items"].values()
            if entry["status"] == "success" and entry["statusReason"] in ("new", "changed", "removed")}


def test_change_feed_matches_the_report_and_the_index(site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/", index=True)
    lines = feed(first)
    assert {(line["change"], line["url"]) for line in lines} == report_changes(first)
    assert len(lines) == first.stats["success.new"] > 30
    index = ChromaIndex(path=first.data_dir / "chroma")
    source = first.report["source"]
    before = {line["pageId"]: line for line in lines}
    for line in lines:
        assert line["chunksDeleted"] == []
        assert sorted(line["chunksAdded"]) == sorted(index.page_chunks(source, line["pageId"]))
    index.close()

    # edit a page, retire one (410), delete one with its links (an orphan at the next clean close)
    edited = site.root / "docs" / "guide" / "deployment.html"
    edited.write_text(edited.read_text().replace("</h1>", "</h1><p>Edited: this guide was reviewed.</p>", 1))
    routes = json.loads((site.root / "_routes.json").read_text())
    routes["/docs/glossary.html"] = {"status": 410}
    (site.root / "_routes.json").write_text(json.dumps(routes))
    victim = site.root / "docs" / "reference" / "api" / "pagination.html"
    victim.unlink()
    for path in site.root.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".xml", ".txt") and "pagination.html" in path.read_text():
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if "pagination.html" not in line))
    second = crawl(f"{site.base_url}/docs/", index=True)
    lines = feed(second)
    assert {(line["change"], line["url"]) for line in lines} == report_changes(second)
    by_change: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines:
        by_change.setdefault(line["change"], {})[line["url"].removeprefix(f"{site.base_url}/docs/")] = line
    assert set(by_change) == {"changed", "removed"}
    # the edited page, and the two that linked to the deleted one
    assert set(by_change["changed"]) == {"guide/deployment.html", "reference/", "reference/api/"}
    assert set(by_change["removed"]) == {"glossary.html", "reference/api/pagination.html"}
    index = ChromaIndex(path=second.data_dir / "chroma")
    for changed in by_change["changed"].values():
        old = before[changed["pageId"]]
        assert changed["previousContentHash"] == old["contentHash"] != changed["contentHash"]
        now = set(index.page_chunks(source, changed["pageId"]))
        assert set(changed["chunksAdded"]) <= now and changed["chunksAdded"]
        assert set(changed["chunksDeleted"]) == set(old["chunksAdded"]) - now and changed["chunksDeleted"]
    for line in by_change["removed"].values():
        assert line["contentHash"] == before[line["pageId"]]["contentHash"]
        assert sorted(line["chunksDeleted"]) == sorted(before[line["pageId"]]["chunksAdded"])
        assert index.page_chunks(source, line["pageId"]) == {}
    index.close()
    # removals are written at close, after every page
    assert [line["change"] for line in lines][-2:] == ["removed", "removed"]


def test_unchanged_run_writes_an_empty_feed(shared_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{shared_site.base_url}/docs/", "max_pages=3")
    again = crawl(f"{shared_site.base_url}/docs/", "max_pages=3")
    assert again.stats["success.unchanged"] == 3
    assert feed(again) == []


# --- the webhook ------------------------------------------------------------------------------------


class Receiver:
    """A webhook receiver on loopback: records each POST; answers with the statuses queued in ``answers``
    (then 200); while ``gate`` is not set, keeps requests waiting."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.answers: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts.append({"body": json.loads(body), "headers": dict(self.headers.items()),
                                       "path": self.path})
                receiver.gate.wait(60)
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/docscraper"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def _hook(receiver: Receiver, **more: str) -> dict[str, str]:
    return {"DOCSCRAPER_WEBHOOK_URL": receiver.url, "DOCSCRAPER_WEBHOOK_BACKOFF": "0.05", **more}


def test_webhook_posts_one_summary_per_run_retrying_failures(shared_site: DocsServer, crawl: Crawl,
                                                               receiver: Receiver) -> None:
    receiver.answers = [500, 503]
    result = crawl(f"{shared_site.base_url}/docs/", "max_pages=4",
                   settings=_hook(receiver, DOCSCRAPER_CONTACT="ops@example.com"))
    assert len(receiver.posts) == 3  # two failures, then delivered: the process waited for it
    bodies = [post["body"] for post in receiver.posts]
    assert bodies[0] == bodies[1] == bodies[2]
    body = bodies[0]
    jsonschema.validate(body, WEBHOOK_SCHEMA, format_checker=jsonschema.FormatChecker())
    report = result.report
    assert body["runId"] == report["runId"] and body["result"] == report["result"] == "success"
    assert json.loads(Path(body["report"]).read_text())["runId"] == report["runId"]
    assert Path(body["changes"]).name == f"{report['runId']}.changes.jsonl"
    assert body["counts"]["new"] == report["stats"]["success.new"] == 4
    assert receiver.posts[0]["headers"]["User-Agent"].endswith("(+mailto:ops@example.com)")
    assert "trying again" in result.stderr


def test_webhook_is_not_sent_for_an_aborted_run_unless_asked(crawl: Crawl, receiver: Receiver) -> None:
    # a source name nobody registered: the run cannot open, and is aborted
    result = crawl("no-such-source", settings=_hook(receiver), check=False)
    assert result.returncode == 1
    assert receiver.posts == []
    result = crawl("no-such-source", settings=_hook(receiver, DOCSCRAPER_WEBHOOK_ON_ABORT="1"), check=False)
    assert len(receiver.posts) == 1
    body = receiver.posts[0]["body"]
    jsonschema.validate(body, WEBHOOK_SCHEMA)
    assert body["result"] == "aborted" and "unknown source" in body["resultReason"] and body["report"] is None


def test_webhook_never_holds_up_the_crawls_close(shared_site: DocsServer, tmp_path: Path,
                                                  receiver: Receiver) -> None:
    receiver.gate.clear()  # the receiver takes the POST and does not answer until the test says so
    data_dir = tmp_path / "data"
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={shared_site.base_url}/docs/",
               "-a", "max_pages=2", "-s", "DOCSCRAPER_INDEX_ENABLED=0"]
    for name, value in _hook(receiver).items():
        command += ["-s", f"{name}={value}"]
    env = {**__import__("os").environ, "DOCSCRAPER_DATA_DIR": str(data_dir), "PYTHONWARNINGS": ""}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not receiver.posts and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert receiver.posts, "no POST arrived"
        # the POST is unanswered, yet the run closes: its report is written and Scrapy closes the spider
        report = json.loads(Path(receiver.posts[0]["body"]["report"]).read_text())
        assert report["closeReason"] == "finished"
        while (not any("Spider closed (finished)" in line for line in list(lines)) and proc.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert any("Spider closed (finished)" in line for line in list(lines)), "".join(lines)[-3000:]
        assert proc.poll() is None  # the process waits for the delivery, after the crawl
        assert not any("Webhook:" in line for line in list(lines))  # still unanswered
    finally:
        receiver.gate.set()
        proc.wait(timeout=120)
        reader.join(timeout=30)
        proc.stderr.close()
    stderr = "".join(lines)
    assert proc.returncode == 0, stderr[-3000:]
    assert "Webhook: run" in stderr and "posted to" in stderr, stderr[-3000:]


def test_deliver_does_not_retry_a_client_error(receiver: Receiver) -> None:
    receiver.answers = [404]
    assert deliver(receiver.url, {"runId": "x"}, user_agent="t", retries=3, backoff=0.01, timeout=5) is False
    assert len(receiver.posts) == 1
    receiver.answers = [500, 500, 500]
    assert deliver(receiver.url, {"runId": "y"}, user_agent="t", retries=2, backoff=0.01, timeout=5) is False
    assert len(receiver.posts) == 4
