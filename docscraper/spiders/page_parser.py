"""The CPU-bound half of the ``docs`` spider's ``parse_page``: a fetched page's bytes to Markdown and links.

:func:`parse_fetched` is a pure function of a :class:`FetchedPage` (the bytes, the URL, the content type),
so that the spider can run it in a worker process (:mod:`docscraper.crawl.workers`) while the reactor
goes on downloading. It decides the encoding (:mod:`docscraper.content.encoding`), extracts the page
(:mod:`docscraper.content.extraction`), and finds its links: for HTML with Scrapy's ``LinkExtractor`` over
an ``HtmlResponse`` rebuilt from the same bytes, exactly as the spider would over the response it received;
for Markdown, the links of its text. Everything about the run (scope, depth, outcomes, items) stays with the
spider on the reactor thread.
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

__all__ = ["FetchedPage", "ParsedPage", "parse_fetched", "response_kind"]

#: A fragment that is a client-side route (``#/guide``, ``#!/guide``), not an anchor in the page.
_HASH_ROUTE_RE = re.compile(r"!?/.")
_KINDS: dict[str, type[TextResponse]] = {"html": HtmlResponse, "xml": XmlResponse, "text": TextResponse}
_LINKS = LinkExtractor(deny_extensions=[], unique=True, strip=True)


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
    and the warnings of link extraction (a page whose links cannot be read still has its text)."""

    extracted: Extracted | None
    encoding: BodyEncoding
    links: list[str] = field(default_factory=list)
    hash_routes: int = 0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


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
            urls = [link.url for link in _LINKS.extract_links(response)]
        except Exception as exc:
            parsed.warnings.append(f"Cannot extract links from {page.url}: {exc}")
    kept = [u for u in urls if is_http_url(u) or u[:5].lower() == "file:"]
    parsed.hash_routes = len({u for u in kept if _HASH_ROUTE_RE.match(urlsplit(u).fragment)})
    parsed.links = list(dict.fromkeys(strip_fragment(u) for u in kept))
    return parsed
