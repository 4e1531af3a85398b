"""Small helpers on lxml elements that the extraction passes share (private to the package)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lxml import etree

_CSS_MODULE_HASH_RE = re.compile(r"_[A-Za-z0-9-]{4,6}$")

HEADING_NAMES = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: Permalink glyphs at the end of a heading (pilcrow, section sign, link emoji, a lone ``#``) and at its
#: start (Doxygen's diamond, ``&#9670;``), with the space beside them.
HEADING_TAIL_RE = re.compile(r"(?:\s+[#\u00b6\u00a7\U0001f517]+|[\u00b6\u00a7\U0001f517]+)\s*$")
HEADING_HEAD_RE = re.compile(r"^[\u25c6\u00b6\u00a7\U0001f517]+\s*")


class Node(etree.ElementBase):
    """An element of a parsed page: lxml's element with the two edits extraction makes to a tree.

    The parser makes every element one of these through lxml's ``ElementDefaultClassLookup``, which
    costs nothing per element (``lxml.html``'s element classes are looked up in Python, which costs
    more than parsing).
    """

    def drop_tree(self) -> None:
        """Remove the element and its content; the text after it stays where it was."""
        parent = self.getparent()
        if parent is None:
            return
        if self.tail:
            _append_before(self, self.tail)
        parent.remove(self)

    def drop_tag(self) -> None:
        """Remove the element but keep its content (text and children) in its place."""
        parent = self.getparent()
        if parent is None:
            return
        if self.text:
            _append_before(self, self.text)
        index = parent.index(self)
        children = list(self)
        for offset, child in enumerate(children):
            parent.insert(index + offset, child)  # a child moves with its tail
        if self.tail:
            if children:
                children[-1].tail = (children[-1].tail or "") + self.tail
            else:
                _append_before(self, self.tail)
        parent.remove(self)


def _append_before(el: Node, value: str) -> None:
    """Add ``value`` to the text just before ``el`` (the previous sibling's tail, or the parent's text)."""
    previous = el.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + value
    else:
        parent = el.getparent()
        parent.text = (parent.text or "") + value


def attr(el: Node, name: str) -> str:
    """The attribute's value, ``""`` when absent."""
    return el.get(name) or ""


def classes(el: Node, name: str = "class") -> list[str]:
    """The tokens of a space-separated attribute (``class``, ``rel``)."""
    value = el.get(name)
    return value.split() if value else []


def class_tokens(tokens: Iterable[str]) -> list[str]:
    """Lower-cased class tokens, each followed by its form without a CSS-module hash if it has one."""
    out: list[str] = []
    for token in tokens:
        token = token.lower()
        if token:
            out.append(token)
            if "_" in token:
                stripped = _CSS_MODULE_HASH_RE.sub("", token)
                if stripped != token:
                    out.append(stripped)
    return out


def tokens(el: Node, *, with_id: bool = True) -> list[str]:
    """Lower-cased class tokens (CSS-module hashes removed) and, unless told not to, the id."""
    out = class_tokens(classes(el))
    ident = el.get("id") if with_id else None
    if ident:
        out.append(ident.lower())
    return out


def collapse_ws(text: str) -> str:
    return " ".join(text.split())


def heading_words(text: str) -> str:
    """A heading's text with white space collapsed and its permalink glyphs, at either end, removed."""
    return HEADING_HEAD_RE.sub("", HEADING_TAIL_RE.sub("", collapse_ws(text)))


def text(el: Node) -> str:
    """The text under ``el`` (its tail excluded)."""
    return str(etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def text_len(el: Node) -> int:
    """Non-whitespace characters of the text under ``el``."""
    return len("".join(text(el).split()))  # str.split() splits on exactly what \s matches


def has_descendant(el: Node, names: Iterable[str]) -> bool:
    return next(el.iterdescendants(*names), None) is not None


def has_ancestor(el: Node, names: Iterable[str]) -> bool:
    return next(el.iterancestors(*names), None) is not None


def child_elements(el: Node, names: frozenset[str] | None = None) -> list[Node]:
    """The element children of ``el``, only those named ``names`` when given."""
    return [child for child in el if isinstance(child.tag, str) and (names is None or child.tag in names)]


def prepend(parent: Node, child: Node) -> None:
    """Insert ``child`` as the first node of ``parent``, before its leading text."""
    child.tail = parent.text
    parent.text = None
    parent.insert(0, child)


def replace(old: Node, new: Node) -> None:
    """Put ``new`` (detached or not) where ``old`` is; ``old``'s tail stays in place."""
    parent = old.getparent()
    if parent is None:
        return
    if new.getparent() is not None:
        new.drop_tree()
    new.tail = old.tail
    old.tail = None
    parent.replace(old, new)


def replace_with_text(el: Node, value: str) -> None:
    """Replace ``el`` by the text ``value``, joined to the text before it."""
    parent = el.getparent()
    if parent is None:
        return
    joined = value + (el.tail or "")
    previous = el.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + joined
    else:
        parent.text = (parent.text or "") + joined
    el.tail = None
    parent.remove(el)


def is_under(el: Node, root: Node) -> bool:
    """Whether ``el`` is ``root`` or one of its descendants."""
    return el is root or any(ancestor is root for ancestor in el.iterancestors())
