"""Scheduled recrawls (docscraper.crawl.recrawls, docscraper.ops.schedules, scrapy schedule): schedules parsed,
their run times, one run after downtime, never two crawls of a source at once, on the fixture site on loopback."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.recrawls import MAX_JITTER, jitter_for, parse_schedule
from docscraper.ops.schedules import due_crawls, start_due
from docscraper.ops.sources import SourceArgumentError, add_source, update_source
from tests.conftest import Crawl
from tests.mockserver import DocsServer


def test_schedules_are_intervals_or_cron_expressions() -> None:
    every = parse_schedule("6h")
    assert every is not None and every.interval == 6 * 3600 and every.cron is None
    nightly = parse_schedule(" 0  3 * * * ")
    assert nightly is not None and nightly.cron == "0 3 * * *"
    assert nightly.next_after(datetime(2026, 1, 1, 5, 0, tzinfo=UTC)) == datetime(2026, 1, 2, 3, 0, tzinfo=UTC)
    assert nightly.period(datetime(2026, 1, 1, tzinfo=UTC)) == timedelta(days=1)
    assert parse_schedule("none") is None and parse_schedule("off") is None
    for bad in ("30s", "61 * * * *", "every day", "0 3 * *"):
        with pytest.raises(ConfigError):
            parse_schedule(bad)


def test_jitter_is_fixed_per_source_and_bounded() -> None:
    day = timedelta(days=1)
    assert jitter_for("docs", day, 0.1) == jitter_for("docs", day, 0.1)
    assert jitter_for("docs", day, 0.1) != jitter_for("blog", day, 0.1)
    assert all(timedelta(0) <= jitter_for(f"s{i}", day, 0.1) < MAX_JITTER for i in range(50))
    assert all(jitter_for(f"s{i}", timedelta(hours=1), 0.1) < timedelta(minutes=6) for i in range(50))


def _config(data_dir: Path) -> DocscraperConfig:
    return DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(data_dir),
                                                    "DOCSCRAPER_INDEX_ENABLED": "0"}))


def test_a_schedule_is_due_once_after_downtime_and_never_twice_at_once(site: DocsServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       command: Crawl) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("DOCSCRAPER_DATA_DIR", str(data_dir))  # the background crawls'
    config = _config(data_dir)
    with pytest.raises(SourceArgumentError, match="shorter than a minute"):
        add_source(config, "docs", site.url("/docs/"), probe=False, schedule="10s")
    add_source(config, "docs", site.url("/docs/"), probe=False, schedule="1h")
    add_source(config, "unscheduled", site.url("/blog/"), probe=False)
    now = datetime.now(UTC)
    (entry,) = due_crawls(config, now)
    assert entry.name == "docs" and entry.last_start is None and not entry.due
    assert now + timedelta(hours=1) <= entry.next_run <= now + timedelta(hours=1, minutes=6)
    # a machine down for ten periods starts one crawl, not ten
    later = now + timedelta(hours=10)
    assert [e.name for e in due_crawls(config, later) if e.due] == ["docs"]
    site.hold("/docs/changelog.html")
    try:
        (started,) = start_due(config, later, settings={"DOCSCRAPER_INDEX_ENABLED": "0"})
        assert started["started"] and started["source"] == "docs"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and site.hits("/docs/changelog.html") == 0:
            time.sleep(0.1)
        # while it runs, the source is not due again, and nothing more is started
        (running,) = due_crawls(config, later)
        assert running.running and not running.due
        assert start_due(config, later) == []
    finally:
        site.release("/docs/changelog.html")
    report = data_dir / "runs" / "docs" / "crawl-metadata.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not report.exists():
        time.sleep(0.2)
    assert json.loads(report.read_text())["due"] is not None  # a --due recrawl
    while time.monotonic() < deadline and due_crawls(config, later)[0].running:
        time.sleep(0.2)
    (after,) = due_crawls(config)  # the run just made counts from its own start
    assert after.last_start is not None and after.last_result in ("success", "partial")
    assert not after.due and after.next_run > after.last_start + timedelta(minutes=59)
    listed = json.loads(command("schedule", "--list", "--json").stdout)
    assert [(e["name"], e["schedule"], e["due"]) for e in listed] == [("docs", "1h", False)]
    assert "No scheduled crawl is due." in command("schedule").stdout
    assert "schedule" not in update_source(config, "docs", schedule="none").scope
    assert due_crawls(config, later) == []
    bad = command("sources", "update", "docs", "--schedule", "61 * * * *", check=False)
    assert bad.returncode == 2 and "not a valid cron expression" in bad.stderr
