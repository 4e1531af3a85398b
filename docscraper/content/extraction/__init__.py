"""Main-content extraction: a fetched page becomes normalized Markdown plus page metadata.

:func:`extract_html` finds the page's main content element, strips site chrome (navigation, sidebars,
headers and footers, "edit this page" links, cookie banners, heading anchors, copy buttons, hidden
elements) and converts what is left to Markdown: ATX headings, ``-`` bullets, fenced code blocks that
keep their language, GitHub pipe tables, absolute links. :func:`extract_markdown` does the same job for
pages served as Markdown or plain text (``.md``, ``llms.txt``). The Markdown goes through
:func:`normalize_markdown` because the pipelines hash it to detect changed pages: the same HTML must
always give the same bytes.

One job per module, in the order a page goes through them:

* :mod:`.parsing`: decoding (by :mod:`docscraper.content.encoding`) and lxml's HTML parser;
* :mod:`.chrome`: what site chrome looks like, and its removal;
* :mod:`.structure`: tab labels, embedded images, code tables, layout tables, deep nesting;
* :mod:`.main_content`: which element holds the documentation;
* :mod:`.code`: code block languages and verbatim code text;
* :mod:`.converter`: the main content to Markdown, with html-to-markdown;
* :mod:`.links`: absolute, safe URLs;
* :mod:`.html_pages` and :mod:`.markdown_pages`: the two entry points;
* :mod:`.normalize`: the canonical Markdown that is hashed.

Only public APIs of lxml and html-to-markdown are used; the measurements behind the choice of
libraries are in ``benchmarks/EXTRACTION.md``. Nothing here raises on bad input: undecodable bytes,
malformed or hostile HTML and empty pages give an :class:`Extracted` with whatever could be recovered
(at worst empty Markdown) and a log line.
"""

from __future__ import annotations

from docscraper.content.extraction.html_pages import extract_html
from docscraper.content.extraction.markdown_pages import extract_markdown
from docscraper.content.extraction.normalize import normalize_markdown
from docscraper.content.extraction.parsing import MAX_HTML_CHARS
from docscraper.content.extraction.result import Extracted

__all__ = ["MAX_HTML_CHARS", "Extracted", "extract_html", "extract_markdown", "normalize_markdown"]
