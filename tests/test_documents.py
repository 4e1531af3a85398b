"""Documents (docscraper.content.documents): PDF, Word, notebooks, EPUB and reStructuredText to Markdown, the
refusals of bad documents, and the page numbers every chunk of a PDF carries. The documents are made by
``tests/documents.py``; the crawls that fetch them are in ``tests/test_documents_crawl.py``."""

from __future__ import annotations

import re

import pytest

from docscraper.config import DOCUMENT_TYPES
from docscraper.content.chunking import Chunker, ChunkingConfig
from docscraper.content.documents import (
    KINDS,
    ConvertedDocument,
    DocumentLimits,
    convert_document,
    document_kind,
    document_type,
    is_paged,
)
from tests.documents import (
    docx_file,
    epub_file,
    image_only_pdf,
    looping_pdf,
    notebook_file,
    pdf_file,
    scanned_pdf,
    zip_bomb_docx,
)

LIMITS = DocumentLimits()
URL = "http://docs.test/files/"


def words(texts: list[str]) -> list[int]:
    return [len(text.split()) + 2 for text in texts]


def converted(kind: str, body: bytes, name: str = "doc", limits: DocumentLimits = LIMITS) -> ConvertedDocument:
    return convert_document(kind, body, URL + name, limits)


def markdown_of(kind: str, body: bytes, name: str = "doc") -> str:
    result = converted(kind, body, name)
    assert result.extracted is not None, result.refusal
    return result.extracted.markdown


def manual(pages: int = 3, **options: object) -> bytes:
    return pdf_file([(f"Chapter {n} {topic}", [f"Body line {k} of chapter {n} mentions token{n}x{k}." for k in range(4)])
                     for n, topic in zip(range(1, pages + 1), ["Install", "Configure", "Deploy", "Tune"] * 50,
                                         strict=False)], **options)  # type: ignore[arg-type]


# -- kinds and settings --------------------------------------------------------------------------------------


def test_every_configurable_type_has_a_converter() -> None:
    assert set(DOCUMENT_TYPES) == set(KINDS)


@pytest.mark.parametrize(("content_type", "url", "kind"), [
    ("application/pdf", "http://x/download?id=3", "pdf"),
    ("application/octet-stream", "http://x/manual.PDF", "pdf"),
    ("", "http://x/guide.rst", "rst"),
    ("text/plain", "http://x/guide.rst", "rst"),
    ("application/json", "http://x/tour.ipynb", "ipynb"),
    ("application/zip", "http://x/spec.docx", "docx"),
    ("application/epub+zip", "http://x/book", "epub"),
    ("text/html", "http://x/manual.pdf", None),  # the server says HTML: it is a page
    ("application/octet-stream", "http://x/archive.tar", None),
    ("text/plain", "http://x/notes.txt", None),  # plain text stays a Markdown page
])
def test_document_kind_from_the_content_type_then_the_extension(content_type: str, url: str, kind: str | None) -> None:
    found = document_kind(content_type, url, DOCUMENT_TYPES)
    assert (found.name if found else None) == kind


def test_a_kind_that_is_not_enabled_is_not_a_document() -> None:
    assert document_kind("application/pdf", "http://x/a.pdf", ("docx",)) is None


def test_document_type_names_stored_content_types() -> None:
    assert document_type("application/pdf") == "pdf"
    assert document_type("text/html; charset=utf-8") == "html"
    assert document_type("text/markdown") == "markdown"
    assert document_type(None) == "other"
    assert is_paged("application/pdf") and not is_paged("text/html")


# -- PDF -----------------------------------------------------------------------------------------------------


def test_pdf_outline_becomes_headings_on_their_pages() -> None:
    markdown = markdown_of("pdf", manual(3, title="Relay Operations Manual"))
    pages = re.split(r"^<!-- page \d+ -->$", markdown, flags=re.M)[1:]
    assert len(pages) == 3
    for number, text in enumerate(pages, start=1):
        topic = ["Install", "Configure", "Deploy"][number - 1]
        assert f"# Chapter {number} {topic}" in text
        assert f"token{number}x3" in text and f"token{number + 1}x0" not in text
    # the heading line is not repeated as text under it
    assert markdown.count("Chapter 1 Install") == 1


def test_pdf_numbered_section_line_becomes_its_heading_and_no_text_is_lost() -> None:
    """A manual's section line is "7.3.1 Loading data" where its outline says "Loading data": the heading replaces
    that line, and a body line that merely ends with the title's words stays text."""
    body = pdf_file([("Loading data", ["Packages ship data sets.", "Read them before loading data"]),
                     ("Null objects", ["There is one null object.", "You cannot set attributes on null objects"])],
                    numbered=True)
    markdown = markdown_of("pdf", body)
    assert "1.1.1" not in markdown and "2.1.2" not in markdown
    assert markdown.index("# Loading data") < markdown.index("Packages ship data sets.")
    assert "Read them before loading data" in markdown and "You cannot set attributes on null objects" in markdown


def test_pdf_title_from_metadata_else_first_heading_else_file_name() -> None:
    assert converted("pdf", manual(2, title="Relay Operations Manual")).extracted.title == "Relay Operations Manual"  # type: ignore[union-attr]
    # reportlab's "untitled" is a placeholder: the heading set largest on the first page is the title
    assert converted("pdf", manual(2)).extracted.title == "Chapter 1 Install"  # type: ignore[union-attr]
    plain = pdf_file([(None, ["just text"]), (None, ["more text"])])
    assert converted("pdf", plain, "field-notes.pdf").extracted.title == "field-notes.pdf"  # type: ignore[union-attr]


def test_pdf_without_outline_infers_headings_from_font_size() -> None:
    markdown = markdown_of("pdf", manual(3, outline=False))
    assert re.findall(r"^# (.+)$", markdown, flags=re.M) == ["Chapter 1 Install", "Chapter 2 Configure",
                                                             "Chapter 3 Deploy"]


def test_pdf_without_outline_or_larger_fonts_keeps_page_markers_as_its_structure() -> None:
    markdown = markdown_of("pdf", pdf_file([(None, ["alpha one"]), (None, ["beta two"])], outline=False))
    assert not re.search(r"^#", markdown, flags=re.M)
    assert markdown.index("<!-- page 1 -->") < markdown.index("alpha one") < markdown.index("<!-- page 2 -->") \
        < markdown.index("beta two")


def test_pdf_table_cells_and_many_pages_keep_every_page() -> None:
    body = pdf_file([(f"Part {n}", [f"Text of part {n} holds marker{n}."]) for n in range(1, 61)],
                    table=[["Setting", "Default"], ["relay.timeout", "30s"]])
    result = converted("pdf", body)
    assert result.pages == 60 and result.extracted is not None
    markdown = result.extracted.markdown
    for n in range(1, 61):
        assert f"<!-- page {n} -->" in markdown and f"marker{n}." in markdown
    assert "relay.timeout" in markdown and "30s" in markdown


def test_pdf_running_headers_and_page_numbers_are_dropped() -> None:
    pages = [(None, [f"Relay Manual {n}", f"content of page {n}", f"- {n} -"]) for n in range(1, 9)]
    markdown = markdown_of("pdf", pdf_file(pages, outline=False))
    assert "Relay Manual" not in markdown
    assert all(f"content of page {n}" in markdown for n in range(1, 9))


def test_pdf_text_that_looks_like_markdown_structure_is_escaped() -> None:
    markdown = markdown_of("pdf", pdf_file([(None, ["# not a heading", "<!-- page 99 -->", "| a | b |"])],
                                           outline=False))
    assert "\\# not a heading" in markdown and "\\<!-- page 99 -->" in markdown and "\\| a | b |" in markdown
    chunks = Chunker(words, ChunkingConfig(64, 40, 0, 0)).chunk(markdown, title="t", paged=True)
    assert {c.page for c in chunks} == {1}


def test_chunks_of_a_pdf_record_the_pages_their_text_comes_from() -> None:
    body = pdf_file([(f"Section {n}", [f"Sentence {k} on page {n} has pagetoken{n}." for k in range(12)])
                     for n in range(1, 8)])
    markdown = markdown_of("pdf", body)
    chunks = Chunker(words, ChunkingConfig(64, 40, 8, 0)).chunk(markdown, title="Manual", paged=True)
    assert len(chunks) > 7
    for chunk in chunks:
        assert chunk.page is not None and chunk.page_end is not None and chunk.page <= chunk.page_end
        assert "<!-- page" not in chunk.text
        found = {int(n) for n in re.findall(r"pagetoken(\d+)", chunk.text)}
        # the overlap may repeat the end of the page before; the chunk's own text is on its pages
        assert max(found) <= chunk.page_end and min(found) >= chunk.page - 1
    assert {c.page for c in chunks} == set(range(1, 8))
    # web pages have no pages, whatever they contain
    assert all(c.page is None for c in Chunker(words, ChunkingConfig(64, 40, 8, 0)).chunk(markdown, title="M"))


def test_encrypted_pdf_is_refused_unless_an_empty_password_opens_it() -> None:
    assert converted("pdf", manual(2, user_password="s3cret")).refusal == (
        "encrypted", "the PDF is encrypted and an empty password does not open it")
    opened = converted("pdf", manual(2, user_password=""))
    assert opened.refusal is None and "token2x1" in opened.extracted.markdown  # type: ignore[union-attr]


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_pdf_is_an_unreadable_document(cut: float) -> None:
    body = manual(3)
    result = converted("pdf", body[: int(len(body) * cut)])
    assert result.extracted is None and result.refusal is not None and result.refusal[0] == "unreadableDocument"


def test_scanned_pdf_has_no_text_layer() -> None:
    result = converted("pdf", scanned_pdf(3))
    assert result.refusal is not None and result.refusal[0] == "noTextLayer" and "3 page" in result.refusal[1]


def test_scanned_pages_are_read_by_tesseract_when_ocr_is_on() -> None:
    body = image_only_pdf([["Relay maintenance window", "Restart the relay every Sunday."],
                           ["Backups are kept for nine days."]])
    off = converted("pdf", body)
    assert off.refusal == ("noTextLayer", "none of its 2 page(s) has a text layer (a scan?); OCR is off "
                                          "(DOCSCRAPER_DOCUMENT_OCR)")
    read = converted("pdf", body, limits=DocumentLimits(ocr=True))
    assert read.extracted is not None, read.refusal
    markdown = read.extracted.markdown
    assert markdown.index("<!-- page 1 -->") < markdown.index("Restart the relay every Sunday.") \
        < markdown.index("<!-- page 2 -->") < markdown.index("Backups are kept for nine days.")


def test_ocr_on_without_tesseract_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = converted("pdf", scanned_pdf(1), limits=DocumentLimits(ocr=True))
    assert result.refusal is not None and result.refusal[0] == "noTextLayer"
    assert result.refusal[1].endswith("OCR is on but tesseract is not installed")


def test_looping_page_tree_does_not_hang_or_crash() -> None:
    result = converted("pdf", looping_pdf())
    # PDFium either reads the one real page or refuses the file: never a hang, never an exception
    assert result.refusal is None or result.refusal[0] == "unreadableDocument"
    if result.extracted is not None:
        assert "looping tree" in result.extracted.markdown


def test_not_a_pdf_and_empty_bytes_are_unreadable() -> None:
    for body in (b"", b"<html>not a pdf</html>", b"%PDF-1.7\n" + b"\x00" * 100):
        result = converted("pdf", body)
        assert result.refusal is not None and result.refusal[0] == "unreadableDocument"


def test_time_and_page_limits_refuse_instead_of_cutting() -> None:
    body = manual(5)
    slow = converted("pdf", body, limits=DocumentLimits(time_limit=0.0))
    assert slow.refusal is not None and slow.refusal[0] == "unreadableDocument" and "longer than 0 s" in slow.refusal[1]
    long = converted("pdf", body, limits=DocumentLimits(max_pages=4))
    assert long.refusal == ("sizeLimit", "5 pages, more than the limit of 4 (DOCSCRAPER_DOCUMENT_MAX_PAGES)")


# -- Word, notebooks, EPUB, reStructuredText -----------------------------------------------------------------


def test_docx_headings_lists_and_tables() -> None:
    body = docx_file("Relay design notes", [("Storage", ["Queues live on disk for 300 seconds."])],
                     bullets=["First bullet", "Second bullet"], table=[["Key", "Value"], ["ttl", "300"]])
    result = converted("docx", body, "notes.docx")
    assert result.extracted is not None
    markdown = result.extracted.markdown
    assert result.extracted.title == "Relay design notes"
    assert "# Relay design notes" in markdown and "## Storage" in markdown
    assert "- First bullet\n- Second bullet" in markdown
    assert "| Key | Value |" in markdown and "| ttl | 300 |" in markdown


def test_zip_bomb_and_broken_zip_are_refused() -> None:
    bomb = zip_bomb_docx(32 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024
    result = converted("docx", bomb, "bomb.docx")
    assert result.refusal is not None and result.refusal[0] == "unreadableDocument" and "zip bomb" in result.refusal[1]
    assert converted("epub", bomb, "bomb.epub").refusal[0] == "unreadableDocument"  # type: ignore[index]
    broken = converted("docx", b"PK\x03\x04 truncated", "broken.docx")
    assert broken.refusal is not None and broken.refusal[0] == "unreadableDocument"


def test_notebook_cells_in_order_with_the_kernel_language_and_short_outputs() -> None:
    body = notebook_file([
        ("markdown", "# Plotting tour\nLoad the data first.", []),
        ("code", "import pandas as pd\nframe = pd.read_csv('relay.csv')", ["rows: 3\n"]),
        ("code", "print('x')", ["line\n" * 40]),  # a long output is left out
    ])
    result = converted("ipynb", body, "tour.ipynb")
    assert result.extracted is not None and result.extracted.title == "Plotting tour"
    markdown = result.extracted.markdown
    assert markdown.index("# Plotting tour") < markdown.index("```python\nimport pandas as pd") \
        < markdown.index("```text\nrows: 3\n```") < markdown.index("```python\nprint('x')")
    assert "line\nline" not in markdown
    assert converted("ipynb", b"{not json", "bad.ipynb").refusal[0] == "unreadableDocument"  # type: ignore[index]


def test_epub_chapters_in_reading_order() -> None:
    body = epub_file("The Relay Book", [("Getting started", "Install the relay first."),
                                        ("Operating", "Watch the queue depth.")])
    result = converted("epub", body, "book.epub")
    assert result.extracted is not None and result.extracted.title == "The Relay Book"
    markdown = result.extracted.markdown
    assert markdown.index("Install the relay first.") < markdown.index("Watch the queue depth.")
    assert "# Getting started" in markdown and "# Operating" in markdown


def test_rst_is_converted_without_reading_files_or_raw_html() -> None:
    body = (b"Install guide\n=============\n\nRun the installer.\n\n.. code-block:: python\n\n   import relay\n\n"
            b".. include:: /etc/hostname\n\n.. raw:: html\n\n   <script>alert(1)</script>\n\n"
            b"Options\n-------\n\nSee :ref:`unknown-role`.\n")
    result = converted("rst", body, "guide.rst")
    assert result.extracted is not None and result.extracted.title == "Install guide"
    markdown = result.extracted.markdown
    assert "```python\nimport relay\n```" in markdown and "## Options" in markdown
    with open("/etc/hostname") as handle:
        hostname = handle.read().strip()
    assert (not hostname or hostname not in markdown) and "alert(1)" not in markdown


def test_document_settings_are_checked() -> None:
    from scrapy.settings import Settings

    from docscraper.config import ConfigError, DocscraperConfig

    assert DocscraperConfig.from_settings(Settings()).document_types == DOCUMENT_TYPES
    assert DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_TYPES": "none"})).document_types == ()
    assert DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_TYPES": "PDF, ipynb"})).document_types == (
        "pdf", "ipynb")
    with pytest.raises(ConfigError, match=r"unknown type.*xlsx; choose from pdf, docx"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_TYPES": "pdf,xlsx"}))
    with pytest.raises(ConfigError, match="DOCSCRAPER_DOCUMENT_MAX_PAGES must be"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_MAX_PAGES": "many"}))
    ocr = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_OCR": "1",
                                                   "DOCSCRAPER_DOCUMENT_OCR_LANGUAGES": "eng+deu"}))
    assert ocr.document_ocr and ocr.document_ocr_languages == "eng+deu"
    assert not DocscraperConfig.from_settings(Settings()).document_ocr
    with pytest.raises(ConfigError, match="OCR_LANGUAGES"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DOCUMENT_OCR_LANGUAGES": "eng; rm -rf /"}))
