"""HTML pages: decode, parse, read the page's metadata, strip chrome, select the main content, fix its
structure and convert it; :func:`extract_html` is the entry point."""

from __future__ import annotations

import functools
import logging
import re
from urllib.parse import urlsplit

from lxml import etree

from docscraper.content.extraction._dom import Node, attr, classes, collapse_ws, heading_words, text
from docscraper.content.extraction.chrome import remove_chrome
from docscraper.content.extraction.converter import INVISIBLE_RE, to_markdown
from docscraper.content.extraction.links import LinkResolver, safe_url
from docscraper.content.extraction.main_content import find_main
from docscraper.content.extraction.parsing import decode, parse, prepare_markup, truncation
from docscraper.content.extraction.result import EMPTY, Extracted
from docscraper.content.extraction.structure import (
    flatten_deep,
    label_tab_panels,
    objects_to_images,
    prepare_tables,
    unwrap_code_tables,
)
from docscraper.content.images import html_images

__all__ = ["extract_html"]

logger = logging.getLogger(__name__)

#: A page with scripts and fewer word characters than this in its main content is a JS-rendered shell.
_SPA_MAX_WORD_CHARS = 50
#: ... or fewer than this when it also has an empty framework mount point (``<div id="root">``).
_SPA_MOUNT_MAX_WORD_CHARS = 200
_SPA_MOUNT = etree.XPath(
    "//*[@id = 'root' or @id = 'app' or @id = '__next' or @id = '__nuxt' or @id = '___gatsby'"
    " or @id = 'svelte' or @id = 'main-app']"
)
_EXECUTABLE_TYPES = frozenset({"", "module", "text/javascript", "application/javascript", "text/babel"})
#: Elements whose text is never the page's text (Beautiful Soup's non-content strings).
_NON_TEXT = ("script", "style", "template")
_WORD_CHAR_RE = re.compile(r"\w")


def _canonical(root: Node, base_url: str) -> str | None:
    for link in root.iter("link"):
        if "canonical" not in (r.lower() for r in classes(link, "rel")):
            continue
        url = safe_url(base_url, attr(link, "href").strip())
        if url is None:
            return None
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme in ("http", "https") and parts.netloc:
            return url
        return url if parts.scheme == "file" else None
    return None


def _base_url(root: Node, url: str) -> str:
    base = next((el for el in root.iter("base") if el.get("href") is not None), None)
    if base is not None:
        resolved = safe_url(url, attr(base, "href"))
        if resolved:
            return resolved
    return url


def _description(root: Node) -> str | None:
    for meta in root.iter("meta"):
        if attr(meta, "name").strip().lower() == "description":
            return collapse_ws(attr(meta, "content")) or None
    return None


def _executable_scripts(root: Node) -> int:
    count = 0
    for script in root.iter("script"):
        if attr(script, "type").strip().lower() in _EXECUTABLE_TYPES and (script.get("src") or text(script).strip()):
            count += 1
    return count


def _is_spa_shell(root: Node, main: Node, scripts: int) -> bool:
    if not scripts:
        return False
    # Word characters of the main content, counted only as far as the thresholds need.
    words = 0
    for string in main.itertext():
        words += len(_WORD_CHAR_RE.findall(string))
        if words >= _SPA_MOUNT_MAX_WORD_CHARS:
            return False
    if words < _SPA_MAX_WORD_CHARS:
        return True
    if any(not text(mount).strip() for mount in _SPA_MOUNT(root)):
        return True
    return next(root.iter("app-root"), None) is not None


def _extract(markup: str, url: str, truncated: str | None) -> Extracted:
    root = parse(prepare_markup(markup))
    base_url = _base_url(root, url)
    language = collapse_ws(attr(root, "lang") or attr(root, "xml:lang")) or None
    description = _description(root)
    canonical = _canonical(root, base_url)
    title_tag = next(root.iter("title"), None)
    page_title = collapse_ws(text(title_tag)) if title_tag is not None else ""
    scripts = _executable_scripts(root)
    etree.strip_elements(root, *_NON_TEXT, with_tail=False)

    body = next(root.iter("body"), root)
    label_tab_panels(body)
    unwrap_code_tables(body)
    objects_to_images(body)
    remove_chrome(body)
    flatten_deep(body)
    main = find_main(body)
    prepare_tables(main)

    h1 = next(main.iter("h1"), None)
    title = heading_words(text(h1)) if h1 is not None else ""
    title = INVISIBLE_RE.sub("", title) or page_title

    resolve = LinkResolver(base_url)
    images = html_images(list(main.iter("img")), main, functools.partial(safe_url, base_url))
    has_scripts_only = _is_spa_shell(root, main, scripts)
    return Extracted(
        title=title,
        markdown=to_markdown(main, resolve),
        canonical_url=canonical,
        language=language,
        description=description,
        has_scripts_only=has_scripts_only,
        images=images,
        truncated=truncated,
    )


def extract_html(html: str | bytes, url: str, *, encoding: str | None = None) -> Extracted:
    """Extract the main content of an HTML page as normalized Markdown, with its metadata.

    ``html`` may be text or bytes. Bytes are decoded as :mod:`docscraper.content.encoding` decides, with
    ``encoding`` (as from the HTTP ``Content-Type``) as the declared charset when given. Relative
    links, image sources and the canonical URL are resolved against ``url`` (or the page's
    ``<base href>``). A page over :data:`~docscraper.content.extraction.MAX_HTML_CHARS` is extracted from its
    beginning, and the result's ``truncated`` says so. Never raises.
    """
    try:
        markup = decode(html, encoding)
        return _extract(markup, url, truncation(html, markup))
    except Exception:  # bad input must never stop a crawl (DESIGN, rule 7)
        logger.warning("HTML extraction failed for %s", url, exc_info=True)
        return EMPTY
