"""Documents that are not web pages (PDF, Word, notebooks, EPUB, reStructuredText) to the Markdown of a page.

A document the crawl reaches becomes a page of the index like any other (DESIGN, "Documents").
:func:`document_kind` says what a response is, from its Content-Type and, where the server says no more than
"binary", its extension, among the kinds of ``DOCSCRAPER_DOCUMENT_TYPES`` (all of :data:`KINDS` by default);
:func:`convert_document` converts it, a pure function of the bytes that the spider runs in a process of its own
(:class:`docscraper.crawl.workers.BoundedProcess`, which stops a call past its time limit). One module per format:
:mod:`.pdf` (pypdfium2), :mod:`.office` (mammoth, ebooklib), :mod:`.notebook` (nbformat), :mod:`.text` (docutils). A
document that cannot be indexed is a refusal with a reason, never a crash (:class:`ConvertedDocument`):
``encrypted``, ``noTextLayer``, ``unreadableDocument``, ``sizeLimit``. What each format gives:
docs/howto/documents.md; why these libraries: docs/explanation/extraction.md.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from docscraper.content.documents.base import PAGE_MARKER_RE, DocumentLimits, DocumentRefused, page_marker
from docscraper.content.extraction.result import Extracted

__all__ = ["KINDS", "PAGE_MARKER_RE", "ConvertedDocument", "DocumentKind", "DocumentLimits", "DocumentRefused",
           "convert_document", "count_types", "document_kind", "document_type", "file_name", "is_paged", "page_marker"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentKind:
    """A kind of document: the name settings and reports use, the Content-Type it is stored under (whatever the
    server said), and its file extensions."""

    name: str
    content_type: str
    extensions: tuple[str, ...]
    paged: bool = False


KINDS: dict[str, DocumentKind] = {
    kind.name: kind
    for kind in (
        DocumentKind("pdf", "application/pdf", (".pdf",), paged=True),
        DocumentKind("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", (".docx",)),
        DocumentKind("ipynb", "application/x-ipynb+json", (".ipynb",)),
        DocumentKind("epub", "application/epub+zip", (".epub",)),
        DocumentKind("rst", "text/x-rst", (".rst", ".rest")),
    )
}
_BY_TYPE = {kind.content_type: kind for kind in KINDS.values()}
_ALIASES = {"application/x-pdf": "pdf", "application/acrobat": "pdf", "text/x-restructuredtext": "rst",
            "text/prs.fallenstein.rst": "rst"}
#: what servers send for a file they know nothing about: then the extension decides
_GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/x-download",
                            "application/force-download", "application/download", "application/unknown",
                            "application/zip", "application/x-zip-compressed", "application/json", "text/plain",
                            "application/x-unknown"})
#: the Content-Types of HTML and Markdown pages and of documents: how ``status`` and reports name a page's type
_TYPE_NAMES = {"text/html": "html", "application/xhtml+xml": "html", "text/markdown": "markdown",
               "text/x-markdown": "markdown", "text/plain": "text"}


def document_kind(content_type: str, url: str, enabled: Iterable[str]) -> DocumentKind | None:
    """The kind of document a response is, among the *enabled* kinds, or None for a page (or a document kind that
    is not enabled). *content_type* is the media type alone, lower case."""
    allowed = set(enabled)
    kind = _BY_TYPE.get(content_type) or KINDS.get(_ALIASES.get(content_type, ""))
    if kind is None and content_type in _GENERIC_TYPES:
        extension = posixpath.splitext(urlsplit(url).path)[1].lower()
        kind = next((k for k in KINDS.values() if extension in k.extensions), None)
    return kind if kind is not None and kind.name in allowed else None


def document_type(content_type: str | None) -> str:
    """The document type (``html``, ``markdown``, ``text``, ``pdf``, ``docx``...) of a stored page's Content-Type,
    for counts in reports and ``status``; ``other`` for anything else."""
    media = (content_type or "").split(";")[0].strip().lower()
    kind = _BY_TYPE.get(media)
    return kind.name if kind is not None else _TYPE_NAMES.get(media, "other")


def count_types(content_types: dict[str | None, int]) -> dict[str, int]:
    """Pages by document type, most first, from pages by stored Content-Type."""
    counts: dict[str, int] = {}
    for content_type, count in content_types.items():
        kind = document_type(content_type)
        counts[kind] = counts.get(kind, 0) + count
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def is_paged(content_type: str | None) -> bool:
    """Whether a page stored with *content_type* is a paged document (a PDF), whose Markdown has page markers."""
    kind = _BY_TYPE.get((content_type or "").split(";")[0].strip().lower())
    return kind is not None and kind.paged


def file_name(url: str) -> str:
    """The last segment of *url*'s path, decoded: a document's title of last resort."""
    return unquote(posixpath.basename(urlsplit(url).path.rstrip("/"))) or url


@dataclass(frozen=True)
class ConvertedDocument:
    """What :func:`convert_document` gave: the page's extraction, or the refusal (reason, detail) that says why
    there is none; ``pages`` for a paged document."""

    extracted: Extracted | None
    refusal: tuple[str, str] | None = None
    pages: int = 0


def convert_document(kind: str, body: bytes, url: str, limits: DocumentLimits) -> ConvertedDocument:
    """Convert *body*, a document of *kind* fetched from *url*. Never raises: bad documents are refusals."""
    try:
        if kind == "pdf":
            from docscraper.content.documents.pdf import pdf_to_markdown

            pdf = pdf_to_markdown(body, file_name(url), limits)
            return ConvertedDocument(_extracted(pdf.title, pdf.markdown), pages=pdf.pages)
        if kind == "docx":
            from docscraper.content.documents.office import docx_to_extracted

            return ConvertedDocument(docx_to_extracted(body, url, limits))
        if kind == "epub":
            from docscraper.content.documents.office import epub_to_extracted

            return ConvertedDocument(epub_to_extracted(body, url, limits))
        if kind == "ipynb":
            from docscraper.content.documents.notebook import notebook_to_markdown

            title, markdown = notebook_to_markdown(body, file_name(url), limits)
            return ConvertedDocument(_extracted(title, markdown))
        if kind == "rst":
            from docscraper.content.documents.text import rst_to_extracted

            return ConvertedDocument(rst_to_extracted(body, url))
        return ConvertedDocument(None, ("nonText", f"no converter for {kind}"))
    except DocumentRefused as refused:
        return ConvertedDocument(None, (refused.reason, refused.detail))
    except MemoryError:
        return ConvertedDocument(None, ("unreadableDocument", "out of memory while converting it"))
    except Exception as exc:  # a library's error on a hostile file: a refusal, never the end of the run
        logger.debug("Converting %s failed", url, exc_info=True)
        return ConvertedDocument(None, ("unreadableDocument", f"{exc.__class__.__name__}: {exc}"[:300]))


def _extracted(title: str, markdown: str) -> Extracted:
    from docscraper.content.extraction import normalize_markdown

    return Extracted(title=title.strip(), markdown=normalize_markdown(markdown), canonical_url=None, language=None,
                     description=None, has_scripts_only=False)
