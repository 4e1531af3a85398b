"""Main-content selection: the element of a page that holds its documentation, per generator.

A container chosen without the page's ``<h1>`` gets the document's own header back: the block just before
it that holds the ``<h1>`` with words of its own beside it (asciidoc's and asciidoctor's ``<div
id="header">``: a man page's title and its NAME line), or only an ``<h1>`` that says what the page's
``<title>`` says (an asciidoc article's header), is moved to the container's start. A block that is only
another heading (a site name in a menu bar) or mostly links stays out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from docscraper.content.extraction._dom import Node, attr, classes, collapse_ws, has_descendant, prepend, text, text_len

__all__ = ["find_main"]


@dataclass(frozen=True)
class _Selector:
    """A simple selector: any of tag name, one class token, id, one attribute value."""

    tag: str | None = None
    cls: str | None = None
    ident: str | None = None
    attr: tuple[str, str] | None = None

    def matches(self, el: Node) -> bool:
        if self.tag is not None and el.tag != self.tag:
            return False
        if self.cls is not None and self.cls not in classes(el):
            return False
        if self.ident is not None and el.get("id") != self.ident:
            return False
        return self.attr is None or attr(el, self.attr[0]).lower() == self.attr[1]


#: Generator-specific main-content containers, most specific first. Trusted even when they hold a
#: modest share of the page's text (the rest is chrome we failed to recognize).
_SPECIFIC_MAIN = (
    _Selector(attr=("itemprop", "articlebody")),  # Read the Docs theme
    _Selector(tag="article", cls="md-content__inner"),  # Material for MkDocs
    _Selector(cls="theme-doc-markdown"),  # Docusaurus
    _Selector(cls="sl-markdown-content"),  # Starlight
    _Selector(cls="vp-doc"),  # VitePress
    _Selector(cls="td-content"),  # Hugo Docsy
    _Selector(cls="markdown-section"),  # GitBook (legacy), docsify
    _Selector(tag="div", cls="body"),  # Sphinx basic, alabaster, classic, pydoctheme
    _Selector(tag="section", ident="main-content"),  # rustdoc
    _Selector(ident="apicontent"),  # Node.js API docs
    _Selector(cls="bd-article"),  # PyData Sphinx theme
    _Selector(tag="div", cls="contents"),  # Doxygen
    _Selector(cls="contentContainer"),  # Javadoc (before JDK 9)
    _Selector(cls="md-content"),  # MkDocs Material wrapper
    _Selector(cls="rst-content"),  # Read the Docs wrapper
)
#: Generic containers: accepted when they hold a clear share of the text.
_GENERIC_MAIN = (
    _Selector(tag="article"),
    _Selector(attr=("role", "main")),
    _Selector(tag="main"),
    _Selector(ident="main-content"),
    _Selector(ident="doc-content"),  # Doxygen wrapper
    _Selector(cls="page-inner"),  # GitBook
    _Selector(cls="document"),  # Sphinx
    _Selector(ident="content"),
    _Selector(cls="content"),
    _Selector(ident="main"),
    _Selector(cls="main"),
)
_SELECTORS = _SPECIFIC_MAIN + _GENERIC_MAIN
_SPECIFIC_SHARE = 0.15
_GENERIC_SHARE = 0.35


def _index(key: Callable[[_Selector], str | None]) -> dict[str, tuple[int, ...]]:
    """Selector positions by the value ``key`` gives (selectors without one left out)."""
    index: dict[str, list[int]] = {}
    for position, selector in enumerate(_SELECTORS):
        value = key(selector)
        if value is not None:
            index.setdefault(value, []).append(position)
    return {value: tuple(positions) for value, positions in index.items()}


# Each selector is indexed by one thing an element must have to match it: a class, else an id, else an
# attribute, else its name.
_BY_CLASS = _index(lambda s: s.cls)
_BY_ID = _index(lambda s: s.ident if s.cls is None else None)
_BY_ATTR = _index(lambda s: s.attr[0] if s.attr and s.cls is None and s.ident is None else None)
_BY_NAME = _index(lambda s: s.tag if s.cls is None and s.ident is None and s.attr is None else None)


@functools.lru_cache(maxsize=4096)
def _class_selectors(value: str) -> tuple[int, ...]:
    """The selectors indexed by a token of this ``class`` value (pages repeat their values)."""
    return tuple(index for token in value.split() for index in _BY_CLASS.get(token, ()))


def _matches(body: Node) -> list[list[Node]]:
    """For each selector, the elements below ``body`` that it matches, in document order."""
    matches: list[list[Node]] = [[] for _ in _SELECTORS]
    for el in body.iterdescendants(etree.Element):
        found = _BY_NAME.get(el.tag, ())
        keys = el.keys()
        if keys:
            if "class" in keys:
                found += _class_selectors(el.get("class"))
            if "id" in keys:
                found += _BY_ID.get(el.get("id"), ())
            for name in ("itemprop", "role"):
                if name in keys:
                    found += _BY_ATTR.get(name, ())
        for index in found:
            if _SELECTORS[index].matches(el):
                matches[index].append(el)
    return matches


def find_main(body: Node) -> Node:
    """The most specific known container that holds enough of the page's text, else ``body``."""
    body_len = text_len(body)
    if not body_len:
        return body
    lengths: dict[Node, int] = {}

    def length(el: Node) -> int:
        if el not in lengths:
            lengths[el] = text_len(el)
        return lengths[el]

    for index, found in enumerate(_matches(body)):
        if not found:
            continue
        found_set = set(found)
        outermost = [el for el in found if not any(a in found_set for a in el.iterancestors())]
        best = max(outermost, key=length)
        specific = index < len(_SPECIFIC_MAIN)
        share = _SPECIFIC_SHARE if specific else _GENERIC_SHARE
        if length(best) < share * body_len or not length(best):
            continue
        # Several sibling <article>s (a blog index): no single one is the page.
        if not specific and len(outermost) > 1 and length(best) < 0.6 * sum(map(length, outermost)):
            continue
        _take_own_header(body, best)
        return best
    return body


def _link_chars(el: Node) -> int:
    return sum(text_len(a) for a in el.iterdescendants("a"))


def _take_own_header(body: Node, main: Node) -> None:
    """Move the document's own header (the block holding the page's ``<h1>`` just before ``main``) into
    ``main``, when ``main`` has no ``<h1>`` of its own."""
    if has_descendant(main, ("h1",)):
        return
    h1 = next(body.iter("h1"), None)
    if h1 is None:
        return
    # The branch of main's ancestry that the header sits beside: main, or the ancestor of main whose
    # previous sibling holds the <h1>.
    branch = main
    while branch is not body:
        block = branch.getprevious()
        while block is not None and not isinstance(block.tag, str):
            block = block.getprevious()
        if block is not None:
            if block is h1 or not any(a is block for a in h1.iterancestors()):
                return  # the <h1> is not in the block just before: no header of main's
            break
        branch = branch.getparent()
        if branch is None:
            return
    else:
        return
    words = text_len(block)
    if words >= text_len(main) or 2 * _link_chars(block) >= words:
        return
    if words - text_len(h1) <= 0 and not _is_page_title(body, h1):
        return  # only a heading, and not the page's title: a site name in a menu bar
    prepend(main, block)


def _is_page_title(body: Node, h1: Node) -> bool:
    """Whether ``h1`` says what the page's ``<title>`` says (an asciidoc article's header holds only it)."""
    title = body.getroottree().findtext(".//title")
    return bool(title) and collapse_ws(title).casefold() == collapse_ws(text(h1)).casefold()
