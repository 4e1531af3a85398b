"""Main-content extraction: a fetched page becomes normalized Markdown plus page metadata.

:func:`extract_html` finds the page's main content element, strips site chrome (navigation, sidebars,
headers and footers, "edit this page" links, cookie banners, heading anchors, copy buttons, hidden
elements) and converts what is left to Markdown with markdownify: ATX headings, ``-`` bullets, fenced
code blocks that keep their language, GitHub pipe tables, absolute links. :func:`extract_markdown` does
the same job for pages served as Markdown or plain text (``.md``, ``llms.txt``).

The Markdown goes through :func:`normalize_markdown` because the pipelines hash it to detect changed
pages: the same HTML must always give the same bytes.

Why markdownify on a selected element rather than a general-purpose extractor such as trafilatura:
documentation pages are regular (a handful of generators produce most of them), and what matters for
retrieval is that code blocks, their language and tables survive intact. The measurements behind that
choice are in ``benchmarks/extraction_candidates.py``.

Nothing here raises on bad input: undecodable bytes, malformed or hostile HTML and empty pages give an
:class:`Extracted` with whatever could be recovered (at worst empty Markdown) and a log line.

Speed: most of the time goes into building Beautiful Soup's tree and walking it in Python. The tree is
built by :class:`_SoupTarget` (the tree ``BeautifulSoup(html, "lxml")`` builds, at less than half the
cost) with the garbage collector paused (:func:`_collector_paused`); the passes avoid Beautiful Soup's
generic ``find_all`` machinery and whole-tree walks where a list of the parsed elements will do.
``benchmarks/extraction_speed.py`` times the result on real documentation and checks the output does
not change.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urljoin, urlsplit

import markdownify
from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.builder import DetectsXMLParsedAsHTML
from bs4.element import (
    Comment,
    Declaration,
    Doctype,
    NamespacedAttribute,
    PageElement,
    ProcessingInstruction,
    nonwhitespace_re,
)
from lxml import etree
from w3lib.encoding import html_to_unicode

from docscraper.content.images import ImageRef, html_images, image_alt, image_source, markdown_images

__all__ = [
    "MAX_HTML_CHARS",
    "Extracted",
    "extract_html",
    "extract_markdown",
    "normalize_markdown",
]

logger = logging.getLogger(__name__)

# markdownify's bundled stub declares only its entry points, not the converter's hooks and helpers
# that _DocsConverter overrides and calls, so they are used untyped.
_markdownify: Any = markdownify
_BaseConverter: Any = _markdownify.MarkdownConverter
_RE_WHITESPACE: re.Pattern[str] = _markdownify.re_whitespace
_RE_NEWLINE_WHITESPACE: re.Pattern[str] = _markdownify.re_newline_whitespace

#: Decoded HTML beyond this many characters is cut off before parsing; documentation pages are far
#: smaller, and parsing cost grows linearly, so this bounds the work per page.
MAX_HTML_CHARS = 3_000_000

#: Raw bytes read before decoding (UTF-8 needs at most 4 bytes a character).
_MAX_HTML_BYTES = 4 * MAX_HTML_CHARS

#: Elements nested deeper than this below ``<body>`` are flattened to their text. markdownify converts
#: recursively, so pathological nesting would otherwise exhaust the stack.
_MAX_DEPTH = 120

#: A page with scripts and fewer word characters than this in its main content is a JS-rendered shell.
_SPA_MAX_WORD_CHARS = 50
#: ... or fewer than this when it also has an empty framework mount point (``<div id="root">``).
_SPA_MOUNT_MAX_WORD_CHARS = 200
_SPA_MOUNT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app"})


@dataclass(frozen=True)
class Extracted:
    """What extraction found on one page.

    ``markdown`` is normalized (:func:`normalize_markdown`) and is what the change detection hashes.
    ``title`` is the first ``<h1>`` of the main content, else ``<title>``, else ``""``.
    ``canonical_url`` is ``<link rel=canonical>`` made absolute, or ``None`` when absent or malformed.
    ``has_scripts_only`` is true for a JavaScript application shell: ``<script>`` tags and no
    meaningful static content.
    ``images`` are the images of the main content, in document order (:mod:`docscraper.content.images`).
    """

    title: str
    markdown: str
    canonical_url: str | None
    language: str | None
    description: str | None
    has_scripts_only: bool
    images: tuple[ImageRef, ...] = ()


_EMPTY = Extracted(title="", markdown="", canonical_url=None, language=None, description=None, has_scripts_only=False)

# --------------------------------------------------------------------------------------------------
# Markdown normalization
# --------------------------------------------------------------------------------------------------

_FENCE_OPEN_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def normalize_markdown(md: str) -> str:
    """Return ``md`` in the canonical form that is hashed.

    Newlines become ``\\n``; trailing whitespace is stripped from every line; outside fenced code
    blocks runs of two or more blank lines become one (inside fences blank lines are code and are
    kept); leading and trailing blank lines are dropped; a non-empty result ends with exactly one
    ``\\n``. The empty string stays empty. The function is pure, so equal input gives equal bytes.
    """
    if not md:
        return ""
    lines = md.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    previous_blank = False
    for raw in lines:
        line = raw.rstrip()
        if fence is not None:
            out.append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            previous_blank = False
            continue
        if not line:
            if previous_blank:
                continue
            previous_blank = True
            out.append(line)
            continue
        previous_blank = False
        match = _FENCE_OPEN_RE.match(line)
        if match and not (match.group(1)[0] == "`" and "`" in line[match.end() :]):
            fence = match.group(1)
        out.append(line)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


# --------------------------------------------------------------------------------------------------
# Markdown and text pages
# --------------------------------------------------------------------------------------------------

_ATX_H1_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FRONT_MATTER_RE = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?)\n(?:---|\.\.\.|\+\+\+)[ \t]*(?:\n|\Z)", re.S)
_FRONT_MATTER_FIELD_RE = re.compile(r"^(title|description)[ \t]*[:=][ \t]*(.*?)[ \t]*$", re.M | re.I)


def extract_markdown(text: str, url: str) -> Extracted:
    """Extract a page served as Markdown or plain text.

    YAML (``---``) or TOML (``+++``) front matter is removed. The title is the first level-1 ATX
    heading outside code fences, else the front matter ``title``, else ``""``; ``description`` comes
    from the front matter.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="replace")
        text = _sanitize_text(str(text)).lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        fields: dict[str, str] = {}
        match = _FRONT_MATTER_RE.match(text)
        if match:
            for key, value in _FRONT_MATTER_FIELD_RE.findall(match.group(2)):
                fields.setdefault(key.lower(), _unquote(value))
            text = text[match.end() :]
        markdown = normalize_markdown(text)
        title = _first_atx_h1(markdown) or fields.get("title", "")
        return Extracted(
            title=title,
            markdown=markdown,
            canonical_url=None,
            language=None,
            description=fields.get("description") or None,
            has_scripts_only=False,
            images=markdown_images(markdown, functools.partial(_safe_url, url)),
        )
    except Exception:  # bad input must never stop a crawl (DESIGN, rule 7)
        logger.warning("Markdown extraction failed for %s", url, exc_info=True)
        return _EMPTY


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value.strip()


def _first_atx_h1(markdown: str) -> str:
    fence: str | None = None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        opening = _FENCE_OPEN_RE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        match = _ATX_H1_RE.match(line)
        if match:
            return match.group(1).strip()
    return ""


# --------------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------------

_CONTROL_CHARS_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]|[\ud800-\udfff]")
_XML_DECL_RE = re.compile(r"\A\s*<\?xml[^>]*\?>", re.I)


def _sniff_encoding(data: bytes) -> str:
    """Encoding for bytes that declare none: UTF-8 when they decode as such, else Windows-1252."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the byte cap is still UTF-8.
        if exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return "utf-8"
        return "cp1252"
    return "utf-8"


def _decode(html: str | bytes, encoding: str | None) -> str:
    if isinstance(html, str):
        return html
    data = bytes(html[:_MAX_HTML_BYTES])
    content_type = f"text/html; charset={encoding}" if encoding else None
    _, text = html_to_unicode(content_type, data, auto_detect_fun=_sniff_encoding)
    return text


def _sanitize_text(text: str) -> str:
    # lxml rejects NUL and lone surrogates; other C0 controls are never content.
    if _CONTROL_CHARS_RE.search(text):
        text = _CONTROL_CHARS_RE.sub("", text)
    return text.replace("\x0c", " ")


# --------------------------------------------------------------------------------------------------
# Site chrome
# --------------------------------------------------------------------------------------------------

#: Elements that never carry readable content.
_JUNK_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "button", "input", "select", "textarea",
        "option", "iframe", "object", "embed", "canvas", "link", "meta", "dialog", "head", "title",
    }
)  # fmt: skip

#: Class tokens of chrome in the generators we know (lower-cased; CSS-module hashes such as
#: Docusaurus's ``_fXgn`` suffix are stripped before the lookup), removed unless the element holds the
#: page's main content. As ids they count only on containers that open no section of their own.
_CHROME_TOKENS = frozenset(
    {
        # Sphinx: basic/alabaster, Read the Docs, Furo, PyData, Book
        "sphinxsidebar", "sphinxsidebarwrapper", "related", "headerlink", "viewcode-link",
        "viewcode-back", "rst-footer-buttons", "rst-versions", "wy-nav-side", "wy-nav-top",
        "wy-breadcrumbs", "wy-breadcrumbs-aside", "sidebar-drawer", "toc-drawer", "sidebar-tree",
        "related-pages", "bd-sidebar", "bd-sidebar-primary", "bd-sidebar-secondary", "bd-header",
        "bd-footer", "bd-footer-article", "bd-footer-content", "bd-toc", "bd-header-article",
        "header-article", "prev-next-area", "prev-next-footer", "searchbox", "search-button",
        "mobile-nav", "copybtn", "copybutton", "headerbtn", "version-switcher",
        "language_switcher_placeholder", "version_switcher_placeholder", "edit-this-page",
        # MkDocs, Material for MkDocs
        "md-sidebar", "md-header", "md-footer", "md-tabs", "md-search", "md-source", "md-top",
        "md-dialog", "md-banner", "md-announce", "md-content__button", "md-clipboard",
        "md-source-file", "md-feedback", "md-nav", "md-skip", "md-header__button",
        # Docusaurus (class names with their CSS-module hash removed, lower-cased)
        "theme-doc-sidebar-container", "theme-doc-toc-desktop", "theme-doc-toc-mobile",
        "theme-doc-breadcrumbs", "theme-doc-footer", "theme-doc-footer-edit-meta-row",
        "theme-edit-this-page", "theme-last-updated", "theme-doc-version-banner",
        "theme-doc-version-badge", "theme-announcement-bar", "pagination-nav", "table-of-contents",
        "skiptocontent", "toccollapsible", "tableofcontents", "breadcrumbscontainer",
        "docsidebarcontainer", "announcementbar", "navbar", "navbar-sidebar", "hash-link",
        "codeblocktitle-copy", "buttongroup",
        # rustdoc, Javadoc, Doxygen, DocBook, Texinfo, GitBook, VitePress, Starlight, Docsy
        "out-of-band", "srclink", "hideme", "sub-heading-nav", "top-nav", "sub-nav", "bottom-nav",
        "navbar-top", "navbar-bottom", "legal-copy", "skip-nav", "navpath", "nav-path", "side-nav",
        "msearchbox", "msearchselectwindow", "msearchresultswindow", "navrow1", "navrow2",
        "navheader", "navfooter", "nav-panel", "book-summary", "book-header", "page-footer",
        "vp-doc-footer", "edit-info", "edit-link", "prev-next", "pager", "pagination",
        "right-sidebar", "left-sidebar", "sl-sidebar", "td-sidebar", "td-sidebar-toc",
        "td-page-meta", "td-navbar", "td-footer",
        # generic
        "breadcrumb", "breadcrumbs", "sidebar-nav", "sidenav", "site-nav", "site-header",
        "site-footer", "page-nav", "toc", "nav", "navigation", "navigation-bar", "skip-link",
        "skip-links", "skiplink", "skip-to-content", "sr-only", "visually-hidden", "visuallyhidden",
        "screen-reader-text", "editthispage", "edit-page", "edit-on-github", "header-anchor",
        "anchorjs-link", "copy-button", "copy-btn", "clipboard-button", "back-to-top", "backtotop",
        "announcement", "announcement-banner", "footer", "header", "topbar", "menubar", "top",
    }
)  # fmt: skip

#: Generic tokens that are also used for content (a docutils ``.. sidebar::``, a search results
#: page): removed only when the element is mostly links (or empty).
_SOFT_CHROME_TOKENS = frozenset({"sidebar", "search", "banner", "feedback", "menu", "aside", "switcher", "toolbar"})

#: Compound navigation names: ``topnav``, ``side-nav``, ``main_menu``, ``docs-sidebar``, ...
_NAV_TOKEN_RE = re.compile(
    r"^(?:top|side|main|site|global|primary|secondary|sub|bottom|page|doc|docs|left|right|header|"
    r"footer|mobile)[-_]?(?:nav|navbar|navigation|menu|sidebar|toc)$"
)

#: Substrings of class or id tokens that mark consent banners.
_CHROME_SUBSTRINGS = ("cookie", "consent", "gdpr", "onetrust")

#: Tokens of heading permalink anchors (``¶``, ``§``, ``#``).
_ANCHOR_TOKENS = frozenset(
    {
        "headerlink", "header-anchor", "hash-link", "anchorjs-link", "anchor", "anchor-link",
        "heading-anchor", "permalink", "headeranchor", "doc-anchor", "anchor-heading",
        "copiable-anchor", "copiable-link",
    }
)  # fmt: skip

_CSS_MODULE_HASH_RE = re.compile(r"_[A-Za-z0-9-]{4,6}$")
_SYMBOL_ONLY_RE = re.compile(r"^[\s\u00b6\u00a7#\u200b\ufeff\u2693\U0001f517\u00a0]*$")
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_CHROME_LINK_TEXT_RE = re.compile(
    r"""^(?:
        edit\s+(?:this\s+)?(?:page|file|doc(?:ument)?|section)(?:\s+on\s+\w+)?
      | edit\s+on\s+\w+ | edit\s+source
      | view\s+(?:page\s+|the\s+)?source(?:\s+code)? | view\s+(?:on|in)\s+(?:github|gitlab)
      | show\s+(?:page\s+)?source | page\s+source | \[\s*source\s*\]
      | suggest\s+(?:an?\s+)?(?:edits?|change) | improve\s+this\s+(?:page|doc)
      | skip\s+(?:to\s+)?(?:the\s+)?(?:main\s+)?(?:content|navigation)(?:\s+links?)?
      | skip\s+navigation(?:\s+links?)? | back\s+to\s+top
      | report\s+an?\s+(?:issue|bug)\s+(?:with|on|for)\s+this\s+page
      | copy\s+(?:to\s+clipboard|code)
    )$""",
    re.I | re.X,
)


def _classes(tag: Tag, name: str = "class") -> list[str]:
    """The tokens of a space-separated attribute (``class``, ``rel``)."""
    value = tag.get(name)
    if not value:
        return []
    if isinstance(value, list):
        return [str(token) for token in value]
    return str(value).split()


def _class_tokens(classes: Iterable[str]) -> list[str]:
    """Lower-cased class tokens, each followed by its form without a CSS-module hash if it has one."""
    out: list[str] = []
    for token in classes:
        token = token.lower()
        if token:
            out.append(token)
            if "_" in token:
                stripped = _CSS_MODULE_HASH_RE.sub("", token)
                if stripped != token:
                    out.append(stripped)
    return out


def _tokens(tag: Tag, *, with_id: bool = True) -> list[str]:
    """Lower-cased class tokens (CSS-module hashes removed) and, unless told not to, the id."""
    out = _class_tokens(_classes(tag))
    ident = tag.get("id") if with_id else None
    if isinstance(ident, str) and ident:
        out.append(ident.lower())
    return out


def _attr(tag: Tag, name: str) -> str:
    value = tag.get(name)
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(value)
    return str(value)


def _collapse_ws(text: str) -> str:
    return " ".join(text.split())


def _get_text(tag: Tag) -> str:
    """``tag.get_text()`` without its generator layers: the strings of the tag's interesting types."""
    types = tag.interesting_string_types
    if types is None:
        types = Tag.MAIN_CONTENT_STRING_TYPES
    strings: list[Any] = [node for node in tag.descendants if type(node) in types]
    return "".join(strings)


def _text_len(tag: Tag) -> int:
    """Non-whitespace characters of visible text under ``tag``."""
    return len("".join(_get_text(tag).split()))  # str.split() splits on exactly what \s matches


def _descendant_tags(root: Tag) -> list[Tag]:
    # Plain iteration: BeautifulSoup's find_all machinery costs several times more per element.
    return [node for node in root.descendants if isinstance(node, Tag)]


def _has_descendant(root: Tag, names: frozenset[str]) -> bool:
    return any(isinstance(node, Tag) and node.name in names for node in root.descendants)


def _named_descendants(root: Tag, names: frozenset[str], limit: int = 0) -> list[Tag]:
    """``root.find_all(names, limit=limit)`` without BeautifulSoup's generic matching machinery."""
    found: list[Tag] = []
    for node in root.descendants:
        if isinstance(node, Tag) and node.name in names:
            found.append(node)
            if len(found) == limit:
                break
    return found


def _child_tags(tag: Tag, names: frozenset[str] | None = None) -> list[Tag]:
    """``tag.find_all(names or True, recursive=False)``."""
    return [child for child in tag.contents if isinstance(child, Tag) and (names is None or child.name in names)]


def _has_ancestor(tag: Tag, names: frozenset[str]) -> bool:
    return any(parent.name in names for parent in tag.parents)


def _link_density(tag: Tag) -> float:
    total = _text_len(tag)
    if not total:
        return 1.0
    linked = sum(_text_len(a) for a in _descendant_tags(tag) if a.name == "a")
    return linked / total


_MAIN_NAMES = frozenset({"main", "article"})
#: Elements whose id alone may mark them as chrome (ids of headings and sections are slugs of titles).
_CONTAINER_NAMES = frozenset(
    {"div", "nav", "aside", "header", "footer", "ul", "ol", "form", "table", "details", "dialog", "menu", "section"}
)
_SECTION_HEADINGS = frozenset({"h1", "h2"})
_CODE_NAMES = frozenset({"pre"})
_UNQUOTED_BLOCKS = frozenset({"pre", "table", "dl"})
_BANNER_EXCLUDES = frozenset({"h1", "h2", "h3", "pre", "table", "dl"})
_MAIN_OR_H1 = frozenset({"main", "article", "h1"})
_HEADING_NAMES = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: Elements whose content markdownify keeps on one line (its "_inline" context) and keeps verbatim.
_INLINE_CONTEXT_NAMES = _HEADING_NAMES | {"td", "th"}
_NOFORMAT_NAMES = frozenset({"code", "kbd", "samp"})


def _holds_main(tag: Tag, *, heading: bool) -> bool:
    """Whether removing ``tag`` would take the page's main content with it."""
    if tag.name in ("body", "html", "main", "article"):
        return True
    names = _MAIN_OR_H1 if heading else _MAIN_NAMES
    for node in tag.descendants:
        if isinstance(node, Tag) and (node.name in names or _attr(node, "role").lower() == "main"):
            return True
    return False


def _is_chrome_link(tag: Tag) -> bool:
    text = _collapse_ws(_get_text(tag))
    href = _attr(tag, "href").strip()
    if _SYMBOL_ONLY_RE.match(text) and (href.startswith("#") or any(t in _ANCHOR_TOKENS for t in _tokens(tag))):
        return True
    return bool(text) and len(text) < 60 and _CHROME_LINK_TEXT_RE.match(text) is not None


def _is_chrome(tag: Tag) -> bool:
    """Whether ``tag`` is site chrome or invisible, judged on its own (not its position)."""
    name = tag.name
    if name in _JUNK_TAGS:
        return True
    role = _attr(tag, "role").lower()
    if role != "tabpanel" and (
        tag.has_attr("hidden")
        or _attr(tag, "aria-hidden").lower() == "true"
        or _HIDDEN_STYLE_RE.search(_attr(tag, "style"))
    ):
        return not _holds_main(tag, heading=True)
    if name == "a" and _is_chrome_link(tag):
        return True
    if name in ("nav", "footer") or role in ("navigation", "contentinfo", "search"):
        return not _holds_main(tag, heading=False)
    if name == "header" or role == "banner":
        # An article's own header carries its title; a page header is chrome.
        own_header = role != "banner" and _has_descendant(tag, _HEADING_NAMES) and _has_ancestor(tag, _MAIN_NAMES)
        return not own_header and not _holds_main(tag, heading=False)
    if name == "form":
        return role == "search" or "search" in _attr(tag, "action").lower() or _text_len(tag) < 200
    tokens = _tokens(tag, with_id=False)
    if any(t in _CHROME_TOKENS or _NAV_TOKEN_RE.match(t) for t in tokens):
        return not _holds_main(tag, heading=True)
    container = name in _CONTAINER_NAMES
    ident = _attr(tag, "id").lower()
    if container and ident and (ident in _CHROME_TOKENS or _NAV_TOKEN_RE.match(ident)):
        # Ids double as heading slugs ("#navigation", "#footer"): a container that opens a section
        # of its own is content.
        return not _has_descendant(tag, _SECTION_HEADINGS) and not _holds_main(tag, heading=True)
    if container and any(s in t for t in [*tokens, ident] for s in _CHROME_SUBSTRINGS):
        # Consent banners are small and plain; the reference section of a cookie library is not.
        return _text_len(tag) < 2000 and not _has_descendant(tag, _BANNER_EXCLUDES)
    if name == "aside" or role == "complementary" or any(t in _SOFT_CHROME_TOKENS for t in tokens):
        # Navigation is mostly links; a docutils ".. sidebar::" or a tip box is prose or code.
        if _holds_main(tag, heading=True) or _has_descendant(tag, _CODE_NAMES):
            return False
        return _link_density(tag) >= 0.5
    return False


#: Elements that :func:`_is_chrome` may judge to be chrome by their name or text alone.
_CHROME_CANDIDATE_NAMES = _JUNK_TAGS | {"a", "nav", "footer", "header", "form", "aside"}
#: The attributes other than ``class`` that :func:`_is_chrome` reads.
_CHROME_ATTRIBUTES = frozenset({"role", "hidden", "aria-hidden", "style", "id", "action"})


def _may_be_chrome(tag: Tag) -> bool:
    """False when :func:`_is_chrome` is certainly false for ``tag``; a cheap screen before it.

    Most elements of a page have an ordinary name and at most a class, and the same class lists
    recur: whether one could mark chrome is decided once.
    """
    if tag.name in _CHROME_CANDIDATE_NAMES:
        return True
    attrs = tag.attrs
    if not attrs:
        return False
    if not _CHROME_ATTRIBUTES.isdisjoint(attrs):
        return True
    return bool(attrs.get("class")) and _chrome_classes(tuple(_classes(tag)))


@functools.lru_cache(maxsize=4096)
def _chrome_classes(classes: tuple[str, ...]) -> bool:
    """Whether any of these class tokens is one that :func:`_is_chrome` acts on."""
    return any(
        token in _CHROME_TOKENS
        or token in _SOFT_CHROME_TOKENS
        or _NAV_TOKEN_RE.match(token)
        or any(s in token for s in _CHROME_SUBSTRINGS)
        for token in _class_tokens(classes)
    )


def _remove_chrome(root: Tag) -> None:
    removed: set[int] = set()
    doomed: list[Tag] = []
    self_links: list[Tag] = []
    for tag in _descendant_tags(root):
        if id(tag.parent) in removed:
            removed.add(id(tag))
        elif _may_be_chrome(tag) and _is_chrome(tag):
            removed.add(id(tag))
            doomed.append(tag)
        elif tag.name == "a" and _attr(tag, "href").startswith("#") and _has_ancestor(tag, _HEADING_NAMES):
            self_links.append(tag)
    for tag in doomed:
        tag.extract()
    for tag in self_links:
        if tag.parent is not None and id(tag) not in removed:
            # A heading that links to itself: keep the words, not the link.
            tag.unwrap()


# --------------------------------------------------------------------------------------------------
# Structure fixes before conversion
# --------------------------------------------------------------------------------------------------


def _label_tab_panels(root: Tag, soup: BeautifulSoup, tags: list[Tag]) -> None:
    """Put each tab's label at the top of its panel, then drop the tab strip.

    Tabbed examples (pip/conda, Python/JavaScript) are content; their labels sit in a separate strip
    of buttons or labels that chrome removal would discard. ``tags`` are all the parsed elements, in
    document order, and the tree is as parsed.
    """

    def prepend_label(panel: Tag, label: str) -> None:
        if not label:
            return
        paragraph = soup.new_tag("p")
        strong = soup.new_tag("strong")
        strong.string = label
        paragraph.append(strong)
        panel.insert(0, paragraph)

    tablists: list[Tag] = []
    label_groups: list[Tag] = []
    for tag in tags:
        attrs = tag.attrs
        if "role" in attrs and _attr(tag, "role") == "tablist":
            tablists.append(tag)
        classes = attrs.get("class")
        if classes and "tabbed-labels" in classes:
            label_groups.append(tag)
    tablists = _under(root, tablists)
    label_groups = _under(root, label_groups)
    for tablist in tablists:
        if tablist.parent is None:
            continue
        tabs = [t for t in _descendant_tags(tablist) if _attr(t, "role") == "tab"]
        found = [t for t in _descendant_tags(tablist.parent) if _attr(t, "role") == "tabpanel"]
        found_ids = {id(p) for p in found}
        panels = [p for p in found if not any(id(a) in found_ids for a in p.parents)]
        by_id = {_attr(t, "id"): _collapse_ws(t.get_text()) for t in tabs if t.get("id")}
        if by_id and all(_attr(p, "aria-labelledby") in by_id for p in panels):
            for panel in panels:
                prepend_label(panel, by_id[_attr(panel, "aria-labelledby")])
        elif len(tabs) == len(panels):
            for tab, panel in zip(tabs, panels, strict=True):
                prepend_label(panel, _collapse_ws(tab.get_text()))
        tablist.extract()

    # Material for MkDocs content tabs: labels and blocks in two sibling groups.
    for labels in label_groups:
        container = labels.parent
        if container is None:
            continue
        content = container.find(class_="tabbed-content", recursive=False)
        blocks = content.find_all(class_="tabbed-block", recursive=False) if content else []
        names = [_collapse_ws(label.get_text()) for label in labels.find_all("label")]
        if blocks and len(blocks) == len(names):
            for name, block in zip(names, blocks, strict=True):
                prepend_label(block, name)
        labels.extract()


_IMAGE_DATA_RE = re.compile(r"\.(?:svgz?|png|gif|jpe?g|webp|avif|bmp)$", re.I)


def _objects_to_images(root: Tag, soup: BeautifulSoup, tags: list[Tag]) -> None:
    """Turn an image shown through ``<object data="x.svg" type="image/svg+xml">`` into an ``<img>``.

    DocBook's HTML (the PostgreSQL manual's figures) embeds its SVG diagrams this way; ``<object>`` is
    otherwise junk, so the diagram would vanish from the page's images and Markdown. A fallback
    ``<img>`` inside the object takes its place; else a new ``<img>`` gets the fallback text as its
    alt. ``tags`` are all the parsed elements, in document order; the new element takes the object's
    place in it, so the list stays in document order.
    """
    for index, tag in enumerate(tags):
        if tag.name != "object" or tag.parent is None:
            continue
        data = _attr(tag, "data")
        kind = _attr(tag, "type").lower()
        if not data or not (kind.startswith("image/") or _IMAGE_DATA_RE.search(data.split("?", 1)[0].split("#", 1)[0])):
            continue
        if not _under(root, (tag,)):
            continue
        fallback = next((t for t in tag.find_all("img") if image_source(t)), None)
        if fallback is not None:
            img = fallback.extract()
        else:
            img = soup.new_tag("img", attrs={"src": data, "alt": _collapse_ws(tag.get_text())})
            for name in ("title", "width", "height"):
                if tag.get(name) is not None:
                    img[name] = _attr(tag, name)
        tag.replace_with(img)
        tags[index] = img


_LINENO_TOKENS = frozenset(
    {
        "linenos", "lineno", "linenodiv", "linenumber", "line-number", "line-numbers",
        "line-numbers-rows", "lnt", "ln", "gutter", "blob-num", "code-line-number",
    }
)  # fmt: skip


def _under(root: Tag, tags: Iterable[Tag]) -> list[Tag]:
    """Those of ``tags`` that are now descendants of ``root``, in the order given.

    Given parsed elements in document order, this stands for filtering ``_descendant_tags(root)``
    without walking the whole tree, as long as no element has moved past another: the passes up to
    the table passes remove, insert, rename and unwrap elements, but never reorder them.
    """
    found: list[Tag] = []
    for tag in tags:
        parent = tag.parent
        while parent is not None and parent is not root:
            parent = parent.parent
        if parent is root:
            found.append(tag)
    return found


def _unwrap_code_tables(root: Tag, tags: list[Tag]) -> None:
    """Replace line-numbered code tables (Pygments ``highlighttable``, Chroma ``lntable``) by the code.

    ``tags`` are all the parsed elements, in document order.
    """
    for table in _under(root, (tag for tag in tags if tag.name == "table")):
        if table.parent is None:
            continue
        # The cheap tests first: walking every table's whole subtree for <pre> is quadratic in nesting.
        tokens = set(_tokens(table))
        gutter = any(set(_tokens(cell)) & _LINENO_TOKENS for cell in _named_descendants(table, _CELL_NAMES, limit=4))
        if not (tokens & {"highlighttable", "lntable"} or gutter):
            continue
        pres = _named_descendants(table, _PRE)
        if not pres:
            continue
        code_cell = next((td for td in _named_descendants(table, _TD) if "code" in _classes(td)), None)
        found = _named_descendants(code_cell, _PRE, limit=1) if code_cell is not None else []
        code = found[0] if found else None
        if code is None:
            code = pres[-1]
        table.replace_with(code.extract())


_BLOCK_IN_CELL = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "dl", "pre", "blockquote", "table"})
_PRE = frozenset({"pre"})
_CODE = frozenset({"code"})
_LI = frozenset({"li"})
_TD = frozenset({"td"})
_TR = frozenset({"tr"})
_TABLE = frozenset({"table"})
_CELL_NAMES = frozenset({"td", "th"})
_COLUMN_NAMES = frozenset({"colgroup", "col"})
_CAPTION = frozenset({"caption"})
_ROW_GROUP_NAMES = frozenset({"thead", "tbody", "tfoot"})


def _table_rows(table: Tag) -> list[Tag]:
    rows: list[Tag] = []
    for child in _child_tags(table):
        if child.name == "tr":
            rows.append(child)
        elif child.name in _ROW_GROUP_NAMES:
            rows.extend(_child_tags(child, _TR))
    return rows


def _prepare_tables(root: Tag, tags: list[Tag]) -> None:
    """Make data tables convertible to pipe tables and turn layout tables into plain blocks.

    ``tags`` are all the parsed elements, in document order.
    """
    for table in _under(root, (tag for tag in tags if tag.name == "table")):
        for col in _named_descendants(table, _COLUMN_NAMES):
            col.extract()
        captions = _child_tags(table, _CAPTION)
        if captions:
            caption = captions[0]
            caption.name = "p"
            table.insert_before(caption.extract())
        rows = _table_rows(table)
        cells = [c for r in rows for c in _child_tags(r, _CELL_NAMES)]
        layout = (
            _attr(table, "role").lower() in ("presentation", "none")
            or not cells
            or len(cells) == 1
            or _has_descendant(table, _TABLE)
            or any(_has_descendant(cell, _BLOCK_IN_CELL) for cell in cells)
        )
        if not layout:
            continue
        table.name = "div"
        for child in _child_tags(table, _ROW_GROUP_NAMES):
            child.name = "div"
        for row in rows:
            row.name = "div"
        for cell in cells:
            cell.name = "div"


def _flatten_deep(root: Tag) -> None:
    """Replace elements nested deeper than ``_MAX_DEPTH`` by their text."""
    stack: list[tuple[Tag, int]] = [(root, 0)]
    while stack:
        tag, depth = stack.pop()
        for child in list(tag.children):
            if not isinstance(child, Tag):
                continue
            if depth + 1 >= _MAX_DEPTH:
                child.replace_with(NavigableString(child.get_text(" ")))
            else:
                stack.append((child, depth + 1))


# --------------------------------------------------------------------------------------------------
# Main content
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Selector:
    """A simple selector: any of tag name, one class token, id, one attribute value."""

    tag: str | None = None
    cls: str | None = None
    ident: str | None = None
    attr: tuple[str, str] | None = None

    def matches(self, tag: Tag) -> bool:
        if self.tag is not None and tag.name != self.tag:
            return False
        if self.cls is not None and self.cls not in _classes(tag):
            return False
        if self.ident is not None and tag.get("id") != self.ident:
            return False
        return self.attr is None or _attr(tag, self.attr[0]).lower() == self.attr[1]


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
_SPECIFIC_SHARE = 0.15


def _index_selectors(kind: str) -> dict[str, tuple[int, ...]]:
    """Selector positions keyed by what a tag must have to match: a class, an id, an attribute or a name."""
    index: dict[str, list[int]] = {}
    for position, selector in enumerate(_SPECIFIC_MAIN + _GENERIC_MAIN):
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


def _candidate_selectors(tag: Tag) -> list[int]:
    """Positions of the selectors ``tag`` might match, once per class, id or attribute that could."""
    found = list(_SELECTORS_BY_NAME.get(tag.name, ()))
    attrs = tag.attrs
    classes = attrs.get("class")
    if classes:
        for token in classes:
            found.extend(_SELECTORS_BY_CLASS.get(token, ()))
    ident = attrs.get("id")
    if ident:
        found.extend(_SELECTORS_BY_ID.get(str(ident), ()))
    for name in ("itemprop", "role"):
        if name in attrs:
            found.extend(_SELECTORS_BY_ATTR.get(name, ()))
    return found


_GENERIC_SHARE = 0.35


def _find_main(body: Tag) -> Tag:
    """The most specific known container that holds enough of the page's text, else ``body``."""
    selectors = _SPECIFIC_MAIN + _GENERIC_MAIN
    matches: list[list[Tag]] = [[] for _ in selectors]
    for tag in _descendant_tags(body):
        for index in _candidate_selectors(tag):
            if selectors[index].matches(tag):
                matches[index].append(tag)
    body_len = _text_len(body)
    if not body_len:
        return body
    lengths: dict[int, int] = {}

    def length(tag: Tag) -> int:
        key = id(tag)
        if key not in lengths:
            lengths[key] = _text_len(tag)
        return lengths[key]

    for index, found in enumerate(matches):
        if not found:
            continue
        found_ids = {id(t) for t in found}
        outermost = [t for t in found if not any(id(p) in found_ids for p in t.parents)]
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


# --------------------------------------------------------------------------------------------------
# Code blocks
# --------------------------------------------------------------------------------------------------

_LANG_PREFIXES = ("language-", "lang-", "highlight-", "brush:")
_LANG_ALIASES = {
    "default": "python",  # Sphinx's default highlighter is Python 3 (with a silent fallback)
    "python3": "python",
    "py3": "python",
    "pycon3": "pycon",
    "ipython3": "ipython",
    "none": "text",
    "nohighlight": "text",
    "plain": "text",
    "plaintext": "text",
    "txt": "text",
    "no-highlight": "text",
}
_BARE_LANGS = frozenset(
    {
        "rust", "python", "javascript", "typescript", "bash", "sh", "shell", "console", "json",
        "yaml", "toml", "html", "xml", "css", "c", "cpp", "go", "java", "kotlin", "ruby", "php",
        "sql", "text", "swift", "scala", "haskell", "lua", "perl", "r", "ini", "diff",
    }
)  # fmt: skip
_LANG_OK_RE = re.compile(r"^[a-z0-9][a-z0-9_+#.\-]{0,30}$")
_NOT_LANGS = frozenset({"highlight", "notranslate", "default-text", "source", "code", "prettyprint"})


def _clean_lang(value: str) -> str:
    value = value.strip().strip(";").lower()
    value = _LANG_ALIASES.get(value, value)
    return value if _LANG_OK_RE.match(value) and value not in _NOT_LANGS else ""


def _lang_of(tag: Tag, *, is_code_element: bool) -> str:
    for attr in ("data-lang", "data-language"):
        value = _attr(tag, attr)
        if value:
            lang = _clean_lang(value)
            if lang:
                return lang
    classes = _classes(tag)
    for index, token in enumerate(classes):
        low = token.lower()
        for prefix in _LANG_PREFIXES:
            if low.startswith(prefix) and len(low) > len(prefix):
                lang = _clean_lang(low[len(prefix) :])
                if lang:
                    return lang
            if prefix == "brush:" and low == prefix and index + 1 < len(classes):
                lang = _clean_lang(classes[index + 1])
                if lang:
                    return lang
    if is_code_element:
        lowered = [c.lower() for c in classes]
        if "sourcecode" in lowered:  # pandoc: class="sourceCode python"
            for token in lowered:
                if token != "sourcecode":
                    lang = _clean_lang(token)
                    if lang:
                        return lang
        for token in lowered:
            if token in _BARE_LANGS:
                return token
        if "hljs" in lowered:  # highlight.js before v11: class="hljs python"
            for token in lowered:
                if token != "hljs":
                    lang = _clean_lang(token)
                    if lang:
                        return lang
    return ""


def _code_language(pre: Tag) -> str:
    """The language of a ``<pre>`` block from the classes and data attributes generators use."""
    found = _named_descendants(pre, _CODE, limit=1)
    code = found[0] if found else None
    candidates: list[tuple[Tag, bool]] = [(pre, True)]
    if code is not None:
        candidates.append((code, True))
    for depth, ancestor in enumerate(pre.parents):
        if depth >= 4 or ancestor.name in ("body", "main", "article", "[document]"):
            break
        candidates.append((ancestor, False))
    for tag, is_code in candidates:
        lang = _lang_of(tag, is_code_element=is_code)
        if lang:
            return lang
    return ""


_SKIPPED_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)


def _has_lineno_token(tag: Tag) -> bool:
    """``set(_tokens(tag)) & _LINENO_TOKENS``, with the class part cached (code is mostly spans)."""
    ident = tag.get("id")
    if isinstance(ident, str) and ident.lower() in _LINENO_TOKENS:
        return True
    classes = tag.get("class")
    return bool(classes) and _lineno_classes(tuple(_classes(tag)))


@functools.lru_cache(maxsize=4096)
def _lineno_classes(classes: tuple[str, ...]) -> bool:
    return not _LINENO_TOKENS.isdisjoint(_class_tokens(classes))


def _code_text(pre: Tag) -> str:
    """The verbatim text of a code block, without line-number gutters."""
    parts: list[str] = []
    stack: list[PageElement] = pre.contents[::-1]  # next node last
    while stack:
        node = stack.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, _SKIPPED_STRINGS):
                parts.append(str(node))
        elif isinstance(node, Tag):
            if node.name == "br":
                parts.append("\n")
            elif not _has_lineno_token(node):
                stack.extend(reversed(node.contents))
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n").replace("\xa0", " ")
    text = re.sub(r"\A(?:[ \t]*\n)+", "", text)
    return text.rstrip()


def _fence_for(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=0)
    return "`" * max(3, longest + 1)


def _code_span(text: str) -> str:
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    delimiter = "`" * (longest + 1)
    if longest:
        text = f" {text} "
    return f"{delimiter}{text}{delimiter}"


# --------------------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------------------

_EDGE_RULES_RE = re.compile(r"\A(?:\s*---[ \t]*\n)+|(?:\n[ \t]*---)+\s*\Z")
_INVISIBLE_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
_SPACES_RE = re.compile(r"[ \u00a0]{2,}")
_HEADING_TAIL_RE = re.compile(r"(?:\s+[#\u00b6\u00a7\U0001f517]+|[\u00b6\u00a7\U0001f517]+)\s*$")
_SIGNATURE_TOKENS = frozenset({"sig", "sig-object"})
_SIGNATURE_NAME_TOKENS = frozenset({"descname", "sig-name", "category", "def-name"})
_BOLD_PARAGRAPH_TOKENS = frozenset({"admonition-title", "rubric", "topic-title", "sidebar-title"})


_WHITESPACE_BLOCK_NAMES = frozenset(
    {
        "p", "blockquote", "article", "div", "section", "ol", "ul", "li", "dl", "dt", "dd", "table",
        "thead", "tbody", "tfoot", "tr", "td", "th",
    }
)  # fmt: skip


def _removes_whitespace_inside(el: PageElement | None) -> bool:
    """markdownify's ``should_remove_whitespace_inside``: a block element (``<p>``, ``<hN>``, ...)."""
    if not isinstance(el, Tag) or not el.name:
        return False
    name = el.name
    # markdownify tests headings with re.match(r"h(\d+)", name).
    return name in _WHITESPACE_BLOCK_NAMES or (name[0] == "h" and name[1:2].isdecimal())


def _removes_whitespace_outside(el: PageElement | None) -> bool:
    """markdownify's ``should_remove_whitespace_outside``: a block element or ``<pre>``."""
    return _removes_whitespace_inside(el) or (isinstance(el, Tag) and el.name == "pre")


def _safe_url(base_url: str, href: str | None) -> str | None:
    """``href`` made absolute against ``base_url``; ``None`` for script links and garbage."""
    if not href:
        return None
    href = href.strip()
    lowered = href.lower().replace("\t", "").replace("\n", "")
    if not href or lowered.startswith(("javascript:", "vbscript:", "data:")):
        return None
    try:
        url = urljoin(base_url, href)
        urlsplit(url)
    except ValueError:
        return None
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


_DEF_TOKEN_RE = re.compile(r"^(?:first-)?def[a-z]+$")


def _is_signature(dt: Tag) -> bool:
    """Whether a ``<dt>`` is an API signature (Sphinx domains, Texinfo ``@deffn``)."""
    tokens = _tokens(dt)
    if set(tokens) & _SIGNATURE_TOKENS or any(_DEF_TOKEN_RE.match(t) for t in tokens):
        return True
    parent = dt.parent
    if parent is not None and any(_DEF_TOKEN_RE.match(t) for t in _tokens(parent)):
        return True
    # Sphinx before 4.0 had no "sig" class but named the object "descname"; Texinfo 6 starts the
    # entry with its category ("Function:").
    return dt.get("id") is not None and any(
        isinstance(node, Tag) and set(_tokens(node)) & _SIGNATURE_NAME_TOKENS for node in dt.descendants
    )


class _DocsConverter(_BaseConverter):
    """markdownify tuned for documentation: verbatim code, readable API entries, absolute links."""

    def __init__(self, base_url: str) -> None:
        super().__init__(
            heading_style="atx",
            bullets="-",
            escape_asterisks=True,
            escape_underscores=False,
            escape_misc=False,
            table_infer_header=True,
            autolinks=True,
            strip_document="strip",
        )
        self.base_url = base_url
        self._li_indexes: dict[int, dict[int, int]] = {}
        self._urls: dict[str | None, str | None] = {}

    def _url(self, href: str | None) -> str | None:
        """``_safe_url(self.base_url, href)``, remembered per page (links repeat)."""
        if href not in self._urls:
            self._urls[href] = self._resolve(href)
        return self._urls[href]

    def _resolve(self, href: str | None) -> str | None:
        # Most links of a page point to a few pages, at different fragments; resolving is costly
        # (urljoin), so the part before the fragment is resolved once. urljoin(base, "p#f") is
        # urljoin(base, "p") + "#f" for any non-empty p and f, unless urlsplit would remove a tab or
        # a line break from the fragment; p must also come through _safe_url's strip() unchanged.
        stripped = href.strip() if href else ""
        before, _, fragment = stripped.partition("#")
        if before and fragment and not before[-1].isspace() and not any(c in stripped for c in "\t\r\n"):
            resolved = self._url(before)
            if resolved is None:
                return None
            return resolved + "#" + fragment.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        return _safe_url(self.base_url, href)

    # -- dispatch ----------------------------------------------------------------------------------

    def process_tag(self, node: Tag, parent_tags: set[str] | None = None) -> str:
        parent_tags = parent_tags if parent_tags is not None else set()
        name = node.name
        if name == "pre":
            return self._convert_pre(node, parent_tags)
        if name == "dt" and _is_signature(node):
            span = _code_span(_collapse_ws(node.get_text()))
            if not span:
                return ""
            return f" {span} " if "_inline" in parent_tags else f"\n\n{span}\n\n"
        if name == "math":
            return self._convert_math(node)
        if name == "table" and parent_tags & {"td", "th"}:
            return " " + _collapse_ws(node.get_text(" ")) + " "
        return self._process_children(node, parent_tags)

    def _process_children(self, node: Tag, parent_tags: set[str]) -> str:
        # markdownify's process_tag, minus its per-element ``find_parent("pre")`` (quadratic-ish on
        # large pages): <pre> never gets here, it is converted whole by _convert_pre.
        remove_inside = _removes_whitespace_inside(node)
        name = node.name
        child_tags = set(parent_tags)
        child_tags.add(name)
        if name in _INLINE_CONTEXT_NAMES:
            child_tags.add("_inline")
        if name in _NOFORMAT_NAMES:
            child_tags.add("_noformat")
        pieces = [""]  # always ends with the previous child's trailing newlines
        for child in node.contents:
            if isinstance(child, Tag):
                converted = self.process_tag(child, child_tags)
            elif isinstance(child, NavigableString) and not isinstance(child, _SKIPPED_STRINGS):
                if not child.strip() and (
                    # Whitespace next to block boundaries is layout, not content.
                    (remove_inside and (not child.previous_sibling or not child.next_sibling))
                    or _removes_whitespace_outside(child.previous_sibling)
                    or _removes_whitespace_outside(child.next_sibling)
                ):
                    continue
                converted = self._convert_text(child, child_tags, remove_inside)
            else:
                continue
            if not converted:
                continue
            # Split off the leading and trailing newlines (markdownify does it with a regular
            # expression that rescans the whole text of every element once per ancestor).
            stripped = converted.lstrip("\n")
            leading = converted[: len(converted) - len(stripped)]
            content = stripped.rstrip("\n")
            trailing = stripped[len(content) :]
            if pieces[-1] and leading:
                previous = pieces.pop()
                leading = "\n" * min(2, max(len(previous), len(leading)))
            pieces.extend((leading, content, trailing))
        text = "".join(pieces)
        convert = self.get_conv_fn_cached(node.name)
        if convert is not None:
            text = convert(node, text, parent_tags=parent_tags)
        return str(text)

    def process_text(self, el: NavigableString, parent_tags: set[str] | None = None) -> str:
        parent_tags = parent_tags if parent_tags is not None else set()
        return self._convert_text(el, parent_tags, _removes_whitespace_inside(el.parent))

    def _convert_text(self, el: NavigableString, parent_tags: set[str], inside_block: bool) -> str:
        # markdownify's process_text with this converter's options (no wrapping, only asterisks
        # escaped), skipping the substitutions that cannot change the text. ``inside_block`` is
        # whether the parent is a block element.
        text = str(el)
        if "pre" not in parent_tags:
            if "\n" in text or "\r" in text:
                text = _RE_NEWLINE_WHITESPACE.sub("\n", text)
            if "\t" in text or "  " in text:
                text = _RE_WHITESPACE.sub(" ", text)
        if "_noformat" not in parent_tags:
            text = self.escape(text, parent_tags)
        previous, following = el.previous_sibling, el.next_sibling
        if _removes_whitespace_outside(previous) or (inside_block and not previous):
            text = text.lstrip(" \t\r\n")
        if _removes_whitespace_outside(following) or (inside_block and not following):
            text = text.rstrip()
        if "\xa0" in text or _INVISIBLE_RE.search(text):
            text = _INVISIBLE_RE.sub("", text).replace("\xa0", " ")
            text = _SPACES_RE.sub(" ", text)
        return text

    # -- blocks ------------------------------------------------------------------------------------

    def _convert_pre(self, node: Tag, parent_tags: set[str]) -> str:
        blocks = _child_tags(node, _CODE)
        if len(blocks) > 1:
            # Alternative versions of one example (Node.js shows CommonJS and ES module syntax).
            code = "\n\n".join(filter(None, (_code_text(block) for block in blocks)))
        else:
            code = _code_text(node)
        if not code.strip():
            return ""
        if "_inline" in parent_tags or "pre" in parent_tags:
            flat = " ".join(line.strip() for line in code.split("\n") if line.strip())
            return " " + _code_span(flat) + " "
        fence = _fence_for(code)
        return f"\n\n{fence}{_code_language(node)}\n{code}\n{fence}\n\n"

    def _convert_math(self, node: Tag) -> str:
        annotation = node.find("annotation", attrs={"encoding": "application/x-tex"})
        if annotation is None:
            return _collapse_ws(node.get_text(" "))
        tex = annotation.get_text().strip()
        if _attr(node, "display") == "block":
            return f"\n\n$${tex}$$\n\n"
        return f"${tex}$"

    def convert_code(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "\n" in text and "_noformat" not in parent_tags:
            text = text.replace("\n", " ")
        return str(super().convert_code(el, text, parent_tags))

    convert_kbd = convert_code
    convert_samp = convert_code

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        text = _HEADING_TAIL_RE.sub("", _collapse_ws(text))
        if not text:
            return ""
        return str(super().convert_hN(n, el, text, parent_tags))

    def convert_p(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if set(_tokens(el)) & _BOLD_PARAGRAPH_TOKENS and "_inline" not in parent_tags:
            text = _collapse_ws(text)
            return f"\n\n**{text}**\n\n" if text else ""
        return str(super().convert_p(el, text, parent_tags))

    def convert_dt(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        text = _collapse_ws(text)
        if not text:
            return ""
        if "_inline" in parent_tags:
            return f" {text} "
        if "**" not in text:
            text = f"**{text}**"
        return f"\n\n{text}\n\n"

    def convert_dd(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        # Paragraphs rather than pandoc's ":   " definition syntax: indented lines would turn into
        # code blocks in CommonMark and break fenced code inside API descriptions.
        return str(self.convert_div(el, text, parent_tags))

    def convert_blockquote(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        # reStructuredText renders plain indentation as <blockquote><div>; quoting code blocks and
        # tables would hide their fences and pipes behind "> " from the chunker and table readers.
        children = _child_tags(el)
        indentation = len(children) == 1 and children[0].name == "div"
        if indentation or _has_descendant(el, _UNQUOTED_BLOCKS):
            return str(self.convert_div(el, text, parent_tags))
        return str(super().convert_blockquote(el, text, parent_tags))

    def convert_summary(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        text = _collapse_ws(text)
        if not text:
            return ""
        if "_inline" in parent_tags:
            return f" {text} "
        return f"\n\n**{text}**\n\n"

    def convert_details(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return str(self.convert_div(el, text, parent_tags))

    convert_figure = convert_details
    convert_main = convert_details
    convert_header = convert_details
    convert_footer = convert_details
    convert_aside = convert_details
    convert_nav = convert_details
    convert_center = convert_details
    convert_fieldset = convert_details

    def convert_li(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        # markdownify numbers ordered items by counting previous siblings for each item, which is
        # quadratic on long lists; the index is computed once per list here.
        text = (text or "").strip()
        if not text:
            return "\n"
        parent = el.parent
        if parent is not None and parent.name == "ol":
            start_attr = _attr(parent, "start").strip()
            start = int(start_attr) if start_attr.isdigit() else 1
            bullet = f"{start + self._li_index(parent, el)}. "
        else:
            bullet = "- "
        indent = " " * len(bullet)
        lines = text.split("\n")
        out = [bullet + lines[0]]
        out.extend(indent + line if line else "" for line in lines[1:])
        return "\n".join(out) + "\n"

    def _li_index(self, parent: Tag, li: Tag) -> int:
        key = id(parent)
        indexes = self._li_indexes.get(key)
        if indexes is None:
            items = _child_tags(parent, _LI)
            indexes = {id(item): index for index, item in enumerate(items)}
            self._li_indexes[key] = indexes
        return indexes.get(id(li), 0)

    # -- tables ------------------------------------------------------------------------------------

    def _cell(self, el: Tag, text: str) -> str:
        text = _collapse_ws(text).replace("|", "\\|")
        colspan_attr = _attr(el, "colspan")
        colspan = max(1, min(100, int(colspan_attr))) if colspan_attr.isdigit() else 1
        return " " + text + " |" * colspan

    def convert_td(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return self._cell(el, text)

    def convert_th(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return self._cell(el, text)

    def convert_tr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if not _has_descendant(el, _CELL_NAMES):
            return ""
        return str(super().convert_tr(el, text, parent_tags))

    # -- inline ------------------------------------------------------------------------------------

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "_noformat" in parent_tags:
            return text
        prefix = " " if text[:1] == " " else ""
        suffix = " " if text[-1:] == " " else ""
        text = text.strip()
        if not text:
            return ""
        if "\n" in text:
            text = _collapse_ws(text)
        href = self._url(_attr(el, "href"))
        if not href:
            return prefix + text + suffix
        if text == href:
            return f"{prefix}<{href}>{suffix}"
        return f"{prefix}[{text}]({href}){suffix}"

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        alt = image_alt(el).replace("[", "\\[").replace("]", "\\]")
        url = self._url(image_source(el))
        if "_inline" in parent_tags or not url:
            return alt
        return f"![{alt}]({url})"


# --------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------

_ASCII_SPACES = "\x20\x0a\x09\x0c\x0d"


class _SoupTarget:
    """lxml parser target that builds exactly the tree ``BeautifulSoup(markup, "lxml")`` builds.

    Beautiful Soup's lxml tree builder costs about twice as much per element as this target: it
    handles namespaces, asks the builder about every tag and walks the parent chain for every string.
    This target receives the same events from the same lxml parser and does what
    ``BeautifulSoup.handle_starttag``, ``endData``, ``object_was_parsed`` and ``_popToTag`` do for
    HTML, setting the fields that ``Tag.__init__`` and ``NavigableString.__new__`` would set directly.
    That relies on beautifulsoup4 internals, so its version is pinned and ``tests/test_extraction.py``
    compares both trees node by node.

    ``tags`` lists every element in document order; ``depth`` is the nesting depth of the deepest
    (``<html>`` is at depth 1).
    """

    def __init__(self, soup: BeautifulSoup) -> None:
        # The lxml tree builder, whose internals the bs4 stubs do not declare.
        builder: Any = soup.builder
        self.soup = soup
        self.builder = builder
        self.stack: list[Tag] = [soup]
        self.current: Tag = soup
        self.last: PageElement | None = None  # the most recently created element
        self.pending: list[str] = []  # text not yet turned into a string
        self.preserve: list[Tag] = []  # open <pre> and <textarea>
        self.containers: list[Tag] = []  # open tags whose strings get their own class (<script>)
        self.tags: list[Tag] = []
        self.depth = 0
        self.attribute_dict_class = builder.attribute_dict_class
        self.attribute_value_list_class = builder.attribute_value_list_class
        self.string_classes: dict[str, type[NavigableString]] = builder.string_containers
        self.preserve_names: set[str] = builder.preserve_whitespace_tags
        self.empty_names: set[str] = builder.empty_element_tags or set()
        self.list_attributes: dict[str, set[str]] = builder.cdata_list_attributes
        self.universal_list_attributes = self.list_attributes.get("*", set())
        #: Names that need more than the common steps when opened.
        self.special_names = frozenset({*self.string_classes, *self.preserve_names, *self.empty_names, "meta"})
        self.fields = {
            "parser_class": type(soup),
            "namespace": None,
            "_namespaces": builder.active_namespace_prefixes[-1],
            "prefix": None,
            "sourceline": None,
            "sourcepos": None,
            "attribute_value_list_class": self.attribute_value_list_class,
            "known_xml": False,
            "next_element": None,
            "next_sibling": None,
            "hidden": False,
            "cdata_list_attributes": self.list_attributes,
            "preserve_whitespace_tags": self.preserve_names,
            "can_be_empty_element": False,
            "interesting_string_types": Tag.MAIN_CONTENT_STRING_TYPES,
        }

    def start(self, name: str, attrib: dict[str, str]) -> None:
        if self.pending:
            self._flush(None)
        attrs = self.attribute_dict_class(attrib)
        if attrs:
            if any(key[:1] == "{" for key in attrs):
                self._start_namespaced(name, attrib)
                return
            specific = self.list_attributes.get(name.lower())
            for key, value in attrs.items():
                if key in self.universal_list_attributes or (specific and key in specific):
                    attrs[key] = self.attribute_value_list_class(nonwhitespace_re.findall(value))
        parent = self.current
        siblings = parent.contents
        previous = siblings[-1] if siblings else None
        last = self.last
        fields = self.fields.copy()
        fields["name"] = name
        fields["attrs"] = attrs
        fields["contents"] = []
        fields["parent"] = parent
        fields["previous_element"] = last
        fields["previous_sibling"] = previous
        tag = Tag.__new__(Tag)
        tag.__dict__ = fields
        if last is not None:
            last.next_element = tag
        if previous is not None:
            previous.next_sibling = tag
        siblings.append(tag)
        self.last = tag
        self.stack.append(tag)
        self.current = tag
        self.tags.append(tag)
        if len(self.stack) - 1 > self.depth:
            self.depth = len(self.stack) - 1
        if name in self.special_names:
            self._start_special(tag)

    def _start_special(self, tag: Tag) -> None:
        name = tag.name
        if name in self.empty_names:
            tag.can_be_empty_element = True
        if name == "meta":
            self.builder.set_up_substitutions(tag)
        if name in self.preserve_names:
            self.preserve.append(tag)
        if name in self.string_classes:
            tag.interesting_string_types = {self.string_classes[name]}
            self.containers.append(tag)

    def _start_namespaced(self, name: str, attrib: dict[str, str]) -> None:
        # An attribute name of the form "{uri}name" (possible in HTML): let Beautiful Soup's own
        # code build the tag.
        builder = self.builder
        attrs = builder.attribute_dict_class()
        for key, value in attrib.items():
            namespace, local = builder._getNsTag(key)
            if namespace is None:
                attrs[key] = value
            else:
                attrs[NamespacedAttribute(builder._prefix_for_namespace(namespace), local, namespace)] = value
        tag = Tag(
            self.soup,
            builder,
            name,
            None,
            None,
            attrs,
            self.current,
            self.last,
            namespaces=self.fields["_namespaces"],
        )
        if self.last is not None:
            self.last.next_element = tag
        self.last = tag
        self.current.contents.append(tag)
        self.stack.append(tag)
        self.current = tag
        self.tags.append(tag)
        self.depth = max(self.depth, len(self.stack) - 1)
        if name in self.preserve_names:
            self.preserve.append(tag)
        if name in self.string_classes:
            self.containers.append(tag)

    def _pop(self) -> Tag:
        tag = self.stack.pop()
        if self.preserve and tag is self.preserve[-1]:
            self.preserve.pop()
        if self.containers and tag is self.containers[-1]:
            self.containers.pop()
        self.current = self.stack[-1]
        return tag

    def end(self, name: str) -> None:
        if self.pending:
            self._flush(None)
        # BeautifulSoup._popToTag: close the innermost open tag of that name and those inside it;
        # nothing when none is open.
        if self.current.name != name and not any(tag.name == name for tag in self.stack[1:]):
            return
        while len(self.stack) > 1 and self._pop().name != name:
            pass

    def data(self, text: str) -> None:
        self.pending.append(text)

    def comment(self, text: str) -> None:
        self._special_string(text, Comment)

    def pi(self, target: str, data: str) -> None:
        self._special_string(target + " " + data, ProcessingInstruction)

    def doctype(self, name: str, pubid: str, system: str) -> None:
        self._special_string(Doctype._string_for_name_and_ids(name, pubid, system), Doctype)

    def _special_string(self, text: str, string_class: type[NavigableString]) -> None:
        if self.pending:
            self._flush(None)
        self.pending.append(text)
        self._flush(string_class)

    def close(self) -> None:
        if self.pending:
            self._flush(None)
        while len(self.stack) > 1:
            self._pop()

    def _flush(self, string_class: type[NavigableString] | None) -> None:
        text = "".join(self.pending)
        self.pending = []
        if not self.preserve and not text.strip(_ASCII_SPACES):
            # Whitespace-only text outside <pre> becomes one space or newline.
            text = "\n" if "\n" in text else " "
        if string_class is None:
            string_class = NavigableString
            if self.containers:
                string_class = self.string_classes.get(self.containers[-1].name, NavigableString)
        parent = self.current
        siblings = parent.contents
        previous = siblings[-1] if siblings else None
        last = self.last
        string = str.__new__(string_class, text)
        string.__dict__ = {
            "hidden": False,
            "parent": parent,
            "previous_element": last,
            "next_element": None,
            "next_sibling": None,
            "previous_sibling": previous,
        }
        if last is not None:
            last.next_element = string
        if previous is not None:
            previous.next_sibling = string
        siblings.append(string)
        self.last = string


class _Parsed(NamedTuple):
    soup: BeautifulSoup
    tags: list[Tag]  # every element, in document order
    depth: int  # nesting depth of the deepest element (<html> is at depth 1)


def _parse(markup: str) -> _Parsed:
    """``BeautifulSoup(markup, "lxml")``, built faster (see :class:`_SoupTarget`)."""
    DetectsXMLParsedAsHTML.warn_if_markup_looks_like_xml(markup, stacklevel=3)
    if markup[:1] == "\ufeff":
        markup = markup[1:]
    attempts: list[tuple[str | bytes, str | None]] = [(markup, None), (markup.encode("utf8"), "utf8")]
    for data, encoding in attempts:
        soup = BeautifulSoup("", "lxml")
        target = _SoupTarget(soup)
        parser = etree.HTMLParser(target=target, recover=True, huge_tree=False, encoding=encoding)
        try:
            parser.feed(data)
            parser.close()
        except (UnicodeDecodeError, LookupError, etree.ParserError):
            if encoding is None:
                continue  # as Beautiful Soup does: try again with UTF-8 bytes
            raise
        return _Parsed(soup, target.tags, target.depth)
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------


def _prepare_markup(text: str) -> str:
    if len(text) > MAX_HTML_CHARS:
        logger.warning("Page of %d characters truncated to %d for extraction", len(text), MAX_HTML_CHARS)
        text = text[:MAX_HTML_CHARS]
    text = _sanitize_text(text).lstrip("\ufeff")
    text = _XML_DECL_RE.sub("", text, count=1)
    if "<" not in text:
        # Plain text; also keeps BeautifulSoup from mistaking it for a file name or URL.
        text = "<html><body><p>" + text + "</p></body></html>"
    return text


def _meta_content(metas: list[Tag], predicate: Callable[[Tag], bool]) -> str | None:
    for meta in metas:
        if predicate(meta):
            content = _collapse_ws(_attr(meta, "content"))
            return content or None
    return None


def _canonical(links: list[Tag], base_url: str) -> str | None:
    for link in links:
        if "canonical" not in (r.lower() for r in _classes(link, "rel")):
            continue
        href = _attr(link, "href").strip()
        if not href:
            return None
        url = _safe_url(base_url, href)
        if url is None:
            return None
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme in ("http", "https") and parts.netloc:
            return url
        if parts.scheme == "file":
            return url
        return None
    return None


def _base_url(bases: list[Tag], url: str) -> str:
    base = next((tag for tag in bases if tag.get("href") is not None), None)
    if base is not None:
        resolved = _safe_url(url, _attr(base, "href"))
        if resolved:
            return resolved
    return url


def _executable_scripts(scripts: list[Tag]) -> int:
    count = 0
    for script in scripts:
        kind = _attr(script, "type").strip().lower()
        executable = kind in ("", "module", "text/javascript", "application/javascript", "text/babel")
        if executable and (script.get("src") or script.get_text().strip()):
            count += 1
    return count


_WORD_CHAR_RE = re.compile(r"\w")


def _is_spa_shell(soup: BeautifulSoup, main: Tag, scripts: int) -> bool:
    if not scripts:
        return False
    # Word characters of main.get_text(), counted only as far as the thresholds need.
    words = 0
    for string in main.strings:
        words += len(_WORD_CHAR_RE.findall(string))
        if words >= _SPA_MOUNT_MAX_WORD_CHARS:
            return False
    if words < _SPA_MAX_WORD_CHARS:
        return True
    for ident in _SPA_MOUNT_IDS:
        mount = soup.find(id=ident)
        if isinstance(mount, Tag) and not mount.get_text().strip():
            return True
    return soup.find("app-root") is not None


def _extract(text: str, url: str) -> Extracted:
    soup, tags, depth = _parse(_prepare_markup(text))
    # The tree is as parsed, so these lists stand for soup.find_all(name).
    named: dict[str, list[Tag]] = {name: [] for name in ("html", "body", "base", "meta", "link", "title", "script")}
    for tag in tags:
        if tag.name in named:
            named[tag.name].append(tag)
    base_url = _base_url(named["base"], url)

    html_tag = next(iter(named["html"]), None)
    language = None
    if isinstance(html_tag, Tag):
        language = _collapse_ws(_attr(html_tag, "lang") or _attr(html_tag, "xml:lang")) or None
    description = _meta_content(named["meta"], lambda m: _attr(m, "name").strip().lower() == "description")
    canonical = _canonical(named["link"], base_url)
    title_tag = next(iter(named["title"]), None)
    page_title = _collapse_ws(title_tag.get_text()) if isinstance(title_tag, Tag) else ""
    scripts = _executable_scripts(named["script"])

    body = next(iter(named["body"]), soup)
    _label_tab_panels(body, soup, tags)
    _unwrap_code_tables(body, tags)
    _objects_to_images(body, soup, tags)
    _remove_chrome(body)
    # No need to walk the tree when nothing parsed is nested near _MAX_DEPTH: the tab labels
    # (<p><strong>) are the only elements added since, two levels below a parsed one at most.
    if depth + 2 >= _MAX_DEPTH:
        _flatten_deep(body)
    main = _find_main(body)
    _prepare_tables(main, tags)

    h1 = main.find("h1")
    title = _HEADING_TAIL_RE.sub("", _collapse_ws(h1.get_text())) if isinstance(h1, Tag) else ""
    title = _INVISIBLE_RE.sub("", title) or page_title

    images = html_images(_under(main, (tag for tag in tags if tag.name == "img")), main,
                         functools.partial(_safe_url, base_url))
    converter = _DocsConverter(base_url)
    markdown = str(converter.convert_soup(main))
    # A leading "---" would read as YAML front matter to the next tool; edge rules carry nothing.
    markdown = normalize_markdown(_EDGE_RULES_RE.sub("", markdown))
    return Extracted(
        title=title,
        markdown=markdown,
        canonical_url=canonical,
        language=language,
        description=description,
        has_scripts_only=_is_spa_shell(soup, main, scripts),
        images=images,
    )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one page, then collect what the page left.

    A page's tree is thousands of objects (hundreds of thousands for a large page) linked in cycles
    (parent, children, siblings). Built with the collector running, it is traversed again and again
    as it grows: about a fifth of the extraction time. Paused, nothing of the page can be collected before the page is done,
    and one young-generation collection afterwards frees the whole tree at once. The collector is
    process-wide: it is left alone when it was off, and switched back on after the page otherwise.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def extract_html(html: str | bytes, url: str, *, encoding: str | None = None) -> Extracted:
    """Extract the main content of an HTML page as normalized Markdown, with its metadata.

    ``html`` may be text or bytes. Bytes are decoded with ``encoding`` when given (as from the HTTP
    ``Content-Type``), else by the byte-order mark or ``<meta charset>``, else as UTF-8 when they are
    valid UTF-8 and Windows-1252 when not. Relative links, image sources and the canonical URL are
    resolved against ``url`` (or the page's ``<base href>``). Never raises.
    """
    try:
        with _collector_paused():
            return _extract(_decode(html, encoding), url)
    except Exception:  # bad input must never stop a crawl (DESIGN, rule 7)
        logger.warning("HTML extraction failed for %s", url, exc_info=True)
        return _EMPTY
