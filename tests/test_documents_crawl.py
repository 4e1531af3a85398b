"""Documents in a crawl: PDFs, Word files, notebooks, EPUB and reStructuredText linked from a site on loopback (and
in a local folder) become pages of the index; bad ones are refusals with their reason; a search whose answer is on
page N of a PDF links to ``#page=N``; a document that turns bad keeps what the index holds."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.embedding import SentenceTransformerEmbedder
from docscraper.storage.search import Searcher
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import Crawl, CrawlResult
from tests.documents import (
    docx_file,
    epub_file,
    image_only_pdf,
    notebook_file,
    pdf_file,
    scanned_pdf,
    zip_bomb_docx,
)
from tests.mockserver import DocsServer

GOOD = {
    "files/manual.pdf": "application/pdf",
    "files/notes.docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "files/tour.ipynb": "application/x-ipynb+json",
    "files/book.epub": "application/epub+zip",
    "files/guide.rst": "text/x-rst",
}
BAD = {
    "files/locked.pdf": "encrypted",
    "files/scan.pdf": "noTextLayer",
    "files/broken.pdf": "unreadableDocument",
    "files/bomb.docx": "unreadableDocument",
}
TOPICS = [
    ("Installing the relay", "Unpack the archive and run relayctl install as root."),
    ("Configuring queues", "The queue spill threshold is 4096 messages before the relay writes to disk."),
    ("Backups", "Snapshots are taken every six hours and kept for nine days."),
    ("Upgrading", "Stop the relay, replace the binary, then run relayctl migrate."),
]


def manual_pdf() -> bytes:
    # pages as full as a manual's: each section is a chunk or more of its own
    filler = [f"Operators of the relay read paragraph {n} of this section before they change a production system."
              for n in range(1, 13)]
    pages = []
    for heading, fact in TOPICS:
        pages.append((heading, [*filler[:6], fact, *filler[6:]]))
    return pdf_file(pages, title="Relay Operations Manual")


def write_site(root: Path) -> Path:
    files = root / "docs" / "files"
    files.mkdir(parents=True)
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in [*GOOD, *BAD])
    (root / "docs" / "index.html").write_text(
        "<!doctype html><html><head><title>Relay documents</title></head><body><main><h1>Relay documents</h1>"
        f"<p>The manuals of the relay, as files.</p><ul>{links}</ul></main></body></html>")
    (files / "manual.pdf").write_bytes(manual_pdf())
    (files / "notes.docx").write_bytes(docx_file("Relay design notes", [("Storage", ["Queues spill to disk."])],
                                                 bullets=["Durable", "Ordered"], table=[["Key", "Value"],
                                                                                       ["ttl", "300"]]))
    (files / "tour.ipynb").write_bytes(notebook_file([("markdown", "# Relay tour\nConnect a client.", []),
                                                      ("code", "client = relay.connect()", ["connected\n"])]))
    (files / "book.epub").write_bytes(epub_file("The Relay Book", [("Preface", "Why a relay exists.")]))
    (files / "guide.rst").write_text("Relay guide\n===========\n\nStart here.\n")
    (files / "locked.pdf").write_bytes(pdf_file([("Secret", ["hidden text"])], user_password="s3cret"))
    (files / "scan.pdf").write_bytes(scanned_pdf(2))
    (files / "broken.pdf").write_bytes(manual_pdf()[:700])
    (files / "bomb.docx").write_bytes(zip_bomb_docx(40 * 1024 * 1024))
    return root


@pytest.fixture
def docs_site(tmp_path: Path) -> Iterator[DocsServer]:
    with DocsServer(write_site(tmp_path / "site")).start() as server:
        yield server


def state_rows(result: CrawlResult) -> dict[str, tuple[str, str]]:
    db = sqlite3.connect(result.data_dir / "state.db")
    try:
        return {url: (status, content_type) for url, status, content_type in
                db.execute("SELECT url, status, content_type FROM pages")}
    finally:
        db.close()


def test_documents_are_pages_and_bad_ones_are_refusals(docs_site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    first = crawl(f"{docs_site.base_url}/docs/")
    assert first.keys("success", "new") == {"./", *GOOD}
    for key, reason in BAD.items():
        assert first.report["items"][key]["statusReason"] == reason, first.report["items"][key]
        assert first.report["items"][key]["status"] == "skipped"
    assert first.report["result"] == "success"
    counters = first.report["counters"]
    assert counters["documents/pdf"] == 4 and counters["documents/docx"] == 2
    rows = state_rows(first)
    for key, content_type in GOOD.items():
        assert rows[f"{docs_site.base_url}/docs/{key}"] == ("active", content_type)
    shown = command("sources", "show", first.report["source"], "--json")
    assert json.loads(shown.stdout)["types"] == {"docx": 1, "epub": 1, "html": 1, "ipynb": 1, "pdf": 1, "rst": 1}
    # the next run: nothing changed, nothing converted into new chunks, the refusals stay refusals
    second = crawl(f"{docs_site.base_url}/docs/")
    assert second.keys("success", "unchanged") == {"./", *GOOD}
    assert {k for k, r in BAD.items() if second.report["items"][k]["statusReason"] == r} == set(BAD)


def test_a_document_that_turns_bad_keeps_its_page(docs_site: DocsServer, crawl: Crawl) -> None:
    crawl(f"{docs_site.base_url}/docs/")
    manual = docs_site.root / "docs" / "files" / "manual.pdf"
    manual.write_bytes(manual.read_bytes()[:600])
    second = crawl(f"{docs_site.base_url}/docs/")
    assert second.report["items"]["files/manual.pdf"]["statusReason"] == "unreadableDocument"
    assert second.keys("success", "removed") == set()
    assert state_rows(second)[f"{docs_site.base_url}/docs/files/manual.pdf"][0] == "active"


def test_document_types_setting_turns_kinds_off(docs_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{docs_site.base_url}/docs/", settings={"DOCSCRAPER_DOCUMENT_TYPES": "docx"})
    assert result.keys("success", "new") == {"./", "files/notes.docx"}
    assert {"files/manual.pdf", "files/book.epub"} <= result.keys("skipped", "nonText")


def test_local_folder_of_documents(tmp_path: Path, crawl: Crawl) -> None:
    root = write_site(tmp_path / "folder") / "docs"
    result = crawl(root.as_uri() + "/")
    assert result.keys("success", "new") == {"./", *GOOD}
    assert result.report["items"]["files/scan.pdf"]["statusReason"] == "noTextLayer"


def test_scanned_pdf_is_read_with_ocr_when_turned_on(tmp_path: Path, crawl: Crawl) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "minutes.pdf").write_bytes(image_only_pdf([["Minutes of the relay meeting", "The relay moves to"
                                                          " the new datacenter in May."]]))
    off = crawl(folder.as_uri() + "/")
    assert off.report["items"]["minutes.pdf"]["statusReason"] == "noTextLayer"
    on = crawl(folder.as_uri() + "/", settings={"DOCSCRAPER_DOCUMENT_OCR": "1"})
    assert on.keys("success", "new") == {"minutes.pdf"}
    mirror = tmp_path / "mirror"
    crawl(folder.as_uri() + "/", "full=1", f"save_dir={mirror}", settings={"DOCSCRAPER_DOCUMENT_OCR": "1"})
    saved = "".join(path.read_text() for path in mirror.rglob("*.md"))
    assert "new datacenter in May" in saved and "<!-- page 1 -->" in saved


def test_folder_of_documents_without_an_index_page(tmp_path: Path, crawl: Crawl) -> None:
    """A folder of documents as teams keep them (no index.html): the crawl lists each folder and reads them all."""
    root = write_site(tmp_path / "folder") / "docs" / "files"
    (root / "more").mkdir()
    (root / "more" / "faq.md").write_text("# FAQ\n\nThe relay restarts itself.\n")
    result = crawl(root.as_uri() + "/")
    assert result.keys("success", "new") == {path.removeprefix("files/") for path in GOOD} | {"more/faq.md"}
    # the listings are followed, not indexed
    assert result.keys("skipped", "noindex") == {"./", "more"}
    assert result.report["items"]["bomb.docx"]["statusReason"] == "unreadableDocument"


def test_search_answer_on_a_pdf_page_links_to_that_page(docs_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{docs_site.base_url}/docs/", index=True)
    index = ChromaIndex(path=result.data_dir / "chroma")
    stored = index.collection.get(include=["metadatas"])["metadatas"]
    pdf_chunks = [m for m in stored if m["url"].endswith("/manual.pdf")]
    assert pdf_chunks and all(1 <= m["page"] <= m["page_end"] <= 4 for m in pdf_chunks)
    assert all(m["title"] == "Relay Operations Manual" for m in pdf_chunks)
    # the change feed says where each of the PDF's chunks starts; the report counts pages by type
    feed = [json.loads(line) for path in result.data_dir.glob("runs/*/*.changes.jsonl")
            for line in path.read_text().splitlines()]
    manual = next(line for line in feed if line["url"].endswith("/manual.pdf"))
    assert set(manual["chunkPages"]) == set(manual["chunksAdded"]) and set(manual["chunkPages"].values()) == {1, 2, 3, 4}
    assert all("chunkPages" not in line for line in feed if not line["url"].endswith(".pdf"))
    assert result.report["pageTypes"] == {"docx": 1, "epub": 1, "html": 1, "ipynb": 1, "pdf": 1, "rst": 1}
    searcher = Searcher(DocscraperConfig(data_dir=result.data_dir, state_url="sqlite://"),
                        embedder=SentenceTransformerEmbedder())
    try:
        for page, question in ((2, "How many messages before the queue spills to disk?"),
                               (3, "How long are snapshots kept?")):
            first = searcher.search(question, k=3)[0]
            assert first.url == f"{docs_site.base_url}/docs/files/manual.pdf#page={page}", first
            assert first.page_number == page and first.title == "Relay Operations Manual"
    finally:
        searcher.close()
