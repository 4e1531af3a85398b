"""Small helpers on lxml elements that the extraction passes share (private to the package)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lxml import etree
from lxml.html import HtmlElement

_CSS_MODULE_HASH_RE = re.compile(r"_[A-Za-z0-9-]{4,6}$")

HEADING_NAMES = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def attr(el: HtmlElement, name: str) -> str:
    """The attribute's value, ``""`` when absent."""
    return el.get(name) or ""


def classes(el: HtmlElement, name: str = "class") -> list[str]:
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


def tokens(el: HtmlElement, *, with_id: bool = True) -> list[str]:
    """Lower-cased class tokens (CSS-module hashes removed) and, unless told not to, the id."""
    out = class_tokens(classes(el))
    ident = el.get("id") if with_id else None
    if ident:
        out.append(ident.lower())
    return out


def collapse_ws(text: str) -> str:
    return " ".join(text.split())


def text(el: HtmlElement) -> str:
    """The text under ``el`` (its tail excluded)."""
    return str(etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def text_len(el: HtmlElement) -> int:
    """Non-whitespace characters of the text under ``el``."""
    return len("".join(text(el).split()))  # str.split() splits on exactly what \s matches


def has_descendant(el: HtmlElement, names: Iterable[str]) -> bool:
    return next(el.iterdescendants(*names), None) is not None


def has_ancestor(el: HtmlElement, names: Iterable[str]) -> bool:
    return next(el.iterancestors(*names), None) is not None


def child_elements(el: HtmlElement, names: frozenset[str] | None = None) -> list[HtmlElement]:
    """The element children of ``el``, only those named ``names`` when given."""
    return [child for child in el if isinstance(child.tag, str) and (names is None or child.tag in names)]


def prepend(parent: HtmlElement, child: HtmlElement) -> None:
    """Insert ``child`` as the first node of ``parent``, before its leading text."""
    child.tail = parent.text
    parent.text = None
    parent.insert(0, child)


def replace(old: HtmlElement, new: HtmlElement) -> None:
    """Put ``new`` (detached or not) where ``old`` is; ``old``'s tail stays in place."""
    parent = old.getparent()
    if parent is None:
        return
    if new.getparent() is not None:
        new.drop_tree()
    new.tail = old.tail
    old.tail = None
    parent.replace(old, new)


def replace_with_text(el: HtmlElement, value: str) -> None:
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


def is_under(el: HtmlElement, root: HtmlElement) -> bool:
    """Whether ``el`` is ``root`` or one of its descendants."""
    return el is root or any(ancestor is root for ancestor in el.iterancestors())
