"""Documents the tests make themselves: PDFs (reportlab), Word files (python-docx), notebooks, EPUB (ebooklib), and
the hostile ones (encrypted, truncated, scanned, a looping page tree, a zip bomb)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence

__all__ = ["docx_file", "epub_file", "image_only_pdf", "looping_pdf", "notebook_file", "pdf_file", "scanned_pdf", "zip_bomb_docx"]

#: one page: its heading (None for none) and its lines of body text
Page = tuple[str | None, Sequence[str]]


def pdf_file(pages: Sequence[Page], *, outline: bool = True, title: str | None = None,
             user_password: str | None = None, heading_size: int = 18, table: Sequence[Sequence[str]] = (),
             numbered: bool = False) -> bytes:
    """A PDF with one page per entry of *pages*: the heading in a larger bold font (an outline entry for it with
    *outline*), the lines below it; *table* is drawn as rows of cells on the last page; *user_password*
    encrypts it (an empty one: it opens without a password); *numbered* sets a section number (``N.1.N``) before
    each heading on the page, which its outline entry does not have, as Texinfo and LaTeX manuals do, and points
    the entry just below the heading's baseline."""
    from reportlab.lib import pdfencrypt
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    encrypt = None
    if user_password is not None:
        encrypt = pdfencrypt.StandardEncryption(user_password, ownerPassword="owner-secret")
    pdf = canvas.Canvas(buffer, encrypt=encrypt)
    pdf.setTitle(title or "untitled")
    for number, (heading, lines) in enumerate(pages, start=1):
        y = 760.0
        if heading:
            pdf.setFont("Helvetica-Bold", heading_size)
            pdf.drawString(72, y, f"{number}.1.{number} {heading}" if numbered else heading)
            if outline:
                if numbered:  # the destination just below the heading's baseline, where some manuals' point
                    pdf.bookmarkPage(f"page{number}", fit="XYZ", left=0, top=y - 2)
                else:
                    pdf.bookmarkPage(f"page{number}")
                pdf.addOutlineEntry(heading, f"page{number}", level=0)
            y -= heading_size * 2
        pdf.setFont("Helvetica", 11)
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 14
        if number == len(pages) and table:
            y -= 14
            for row in table:
                for column, cell in enumerate(row):
                    pdf.drawString(72 + 150 * column, y, cell)
                y -= 16
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def scanned_pdf(pages: int = 2) -> bytes:
    """A PDF whose pages are drawings only, as a scan without OCR is: no text layer."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for _ in range(pages):
        for row in range(40):
            pdf.rect(72, 760 - row * 16, 300 + (row % 7) * 20, 10, fill=1)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def image_only_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """A scan of real text: each page's lines typeset in a large font, rendered to a picture (pypdfium2, 150 dpi),
    and the pictures put in a new PDF, without a text layer, as a scanner would."""
    import pypdfium2 as pdfium
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    typeset = pdf_file([(None, lines) for lines in pages], outline=False)
    source = pdfium.PdfDocument(typeset)
    buffer = io.BytesIO()
    scan = canvas.Canvas(buffer)
    try:
        for index in range(len(source)):
            page = source[index]
            picture = page.render(scale=150 / 72).to_pil()
            width, height = page.get_size()
            scan.drawImage(ImageReader(picture), 0, 0, width=width, height=height)
            scan.showPage()
            page.close()
    finally:
        source.close()
    scan.save()
    return buffer.getvalue()


def looping_pdf() -> bytes:
    """A PDF whose page tree contains itself (its /Kids name the /Pages node), with a correct xref table."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        None,  # the content stream, below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    stream = b"BT /F1 12 Tf 72 720 Td (A page in a looping tree) Tj ET"
    objects[3] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + (body or b"") + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def docx_file(title: str, sections: Sequence[tuple[str, Sequence[str]]], *, bullets: Sequence[str] = (),
              table: Sequence[Sequence[str]] = ()) -> bytes:
    """A Word document: *title* as its core title and first heading, each section a level-2 heading and its
    paragraphs, then *bullets* as a bulleted list and *table* as a table."""
    from docx import Document

    document = Document()
    document.core_properties.title = title
    document.add_heading(title, 1)
    for heading, paragraphs in sections:
        document.add_heading(heading, 2)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    for bullet in bullets:
        document.add_paragraph(bullet, style="List Bullet")
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def zip_bomb_docx(unpacked: int = 64 * 1024 * 1024) -> bytes:
    """A ``.docx`` whose document.xml inflates to *unpacked* bytes from a few dozen kilobytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b" " * (1024 * 1024)
            for _ in range(unpacked // len(block)):
                member.write(block)
    return buffer.getvalue()


def notebook_file(cells: Sequence[tuple[str, str, Sequence[str]]], *, language: str = "python") -> bytes:
    """A Jupyter notebook (nbformat 4.5) of (kind, source, stream outputs) cells."""
    notebook = {
        "cells": [
            {"cell_type": kind, "id": f"cell-{n}", "metadata": {}, "source": source,
             **({"execution_count": n, "outputs": [{"output_type": "stream", "name": "stdout", "text": text}
                                                    for text in outputs]} if kind == "code" else {})}
            for n, (kind, source, outputs) in enumerate(cells, start=1)
        ],
        "metadata": {"kernelspec": {"name": language, "language": language, "display_name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebook).encode()


def epub_file(title: str, chapters: Sequence[tuple[str, str]]) -> bytes:
    """An EPUB book of (heading, paragraph) chapters, in that reading order."""
    import tempfile
    from pathlib import Path

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("docscraper-test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for number, (heading, text) in enumerate(chapters, start=1):
        chapter = epub.EpubHtml(title=heading, file_name=f"chapter{number}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{heading}</h1><p>{text}</p></body></html>"
        book.add_item(chapter)
        items.append(chapter)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = items
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "book.epub"
        epub.write_epub(str(path), book)
        return path.read_bytes()
