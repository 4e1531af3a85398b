"""reStructuredText with docutils: its HTML5 writer, then the HTML extraction (headings, code, tables, lists).

docutils runs with file inclusion (``.. include::``, ``:file:`` options) and raw HTML off, so a document cannot
make the crawl read a file of the machine or put markup of its own in the index, and with its messages
silenced: a directive or role it does not know (Sphinx's) stays in the text instead of failing the page."""

from __future__ import annotations

from html import escape

from docscraper.content.documents.base import DocumentRefused
from docscraper.content.encoding import body_encoding, decode_body
from docscraper.content.extraction import extract_html
from docscraper.content.extraction.result import Extracted

__all__ = ["rst_to_extracted"]

_SETTINGS = {
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "report_level": 5,  # no system messages in the output
    "halt_level": 5,  # never stop on an error
    "warning_stream": False,
    "embed_stylesheet": False,
    "input_encoding": "unicode",
}


def rst_to_extracted(body: bytes, url: str) -> Extracted:
    """The Markdown and title of a reStructuredText document."""
    from docutils.core import publish_parts

    text = decode_body(body, body_encoding(body, "text/plain", html=False).encoding)
    try:
        parts = publish_parts(source=text, source_path=url, writer="html5", settings_overrides=_SETTINGS)
    except Exception as exc:  # docutils' own errors on input it cannot parse
        raise DocumentRefused("unreadableDocument", f"docutils cannot read it: {exc.__class__.__name__}: {exc}") from None
    title = parts.get("title", "")
    html = (f"<html><head><title>{escape(title)}</title></head><body><main>{parts.get('html_title', '')}"
            f"{parts.get('html_subtitle', '')}{parts.get('body', '')}</main></body></html>")
    return extract_html(html, url, encoding="utf-8")
