"""Site chrome: navigation, sidebars, headers and footers, "edit this page" links, consent banners,
heading anchors, copy buttons and hidden elements, recognized and removed before conversion.

The heuristics know the class names of the common documentation generators (Sphinx and its themes,
MkDocs and Material, Docusaurus, rustdoc, Javadoc, Doxygen, DocBook, Texinfo, GitBook, VitePress,
Starlight, Docsy) and fall back to generic names, ARIA roles and link density. An element is never
removed when it holds the page's main content, and a heading's words are never chrome: a heading is
removed only when it is hidden, and an element inside one (mdBook's ``<a class="header" href="#id">``)
only when the heading keeps its words without it (a permalink symbol, Sphinx's ``headerlink``, goes).
A link inside a heading to an anchor of the page keeps its words and loses the link.
"""

from __future__ import annotations

import functools
import re

from lxml import etree

from docscraper.content.extraction._dom import (
    HEADING_NAMES,
    Node,
    attr,
    class_tokens,
    collapse_ws,
    has_ancestor,
    has_descendant,
    text,
    text_len,
    tokens,
)

__all__ = ["JUNK_TAGS", "remove_chrome"]

#: Elements that never carry readable content.
JUNK_TAGS = frozenset(
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
        "out-of-band", "srclink", "hideme", "notable-traits", "test-arrow", "sub-heading-nav", "top-nav",
        "sub-nav", "bottom-nav",
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


_MAIN_NAMES = ("main", "article")
#: Elements whose id alone may mark them as chrome (ids of headings and sections are slugs of titles).
_CONTAINER_NAMES = frozenset(
    {"div", "nav", "aside", "header", "footer", "ul", "ol", "form", "table", "details", "dialog", "menu", "section"}
)
_SECTION_HEADINGS = ("h1", "h2")
_BANNER_EXCLUDES = ("h1", "h2", "h3", "pre", "table", "dl")

_HOLDS_MAIN = etree.XPath(
    "boolean(descendant::main | descendant::article | descendant::*[translate(@role, 'MAIN', 'main') = 'main'])"
)
_HOLDS_MAIN_OR_H1 = etree.XPath(
    "boolean(descendant::main | descendant::article | descendant::h1"
    " | descendant::*[translate(@role, 'MAIN', 'main') = 'main'])"
)


def _holds_main(el: Node, *, heading: bool) -> bool:
    """Whether removing ``el`` would take the page's main content with it."""
    if el.tag in ("body", "html", "main", "article"):
        return True
    return bool((_HOLDS_MAIN_OR_H1 if heading else _HOLDS_MAIN)(el))


def _link_density(el: Node) -> float:
    total = text_len(el)
    if not total:
        return 1.0
    return sum(text_len(a) for a in el.iterdescendants("a")) / total


def _is_chrome_link(el: Node) -> bool:
    words = collapse_ws(text(el))
    href = attr(el, "href").strip()
    if _SYMBOL_ONLY_RE.match(words) and (href.startswith("#") or any(t in _ANCHOR_TOKENS for t in tokens(el))):
        return True
    return bool(words) and len(words) < 60 and _CHROME_LINK_TEXT_RE.match(words) is not None


def _carries_heading_text(el: Node, heading: Node) -> bool:
    """Whether ``el``, inside ``heading``, holds its words: without it the heading would say nothing."""
    own = text(el)
    return not _SYMBOL_ONLY_RE.match(own) and text_len(heading) <= len("".join(own.split()))


def is_chrome(el: Node) -> bool:
    """Whether ``el`` is site chrome or invisible, judged on its own (not its position)."""
    name = el.tag
    if name in JUNK_TAGS:
        return True
    role = attr(el, "role").lower()
    if role != "tabpanel" and (
        el.get("hidden") is not None
        or attr(el, "aria-hidden").lower() == "true"
        or _HIDDEN_STYLE_RE.search(attr(el, "style"))
    ):
        return not _holds_main(el, heading=True)
    if name == "a" and _is_chrome_link(el):
        return True
    if name in HEADING_NAMES:
        return False
    heading = next(el.iterancestors(*HEADING_NAMES), None)
    if heading is not None and _carries_heading_text(el, heading):
        return False
    if name in ("nav", "footer") or role in ("navigation", "contentinfo", "search"):
        return not _holds_main(el, heading=False)
    if name == "header" or role == "banner":
        # An article's own header carries its title; a page header is chrome.
        own_header = role != "banner" and has_descendant(el, HEADING_NAMES) and has_ancestor(el, _MAIN_NAMES)
        return not own_header and not _holds_main(el, heading=False)
    if name == "form":
        return role == "search" or "search" in attr(el, "action").lower() or text_len(el) < 200
    found = tokens(el, with_id=False)
    if any(t in _CHROME_TOKENS or _NAV_TOKEN_RE.match(t) for t in found):
        return not _holds_main(el, heading=True)
    container = name in _CONTAINER_NAMES
    ident = attr(el, "id").lower()
    if container and ident and (ident in _CHROME_TOKENS or _NAV_TOKEN_RE.match(ident)):
        # Ids double as heading slugs ("#navigation", "#footer"): a container that opens a section
        # of its own is content.
        return not has_descendant(el, _SECTION_HEADINGS) and not _holds_main(el, heading=True)
    if container and any(s in t for t in [*found, ident] for s in _CHROME_SUBSTRINGS):
        # Consent banners are small and plain; the reference section of a cookie library is not.
        return text_len(el) < 2000 and not has_descendant(el, _BANNER_EXCLUDES)
    if name == "aside" or role == "complementary" or any(t in _SOFT_CHROME_TOKENS for t in found):
        # Navigation is mostly links; a docutils ".. sidebar::" or a tip box is prose or code.
        if _holds_main(el, heading=True) or has_descendant(el, ("pre",)):
            return False
        return _link_density(el) >= 0.5
    return False


#: Elements that :func:`is_chrome` may judge to be chrome by their name or text alone.
_CHROME_CANDIDATE_NAMES = JUNK_TAGS | {"a", "nav", "footer", "header", "form", "aside"}
#: The attributes other than ``class`` that :func:`is_chrome` reads.
_CHROME_ATTRIBUTES = frozenset({"role", "hidden", "aria-hidden", "style", "id", "action"})


def _may_be_chrome(el: Node) -> bool:
    """False when :func:`is_chrome` is certainly false for ``el``; a cheap screen before it.

    Most elements of a page have an ordinary name and at most a class, and the same class lists
    recur: whether one could mark chrome is decided once per class list.
    """
    if el.tag in _CHROME_CANDIDATE_NAMES:
        return True
    keys = el.keys()
    if not keys:
        return False
    if not _CHROME_ATTRIBUTES.isdisjoint(keys):
        return True
    value = el.get("class")
    return bool(value) and _chrome_classes(value)


@functools.lru_cache(maxsize=4096)
def _chrome_classes(value: str) -> bool:
    """Whether any token of this ``class`` value is one that :func:`is_chrome` acts on."""
    return any(
        token in _CHROME_TOKENS
        or token in _SOFT_CHROME_TOKENS
        or _NAV_TOKEN_RE.match(token)
        or any(s in token for s in _CHROME_SUBSTRINGS)
        for token in class_tokens(value.split())
    )


def remove_chrome(root: Node) -> None:
    """Remove the chrome under ``root``; a heading's link to itself keeps its words, not the link."""
    removed: set[Node] = set()
    doomed: list[Node] = []
    self_links: list[Node] = []
    for el in root.iterdescendants(etree.Element):
        if el.getparent() in removed:
            removed.add(el)
        elif _may_be_chrome(el) and is_chrome(el):
            removed.add(el)
            doomed.append(el)
        elif el.tag == "a" and attr(el, "href").startswith("#") and has_ancestor(el, HEADING_NAMES):
            self_links.append(el)
    for el in doomed:
        el.drop_tree()
    for el in self_links:
        if el not in removed:
            el.drop_tag()
