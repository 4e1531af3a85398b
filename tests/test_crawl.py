"""Whole crawls of the fixture site (tests/site, see its README for the expected counts)."""

from __future__ import annotations

import json
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from docscraper.crawl.report import load_schema, summarize
from tests.conftest import Crawl, CrawlResult, crawl_until
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl

ALLOWED_PAGES = 35
ARCHIVE_PAGES = 4


def assert_valid(result: CrawlResult) -> dict:
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["stats"] == summarize(report["items"])
    run_report = result.data_dir / "runs" / report["source"] / f"{report['runId']}.json"
    assert json.loads(run_report.read_text()) == report
    return report


def pages_table(result: CrawlResult) -> dict[str, tuple]:
    db = sqlite3.connect(result.data_dir / "state.db")
    rows = db.execute("SELECT rel_path, status, content_hash, finder, last_changed FROM pages").fetchall()
    db.close()
    return {row[0]: row[1:] for row in rows}


def test_first_crawl_indexes_every_allowed_page_once(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/")
    report = assert_valid(result)
    stats = report["stats"]
    assert stats["success.new"] == ALLOWED_PAGES
    assert stats["success.changed"] == stats["success.unchanged"] == stats["success.removed"] == 0
    assert report["result"] == "partial"  # the 404 and 500 routes
    assert result.keys("failed") == {"flaky.html"}
    # a link to a page that never existed is the site's broken link, with the pages that link to it
    assert result.keys("skipped", "brokenLink") == {"missing-page.html"}
    broken = report["items"]["missing-page.html"]
    assert broken["httpStatus"] == 404 and broken["linkedFrom"] == [f"{shared_site.base_url}/docs/faq.html"]
    assert result.keys("skipped", "gone") == {"retired.html"}  # a 410 never indexed: no failure
    assert result.keys("skipped", "robots") == {"private/secret.html"}
    assert result.keys("skipped", "redirectDuplicate") == {"old-install.html"}
    assert result.keys("skipped", "redirectOutOfScope") == {"moved-away.html"}
    assert result.keys("skipped", "nonText") == {"_static/diagram.png"}
    assert {
        "getting-started/install.html?utm_source=newsletter",
        "getting-started/index.html",
        "guide/advanced/index.html",
    } <= result.keys("skipped", "duplicate")
    out = result.keys("skipped", "outOfScope")
    assert f"{shared_site.base_url}/blog" in out and "https://example.com/" in out
    # who found each page first: llms-full > llms > sitemap > link (tests/site/README.md)
    finders = Counter(e["finder"] for e in report["items"].values() if e["status"] == "success")
    assert finders == {"llms-full": 4, "llms": 7, "sitemap": 20, "link": 4}
    # llms.txt lists concepts.html.md: fetched for its Markdown, recorded (and searched) as concepts.html
    assert report["items"]["guide/concepts.html"]["finder"] == "llms"
    assert "guide/concepts.html.md" not in report["items"]
    concepts = Counter(path for method, path, _ in shared_site.requests if path.startswith("/docs/guide/concepts."))
    assert concepts == {"/docs/guide/concepts.html.md": 1}
    depths = {k: e["depth"] for k, e in report["items"].items() if e["status"] == "success"}
    assert depths["./"] == 0
    assert depths["guide/troubleshooting.html"] == 2  # faq.html (llms, depth 1) links it
    assert depths["guide/advanced/plugins.html"] == 3
    # nothing robots.txt forbids was requested, and no page was fetched twice
    assert shared_site.hits("/docs/private/") == 0
    page_gets = Counter(path.split("?")[0] for method, path, _ in shared_site.requests
                        if method == "GET" and ".html" in path)
    assert page_gets.pop("/docs/flaky.html") == 3  # a 500 is retried twice, by design
    assert max(page_gets.values()) == 1, page_gets.most_common(3)
    # llms-full sections were not fetched again
    assert shared_site.hits("/docs/faq.html") == 0 and shared_site.hits("/docs/reference/cli.html") == 0
    table = pages_table(result)
    assert sum(1 for status, *_ in table.values() if status == "active") == ALLOWED_PAGES
    assert report["discovery"]["llms-full"]["mapped"] == 4


def test_second_crawl_is_all_unchanged_and_rewrites_nothing(shared_site: DocsServer, crawl: Crawl) -> None:
    first = crawl(f"{shared_site.base_url}/docs/")
    before = pages_table(first)
    requests_before = len(shared_site.requests)
    second = crawl(f"{shared_site.base_url}/docs/")
    report = assert_valid(second)
    stats = report["stats"]
    assert stats["success.unchanged"] == ALLOWED_PAGES
    assert stats["success.new"] == stats["success.changed"] == stats["success.removed"] == 0
    # the same refusals, for the same reasons, as the first run
    assert {k: second.report["items"][k]["statusReason"] for k in second.keys("skipped")} == {
        k: first.report["items"][k]["statusReason"] for k in first.keys("skipped")}
    after = pages_table(second)
    # content hashes and last-changed times are untouched
    assert {k: (v[1], v[3]) for k, v in after.items()} == {k: (v[1], v[3]) for k, v in before.items()}
    # the server sends validators, so pages come back 304 without a body
    second_requests = shared_site.requests[requests_before:]
    page_requests = [(p, {k.lower() for k in h}) for m, p, h in second_requests
                     if p.startswith("/docs/") and not p.endswith((".txt", ".xml", ".gz"))]
    conditional = [p for p, headers in page_requests if "if-none-match" in headers]
    # every page fetched is asked for conditionally (llms-full pages are not fetched at all)
    assert len(conditional) == ALLOWED_PAGES - 4
    assert report["counters"]["not_modified"] == ALLOWED_PAGES - 4


def test_edit_one_page_and_delete_one(site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{site.base_url}/docs/")
    root = site.root
    glossary = root / "docs" / "glossary.html"
    glossary.write_text(glossary.read_text().replace("</article>", "<p>A new glossary entry: quorum.</p></article>"))
    # Delete a page and every line that refers to it, as a site generator would. Pages whose main
    # content linked to it change too; navigation is not content.
    victim = "guide/transforms.html"
    (root / "docs" / victim).unlink()
    content_links = set()
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".xml", ".txt", ".md"):
            text = path.read_text()
            if "transforms.html" in text:
                article = text.partition("<article")[2].partition("</article>")[0]
                if "transforms.html" in article and path.suffix == ".html":
                    content_links.add(path.relative_to(root / "docs").as_posix())
                lines = [line for line in text.splitlines(keepends=True) if "transforms.html" not in line]
                path.write_text("".join(lines))
    assert content_links, "the victim should be linked from some page's content"
    content_links = {p.removesuffix("index.html").rstrip("/") or "./" for p in content_links}
    result = crawl(f"{site.base_url}/docs/")
    report = assert_valid(result)
    assert result.keys("success", "changed") == {"glossary.html"} | content_links
    assert result.keys("success", "removed") == {victim}
    assert report["stats"]["success.unchanged"] == ALLOWED_PAGES - 1 - len(result.keys("success", "changed"))
    assert report["removal"]["performed"] is True and report["removal"]["removed"] == 1
    assert pages_table(result)[victim][0] == "removed"


def test_block_glob_and_narrowed_scope_never_removes(shared_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{shared_site.base_url}/docs/")
    result = crawl(f"{shared_site.base_url}/docs/", "block=archive/**")
    report = assert_valid(result)
    assert report["stats"]["success.unchanged"] == ALLOWED_PAGES - ARCHIVE_PAGES
    assert report["stats"]["success.removed"] == 0
    assert report["removal"]["performed"] is False and "narrowed" in report["removal"]["reason"]
    blocked = {k for k, e in report["items"].items() if e.get("detail") == "blocked by pattern archive/**"}
    assert blocked == {"archive", "archive/v1", "archive/v1/install.html", "archive/v1/upgrade.html"}
    assert all(status == "active" for status, *_ in pages_table(result).values() if status != "failed")


def test_max_pages_cuts_the_frontier_and_blocks_removal(shared_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{shared_site.base_url}/docs/")
    result = crawl(f"{shared_site.base_url}/docs/", "max_pages=5")
    report = assert_valid(result)
    processed = report["stats"]["success"]
    assert processed == 5
    assert report["frontierCut"] == "max_pages 5 reached"
    assert report["stats"]["skipped.maxPages"] > 0
    assert report["removal"]["performed"] is False


def test_max_depth_zero_crawls_the_seed_only(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", "max_depth=0")
    assert_valid(result)
    assert result.keys("success") == {"./"}
    # llms.txt and sitemap pages are depth 1: refused, with the reason
    assert result.keys("skipped", "depth") >= {"faq.html", "changelog.html", "reference/api/server.html"}


def test_a_seed_that_answers_404_is_a_failure_not_a_broken_link(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/missing-page.html", "max_depth=0")
    report = assert_valid(result)
    (key,) = result.keys("failed", "httpError")
    assert key.endswith("missing-page.html") and report["items"][key]["httpStatus"] == 404
    assert not result.keys("skipped", "brokenLink") and report["result"] == "partial"


def test_full_recrawl_processes_every_page(shared_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{shared_site.base_url}/docs/")
    result = crawl(f"{shared_site.base_url}/docs/", "full=1")
    report = assert_valid(result)
    forced = [e for e in report["items"].values() if e.get("forced")]
    assert len(forced) == ALLOWED_PAGES
    assert report["stats"]["success.unchanged"] == ALLOWED_PAGES


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("max_pages=zero", "max_pages must be a whole number"),
        ("block=https://h/x", "patterns match URL paths"),
        ("colour=blue", "unknown argument(s) colour"),
    ],
)
def test_bad_arguments_fail_before_anything_is_fetched(shared_site: DocsServer, crawl: Crawl, arg: str,
                                                      message: str) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", arg, check=False)
    assert result.returncode == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and message in error_lines[0]
    assert "Traceback" not in result.stderr
    assert shared_site.requests == []
    assert not (result.data_dir / "state.db").exists()


def test_feed_export_has_url_title_markdown_metadata(shared_site: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    out = tmp_path / "pages.jsonl"
    crawl(f"{shared_site.base_url}/docs/", extra=["-O", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == ALLOWED_PAGES
    assert all(set(row) == {"url", "title", "markdown", "metadata"} for row in rows)
    cli = next(row for row in rows if row["url"].endswith("/reference/cli.html"))
    assert cli["metadata"]["finder"] == "llms-full" and cli["metadata"]["change"] == "new"
    tuning = next(row for row in rows if row["url"].endswith("/guide/advanced/tuning.html"))
    assert "18,000 events per second" in tuning["markdown"]
    assert "Edit this page" not in tuning["markdown"]
    # an unchanged second run exports nothing: feeds see what went through the pipelines
    crawl(f"{shared_site.base_url}/docs/", extra=["-O", str(out)])
    assert out.read_text().strip() == ""


def test_sigterm_mid_crawl_is_aborted_and_removes_nothing(site: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    crawl(f"{site.base_url}/docs/")
    # make every page slow, so the second crawl is surely under way when it is stopped
    routes_path = site.root / "_routes.json"
    routes = json.loads(routes_path.read_text())
    for page in ("guide/delivery.html", "guide/security.html", "reference/api/events.html"):
        # (bodies of their own: pages with one body would be one page, the others its aliases)
        routes[f"/docs/{page}"] = {"status": 200, "body": f"<html><body><main><p>slow {page}</p></main></body></html>",
                                   "delay": 8}
    routes_path.write_text(json.dumps(routes))
    proc = crawl_until(site, tmp_path / "data", "/docs/guide/delivery.html", hits=2)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    report = json.loads(next((tmp_path / "data" / "runs").glob("*/crawl-metadata.json")).read_text())
    jsonschema.validate(report, load_schema())
    assert report["result"] == "aborted" and report["closeReason"] == "shutdown", stderr[-2000:]
    assert report["stats"]["success.removed"] == 0
    assert report["removal"]["performed"] is False
    db = sqlite3.connect(tmp_path / "data" / "state.db")
    statuses = Counter(status for (status,) in db.execute("SELECT status FROM pages"))
    db.close()
    assert statuses["active"] == ALLOWED_PAGES and statuses["removed"] == 0


def test_410_retires_at_once_404_after_two_runs_5xx_never(site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{site.base_url}/docs/")
    routes_path = site.root / "_routes.json"
    routes = json.loads(routes_path.read_text())
    routes["/docs/guide/security.html"] = {"status": 410, "body": "gone"}
    routes["/docs/reference/api/events.html"] = {"status": 503, "body": "down"}
    routes_path.write_text(json.dumps(routes))
    (site.root / "docs" / "glossary.html").unlink()  # still linked and listed: answers 404
    second = crawl(f"{site.base_url}/docs/")
    assert_valid(second)
    assert second.keys("success", "removed") == {"guide/security.html"}
    assert {"glossary.html", "reference/api/events.html"} <= second.keys("failed", "httpError")
    assert second.report["result"] == "partial"
    third = crawl(f"{site.base_url}/docs/")
    assert third.keys("success", "removed") == {"glossary.html"}
    # still linked and still 410, but retired already: skipped as gone, not a failure of every later run
    assert "guide/security.html" in third.keys("skipped", "gone")
    assert "guide/security.html" not in third.keys("failed")
    fourth = crawl(f"{site.base_url}/docs/")
    assert "reference/api/events.html" in fourth.keys("failed")
    table = pages_table(fourth)
    assert table["reference/api/events.html"][0] == "active"  # a 5xx never removes
    assert table["glossary.html"][0] == "removed" and table["guide/security.html"][0] == "removed"


def test_mass_removal_is_refused_unless_forced(site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{site.base_url}/docs/")
    # the site loses its discovery files and the home page its links: almost nothing is reachable
    for name in ("docs/llms.txt", "docs/llms-full.txt", "sitemap_index.xml"):
        (site.root / name).unlink()
    (site.root / "docs" / "index.html").write_text("<html><body><main><h1>Acme Relay</h1><p>Moved.</p></main></body></html>")
    refused = crawl(f"{site.base_url}/docs/")
    report = assert_valid(refused)
    assert report["removal"]["refusedByCap"] is True and report["stats"]["success.removed"] == 0
    assert "DOCSCRAPER_FORCE_DELETE" in report["removal"]["reason"]
    assert sum(1 for status, *_ in pages_table(refused).values() if status == "active") == ALLOWED_PAGES
    forced = crawl(f"{site.base_url}/docs/", settings={"DOCSCRAPER_FORCE_DELETE": "1"})
    assert forced.report["stats"]["success.removed"] == ALLOWED_PAGES - 1


def test_unmappable_llms_full_degrades_to_crawling(site: DocsServer, crawl: Crawl) -> None:
    full = site.root / "docs" / "llms-full.txt"
    text = "\n".join(line for line in full.read_text().splitlines() if not line.startswith("Source:"))
    full.write_text(text.replace("# ", "# Untitled ", 1))
    result = crawl(f"{site.base_url}/docs/")
    report = assert_valid(result)
    info = report["discovery"]["llms-full"]
    assert info["mapped"] < 4 and info["problem"]
    # the pages the file could not stand for are fetched and indexed once, from their HTML
    assert report["stats"]["success.new"] == ALLOWED_PAGES
    from_file = {k for k, e in report["items"].items() if e.get("finder") == "llms-full" and e["status"] == "success"}
    assert len(from_file) == info["mapped"]
    for page in ("getting-started/quickstart.html", "getting-started/configuration.html", "faq.html",
                 "reference/cli.html"):
        assert site.hits(f"/docs/{page}") == (0 if page in from_file else 1), page


def test_llms_txt_argument_when_auto_detection_cannot_find_it(site: DocsServer, crawl: Crawl) -> None:
    (site.root / "docs" / "llms.txt").rename(site.root / "llms-index.txt")
    plain = crawl(f"{site.base_url}/docs/")
    assert plain.report["discovery"]["llms"]["url"] is None
    given = crawl(f"{site.base_url}/docs/", f"llms_txt={site.base_url}/llms-index.txt")
    report = assert_valid(given)
    assert report["discovery"]["llms"]["links"] == 11
    assert report["discovery"]["llms"]["url"] == f"{site.base_url}/llms-index.txt"


def test_discovery_files_behind_redirects_are_followed(site: DocsServer, crawl: Crawl) -> None:
    # Hosts such as Read the Docs answer /llms.txt and /sitemap.xml with a redirect to the versioned file.
    (site.root / "docs" / "llms.txt").rename(site.root / "docs" / "llms-v2.txt")
    (site.root / "_routes.json").write_text(json.dumps(
        {"/docs/llms.txt": {"status": 301, "location": "__BASE__/docs/llms-v2.txt"}}))
    result = crawl(f"{site.base_url}/docs/")
    report = assert_valid(result)
    assert report["discovery"]["llms"] == {"url": f"{site.base_url}/docs/llms-v2.txt", "links": 11}
    finders = Counter(e["finder"] for e in report["items"].values() if e["status"] == "success")
    assert finders == {"llms-full": 4, "llms": 7, "sitemap": 20, "link": 4}


def test_pages_over_the_size_cap_are_skipped_and_kept(shared_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{shared_site.base_url}/docs/", "full=1")
    # full=1 sends no validators, so every page is downloaded again, against a 5,000-byte cap
    capped = crawl(f"{shared_site.base_url}/docs/", "full=1", settings={"DOWNLOAD_MAXSIZE": "5000"})
    report = assert_valid(capped)
    oversized = capped.keys("skipped", "sizeLimit")
    assert "./" in oversized and "changelog.html" in oversized  # 5,160 and 5,047 bytes
    assert all("max size" in report["items"][k]["detail"] for k in oversized)
    assert not capped.keys("failed") & oversized
    # what was indexed before stays indexed: a page over the cap is not a removed page
    assert report["stats"]["success.removed"] == 0
    table = pages_table(capped)
    assert table["./"][0] == "active" and table["changelog.html"][0] == "active"


def test_a_crawl_that_does_not_render_never_imports_playwright(site: DocsServer, tmp_path: Path) -> None:
    """Python's own import log (PYTHONPROFILEIMPORTTIME) of a whole crawl names no Playwright module; only a run
    that renders loads scrapy-playwright, and Playwright with it."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1", PYTHONWARNINGS="",
               PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={site.url('/docs/')}",
                           "-a", "max_pages=3", "-s", "DOCSCRAPER_INDEX_ENABLED=0"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "scrapy" in imported and "docscraper.crawl.rendering" in imported  # the log is there
    assert not [name for name in imported if "playwright" in name], "a crawl that renders nothing imported Playwright"
