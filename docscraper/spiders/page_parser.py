"""The CPU-bound half of the ``docs`` spider's ``parse_page``: a fetched page's bytes to Markdown and links.

:func:`parse_fetched` is a pure function of a :class:`FetchedPage` (the bytes, the URL, the content type),
so that the spider can run it in a worker process (:mod:`docscraper.crawl.workers`) while the reactor
goes on downloading. It decides the encoding (:mod:`docscraper.content.encoding`), extracts the page
(:mod:`docscraper.content.extraction`), and finds its links: for HTML with Scrapy's ``LinkExtractor`` over
an ``HtmlResponse`` rebuilt from the same bytes, exactly as the spider would over the response it received;
for Markdown, the links of its text. It also reads the page's robots directives (``<meta name="robots">`` and
``<meta name="docscraper">``, :func:`meta_robots`); the ``X-Robots-Tag`` header is the spider's to read
(:func:`header_robots`). Everything about the run (scope, depth, outcomes, items) stays with the spider on
the reactor thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from scrapy.http import HtmlResponse, TextResponse, XmlResponse
from scrapy.linkextractors import LinkExtractor

from docscraper.content.discovery import parse_llms_txt
from docscraper.content.encoding import BodyEncoding, body_encoding, decode_body
from docscraper.content.extraction import Extracted, extract_html, extract_markdown
from docscraper.urls import is_http_url, strip_fragment

__all__ = ["FetchedPage", "ParsedPage", "RobotsDirectives", "header_robots", "meta_robots", "parse_fetched",
           "response_kind"]

#: A fragment that is a client-side route (``#/guide``, ``#!/guide``), not an anchor in the page.
_HASH_ROUTE_RE = re.compile(r"!?/.")
_KINDS: dict[str, type[TextResponse]] = {"html": HtmlResponse, "xml": XmlResponse, "text": TextResponse}
_LINKS = LinkExtractor(deny_extensions=[], unique=True, strip=True)
#: the ``<meta name>`` values whose robots directives docscraper obeys: every robot's, and its own
_ROBOTS_NAMES = ("robots", "docscraper")
_META_ROBOTS = ("//meta[translate(@name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
                f" = '{_ROBOTS_NAMES[0]}' or translate(@name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',"
                f" 'abcdefghijklmnopqrstuvwxyz') = '{_ROBOTS_NAMES[1]}']/@content")
#: ``X-Robots-Tag: <crawler>: <directives>``; the directives that take a value look the same
_AGENT_RE = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:(.*)", re.DOTALL)
_VALUED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


@dataclass(frozen=True)
class RobotsDirectives:
    """What a page's robots directives ask of docscraper: ``noindex`` (keep its content out of the index),
    ``nofollow`` (do not follow its links), and ``source``, where they were read (for the report)."""

    noindex: bool = False
    nofollow: bool = False
    source: str = ""

    def __or__(self, other: RobotsDirectives) -> RobotsDirectives:
        sources = [d.source for d in (self, other) if (d.noindex or d.nofollow) and d.source]
        return RobotsDirectives(self.noindex or other.noindex, self.nofollow or other.nofollow, ", ".join(sources))


def _directives(values: list[str], source: str) -> RobotsDirectives:
    tokens = {t.strip().lower() for value in values for t in value.split(",")}
    noindex = bool(tokens & {"noindex", "none"})
    nofollow = bool(tokens & {"nofollow", "none"})
    return RobotsDirectives(noindex, nofollow, source if noindex or nofollow else "")


def meta_robots(response: TextResponse) -> RobotsDirectives:
    """The directives of an HTML page's ``<meta name="robots">`` and ``<meta name="docscraper">`` tags."""
    return _directives([str(v) for v in response.xpath(_META_ROBOTS).getall()], "meta robots")


def header_robots(values: list[str]) -> RobotsDirectives:
    """The directives of a response's ``X-Robots-Tag`` headers. A directive for a named crawler
    (``googlebot: noindex``) applies only when it names docscraper or ``robots``; an ``unavailable_after``
    date is not a directive docscraper acts on."""
    kept: list[str] = []
    for value in values:
        scoped = _AGENT_RE.match(value)
        if scoped is None or scoped[1].lower() in _VALUED_DIRECTIVES:
            kept.append(value)
        elif scoped[1].lower() in _ROBOTS_NAMES:
            kept.append(scoped[2])
    return _directives(kept, "X-Robots-Tag")


def response_kind(response: object) -> str | None:
    """Which text response class Scrapy built for a page (``html``, ``xml``, ``text``), or None for a
    binary one: the link extractor reads the page the same way in the worker."""
    for kind, cls in _KINDS.items():
        if isinstance(response, cls):
            return kind
    return None


@dataclass(frozen=True)
class FetchedPage:
    """What :func:`parse_fetched` needs of a response (it pickles: no response, no spider)."""

    url: str
    body: bytes
    content_type: str
    is_markdown: bool
    kind: str | None


@dataclass
class ParsedPage:
    """A parsed page: ``extracted`` (None when extraction raised, with ``error`` saying what), its links in
    order without repeats or fragments, how many distinct links were hash routes, the encoding decision,
    the warnings of link extraction (a page whose links cannot be read still has its text), and the robots
    directives of its ``<meta>`` tags."""

    extracted: Extracted | None
    encoding: BodyEncoding
    links: list[str] = field(default_factory=list)
    hash_routes: int = 0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    robots: RobotsDirectives = RobotsDirectives()


def parse_fetched(page: FetchedPage) -> ParsedPage:
    """Decode, extract and find the links of *page*. Never raises: an extraction error is ``error``."""
    decided = body_encoding(page.body, page.content_type, html=not page.is_markdown)
    encoding = decided.encoding
    try:
        if page.is_markdown:
            extracted = extract_markdown(decode_body(page.body, encoding), page.url)
        else:
            extracted = extract_html(page.body, page.url, encoding=encoding)
    except Exception as exc:  # extraction must never end the run
        return ParsedPage(None, decided, error=f"{exc.__class__.__name__}: {exc}")
    parsed = ParsedPage(extracted, decided)
    urls: list[str] = []
    if page.is_markdown:
        urls = [link.url for link in parse_llms_txt(extracted.markdown, page.url)]
    elif page.kind is not None:
        try:
            response = _KINDS[page.kind](url=page.url, body=page.body, encoding=encoding)
            if isinstance(response, HtmlResponse):
                parsed.robots = meta_robots(response)
            urls = [link.url for link in _LINKS.extract_links(response)]
        except Exception as exc:
            parsed.warnings.append(f"Cannot extract links from {page.url}: {exc}")
    kept = [u for u in urls if is_http_url(u) or u[:5].lower() == "file:"]
    parsed.hash_routes = len({u for u in kept if _HASH_ROUTE_RE.match(urlsplit(u).fragment)})
    parsed.links = list(dict.fromkeys(strip_fragment(u) for u in kept))
    return parsed
