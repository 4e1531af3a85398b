"""docscraper as a library: WebCrawlerLoader and CrawlerConfig against the fixture site on loopback, each crawl a
real ``scrapy crawl docs`` child process streaming its pages back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import docscraper
from docscraper import CombinedLoader, CrawlerConfig, CrawlError, Document, RemovedPage, WebCrawlerLoader
from docscraper.config import ConfigError
from tests.conftest import ROOT
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl

ALL_PAGES = 35  # the pages of /docs/ the crawl indexes, the PDF among them (tests/test_index.py)


def test_import_is_light() -> None:
    code = ("import sys, docscraper; assert docscraper.__all__; "
            "print(sorted(m for m in ('scrapy', 'torch', 'chromadb', 'twisted') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert set(docscraper.__all__) <= set(dir(docscraper))


def test_config_is_checked_when_made(tmp_path: Path) -> None:
    config = CrawlerConfig(max_depth=2, follow="guide/**,reference/**", exclude=["**/old/**"], delay=0.5,
                           data_dir=tmp_path)
    assert config.follow == ("guide/**", "reference/**") and config.exclude == ("**/old/**",)
    assert config.spider_args() == {"max_depth": "2", "allow": "guide/**,reference/**", "block": "**/old/**"}
    assert config.settings()["DOWNLOAD_DELAY"] == "0.5" and config.settings()["ROBOTSTXT_OBEY"] == "1"
    for bad in ({"max_depth": -1}, {"max_pages": 0}, {"follow": "https://x.example/guide/**"}, {"render": "yes"},
                {"timeout": 0}, {"respect_robots_txt": "no"}):
        with pytest.raises(ConfigError):
            CrawlerConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown crawler option"):
        WebCrawlerLoader("https://docs.example.com/", max_deph=3)
    with pytest.raises(ValueError, match="incremental"):
        WebCrawlerLoader("acme")


def test_documents_arrive_while_the_crawl_runs(site: DocsServer, tmp_path: Path) -> None:
    # The glossary is held unanswered until the test has a document: the crawl cannot finish before.
    site.hold("/docs/glossary.html")
    loader = WebCrawlerLoader(f"{site.base_url}/docs/", data_dir=tmp_path / "data", metadata={"team": "docs"})
    documents: list[Document] = []
    for document in loader.lazy_load():
        assert isinstance(document, Document)
        if not documents:
            site.release("/docs/glossary.html")
        documents.append(document)
    assert not documents[0].url.endswith("/glossary.html")
    assert any(d.url.endswith("/docs/glossary.html") for d in documents)
    assert len(documents) == len({d.page_id for d in documents}) == ALL_PAGES
    report = loader.last_report
    assert report is not None and report["closeReason"] == "finished" and report["stats"]["success.new"] == ALL_PAGES
    first = documents[0].metadata
    assert first["team"] == "docs" and first["change"] == "new" and first["page_id"].startswith("url_")
    assert len(first["content_hash"]) == 64 and first["finder"] in ("llms-full", "llms", "sitemap", "link")
    assert isinstance(first["depth"], int) and first["fetched_at"].endswith("Z") and first["chunk_ids"] == []
    with_images = [d for d in documents if d.metadata["images"]]
    assert with_images and {"url", "alt", "caption", "title"} <= set(with_images[0].metadata["images"][0])
    # a non-incremental loader builds no index and keeps no state in its data directory
    assert not (tmp_path / "data" / "chroma").exists() and not (tmp_path / "data" / "state.db").exists()


def test_break_stops_the_crawl_and_another_loader_runs(site: DocsServer, tmp_path: Path) -> None:
    # Held: the crawl cannot finish before the glossary's request times out three times (3 x 5 s).
    site.hold("/docs/glossary.html")
    data_dir = tmp_path / "data"
    loader = WebCrawlerLoader(f"{site.base_url}/docs/", CrawlerConfig(timeout=5, data_dir=data_dir))
    seen = 0
    try:
        for _ in loader.lazy_load():
            seen += 1
            if site.hits("/docs/glossary.html"):
                # answered now, so that the crawl's graceful stop does not wait for the request to time out
                site.release("/docs/glossary.html")
                break
    finally:
        site.release("/docs/glossary.html")
    assert loader.last_report is None
    [path] = data_dir.glob("runs/*/crawl-metadata.json")
    report = json.loads(path.read_text())
    # stopped as Ctrl-C stops a crawl, or by its stream closing: either way a clean close that removes nothing
    assert report["closeReason"] in ("shutdown", "stream_closed") and report["result"] == "aborted"
    assert report["removal"]["performed"] is False
    assert seen < ALL_PAGES
    # a second loader in the same process, and two combined
    docs = WebCrawlerLoader(f"{site.base_url}/docs/", max_pages=2).load()
    blog = WebCrawlerLoader(f"{site.base_url}/blog/", max_pages=1)
    both = (WebCrawlerLoader(f"{site.base_url}/docs/", max_pages=2) + blog).load()
    assert len(docs) == 2 and len(both) == 3
    assert [d.url for d in both[:2]] == [d.url for d in docs] and "/blog/" in both[2].url
    assert len(CombinedLoader([blog, blog]).load()) == 2


def test_a_folder_is_a_seed(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "index.md").write_text("# Notes\n\nSee [setup](setup.md).\n")
    (folder / "setup.md").write_text("# Setup\n\nInstall it with pip.\n")
    documents = WebCrawlerLoader(folder).load()
    assert sorted(d.title for d in documents) == ["Notes", "Setup"]
    assert all(d.url.startswith(folder.resolve().as_uri()) for d in documents)


def test_a_crawl_error_reaches_the_caller_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(CrawlError) as caught:
        WebCrawlerLoader("no-such-source", incremental=True, data_dir=tmp_path / "data").load()
    assert "unknown source 'no-such-source'" in caught.value.reason
    assert caught.value.report is not None and caught.value.report["result"] == "aborted"


def test_incremental_yields_new_and_changed_pages_then_removals(site: DocsServer, tmp_path: Path) -> None:
    loader = WebCrawlerLoader(f"{site.base_url}/docs/", incremental=True, data_dir=tmp_path / "data",
                              settings={"DOCSCRAPER_INDEX_ENABLED": "0"})
    first = loader.load()
    assert len(first) == ALL_PAGES and all(isinstance(d, Document) and d.metadata["change"] == "new" for d in first)
    edited = site.root / "docs" / "guide" / "deployment.html"
    edited.write_text(edited.read_text().replace("</h1>", "</h1><p>Edited: reviewed.</p>", 1))
    routes = json.loads((site.root / "_routes.json").read_text())
    routes["/docs/glossary.html"] = {"status": 410}
    (site.root / "_routes.json").write_text(json.dumps(routes))
    second = loader.load()
    kinds = [type(event).__name__ for event in second]
    assert kinds == ["Document", "RemovedPage"]
    changed, removed = second
    assert isinstance(changed, Document) and isinstance(removed, RemovedPage)
    assert changed.url.endswith("/docs/guide/deployment.html") and changed.metadata["change"] == "changed"
    assert removed.url.endswith("/docs/glossary.html") and removed.source == changed.metadata["source"]
    glossary = next(d for d in first if d.url.endswith("/docs/glossary.html"))
    assert removed.page_id == glossary.page_id and removed.content_hash == glossary.metadata["content_hash"]
    assert loader.load() == []  # nothing changed since
