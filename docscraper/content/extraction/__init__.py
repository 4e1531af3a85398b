"""Main-content extraction: a fetched page becomes normalized Markdown plus page metadata.

:func:`extract_html` finds the page's main content, strips site chrome (navigation, sidebars, headers and footers,
"edit this page" links, cookie banners, heading anchors, copy buttons, hidden elements) and converts what is left to
Markdown: ATX headings, ``-`` bullets, fenced code blocks that keep their language, GitHub pipe tables, absolute links.
:func:`extract_markdown` does the same for pages served as Markdown or plain text. Both end in
:func:`normalize_markdown`, since the pipelines hash the Markdown: the same HTML always gives the same bytes. One job
per module, in a page's order: :mod:`.parsing`, :mod:`.chrome`, :mod:`.structure`, :mod:`.main_content`, :mod:`.code`,
:mod:`.converter`, :mod:`.links`, then :mod:`.html_pages` / :mod:`.markdown_pages` and :mod:`.normalize`. Nothing here
raises on bad input: an :class:`Extracted` with whatever could be recovered (at worst empty Markdown) and a log line.
How each step works, and the libraries chosen: docs/explanation/extraction.md.
"""

from __future__ import annotations

from docscraper.content.extraction.html_pages import extract_html
from docscraper.content.extraction.markdown_pages import extract_markdown
from docscraper.content.extraction.normalize import normalize_markdown
from docscraper.content.extraction.parsing import MAX_HTML_CHARS
from docscraper.content.extraction.result import Extracted

__all__ = ["MAX_HTML_CHARS", "Extracted", "extract_html", "extract_markdown", "normalize_markdown"]
