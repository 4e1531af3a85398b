"""Worker processes for page parsing (docscraper.crawl.workers) and the spider's parse step in them.

The pool is exercised with real processes (``spawn``), on an asyncio loop as in a crawl; the functions
they run are module-level here, so a spawned worker imports them by name."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from scrapy.settings import Settings

from docscraper.config import DocscraperConfig, default_parse_workers
from docscraper.crawl.workers import BoundedProcess, CallTimedOut, WorkerCrashed, WorkerProcesses
from docscraper.spiders.page_parser import FetchedPage, parse_fetched

T = TypeVar("T")


def pid() -> int:
    return os.getpid()


def shout(message: str) -> str:
    logging.getLogger("docscraper.test_workers").warning("worker says %s", message)
    return message.upper()


def die() -> None:
    os._exit(3)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def started(pool: WorkerProcesses) -> None:
    """Make the pool start its processes, and wait until they answer (calls meanwhile run here)."""
    await pool.run(pid)
    for _ in range(600):
        if pool.ready:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the worker processes never answered")


def sleep_for(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_a_bounded_call_past_its_limit_stops_its_process_and_the_next_call_gets_a_new_one() -> None:
    """A document whose one page hangs inside a C library: the call is given up, its process terminated, and
    the next document converts in a fresh process."""
    async def scenario() -> tuple[int, float, int, int]:
        bounded = BoundedProcess(1)
        try:
            first = await bounded.run(pid, timeout=60)
            started = time.monotonic()
            with pytest.raises(CallTimedOut, match="did not finish in 1 s"):
                await bounded.run(sleep_for, 60, timeout=1)
            stopped = time.monotonic() - started
            return first, stopped, await bounded.run(sleep_for, 0, timeout=60), bounded.terminated
        finally:
            bounded.close()

    first, stopped, second, terminated = run(scenario())
    assert first != os.getpid() and second not in (first, os.getpid())
    assert stopped < 30 and terminated == 1
    # no workers: here
    assert run(BoundedProcess(0).run(pid, timeout=1)) == os.getpid()


def test_calls_run_in_another_process_once_the_workers_are_up() -> None:
    async def scenario() -> list[int]:
        pool = WorkerProcesses(1)
        try:
            first = await pool.run(pid)  # before the worker is up: here
            await started(pool)
            return [first, await pool.run(pid), await pool.run(pid)]
        finally:
            pool.close()

    first, second, third = run(scenario())
    assert first == os.getpid()
    assert second != os.getpid() and second == third  # one worker, kept


def test_what_a_worker_logs_is_logged_again_in_the_crawl(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> str:
        pool = WorkerProcesses(1)
        try:
            await started(pool)
            return await pool.run(shout, "hello")
        finally:
            pool.close()

    with caplog.at_level(logging.INFO, logger="docscraper"):
        assert run(scenario()) == "HELLO"
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records if "worker says" in r.getMessage()] == [
        ("docscraper.test_workers", logging.WARNING, "worker says hello")
    ]


def test_a_worker_that_dies_is_replaced_and_the_call_fails_alone(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> tuple[str, int, int, int]:  # the error, a worker's pid before and after, restarts
        pool = WorkerProcesses(1)
        try:
            await started(pool)
            before = await pool.run(pid)
            try:
                await pool.run(die)
            except WorkerCrashed as exc:
                error = str(exc)
            else:
                raise AssertionError("a call that kills its worker did not fail")
            await started(pool)  # a fresh pool takes the next calls
            return error, before, await pool.run(pid), pool.restarts
        finally:
            pool.close()

    with caplog.at_level(logging.WARNING, logger="docscraper"):
        error, before, later, restarts = run(scenario())
    assert "died on this call twice" in error
    assert later not in (before, os.getpid())  # a new worker process
    assert restarts == 2  # once after each death
    assert sum("worker process died" in r.getMessage() for r in caplog.records) == 2


def test_no_workers_and_a_closed_pool_run_calls_here() -> None:
    async def scenario() -> tuple[int, int]:
        inline = WorkerProcesses(0)
        pool = WorkerProcesses(1)
        await started(pool)
        pool.close()
        return await inline.run(pid), await pool.run(pid)

    assert run(scenario()) == (os.getpid(), os.getpid())


def test_parse_workers_setting() -> None:
    def workers(value: object) -> int:
        return DocscraperConfig.from_settings(Settings({"DOCSCRAPER_PARSE_WORKERS": value})).parse_workers

    assert workers("auto") == default_parse_workers()
    assert (workers("0"), workers(3)) == (0, 3)
    assert [default_parse_workers(n) for n in (1, 2, 4, 16)] == [1, 1, 3, 4]
    with pytest.raises(ValueError, match="DOCSCRAPER_PARSE_WORKERS must be a whole number"):
        workers("many")


def test_parse_fetched_reads_the_page_as_the_spider_did() -> None:
    body = (
        '<html><head><meta charset="windows-1252"><title>Caf\xe9</title></head><body><main><h1>Caf\xe9</h1>'
        '<p>See <a href="b.html#x">b</a>, <a href="#/route">r</a>, <a href="mailto:a@b">m</a> '
        'and <a href="c.html">c</a> and <a href="b.html">b again</a>.</p></main></body></html>'
    ).encode("cp1252")
    parsed = parse_fetched(FetchedPage("http://h/docs/a.html", body, "text/html", False, "html"))
    assert parsed.error is None and parsed.extracted is not None
    assert parsed.extracted.title == "Café"
    assert parsed.encoding.encoding == "cp1252"
    assert parsed.links == ["http://h/docs/b.html", "http://h/docs/a.html", "http://h/docs/c.html"]
    assert parsed.hash_routes == 1
    markdown = parse_fetched(FetchedPage("http://h/docs/a.md", b"# T\n\n[x](b.md)\n", "text/markdown", True, "text"))
    assert markdown.links == ["http://h/docs/b.md"]
    binary = parse_fetched(FetchedPage("http://h/docs/a.html", body, "text/html", False, None))
    assert binary.links == [] and binary.extracted is not None


def test_a_crawl_parses_pages_in_workers_to_the_same_markdown_as_on_the_reactor(shared_site: Any, crawl: Any,
                                                                                tmp_path: Any) -> None:
    """The same site crawled with parsing on the reactor thread, then in full (every page fetched and
    parsed again) with worker processes: every page's Markdown (its content hash) is the same, so the
    second crawl finds every page unchanged, and the two Markdown mirrors are identical."""
    # (reports are read right after each crawl: both crawls write to one data directory)
    inline = crawl(shared_site.url("docs/"), f"save_dir={tmp_path / 'inline'}",
                   settings={"DOCSCRAPER_PARSE_WORKERS": "0"}).report
    pooled = crawl(shared_site.url("docs/"), f"save_dir={tmp_path / 'pooled'}", "full=1",
                   settings={"DOCSCRAPER_PARSE_WORKERS": "1"}).report
    pages = inline["stats"]["success.new"]
    assert pages > 20
    assert pooled["stats"]["success.unchanged"] == pages
    assert pooled["stats"]["success.new"] == pooled["stats"]["success.changed"] == 0
    parsed = inline["scrapy"]["docscraper/parse/in_reactor"]  # pages parsed (llms-full sections are not)
    assert parsed > 20 and inline["scrapy"]["docscraper/parse/in_workers"] == 0
    counts = pooled["scrapy"]
    assert counts["docscraper/parse/in_workers"] + counts["docscraper/parse/in_reactor"] == parsed
    assert counts["docscraper/parse/worker_restarts"] == 0

    def files(root: Any) -> dict[str, str]:
        """Each mirror file, without the front matter's fetch time."""
        return {str(p.relative_to(root)): re.sub(r"(?m)^fetched_at: .*\n", "", p.read_text())
                for p in sorted(root.rglob("*")) if p.is_file()}

    assert files(tmp_path / "inline") == files(tmp_path / "pooled")
    assert len(files(tmp_path / "inline")) >= pages
