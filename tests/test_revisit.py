"""Revisit schedules and due-only runs (docscraper.crawl.schedule): the policy on its own, then real crawls of the
fixture site on loopback, with the schedule read back from the state database after each run."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.content.discovery import UNIFORM_LASTMOD_MIN, SitemapWalk, parse_sitemap
from docscraper.crawl.schedule import LastmodWatch, RevisitPolicy, parse_lastmod
from docscraper.storage.state import PageRecord, SourceRecord
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

DAY = 86400
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def policy(**settings: Any) -> RevisitPolicy:
    return RevisitPolicy(DocscraperConfig.from_settings(Settings(settings)))


def page(**fields: Any) -> PageRecord:
    base = PageRecord(page_id="url_x", url="https://h/docs/x.html", status="active", content_hash="h", etag=None,
                      last_modified=None, rel_path="x.html")
    return replace(base, **fields)


# the policy -------------------------------------------------------------------------------------------


def test_steps_grow_while_unchanged_reset_on_change_and_stop_at_the_ceiling() -> None:
    revisit = policy()
    first = revisit.after_check(None, "new", T0)
    assert (first.interval, first.unchanged_checks, first.next_check_at) == (DAY, 0, T0 + timedelta(days=1))
    record = page(next_check_at=first.next_check_at, check_interval=first.interval, unchanged_checks=0)
    intervals = []
    for _ in range(6):
        step = revisit.after_check(record, "unchanged", T0)
        intervals.append(step.interval // DAY)
        record = replace(record, check_interval=step.interval, unchanged_checks=step.unchanged_checks)
    assert intervals == [3, 7, 14, 14, 14, 14]
    changed = revisit.after_check(record, "changed", T0)
    assert (changed.interval, changed.unchanged_checks) == (DAY, 0)
    # unchanged content with a new ETag: the server says it changed, so the schedule starts again
    assert revisit.after_check(replace(record, etag='"v1"'), "unchanged", T0, etag='"v2"').interval == DAY
    assert revisit.after_check(replace(record, etag='"v1"'), "unchanged", T0, etag='"v1"').interval == 14 * DAY


def test_the_adaptive_policy_multiplies_and_clamps() -> None:
    revisit = policy(DOCSCRAPER_REVISIT_POLICY="adaptive", DOCSCRAPER_REVISIT_MIN_INTERVAL="1h")
    record = page(next_check_at=T0, check_interval=DAY)
    assert revisit.after_check(record, "unchanged", T0).interval == round(DAY * 1.4)
    assert revisit.after_check(record, "changed", T0).interval == round(DAY * 0.8)
    assert revisit.after_check(replace(record, check_interval=13 * DAY), "unchanged", T0).interval == 14 * DAY
    assert revisit.after_check(replace(record, check_interval=3700), "changed", T0).interval == 3600


def test_failures_back_off_exponentially_and_retry_after_wins_when_longer() -> None:
    revisit = policy()
    waits = [(revisit.after_failure(n, T0) - T0).total_seconds() for n in (1, 2, 3, 4)]
    assert waits == [600, 1200, 2400, 4800]
    assert revisit.after_failure(60, T0) - T0 == timedelta(days=14)  # never past the ceiling
    assert revisit.after_failure(1, T0, retry_after=7200) - T0 == timedelta(hours=2)
    assert revisit.after_failure(3, T0, retry_after=5) - T0 == timedelta(seconds=2400)


def test_why_due_gives_each_reason() -> None:
    revisit = policy()
    scheduled = page(next_check_at=T0 + timedelta(days=3), check_interval=3 * DAY,
                     sitemap_lastmod="2026-01-01", last_changed=T0 - timedelta(days=10))
    assert revisit.why_due(None, T0, None) == "new"
    assert revisit.why_due(replace(scheduled, status="removed"), T0, None) == "new"
    assert revisit.why_due(replace(scheduled, reindex_requested=True), T0, None) == "reindex"
    assert revisit.why_due(replace(scheduled, next_check_at=None), T0, None) == "unscheduled"
    assert revisit.why_due(scheduled, T0, parse_lastmod("2026-01-02")) == "lastmod"
    assert revisit.why_due(scheduled, T0, parse_lastmod("2026-01-01")) is None
    assert revisit.why_due(scheduled, T0 + timedelta(days=3), None) == "due"
    # no stored lastmod: compared with the page's last change
    assert revisit.why_due(replace(scheduled, sitemap_lastmod=None), T0, parse_lastmod("2025-12-20")) is None
    assert revisit.why_due(replace(scheduled, sitemap_lastmod=None), T0, parse_lastmod("2025-12-30")) == "lastmod"


def test_lastmod_values_are_read_as_w3c_datetimes() -> None:
    assert parse_lastmod("2024-05-01") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_lastmod("2024-05-01T10:00:00Z") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert parse_lastmod("2024-05-01T12:00:00+02:00") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert parse_lastmod("2024-05") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_lastmod("yesterday") is None
    assert parse_lastmod("") is None


def test_revisit_settings_are_checked() -> None:
    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_REVISIT_INTERVALS": "6h, 1d, 2w"}))
    assert config.revisit_intervals == (6 * 3600, DAY, 14 * DAY)
    assert config.revisit_max_interval == 14 * DAY
    for name, value in [("DOCSCRAPER_REVISIT_POLICY", "weekly"), ("DOCSCRAPER_REVISIT_INTERVALS", "3d,1d"),
                        ("DOCSCRAPER_REVISIT_INTERVALS", "soon"), ("DOCSCRAPER_REVISIT_ERROR_BASE", "-5"),
                        ("DOCSCRAPER_REVISIT_GROW", "0.5"), ("DOCSCRAPER_REVISIT_CLOCK_OFFSET", "later")]:
        with pytest.raises(ConfigError, match=name):
            DocscraperConfig.from_settings(Settings({name: value}))


def test_a_page_that_never_changes_settles_at_the_ceiling_and_a_weekly_one_is_found_within_its_interval() -> None:
    """Simulated weeks, one due-only run a day: how often each page is fetched, and how late a change is seen."""
    revisit = policy()
    start = T0
    still = page(page_id="still")
    weekly = page(page_id="weekly")
    checks = {"still": [], "weekly": []}  # type: dict[str, list[int]]
    late: list[float] = []
    last_edit = start
    for day in range(0, 84):
        now = start + timedelta(days=day)
        edited = day % 7 == 0 and day > 0
        if edited:
            last_edit = now - timedelta(hours=1)
        for name in ("still", "weekly"):
            record = still if name == "still" else weekly
            if record.next_check_at is not None and revisit.why_due(record, now, None) is None:
                continue
            checks[name].append(day)
            change = "changed" if name == "weekly" and record.last_changed is not None and last_edit > record.last_changed \
                else ("new" if record.next_check_at is None else "unchanged")
            if name == "weekly" and change == "changed":
                late.append((now - last_edit).total_seconds() / DAY)
            schedule = revisit.after_check(record if record.next_check_at else None, change, now)
            record = replace(record, next_check_at=schedule.next_check_at, check_interval=schedule.interval,
                             unchanged_checks=schedule.unchanged_checks,
                             last_changed=now if change in ("new", "changed") else record.last_changed)
            if name == "still":
                still = record
            else:
                weekly = record
    gaps = [b - a for a, b in zip(checks["still"], checks["still"][1:], strict=False)]
    assert gaps[:3] == [1, 3, 7] and set(gaps[3:]) == {14}
    assert len(checks["still"]) <= 9  # 84 days: not daily
    assert late and max(late) <= 7  # every weekly edit found within a week
    assert len(checks["weekly"]) < 84 / 2


def test_jitter_plans_checks_early_by_a_share_drawn_from_the_page() -> None:
    """Pages checked together fall due apart, never after their interval; the same page and step, the same plan."""
    revisit = policy()
    nexts = [revisit.after_check(None, "new", T0, page=f"url_{n}").next_check_at - T0 for n in range(1000)]
    assert all(timedelta(days=0.9) <= wait <= timedelta(days=1) for wait in nexts)
    hours = {int(wait.total_seconds() // 3600) for wait in nexts}
    assert hours == set(range(21, 24))  # spread over the last 2.4 hours of the day
    assert len(set(nexts)) > 990
    assert revisit.after_check(None, "new", T0, page="url_7") == revisit.after_check(None, "new", T0, page="url_7")
    record = page(next_check_at=T0, check_interval=DAY, unchanged_checks=0)
    stepped = revisit.after_check(record, "unchanged", T0, page="url_7")
    assert stepped.interval == 3 * DAY  # the interval is stored as the policy says; only the plan is early
    assert timedelta(days=2.7) <= stepped.next_check_at - T0 <= timedelta(days=3)
    assert policy(DOCSCRAPER_REVISIT_JITTER=0).after_check(None, "new", T0, page="url_7").next_check_at == T0 + timedelta(days=1)
    with pytest.raises(ConfigError, match="DOCSCRAPER_REVISIT_JITTER"):
        policy(DOCSCRAPER_REVISIT_JITTER="0.9")


def test_with_jitter_pages_crawled_on_one_day_fall_due_over_several_and_still_settle_at_the_ceiling() -> None:
    """A cold crawl's 2,000 pages, one due-only run a day for 120 days, none ever changing: no run checks them
    all again once they reach the ceiling, and no page is checked more often than the policy's steps allow."""
    revisit = policy()
    records = {f"url_{n}": None for n in range(2000)}  # type: dict[str, PageRecord | None]
    per_day: list[int] = []
    gaps: dict[str, list[int]] = {pid: [] for pid in records}
    last: dict[str, int] = {}
    for day in range(120):
        now = T0 + timedelta(days=day)
        checked = 0
        for pid, record in records.items():
            if record is not None and revisit.why_due(record, now, None) is None:
                continue
            checked += 1
            if pid in last:
                gaps[pid].append(day - last[pid])
            last[pid] = day
            schedule = revisit.after_check(record, "unchanged" if record else "new", now, page=pid)
            base = record or page(page_id=pid)
            records[pid] = replace(base, next_check_at=schedule.next_check_at, check_interval=schedule.interval,
                                   unchanged_checks=schedule.unchanged_checks)
        per_day.append(checked)
    assert per_day[0] == 2000
    assert max(per_day[60:]) < 2000 / 2  # the herd has spread: no day checks half of the pages
    assert all(gap >= 1 for pid_gaps in gaps.values() for gap in pid_gaps)
    settled = [gap for pid_gaps in gaps.values() for gap in pid_gaps[3:]]
    assert settled and set(settled) <= {13, 14}  # at the 14-day ceiling, planned up to a tenth early


def test_a_sitemap_whose_urls_all_carry_one_date_gives_no_lastmod() -> None:
    entries = "".join(f"<url><loc>https://h/docs/p{i}.html</loc><lastmod>2026-01-05</lastmod></url>"
                      for i in range(UNIFORM_LASTMOD_MIN))
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()
    walk = SitemapWalk("https://h/docs/", "https://h/docs/", "")
    url = next(iter(walk))
    walk.add(url, parse_sitemap(body, url))
    assert len(walk.pages) == UNIFORM_LASTMOD_MIN and walk.lastmods == {} and walk.uniform_lastmod == [url]
    varied = body.replace(b"<lastmod>2026-01-05</lastmod></url></urlset>", b"<lastmod>2026-01-04</lastmod></url></urlset>")
    walk = SitemapWalk("https://h/docs/", "https://h/docs/", "")
    url = next(iter(walk))
    walk.add(url, parse_sitemap(varied, url))
    assert len(walk.lastmods) == UNIFORM_LASTMOD_MIN and walk.uniform_lastmod == []


def test_lastmod_that_moves_while_pages_do_not_change_is_not_trusted() -> None:
    revisit = policy()
    source = SourceRecord(1, "s", "https://h/", {}, True)
    watch = LastmodWatch(source, revisit, T0)
    known = page(sitemap_lastmod="2026-01-01")
    for _ in range(4):
        watch.checked(known, "2026-01-04", "unchanged")
    assert watch.verdict() is None  # too few to tell
    watch.checked(known, "2026-01-04", "unchanged")
    watch.checked(known, "2026-01-04", "changed")
    assert watch.verdict() is not None and not watch.report()["trusted"]
    # once marked, it is ignored until the ceiling has passed, then tried again
    marked = replace(source, lastmod_untrusted_at=T0, lastmod_note="moved")
    assert not LastmodWatch(marked, revisit, T0 + timedelta(days=13)).trusted
    assert LastmodWatch(marked, revisit, T0 + timedelta(days=15)).trusted
    # a page whose lastmod moved and that did change is the signal working
    honest = LastmodWatch(source, revisit, T0)
    for _ in range(10):
        honest.checked(known, "2026-01-04", "changed")
    assert honest.verdict() is None


# real crawls ------------------------------------------------------------------------------------------


def schedule_rows(result: CrawlResult) -> dict[str, dict[str, Any]]:
    with sqlite3.connect(result.data_dir / "state.db") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT url, status, next_check_at, check_interval, unchanged_checks, failure_count, "
                          "sitemap_lastmod, reindex_requested FROM pages").fetchall()
    return {row["url"].split("/docs/", 1)[-1]: dict(row) for row in rows}


def fetched(site: DocsServer) -> set[str]:
    """The pages the site served this test (a page fetched through its Markdown twin, ``page.html.md``, is the
    page)."""
    return {path.split("?")[0].removesuffix(".md") for _, path, _ in site.requests if path.startswith("/docs/")
            and not path.endswith((".txt", ".xml"))}


def when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=UTC) if "+" not in value \
        else datetime.fromisoformat(value)


def bump_lastmod(site: DocsServer, sitemap: str, path: str, lastmod: str) -> None:
    file = site.root / "sitemaps" / sitemap
    text = file.read_text()
    loc = f"<loc>__BASE__/docs/{path}</loc>"
    start = text.index(loc)
    head, tail = text[:start], text[start:]
    old = tail[tail.index("<lastmod>"):tail.index("</lastmod>") + len("</lastmod>")]
    file.write_text(head + tail.replace(old, f"<lastmod>{lastmod}</lastmod>", 1))


@pytest.mark.crawl
def test_a_due_run_fetches_new_lastmod_moved_and_due_pages_only(site: DocsServer, crawl: Crawl) -> None:
    source = f"{site.base_url}/docs/"
    first = crawl(source, check=False)
    assert first.report["result"] in ("success", "partial"), first.stderr[-3000:]
    rows = schedule_rows(first)
    active = {path: row for path, row in rows.items() if row["status"] == "active"}
    assert len(active) > 20
    for row in active.values():
        assert row["check_interval"] == DAY and row["unchanged_checks"] == 0 and row["next_check_at"]
    assert active["guide/concepts.html"]["sitemap_lastmod"] == "2025-02-03"
    assert first.report["schedule"]["scheduled"] >= len(active) and first.report["schedule"]["dueNow"] <= 2
    entry = first.report["items"]["guide/concepts.html"]
    # a day, planned up to DOCSCRAPER_REVISIT_JITTER (0.1) early
    assert timedelta(days=0.9) <= when(entry["nextCheck"]) - when(entry["fetchedAt"]) <= timedelta(days=1, minutes=5)

    # a page edited with its lastmod moved, a new page in the sitemap, a page deleted from the site
    concepts = site.root / "docs" / "guide" / "concepts.html"
    concepts.write_text(concepts.read_text().replace("</h1>", "</h1><p>Concepts, revised this week.</p>", 1))
    twin = concepts.with_name("concepts.html.md")  # llms.txt lists the page's Markdown twin: it is what is fetched
    twin.write_text(twin.read_text() + "\nConcepts, revised this week.\n")
    bump_lastmod(site, "guides.xml", "guide/concepts.html", "2026-11-20")
    (site.root / "docs" / "guide" / "brand-new.html").write_text(
        "<!doctype html><html><head><title>Brand new</title></head><body><main><h1>Brand new</h1>"
        "<p>A page added since the last crawl, listed in the sitemap only.</p></main></body></html>")
    pages_xml = site.root / "sitemaps" / "pages.xml"
    pages_xml.write_text(pages_xml.read_text().replace(
        "</urlset>", "<url><loc>__BASE__/docs/guide/brand-new.html</loc><lastmod>2026-11-21</lastmod></url></urlset>"))
    (site.root / "docs" / "glossary.html").unlink()
    site.reset_requests()
    due = crawl(source, "due=1", check=False)
    report = due.report
    assert report["due"] is True and report["closeReason"] == "finished", due.stderr[-3000:]
    # of the pages the state holds, only the one whose lastmod moved (and the failed ones, backed off for 10
    # minutes, are not due yet either); URLs that stand for no stored page (redirects, broken links) are new
    stored = {f"/docs/{path}" for path, row in rows.items() if row["status"] in ("active", "failed")}
    assert fetched(site) & stored == {"/docs/guide/concepts.html"}, fetched(site) & stored
    assert "/docs/guide/brand-new.html" in fetched(site)
    assert report["items"]["guide/concepts.html"]["statusReason"] == "changed"
    assert report["items"]["guide/concepts.html"]["revisit"] == "lastmod"
    assert report["items"]["guide/brand-new.html"]["statusReason"] == "new"
    # the deleted page was not due: not checked, not removed
    assert report["items"]["glossary.html"]["statusReason"] == "notDue"
    assert report["stats"]["success.removed"] == 0
    not_due = {k for k, e in report["items"].items() if e["statusReason"] == "notDue"}
    # the others: llms-full.txt sections (items without a request), the page that changed, and pages reached
    # under another address of theirs (index.html for a folder's page), which no stored row names
    assert report["schedule"]["notDue"] == len(not_due) >= len(active) - 8
    assert report["schedule"]["nextNotDue"] is not None
    assert schedule_rows(due)["glossary.html"]["status"] == "active"

    # two days later every page is due: checked, found unchanged (or gone), and moved one step on
    site.reset_requests()
    later = crawl(source, "due=1", settings={"DOCSCRAPER_REVISIT_CLOCK_OFFSET": str(2 * DAY)}, check=False)
    assert later.report["schedule"]["notDue"] <= 2  # concepts and brand-new were checked a day later
    assert len(fetched(site)) > 20
    rows = schedule_rows(later)
    assert rows["changelog.html"]["unchanged_checks"] == 1 and rows["changelog.html"]["check_interval"] == 3 * DAY
    assert rows["glossary.html"]["failure_count"] == 1  # a 404 now, after one run: not removed yet


@pytest.mark.crawl
def test_a_plain_recrawl_still_checks_everything(site: DocsServer, crawl: Crawl) -> None:
    source = f"{site.base_url}/docs/"
    crawl(source, check=False)
    site.reset_requests()
    again = crawl(source, check=False)
    assert len(fetched(site)) > 20
    assert again.report["schedule"]["notDue"] == 0 and again.report["due"] is False
    assert schedule_rows(again)["changelog.html"]["unchanged_checks"] == 1


@pytest.mark.crawl
def test_an_error_backs_off_and_retry_after_wins(site: DocsServer, crawl: Crawl) -> None:
    routes = json.loads((site.root / "_routes.json").read_text())
    routes["/docs/changelog.html"] = {"status": 503, "headers": {"Retry-After": "7200"}}
    (site.root / "_routes.json").write_text(json.dumps(routes))
    result = crawl(f"{site.base_url}/docs/", check=False, settings={"RETRY_ENABLED": "0",
                                                                     "DOCSCRAPER_RATELIMIT_ENABLED": "0"})
    rows = schedule_rows(result)
    entry = result.report["items"]["changelog.html"]
    assert entry["status"] == "failed"
    wait = when(entry["nextCheck"]) - when(entry["fetchedAt"])
    assert timedelta(hours=2) - timedelta(minutes=1) <= wait <= timedelta(hours=2, minutes=5)
    assert rows["changelog.html"]["next_check_at"] is not None
    flaky = result.report["items"]["flaky.html"]  # a 500 without Retry-After: the 10-minute base
    assert when(flaky["nextCheck"]) - when(flaky["fetchedAt"]) == pytest.approx(timedelta(minutes=10),
                                                                                abs=timedelta(minutes=1))


@pytest.mark.crawl
def test_a_reindex_makes_a_page_due_at_once(site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    source = f"{site.base_url}/docs/"
    first = crawl(source, check=False)
    name = first.report["source"]
    command("reindex", name, "changelog.html")
    assert schedule_rows(first)["changelog.html"]["next_check_at"] is None
    site.reset_requests()
    due = crawl(source, "due=1", check=False)
    assert "/docs/changelog.html" in fetched(site)
    assert due.report["items"]["changelog.html"]["revisit"] == "reindex"
    assert schedule_rows(due)["changelog.html"]["next_check_at"] is not None


@pytest.mark.crawl
def test_a_source_whose_lastmod_moves_without_changes_is_marked_and_its_lastmod_ignored(
        site: DocsServer, crawl: Crawl) -> None:
    source = f"{site.base_url}/docs/"
    crawl(source, check=False)
    guides = ["guide/concepts.html", "guide/routing.html", "guide/filters.html", "guide/transforms.html",
              "guide/"]
    for path in guides:
        bump_lastmod(site, "guides.xml", path, "2026-11-20")
    site.reset_requests()
    moved = crawl(source, "due=1", check=False)
    assert {f"/docs/{p}" for p in guides} <= fetched(site)
    lastmod = moved.report["schedule"]["lastmod"]
    assert lastmod["trusted"] is False and lastmod["movedUnchanged"] >= 5 and lastmod["notes"]
    with sqlite3.connect(moved.data_dir / "state.db") as db:
        assert db.execute("SELECT lastmod_untrusted_at FROM sources").fetchone()[0] is not None
    for path in guides:
        bump_lastmod(site, "guides.xml", path, "2026-11-22")
    site.reset_requests()
    ignored = crawl(source, "due=1", check=False)
    assert not fetched(site) & {f"/docs/{p}" for p in guides}
    assert ignored.report["schedule"]["lastmod"]["trusted"] is False


def test_due_and_full_together_are_refused(crawl: Crawl, tmp_path: Path) -> None:
    result = crawl("https://docs.example.invalid/", "due=1", "full=1", check=False)
    assert result.returncode != 0
    assert "full=1" in result.stderr and "due=1" in result.stderr


@pytest.mark.crawl
def test_sources_show_and_status_say_what_is_due(site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    first = crawl(f"{site.base_url}/docs/", check=False)
    name = first.report["source"]
    shown = command("sources", "show", name)
    line = next(line for line in shown.stdout.splitlines() if line.startswith("schedule"))
    assert " pages due now; next due " in line
    info = json.loads(command("sources", "show", name, "--json").stdout)
    assert info["schedule"]["scheduled"] == first.report["schedule"]["scheduled"]
    # two days on, by the schedule's clock, every page is due
    later = json.loads(command("status", name, "--json",
                               settings={"DOCSCRAPER_REVISIT_CLOCK_OFFSET": str(2 * DAY)}).stdout)
    assert later[-1]["schedule"]["due_now"] == later[-1]["schedule"]["scheduled"] > 20
    status = command("status", name).stdout
    assert "schedule " in status and "pages due now" in status


def test_the_loader_and_the_launcher_pass_due_on() -> None:
    from docscraper import CrawlerConfig
    from docscraper.ops.launch import crawl_arguments
    from docscraper.ops.sources import SourceArgumentError

    assert CrawlerConfig(due=True).spider_args() == {"due": "1"}
    assert "due" not in CrawlerConfig().spider_args()
    with pytest.raises(ConfigError, match="due must be True or False"):
        CrawlerConfig(due="yes")  # type: ignore[arg-type]
    assert crawl_arguments("acme", due=True) == {"source": "acme", "due": "1"}
    with pytest.raises(SourceArgumentError, match="due=1"):
        crawl_arguments("acme", full=True, due=True)
