"""The images of a page's main content: what extraction records about each one.

:func:`html_images` reads the ``<img>`` elements left in a page's main content once its chrome is gone (an SVG
``<object>`` is made an ``<img>`` first), :func:`markdown_images` a Markdown page's ``![alt](src "title")``. Each
image is an :class:`ImageRef`: absolute URL, alt text, the caption of the ``<figure>`` around it, ``title``.
``data:`` URIs, tracking pixels (``width`` and ``height`` at most 1) and sources with no ``http``, ``https`` or
``file`` URL are skipped; lazy loading is undone (:func:`image_source`, which the Markdown converter uses too). The
state store keeps them as child records of their page. What counts as a caption, and lazy loading:
docs/explanation/vector-index.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lxml.etree import ElementBase

from docscraper.content.markdown import fenced_lines

__all__ = ["MAX_IMAGES", "ImageRef", "html_images", "image_alt", "image_source", "markdown_images"]

#: Images recorded per page at most; a page beyond that is a gallery or hostile, not documentation.
MAX_IMAGES = 500


@dataclass(frozen=True)
class ImageRef:
    """One image of a page's main content, in document order.

    ``url`` is absolute; ``alt`` is the alt text (``""`` when none); ``caption`` the text of the
    enclosing figure's caption, or ``None``; ``title`` the ``title`` attribute, or ``None``.
    """

    url: str
    alt: str
    caption: str | None = None
    title: str | None = None


_LAZY_SRC_ATTRIBUTES = ("data-src", "data-original", "data-lazy-src")
_SRCSET_ATTRIBUTES = ("srcset", "data-srcset")
_PLACEHOLDER_RE = re.compile(
    r"(?:^|/)[^/]*(?:blank|spacer|placeholder|transparent|pixel|lazy|loading)[^/]*\.(?:gif|png|svg)$", re.I
)
_DESCRIPTOR_RE = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)([wx])$", re.I)
_DIMENSION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:px)?\s*$", re.I)
_SCHEMES = frozenset({"http", "https", "file"})


def _attr(el: ElementBase, name: str) -> str:
    return (el.get(name) or "").strip()


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _is_placeholder(src: str) -> bool:
    return not src or src.lower().startswith("data:") or _PLACEHOLDER_RE.search(src.split("?")[0]) is not None


def _largest_candidate(srcset: str) -> str:
    """The URL of the largest candidate of a ``srcset`` (width or density descriptor; the first on ties)."""
    best, best_size = "", -1.0
    position, length = 0, len(srcset)
    while position < length:
        while position < length and (srcset[position].isspace() or srcset[position] == ","):
            position += 1
        start = position
        while position < length and not srcset[position].isspace():
            position += 1
        url = srcset[start:position]
        descriptor = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            end = srcset.find(",", position)
            end = length if end == -1 else end
            descriptor = srcset[position:end].strip()
            position = end + 1
        if not url or url.lower().startswith("data:"):
            continue
        match = _DESCRIPTOR_RE.match(descriptor.split()[0] if descriptor else "1x")
        size = float(match.group(1)) if match else 1.0
        if size > best_size:
            best, best_size = url, size
    return best


_FILE_NAME_RE = re.compile(r"^\S+\.(?:png|jpe?g|gif|svg|webp|avif|bmp|ico|tiff?)$", re.IGNORECASE)


def image_alt(img: ElementBase) -> str:
    """The alt text of an ``<img>``, white space collapsed; ``""`` when it only repeats the image's file
    (Sphinx writes the path, ``../_images/x.png``, as the alt of an image given no ``:alt:``): a path
    tells a reader or a question nothing, and would be embedded with the page's text."""
    alt = _collapse(_attr(img, "alt"))
    if not alt or not _FILE_NAME_RE.match(alt):
        return alt
    name = alt.rsplit("/", 1)[-1].lower()
    sources = [_attr(img, "src"), image_source(img)]
    return "" if any(src and urlsplit(src).path.rsplit("/", 1)[-1].lower() == name for src in sources) else alt


def image_source(img: ElementBase) -> str:
    """The address an ``<img>`` shows once its page's scripts have run (``""`` when it has none)."""
    for name in _LAZY_SRC_ATTRIBUTES:
        value = _attr(img, name)
        if value and not value.lower().startswith("data:"):
            return value
    src = _attr(img, "src")
    if not _is_placeholder(src):
        return src
    holders = [img]
    picture = img.getparent()
    if picture is not None and picture.tag == "source":  # lxml nests what follows a <source> in it
        picture = picture.getparent()
    if picture is not None and picture.tag == "picture":
        holders += list(picture.iterdescendants("source"))
    for holder in holders:
        for name in _SRCSET_ATTRIBUTES:
            candidate = _largest_candidate(_attr(holder, name))
            if candidate:
                return candidate
    return src


def _dimension(img: ElementBase, name: str) -> float | None:
    match = _DIMENSION_RE.match(_attr(img, name))
    return float(match.group(1)) if match else None


def _is_tracking_pixel(img: ElementBase) -> bool:
    sizes = [size for size in (_dimension(img, "width"), _dimension(img, "height")) if size is not None]
    return bool(sizes) and max(sizes) <= 1


def _text(el: ElementBase) -> str:
    return _collapse("".join(el.itertext()))


def _caption(img: ElementBase, root: ElementBase) -> str | None:
    """The caption of the figure ``img`` is in, when that figure lies inside ``root``."""
    for parent in img.iterancestors():
        sphinx_figure = parent.tag == "div" and "figure" in (parent.get("class") or "").split()
        if parent.tag == "figure" or sphinx_figure:
            for child in parent:
                if not isinstance(child.tag, str):
                    continue
                classes = (child.get("class") or "").split()
                # Sphinx: <p class="caption">; DocBook: <p class="title"> above the figure
                if child.tag == "figcaption" or (sphinx_figure and ("caption" in classes or "title" in classes)):
                    return _text(child) or None
            return None
        if parent is root:
            break
    return None


def _accept(url: str | None) -> str | None:
    if not url:
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in _SCHEMES else None


def html_images(images: Iterable[ElementBase], root: ElementBase, resolve: Callable[[str], str | None]) -> tuple[ImageRef, ...]:
    """:class:`ImageRef` for each of ``images`` (``<img>`` elements under ``root``, the main content, in
    document order) worth recording; ``resolve`` makes a source absolute (``None``: unusable)."""
    found: list[ImageRef] = []
    seen: set[ImageRef] = set()
    for img in images:
        if _is_tracking_pixel(img):
            continue
        url = _accept(resolve(image_source(img)))
        if url is None:
            continue
        ref = ImageRef(url, image_alt(img), _caption(img, root), _collapse(_attr(img, "title")) or None)
        if ref not in seen:
            seen.add(ref)
            found.append(ref)
            if len(found) >= MAX_IMAGES:
                break
    return tuple(found)


_CODE_SPAN_RE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_MARKDOWN_IMAGE_RE = re.compile(
    r"""!\[(?P<alt>(?:[^\[\]\\]|\\.)*)\]
        \(\s*(?P<src><[^<>\n]*>|(?:[^\s()\\]|\\.|\([^\s()]*\))+)
        (?:\s+(?:"(?P<t1>(?:[^"\\]|\\.)*)"|'(?P<t2>(?:[^'\\]|\\.)*)'|\((?P<t3>(?:[^()\\]|\\.)*)\)))?
        \s*\)""",
    re.X | re.S,
)
_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _prose(markdown: str) -> Iterable[str]:
    """The paragraphs of ``markdown`` outside fenced code blocks."""
    paragraph: list[str] = []
    lines = markdown.split("\n")
    for line, fenced in zip(lines, fenced_lines(lines), strict=True):
        if fenced or not line.strip():
            if paragraph:
                yield "\n".join(paragraph)
            paragraph = []
            continue
        paragraph.append(line)
    if paragraph:
        yield "\n".join(paragraph)


def _unescape(text: str) -> str:
    return _collapse(_ESCAPE_RE.sub(r"\1", text))


def markdown_images(markdown: str, resolve: Callable[[str], str | None]) -> tuple[ImageRef, ...]:
    """:class:`ImageRef` for each ``![alt](src "title")`` of ``markdown`` outside code, in order."""
    found: list[ImageRef] = []
    seen: set[ImageRef] = set()
    for paragraph in _prose(markdown):
        if "![" not in paragraph:
            continue
        for match in _MARKDOWN_IMAGE_RE.finditer(_CODE_SPAN_RE.sub("", paragraph)):
            src = match.group("src")
            if src.startswith("<"):
                src = src[1:-1]
            url = _accept(resolve(_ESCAPE_RE.sub(r"\1", src)))
            if url is None:
                continue
            title = match.group("t1") or match.group("t2") or match.group("t3") or ""
            ref = ImageRef(url, _unescape(match.group("alt")), None, _unescape(title) or None)
            if ref not in seen:
                seen.add(ref)
                found.append(ref)
                if len(found) >= MAX_IMAGES:
                    return tuple(found)
    return tuple(found)
