"""What every document converter shares: the refusal it raises, its limits, and the page marker of paged documents."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

__all__ = ["PAGE_MARKER_RE", "Deadline", "DocumentLimits", "DocumentRefused", "page_marker"]

#: A page boundary in a paged document's Markdown: ``<!-- page N -->`` on a line of its own, before page N's
#: text. The chunker records, for each chunk, the pages its text came from (``Chunker.chunk(paged=True)``);
#: the Markdown mirror keeps the markers, so the mirror says where each page starts.
PAGE_MARKER_RE = re.compile(r"^<!-- page (\d{1,6}) -->$")


def page_marker(number: int) -> str:
    """The marker line that opens page *number* (1-based)."""
    return f"<!-- page {number} -->"


class DocumentRefused(Exception):
    """A document docscraper will not index, and why: ``reason`` is the report's reason (``noTextLayer``,
    ``encrypted``, ``unreadableDocument``, ``sizeLimit``), ``detail`` says what was found."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class DocumentLimits:
    """Bounds and options of one document's conversion (settings ``DOCSCRAPER_DOCUMENT_TIME_LIMIT``,
    ``DOCSCRAPER_DOCUMENT_MAX_PAGES``, ``DOCSCRAPER_DOCUMENT_MAX_UNPACKED``, ``DOCSCRAPER_DOCUMENT_OCR``,
    ``DOCSCRAPER_DOCUMENT_OCR_LANGUAGES``)."""

    #: seconds of conversion, checked between pages (PDF) and parts (EPUB, notebooks)
    time_limit: float = 120.0
    #: pages of a PDF; a longer one is refused (``sizeLimit``), never cut short
    max_pages: int = 5000
    #: bytes a ``.docx`` or ``.epub`` (a zip) may unpack to, and the ratio of unpacked to packed size that
    #: marks a zip bomb
    max_unpacked: int = 200 * 1024 * 1024
    max_ratio: float = 200.0
    #: read the pages of a PDF that have no text layer with Tesseract (``DOCSCRAPER_DOCUMENT_OCR``), when the
    #: ``tesseract`` command is installed; its languages (``-l``), ``+``-separated
    ocr: bool = False
    ocr_languages: str = "eng"


class Deadline:
    """The time a conversion may take; :meth:`check` raises :class:`DocumentRefused` once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()

    def left(self) -> float:
        """Seconds left (0 when none)."""
        return max(0.0, self.seconds - (time.monotonic() - self.start))

    def check(self, where: str) -> None:
        if time.monotonic() - self.start > self.seconds:
            raise DocumentRefused("unreadableDocument",
                                  f"conversion took longer than {self.seconds:g} s (stopped at {where})")
