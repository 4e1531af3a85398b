"""The reactor's clock (docscraper.crawl.clock): a step of the wall clock neither stalls a crawl nor times out
its downloads.

First the clock and a real (not installed) Twisted reactor on injected clocks, then whole recrawls of the
fixture site with the wall clock of the crawl's process stepped back and forth by libfaketime (Debian's
``faketime`` package, installed by ``scripts/system-deps.sh``), the monotonic clock left alone.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.reactor import install_reactor, is_reactor_installed
from scrapy.utils.test import get_crawler
from twisted.internet.selectreactor import SelectReactor

from docscraper.crawl.clock import MonotonicReactorClock, ReactorClock, use_monotonic_clock
from tests.mockserver import DocsServer

ROOT = Path(__file__).resolve().parent.parent


class Clocks:
    """A wall clock and a monotonic clock that a test moves by hand."""

    def __init__(self) -> None:
        self.wall_time = 1_700_000_000.0
        self.monotonic_time = 500.0

    def wall(self) -> float:
        return self.wall_time

    def monotonic(self) -> float:
        return self.monotonic_time

    def elapse(self, seconds: float) -> None:
        self.wall_time += seconds
        self.monotonic_time += seconds

    def step(self, seconds: float) -> None:
        """What an NTP step or a resumed VM does: the wall clock jumps, the monotonic one does not."""
        self.wall_time += seconds


@pytest.fixture
def reactor() -> Iterator[SelectReactor]:
    """A Twisted reactor of the test's own, never installed nor run: its timers are driven by hand."""
    made = SelectReactor()
    yield made
    for call in made.getDelayedCalls():
        call.cancel()
    made.removeAll()
    made.waker.connectionLost(None)


def test_reactor_clock_starts_at_wall_time_and_follows_the_monotonic_clock() -> None:
    clocks = Clocks()
    clock = ReactorClock(wall=clocks.wall, monotonic=clocks.monotonic)
    assert clock() == 1_700_000_000.0
    clocks.elapse(2.5)
    assert clock() == 1_700_000_002.5
    clocks.step(-30)
    assert clock() == 1_700_000_002.5
    clocks.step(+3600)
    clocks.elapse(1)
    assert clock() == 1_700_000_003.5


def test_a_backward_step_delays_no_call(reactor: SelectReactor) -> None:
    clocks = Clocks()
    use_monotonic_clock(reactor, ReactorClock(wall=clocks.wall, monotonic=clocks.monotonic))
    ran: list[str] = []
    reactor.callLater(0, ran.append, "connect")  # how Twisted's TCP client starts a connection
    reactor.callLater(0.3, ran.append, "next attempt")
    clocks.step(-30)
    assert reactor.timeout() == 0
    reactor.runUntilCurrent()
    assert ran == ["connect"]
    clocks.elapse(0.3)
    assert reactor.timeout() == 0
    reactor.runUntilCurrent()
    assert ran == ["connect", "next attempt"]


def test_a_forward_step_fires_no_timeout_early(reactor: SelectReactor) -> None:
    clocks = Clocks()
    use_monotonic_clock(reactor, ReactorClock(wall=clocks.wall, monotonic=clocks.monotonic))
    timed_out: list[str] = []
    reactor.callLater(30, timed_out.append, "download")  # DOWNLOAD_TIMEOUT
    clocks.elapse(1)
    clocks.step(+120)
    timeout = reactor.timeout()
    assert timeout is not None and timeout == pytest.approx(29)
    reactor.runUntilCurrent()
    assert timed_out == []
    clocks.elapse(29)
    reactor.runUntilCurrent()
    assert timed_out == ["download"]


def test_twisteds_own_clock_is_the_wall_clock(reactor: SelectReactor) -> None:
    """What the module fixes: on Twisted's default clock a 30 s step back delays a callLater(0) by 30 s."""
    clocks = Clocks()
    reactor.seconds = clocks.wall  # type: ignore[method-assign]
    ran: list[str] = []
    reactor.callLater(0, ran.append, "connect")
    clocks.step(-30)
    reactor.runUntilCurrent()
    assert ran == []
    assert reactor.timeout() == pytest.approx(30)


def test_calls_scheduled_before_the_switch_keep_their_time(reactor: SelectReactor) -> None:
    clocks = Clocks()
    reactor.seconds = clocks.wall  # type: ignore[method-assign]
    ran: list[str] = []
    reactor.callLater(5, ran.append, "early")
    first = use_monotonic_clock(reactor, ReactorClock(wall=clocks.wall, monotonic=clocks.monotonic))
    assert use_monotonic_clock(reactor) is first  # once per reactor
    assert reactor.timeout() == pytest.approx(5)
    clocks.elapse(5)
    reactor.runUntilCurrent()
    assert ran == ["early"]


def test_the_extension_sets_the_installed_reactors_clock() -> None:
    if not is_reactor_installed():
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import reactor as installed

    extension = MonotonicReactorClock.from_crawler(get_crawler())
    assert installed.seconds is extension.clock  # type: ignore[attr-defined]
    assert abs(extension.clock() - time.time()) < 5
    assert MonotonicReactorClock.from_crawler(get_crawler()).clock is extension.clock
    # Scrapy without a reactor (get_crawler refuses to make such a crawler)
    reactorless = SimpleNamespace(settings=Settings({"TWISTED_REACTOR_ENABLED": False}))
    with pytest.raises(NotConfigured):
        MonotonicReactorClock.from_crawler(cast("Crawler", reactorless))


# --- whole recrawls with the wall clock stepped ----------------------------------------------------------

LIBFAKETIME_PATTERNS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                        "/usr/local/lib/faketime/libfaketime.so.1")

#: A page of the site that the recrawls find the server slow to answer: its download times out.
SLOW_PAGE = "/docs/glossary.html"
#: How far the wall clock steps back while the slow page is being fetched: a timeout on the wall clock
#: would fire that much later (or when the server answers, after 60 s).
STEP_SECONDS = 300
#: How much slower than the same recrawl without a step the stepped one may be (a busy machine varies).
MARGIN_SECONDS = 30


def _libfaketime() -> str:
    for pattern in LIBFAKETIME_PATTERNS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    pytest.fail("libfaketime is missing: install Debian's faketime package (scripts/system-deps.sh does; "
                "apt-get install -y faketime)")


def _crawl(server: DocsServer, data_dir: Path, env: dict[str, str], *settings: str,
           step: tuple[Path, str] | None = None) -> tuple[float, dict[str, Any], str]:
    """Crawl the site's /docs/ and return (seconds, report, stderr). With *step* (a FAKETIME_TIMESTAMP_FILE
    and a FAKETIME value), the value is written to the file once the server is holding the slow page."""
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={server.base_url}/docs/",
               "-s", "DOCSCRAPER_INDEX_ENABLED=0", "-s", "LOG_LEVEL=INFO",
               # libfaketime 0.9.10 fails every time.sleep (clock_nanosleep on the monotonic clock) when it
               # leaves the monotonic clock alone: the parse workers' parent watch would die of it
               "-s", "DOCSCRAPER_PARSE_WORKERS=0"]
    for setting in settings:
        command += ["-s", setting]
    stepped = threading.Event()
    before = server.hits(SLOW_PAGE)
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stepper(path: Path, value: str) -> None:
        while server.hits(SLOW_PAGE) == before and proc.poll() is None:
            time.sleep(0.005)
        if proc.poll() is None:
            path.write_text(f"{value}\n")
            stepped.set()

    if step is not None:
        threading.Thread(target=stepper, args=step, daemon=True).start()
    try:
        _, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, stderr[-5000:]
    assert "Traceback" not in stderr, stderr[-5000:]
    if step is not None:
        assert stepped.is_set(), "the crawl ended before the wall clock was stepped"
    report_path = sorted(data_dir.glob("runs/*/crawl-metadata.json"), key=lambda p: p.stat().st_mtime)[-1]
    return elapsed, json.loads(report_path.read_text()), stderr


@pytest.mark.crawl
def test_a_wall_clock_step_back_does_not_stall_a_recrawl(shared_site: DocsServer, tmp_path: Path) -> None:
    """An unchanged recrawl in which one page is slower than ``DOWNLOAD_TIMEOUT``: its timeout, like every
    timer Twisted keeps (a new connection is one), must fire on time although the wall clock stepped back
    while it ran."""
    library = _libfaketime()
    data_dir = tmp_path / "data"
    faketime_file = tmp_path / "faketime"
    faketime_file.write_text("+0\n")
    base = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")
    faked = dict(base, LD_PRELOAD=library, FAKETIME_DONT_FAKE_MONOTONIC="1",
                 FAKETIME_TIMESTAMP_FILE=str(faketime_file), FAKETIME_NO_CACHE="1")
    faked.pop("FAKETIME", None)  # it would take priority over the file
    slow = ("DOWNLOAD_TIMEOUT=3", "RETRY_TIMES=0")

    _, cold, _ = _crawl(shared_site, data_dir, base)
    assert cold["stats"]["success.new"] > 20
    shared_site.hold(SLOW_PAGE)
    try:
        # both recrawls under libfaketime, so that both pay for its reading the file at every clock read
        steady_seconds, steady, _ = _crawl(shared_site, data_dir, faked, *slow)
        stepped_seconds, stepped, stderr = _crawl(shared_site, data_dir, faked, *slow,
                                                  step=(faketime_file, f"-{STEP_SECONDS}s"))
    finally:
        shared_site.release(SLOW_PAGE)

    assert steady["stats"]["failed"] == cold["stats"]["failed"] + 1  # the slow page timed out
    assert steady["stats"]["success.unchanged"] == cold["stats"]["success.new"] - 1
    assert stepped_seconds < steady_seconds + MARGIN_SECONDS, (
        f"the recrawl took {stepped_seconds:.1f} s with the wall clock stepped back {STEP_SECONDS} s, "
        f"{steady_seconds:.1f} s without: something times its delays on the wall clock")
    for key in ("success", "success.unchanged", "success.new", "success.changed", "failed", "skipped"):
        assert stepped["stats"][key] == steady["stats"][key], key
    assert stepped["result"] == steady["result"]
    assert "DownloadTimeoutError" in stderr
