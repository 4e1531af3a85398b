"""A page over the extraction size limit (``MAX_HTML_CHARS``: a single-page edition of a whole site) is indexed
from its beginning and reported as cut, never as a silent success: ``Extracted.truncated``, the report entry's
``detail`` and the ``truncated_pages`` counter. Unit tests of the extractor, then crawls of a small site."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from docscraper._resources import read_text
from docscraper.content.extraction import MAX_HTML_CHARS, extract_html
from docscraper.crawl.ledger import summarize
from tests.conftest import Crawl
from tests.mockserver import DocsServer

SCHEMA = json.loads(read_text("docscraper", "schema", "stats-report.schema.json"))

_SECTION = "<h2>Section {n}</h2><p>Paragraph {n} of the long edition, about topic {n} and nothing else.</p>\n"


def _edition(chars: int) -> str:
    """An HTML page of at least *chars* characters: numbered sections, the last one ``The last section``."""
    head = "<!doctype html><html><head><title>Edition</title></head><body><main><h1>Edition</h1>\n"
    parts, size, n = [head], len(head), 0
    while size < chars:
        section = _SECTION.format(n=n)
        parts.append(section)
        size += len(section)
        n += 1
    parts.append("<h2>The last section</h2><p>Only a whole page has this.</p></main></body></html>")
    return "".join(parts)


def test_a_page_under_the_limit_is_whole() -> None:
    result = extract_html(_edition(10_000), "https://e.com/")
    assert result.truncated is None
    assert "The last section" in result.markdown


def test_a_page_over_the_limit_says_what_was_cut() -> None:
    html = _edition(MAX_HTML_CHARS + 200_000)
    result = extract_html(html, "https://e.com/")
    assert result.truncated == (f"truncated: the page's {len(html):,} characters were cut to the first "
                                f"{MAX_HTML_CHARS:,}")
    # its beginning is extracted, its end is not
    assert "## Section 0\n" in result.markdown
    assert "The last section" not in result.markdown


def test_bytes_over_the_read_limit_are_reported_in_bytes() -> None:
    # bytes are read up to four bytes a character before decoding: the report counts what was sent
    html = _edition(4 * MAX_HTML_CHARS + 1_000).encode()
    result = extract_html(html, "https://e.com/", encoding="utf-8")
    assert result.truncated is not None
    assert result.truncated.startswith(f"truncated: the page's {len(html):,} bytes were cut")
    assert "## Section 1\n" in result.markdown


@pytest.fixture
def edition_site(tmp_path: Path) -> Iterator[DocsServer]:
    docs = tmp_path / "site" / "docs"
    docs.mkdir(parents=True)
    (docs / "index.html").write_text(
        '<html><head><title>Home</title></head><body><main><h1>Home</h1><p>The manual\'s front page.</p>'
        '<a href="chapter.html">Chapter</a> <a href="all.html">The whole manual on one page</a></main></body></html>')
    (docs / "chapter.html").write_text(
        "<html><head><title>Chapter</title></head><body><main><h1>Chapter</h1><p>One chapter.</p></main></body></html>")
    (docs / "all.html").write_text(_edition(MAX_HTML_CHARS + 100_000))
    server = DocsServer(tmp_path / "site")
    with server.start():
        yield server


@pytest.mark.crawl
def test_a_crawl_reports_the_cut_page_and_counts_it(edition_site: DocsServer, crawl: Crawl, tmp_path: Path) -> None:
    size = (edition_site.root / "docs" / "all.html").stat().st_size
    expected = f"truncated: the page's {size:,} characters were cut to the first {MAX_HTML_CHARS:,}"
    mirror = tmp_path / "mirror"
    first = crawl(f"{edition_site.base_url}/docs/", f"save_dir={mirror}")
    report = first.report
    jsonschema.validate(report, SCHEMA)
    assert report["stats"] == summarize(report["items"])
    entry = report["items"]["all.html"]
    assert (entry["status"], entry["statusReason"], entry["detail"]) == ("success", "new", expected)
    assert "detail" not in report["items"]["chapter.html"]
    assert report["counters"]["truncated_pages"] == 1
    assert "all.html: " + expected in first.stderr
    # its Markdown, as stored, is the page's beginning
    stored = mirror.rglob("*.md")
    edition = next(path for path in stored if "Paragraph 0 of the long edition" in path.read_text())
    assert "The last section" not in edition.read_text()

    # the next run revalidates it (304): nothing is extracted, so nothing is cut this run
    again = crawl(f"{edition_site.base_url}/docs/")
    entry = again.report["items"]["all.html"]
    assert (entry["statusReason"], entry["httpStatus"], entry.get("detail")) == ("unchanged", 304, None)
    assert "truncated_pages" not in again.report["counters"]
    # a full recrawl extracts it again: unchanged, and cut again
    full = crawl(f"{edition_site.base_url}/docs/", "full=1")
    entry = full.report["items"]["all.html"]
    assert (entry["status"], entry["statusReason"], entry["detail"]) == ("success", "unchanged", expected)
    assert full.report["counters"]["truncated_pages"] == 1
