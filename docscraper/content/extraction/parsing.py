"""Parsing: page bytes decoded (by :mod:`docscraper.content.encoding`, as the spider decodes) and parsed by lxml.

The tree is lxml's, built by libxml2's HTML parser (the parser Beautiful Soup's ``"lxml"`` builder
drives) at a twentieth of the cost of building Beautiful Soup's tree from it (``benchmarks/EXTRACTION.md``).
Comments and processing instructions are dropped while parsing.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading

from lxml import etree

from docscraper.content.encoding import body_encoding, decode_body
from docscraper.content.extraction._dom import Node

__all__ = ["MAX_HTML_CHARS", "decode", "parse", "prepare_markup", "sanitize_text", "truncation"]

logger = logging.getLogger(__name__)

#: Decoded HTML beyond this many characters is cut off before parsing; documentation pages are far
#: smaller, and parsing cost grows linearly, so this bounds the work per page.
MAX_HTML_CHARS = 3_000_000

#: Raw bytes read before decoding (UTF-8 needs at most 4 bytes a character).
_MAX_HTML_BYTES = 4 * MAX_HTML_CHARS

_CONTROL_CHARS_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]|[\ud800-\udfff]")
_XML_DECL_RE = re.compile(r"\A\s*<\?xml[^>]*\?>", re.I)


def decode(html: str | bytes, encoding: str | None) -> str:
    """``html`` as text: bytes are decoded as :func:`docscraper.content.encoding.body_encoding` decides, with
    ``encoding`` (from the HTTP ``Content-Type``) as the declared charset when given."""
    if isinstance(html, str):
        return html
    data = bytes(html[:_MAX_HTML_BYTES])
    content_type = f"text/html; charset={encoding}" if encoding else None
    return decode_body(data, body_encoding(data, content_type).encoding)


def truncation(html: str | bytes, decoded: str) -> str | None:
    """What :func:`decode` and :func:`prepare_markup` cut from ``html`` (``decoded`` is what decode made of it),
    in words for the page's report entry, or None when the whole page is extracted."""
    if isinstance(html, bytes | bytearray | memoryview) and len(html) > _MAX_HTML_BYTES:
        return f"truncated: the page's {len(html):,} bytes were cut to the first {MAX_HTML_CHARS:,} characters"
    if len(decoded) > MAX_HTML_CHARS:
        return f"truncated: the page's {len(decoded):,} characters were cut to the first {MAX_HTML_CHARS:,}"
    return None


def sanitize_text(text: str) -> str:
    """``text`` without the characters that are never content (and that lxml rejects)."""
    # lxml rejects NUL and lone surrogates; other C0 controls are never content.
    if _CONTROL_CHARS_RE.search(text):
        text = _CONTROL_CHARS_RE.sub("", text)
    return text.replace("\x0c", " ")


def prepare_markup(text: str) -> str:
    """Decoded HTML made safe to parse: bounded in size (:func:`truncation` says what was cut), sanitized,
    without an XML declaration."""
    text = text[:MAX_HTML_CHARS]
    text = sanitize_text(text).lstrip("\ufeff")
    text = _XML_DECL_RE.sub("", text, count=1)
    if "<" not in text:
        text = "<html><body><p>" + text + "</p></body></html>"
    return text


_parsers = threading.local()


def _parser(encoding: str | None) -> etree.HTMLParser:
    # One parser per thread and encoding: an lxml parser is not meant to be shared between threads.
    key = encoding or ""
    cache: dict[str, etree.HTMLParser] | None = getattr(_parsers, "by_encoding", None)
    if cache is None:
        cache = _parsers.by_encoding = {}
    parser = cache.get(key)
    if parser is None:
        parser = cache[key] = etree.HTMLParser(
            encoding=encoding, remove_comments=True, remove_pis=True, recover=True, huge_tree=False
        )
        parser.set_element_class_lookup(etree.ElementDefaultClassLookup(element=Node))
    return parser


#: Elements nested deeper than this are not built by the fallback parser; their text is kept.
MAX_PARSE_DEPTH = 200


class _DepthCappedTarget:
    """A parser target that builds the tree of a pathologically nested page.

    libxml2 stops building a tree at 256 levels (2,048 with its ``huge`` option) and drops the rest of
    the page. Its event interface has no such limit: this target builds the elements down to
    :data:`MAX_PARSE_DEPTH` and keeps the text of those below as text of the deepest one built.
    """

    def __init__(self) -> None:
        self.root: Node = _parser(None).makeelement("html")
        self.stack: list[Node] = [self.root]
        self.skipped = 0  # open elements not built
        self.started = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if not self.started and tag == "html":
            self.started = True
            self.stack.append(self.root)
            return
        self.started = True
        if self.skipped or len(self.stack) > MAX_PARSE_DEPTH:
            self.skipped += 1
            return
        try:
            el = etree.SubElement(self.stack[-1], tag)
        except ValueError:  # a name lxml cannot hold: keep its content, not the element
            self.skipped += 1
            return
        for key, value in attrib.items():
            with contextlib.suppress(ValueError):
                el.set(key, value)
        self.stack.append(el)

    def end(self, tag: str) -> None:
        if self.skipped:
            self.skipped -= 1
        elif len(self.stack) > 1:
            self.stack.pop()

    def data(self, data: str) -> None:
        parent = self.stack[-1]
        if len(parent):
            last = parent[-1]
            last.tail = (last.tail or "") + data
        else:
            parent.text = (parent.text or "") + data

    def close(self) -> Node:
        return self.root


def _parse_capped(markup: str) -> Node:
    target = _DepthCappedTarget()
    parser = etree.HTMLParser(target=target, remove_comments=True, remove_pis=True, recover=True)
    parser.feed(markup)
    root: Node = parser.close()
    return root


def _too_deep(parser: etree.HTMLParser) -> bool:
    return any(error.type_name == "ERR_RESOURCE_LIMIT" for error in parser.error_log)


def _document(data: str | bytes, parser: etree.HTMLParser) -> Node | None:
    root: Node | None = etree.fromstring(data, parser)
    if root is not None and root.tag != "html":  # a fragment lxml did not wrap
        html = parser.makeelement("html")
        html.append(root)
        root = html
    return root


def parse(markup: str) -> Node:
    """The ``<html>`` element of ``markup`` (prepared by :func:`prepare_markup`), parsed leniently.

    Every element is a :class:`~docscraper.content.extraction._dom.Node`.
    """
    parser = _parser(None)
    try:
        root = _document(markup, parser)
    except (ValueError, etree.LxmlError):
        # As Beautiful Soup does when lxml refuses a string: try again with its UTF-8 bytes.
        parser = _parser("utf-8")
        try:
            root = _document(markup.encode("utf-8", "replace"), parser)
        except etree.LxmlError:
            root = None
    if root is None:
        return _document("<html><body></body></html>", _parser(None)) or parser.makeelement("html")
    if _too_deep(parser):
        logger.info("Page nested beyond lxml's depth limit; parsed with a depth cap instead")
        return _parse_capped(markup)
    return root
