"""PDF to Markdown with pypdfium2 (PDFium, the PDF engine of Chromium).

Each page's text is preceded by a marker line ``<!-- page N -->``
(:func:`~docscraper.content.documents.base.page_marker`), from which every chunk knows its pages. The outline
(bookmarks) becomes ATX headings at its depth, placed on their target pages; without one, short lines set in a
clearly larger font than the body are headings. Running headers and footers and dot leaders are dropped, hyphenated
words joined; tables are text lines. A page without a text layer is read by Tesseract when
``DOCSCRAPER_DOCUMENT_OCR`` is on and ``tesseract`` is installed. The title is the metadata ``Title``, else the
largest line of the first page with text, else the first heading, else the file name. Refusals
(:class:`~docscraper.content.documents.base.DocumentRefused`): ``encrypted``, ``unreadableDocument``,
``noTextLayer``, ``sizeLimit``. Why pypdfium2, and each rule: docs/explanation/extraction.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docscraper.content.documents.base import Deadline, DocumentLimits, DocumentRefused, page_marker

__all__ = ["PdfText", "pdf_to_markdown"]

#: Lines set at least this much larger than the body text can be headings (no outline)
_HEADING_RATIO = 1.15
_HEADING_MAX_CHARS = 120
_MAX_HEADING_LEVELS = 4
_MAX_OUTLINE = 20_000
#: the resolution pages are rendered at for OCR
_OCR_DPI = 300
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "title", "document", "no title"})
_LEADER_RE = re.compile(r"(?:\s*\.){4,}\s*")
_DIGITS_RE = re.compile(r"\d+")
_LETTER_RE = re.compile(r"[^\W\d_]")
_WORDS_RE = re.compile(r"\w+")
_HYPHENATED_RE = re.compile(r"[^\W\d_]-$")
#: what PDFium puts where a word was hyphenated at a line's end
_SOFT_HYPHENS = "\ufffe\x02\u00ad"
#: a bullet drawn with a symbol font's private-use glyph, or a common bullet character
_BULLET_RE = re.compile(r"^[\x00-\x08\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\u2022\u2023\u2043\u2219\u25a0\u25aa\u25cf\u25e6]\s+")
#: control characters left in a line (a symbol font's glyphs without Unicode) are dropped
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe]")
#: lines further apart than this many times their font size are in different paragraphs
_PARAGRAPH_GAP = 1.6
# a line that Markdown would read as structure: heading, quote, HTML (a page marker), fence, table row
_ESCAPE_RE = re.compile(r"^(#|>|<|```|~~~|\|)")


@dataclass
class _Line:
    text: str
    size: float  # font size of its first character, points
    top: float  # top of its first character, PDF units (y grows upwards)
    paragraph: bool = False  # starts a paragraph (OCR: after a blank line), where there are no positions


@dataclass(frozen=True)
class PdfText:
    """A converted PDF: the Markdown (page markers included), its title, and how many pages it has."""

    title: str
    markdown: str
    pages: int
    outline: int  # outline entries that became headings


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise DocumentRefused("encrypted", "the PDF is encrypted and an empty password does not open it") from None
        raise DocumentRefused("unreadableDocument", f"PDFium cannot read it ({exc})") from None


def _page_lines(document: pdfium.PdfDocument, index: int) -> list[_Line]:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            count = textpage.count_chars()
            if count <= 0:
                return []
            text = textpage.get_text_range(0, count)
            lines: list[_Line] = []
            # get_text_range gives one character per PDFium character (line breaks it generated included) while
            # no character lies outside the Basic Multilingual Plane: then offsets are character indexes
            exact = len(text) == count
            position = 0
            for raw in text.splitlines(keepends=True):
                stripped = raw.strip()
                if stripped:
                    first = position + (len(raw) - len(raw.lstrip()))
                    size, top = 0.0, 0.0
                    if exact and first < count:
                        size = float(pdfium_c.FPDFText_GetFontSize(textpage.raw, first))
                        top = textpage.get_charbox(first)[3]
                    lines.append(_Line(" ".join(stripped.split()), round(size, 1), top))
                position += len(raw)
            return lines
        finally:
            textpage.close()
    finally:
        page.close()


def _ocr_lines(document: pdfium.PdfDocument, index: int, tesseract: str, languages: str,
               deadline: Deadline) -> list[_Line]:
    """The text Tesseract reads on page *index*, rendered at 300 dpi in grey and handed to it as a PGM image
    on its standard input (no image library needed). A page Tesseract cannot read has no lines."""
    page = document[index]
    try:
        bitmap = page.render(scale=_OCR_DPI / 72, grayscale=True)
        try:
            pixels = bitmap.to_numpy()
        finally:
            bitmap.close()
    finally:
        page.close()
    if pixels.ndim == 3:  # a renderer that kept colour channels: their mean
        pixels = pixels.mean(axis=2).astype("uint8")
    height, width = pixels.shape[:2]
    image = f"P5\n{width} {height}\n255\n".encode() + pixels.tobytes()
    try:
        done = subprocess.run([tesseract, "stdin", "stdout", "-l", languages], input=image, capture_output=True,
                              timeout=max(1.0, deadline.left()), check=False)
    except subprocess.TimeoutExpired:
        raise DocumentRefused("unreadableDocument", f"OCR of page {index + 1} took longer than the time limit "
                                                    f"({deadline.seconds:g} s)") from None
    if done.returncode != 0:
        return []
    text = done.stdout.decode("utf-8", errors="replace")
    # no font sizes or positions: paragraphs are Tesseract's blank lines
    lines: list[_Line] = []
    blank = False
    for raw in text.splitlines():
        stripped = " ".join(raw.split())
        if stripped:
            lines.append(_Line(stripped, 0.0, 0.0, paragraph=blank))
        blank = not stripped
    return lines


def _running_lines(pages: list[list[_Line]]) -> set[str]:
    """The keys (digits replaced) of first and last lines that recur on a third of the pages: running headers
    and footers, page numbers among them. Pages of fewer than three lines (slides, title pages) say nothing."""
    if len(pages) < 4:
        return set()
    seen: Counter[str] = Counter()
    for lines in pages:
        if len(lines) >= 3:
            seen.update({_DIGITS_RE.sub("#", lines[0].text), _DIGITS_RE.sub("#", lines[-1].text)})
    return {key for key, n in seen.items() if n >= max(3, len(pages) // 3)}


def _outline(document: pdfium.PdfDocument, pages: int) -> list[tuple[int, str, int, float | None]]:
    """(level, title, page index, destination top or None) of each outline entry that points at a page."""
    entries: list[tuple[int, str, int, float | None]] = []
    for item in document.get_toc(max_depth=8):
        if len(entries) >= _MAX_OUTLINE:
            break
        title = " ".join((item.get_title() or "").split())
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        if not title or index is None or not 0 <= index < pages:
            continue
        top: float | None = None
        view = dest.get_view()
        if view and view[0] == pdfium_c.PDFDEST_VIEW_XYZ and len(view[1]) >= 2 and view[1][1]:
            top = float(view[1][1])
        entries.append((item.level, title, index, top))
    return entries


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORDS_RE.findall(text)]


def _place_outline(pages: list[list[_Line]], outline: list[tuple[int, str, int, float | None]]
                   ) -> dict[int, list[tuple[int, int, str, bool]]]:
    """Where each outline entry goes: page index -> [(line index, level, title, replaces)], the line the heading
    stands before, and whether it replaces that line (the line is the title, a section number before it
    allowed)."""
    placed: dict[int, list[tuple[int, int, str, bool]]] = {}
    for level, title, index, top in outline:
        lines = pages[index]
        at = placed.setdefault(index, [])
        start = at[-1][0] + 1 if at else 0
        want = _words(title)
        where = None
        for k in range(start, len(lines)):
            words = _words(lines[k].text)
            if want and words[-len(want):] == want and _numbering(words[:-len(want)]):
                where = k
                break
        replaces = where is not None
        if where is None and top is not None:
            # the first line at or below the destination's top (a small tolerance for the line's own height)
            where = next((k for k in range(start, len(lines)) if lines[k].top <= top + 1.0), len(lines))
        at.append((start if where is None else where, min(level + 1, 6), title, replaces))
    return placed


def _numbering(words: list[str]) -> bool:
    """Whether *words*, before a heading's title on its line, are a section number (``1.1.3``, ``A.2``,
    ``Chapter 4``: one or two words, or any number of digits and single letters), or nothing."""
    return len(words) <= 2 or all(word.isdigit() or len(word) == 1 for word in words)


def _inferred_headings(pages: list[list[_Line]]) -> dict[float, int]:
    """Font size -> heading level for the sizes clearly larger than the body's (no outline)."""
    weight: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            if line.size > 0:
                weight[line.size] += len(line.text)
    if not weight:
        return {}
    body = weight.most_common(1)[0][0]
    sizes = sorted({line.size for lines in pages for line in lines
                    if line.size >= body * _HEADING_RATIO and len(line.text) <= _HEADING_MAX_CHARS}, reverse=True)
    return {size: level for level, size in enumerate(sizes[:_MAX_HEADING_LEVELS], start=1)}


def _escape(text: str) -> str:
    return "\\" + text if _ESCAPE_RE.match(text) else text


def _heading_text(text: str) -> str:
    return text.replace("#", "\\#").strip()


def _render_page(lines: list[_Line], headings: list[tuple[int, int, str, bool]], by_size: dict[float, int],
                 running: set[str]) -> list[str]:
    out: list[str] = []
    before: dict[int, list[tuple[int, str]]] = {}
    for where, level, title, _replaces in headings:
        before.setdefault(where, []).append((level, title))
    replaced = {where for where, _level, _title, replaces in headings if replaces}
    previous: _Line | None = None
    joined = False  # the previous line ended with a word PDFium marked as hyphenated
    for k in range(len(lines) + 1):
        for level, title in before.get(k, ()):
            out.extend(["", "#" * level + " " + _heading_text(title), ""])
            previous, joined = None, False
        if k == len(lines):
            break
        line = lines[k]
        if (k == 0 or k == len(lines) - 1) and len(lines) >= 3 and _DIGITS_RE.sub("#", line.text) in running:
            continue
        if k in replaced:
            continue  # the line the outline's heading repeats
        soft_end = line.text[-1:] in _SOFT_HYPHENS
        text = _CONTROL_RE.sub("", _BULLET_RE.sub("- ", _LEADER_RE.sub(" … ", line.text))).replace("\u00ad", "").strip()
        if not text:
            continue
        inferred = by_size.get(line.size) if by_size and _LETTER_RE.search(text) else None
        if inferred is not None and len(text) <= _HEADING_MAX_CHARS:
            out.extend(["", "#" * inferred + " " + _heading_text(text), ""])
            previous, joined = None, False
            continue
        if joined and out and out[-1]:
            out[-1] = out[-1] + text
        elif out and out[-1] and _HYPHENATED_RE.search(out[-1]) and text[:1].islower():
            out[-1] = out[-1][:-1] + text  # exam- / ple
        else:
            if line.paragraph or (previous is not None and previous.size and line.size and
                                  previous.top - line.top > _PARAGRAPH_GAP * max(previous.size, line.size)):
                out.append("")  # a gap wider than a line: a new paragraph
            out.append(_escape(text))
        previous = line
        joined = soft_end
    return out


def pdf_to_markdown(data: bytes, name: str, limits: DocumentLimits) -> PdfText:
    """Convert the PDF *data* (called *name*, for the title of last resort) within *limits*. Raises
    :class:`DocumentRefused` for a document that cannot be indexed."""
    deadline = Deadline(limits.time_limit)
    document = _open(data)
    try:
        count = len(document)
        if count == 0:
            raise DocumentRefused("unreadableDocument", "the PDF has no pages")
        if count > limits.max_pages:
            raise DocumentRefused("sizeLimit", f"{count} pages, more than the limit of {limits.max_pages} "
                                               "(DOCSCRAPER_DOCUMENT_MAX_PAGES)")
        pages: list[list[_Line]] = []
        for index in range(count):
            deadline.check(f"page {index + 1} of {count}")
            try:
                pages.append(_page_lines(document, index))
            except pdfium.PdfiumError as exc:
                raise DocumentRefused("unreadableDocument", f"page {index + 1} of {count} cannot be read ({exc})") from None
        tesseract = shutil.which("tesseract") if limits.ocr else None
        if tesseract is not None:
            for index, lines in enumerate(pages):
                if not lines:  # a page without a text layer: a scan
                    deadline.check(f"OCR of page {index + 1} of {count}")
                    pages[index] = _ocr_lines(document, index, tesseract, limits.ocr_languages, deadline)
        if not any(pages):
            why = ("OCR found no text either" if tesseract is not None else
                   "OCR is off (DOCSCRAPER_DOCUMENT_OCR)" if not limits.ocr else "OCR is on but tesseract is not installed")
            raise DocumentRefused("noTextLayer", f"none of its {count} page(s) has a text layer (a scan?); {why}")
        outline = _outline(document, count)
        metadata_title = " ".join((document.get_metadata_value("Title") or "").split())
        if metadata_title.casefold() in _PLACEHOLDER_TITLES:
            metadata_title = ""  # what a PDF writer puts where the author gave none
    finally:
        document.close()
    placed = _place_outline(pages, outline) if outline else {}
    by_size = {} if outline else _inferred_headings(pages)
    running = _running_lines(pages)
    out: list[str] = []
    for index, lines in enumerate(pages):
        out.extend(["", page_marker(index + 1), ""])
        out.extend(_render_page(lines, placed.get(index, []), by_size, running))
    markdown = "\n".join(out)
    title = metadata_title or _title_line(pages) or _first_heading(out) or name
    return PdfText(title=title, markdown=markdown, pages=count, outline=sum(len(v) for v in placed.values()))


def _title_line(pages: list[list[_Line]]) -> str:
    """The line of the first page with text that is set in the largest font, when that font is larger than the
    page's other lines (a title page's title)."""
    lines = next((lines for lines in pages if lines), [])
    sizes = sorted({line.size for line in lines if line.size > 0}, reverse=True)
    if len(sizes) < 2:
        return ""
    title = next(line.text for line in lines if line.size == sizes[0])
    return title if _LETTER_RE.search(title) and len(title) <= _HEADING_MAX_CHARS else ""


def _first_heading(lines: list[str]) -> str:
    for line in lines:
        if line.startswith("#"):
            return line.lstrip("#").strip().replace("\\#", "#")
    return ""
