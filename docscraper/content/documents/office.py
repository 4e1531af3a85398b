"""Word (``.docx``) and EPUB documents: zip files of XML, converted to HTML by their library and then to Markdown by the
same extraction as web pages.

:func:`docx_to_extracted`: mammoth turns the document's styles into semantic HTML (headings, lists, tables, emphasis,
links); the title is ``dc:title`` in ``docProps/core.xml``, else the first heading, else the file name.
:func:`epub_to_extracted`: ebooklib reads the package, and each document of the spine, in reading order, goes through
the HTML extraction into one page titled by the book's ``dc:title``. :func:`check_zip` runs before either library
opens a file: one that would unpack to more than ``DOCSCRAPER_DOCUMENT_MAX_UNPACKED`` bytes, or ``max_ratio`` times its
own size, is ``unreadableDocument``. Why that check holds: docs/explanation/extraction.md.
"""

from __future__ import annotations

import io
import zipfile
from html import escape

from lxml import etree

from docscraper.content.documents.base import Deadline, DocumentLimits, DocumentRefused
from docscraper.content.extraction import extract_html, normalize_markdown
from docscraper.content.extraction.result import Extracted

__all__ = ["check_zip", "docx_to_extracted", "epub_to_extracted"]

_MAX_MEMBERS = 10_000
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def check_zip(body: bytes, limits: DocumentLimits, what: str) -> zipfile.ZipFile:
    """Open *body* as a zip file after checking what it would unpack to (see the module docstring)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DocumentRefused("unreadableDocument", f"not a readable {what} (a zip file): {exc}") from None
    members = archive.infolist()
    if len(members) > _MAX_MEMBERS:
        raise DocumentRefused("unreadableDocument", f"{len(members)} files inside, more than {_MAX_MEMBERS}")
    unpacked = sum(member.file_size for member in members)
    if unpacked > limits.max_unpacked or unpacked > limits.max_ratio * max(len(body), 1):
        raise DocumentRefused("unreadableDocument",
                              f"would unpack to {unpacked:,} bytes from {len(body):,} (a zip bomb?): over the "
                              f"limit of {limits.max_unpacked:,} bytes or {limits.max_ratio:g} times its size")
    return archive


def _core_title(archive: zipfile.ZipFile) -> str:
    try:
        root = etree.fromstring(archive.read("docProps/core.xml"), etree.XMLParser(resolve_entities=False,
                                                                                  no_network=True))
    except (KeyError, etree.XMLSyntaxError, ValueError):
        return ""
    found = root.find(_DC_TITLE)
    return " ".join((found.text or "").split()) if found is not None else ""


def docx_to_extracted(body: bytes, url: str, limits: DocumentLimits) -> Extracted:
    """A Word document's Markdown and title (see the module docstring)."""
    import mammoth

    archive = check_zip(body, limits, "Word document")
    title = _core_title(archive)
    if "word/document.xml" not in archive.namelist():
        raise DocumentRefused("unreadableDocument", "a zip file without word/document.xml: not a Word document")
    result = mammoth.convert_to_html(io.BytesIO(body))
    html = f"<html><head><title>{escape(title)}</title></head><body><main>{result.value}</main></body></html>"
    extracted = extract_html(html, url, encoding="utf-8")
    if not extracted.markdown.strip():
        raise DocumentRefused("unreadableDocument", "the Word document holds no text")
    return extracted


def epub_to_extracted(body: bytes, url: str, limits: DocumentLimits) -> Extracted:
    """An EPUB book's Markdown, chapter after chapter in reading order, and its title."""
    import ebooklib
    from ebooklib import epub

    check_zip(body, limits, "EPUB book")
    deadline = Deadline(limits.time_limit)
    try:
        book = epub.read_epub(io.BytesIO(body), {"ignore_ncx": True})
    except Exception as exc:  # ebooklib raises its own and lxml's errors on a broken package
        raise DocumentRefused("unreadableDocument", f"not a readable EPUB: {exc.__class__.__name__}: {exc}") from None
    titles = book.get_metadata("DC", "title")
    title = " ".join(str(titles[0][0]).split()) if titles else ""
    parts: list[str] = []
    spine = [book.get_item_with_id(idref) for idref, _linear in book.spine]
    for number, item in enumerate(spine, start=1):
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        deadline.check(f"chapter {number} of {len(spine)}")
        chapter = extract_html(item.get_content(), url, encoding="utf-8")
        if chapter.markdown.strip():
            parts.append(chapter.markdown)
            title = title or chapter.title
    markdown = normalize_markdown("\n\n".join(parts))
    if not markdown:
        raise DocumentRefused("unreadableDocument", "the EPUB holds no text")
    return Extracted(title=title, markdown=markdown, canonical_url=None, language=None, description=None,
                     has_scripts_only=False)
