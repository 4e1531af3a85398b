"""Main-content selection: the element of a page that holds its documentation, per generator."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree
from lxml.html import HtmlElement

from docscraper.content.extraction._dom import attr, classes, text_len

__all__ = ["find_main"]


@dataclass(frozen=True)
class _Selector:
    """A simple selector: any of tag name, one class token, id, one attribute value."""

    tag: str | None = None
    cls: str | None = None
    ident: str | None = None
    attr: tuple[str, str] | None = None

    def matches(self, el: HtmlElement) -> bool:
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


def _index_selectors(kind: str) -> dict[str, tuple[int, ...]]:
    """Selector positions keyed by what an element must have to match: a class, an id, an attribute or a name."""
    index: dict[str, list[int]] = {}
    for position, selector in enumerate(_SELECTORS):
        if selector.cls is not None:
            key, key_kind = selector.cls, "class"
        elif selector.ident is not None:
            key, key_kind = selector.ident, "id"
        elif selector.attr is not None:
            key, key_kind = selector.attr[0], "attr"
        else:
            key, key_kind = str(selector.tag), "name"
        if key_kind == kind:
            index.setdefault(key, []).append(position)
    return {key: tuple(positions) for key, positions in index.items()}


_SELECTORS_BY_NAME = _index_selectors("name")
_SELECTORS_BY_CLASS = _index_selectors("class")
_SELECTORS_BY_ID = _index_selectors("id")
_SELECTORS_BY_ATTR = _index_selectors("attr")


def _candidate_selectors(el: HtmlElement) -> list[int]:
    """Positions of the selectors ``el`` might match, once per class, id or attribute that could."""
    found = list(_SELECTORS_BY_NAME.get(el.tag, ()))
    value = el.get("class")
    if value:
        for token in value.split():
            found.extend(_SELECTORS_BY_CLASS.get(token, ()))
    ident = el.get("id")
    if ident:
        found.extend(_SELECTORS_BY_ID.get(ident, ()))
    for name in ("itemprop", "role"):
        if el.get(name) is not None:
            found.extend(_SELECTORS_BY_ATTR.get(name, ()))
    return found


def find_main(body: HtmlElement) -> HtmlElement:
    """The most specific known container that holds enough of the page's text, else ``body``."""
    matches: list[list[HtmlElement]] = [[] for _ in _SELECTORS]
    for el in body.iterdescendants(etree.Element):
        for index in _candidate_selectors(el):
            if _SELECTORS[index].matches(el):
                matches[index].append(el)
    body_len = text_len(body)
    if not body_len:
        return body
    lengths: dict[HtmlElement, int] = {}

    def length(el: HtmlElement) -> int:
        if el not in lengths:
            lengths[el] = text_len(el)
        return lengths[el]

    for index, found in enumerate(matches):
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
        return best
    return body
