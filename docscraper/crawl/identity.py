"""Request identity and redirect checks for the ``docs`` spider.

:class:`PageFingerprinter` (``REQUEST_FINGERPRINTER_CLASS``) makes a request's identity the page it stands for
(normalized URL), so ``/page/``, ``/page?utm_source=x`` and ``/page`` are one request; :class:`PageDupeFilter`
(``DUPEFILTER_CLASS``) records what it filters in the run's ledger. :class:`RedirectScopeMiddleware` re-checks every
redirect hop against the scope and the pages already claimed (refusals ``redirectOutOfScope`` and
``redirectDuplicate``, under the URL first requested) and fails a loop with ``redirectLoop``; it is off when
``DOCSCRAPER_REDIRECT_SCOPE_ENABLED`` is. :class:`RedirectTargetMiddleware` refuses a redirect to no http(s) URL.
Stats: ``docscraper/pages_refused/redirect*``, ``docscraper/pages_failed``. Loops, and why each middleware sits
where it does: docs/explanation/flow.md.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request

from docscraper.crawl.resources import CrawlResources
from docscraper.crawl.scope import Refusal
from docscraper.crawl.ssrf import REASON as SSRF_REASON
from docscraper.storage.state import iso_utc, utcnow
from docscraper.urls import normalize_url, page_id

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

__all__ = ["PageDupeFilter", "PageFingerprinter", "RedirectScopeMiddleware", "RedirectTargetMiddleware"]

#: The statuses Scrapy's RedirectMiddleware follows (a 304 is a conditional request's answer, not a redirect).
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

logger = logging.getLogger(__name__)


def _chain_pages(origin: str, redirect_urls: list[str]) -> set[str]:
    """Page ids of a redirect chain so far: the page first requested and every hop before this one."""
    pages = {origin}
    for url in redirect_urls:
        try:
            pages.add(page_id(url))
        except ValueError:
            continue
    return pages


class PageFingerprinter:
    """``REQUEST_FINGERPRINTER_CLASS``: method + normalized URL + body."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageFingerprinter:
        return cls()

    def fingerprint(self, request: Request) -> bytes:
        try:
            url = normalize_url(request.url)
        except ValueError:
            url = request.url
        digest = hashlib.sha1(usedforsecurity=False)
        digest.update(request.method.encode("ascii"))
        digest.update(b"\0" + url.encode("utf-8") + b"\0")
        digest.update(request.body or b"")
        return digest.digest()


class PageDupeFilter(RFPDupeFilter):
    """``DUPEFILTER_CLASS``: Scrapy's filter, plus two docscraper rules.

    A redirect whose target is the same page as its origin (``/guide`` -> ``/guide/``), or as any
    earlier hop of its own chain (a loop, which :class:`RedirectScopeMiddleware` ends), is not a
    duplicate. A filtered request is reported to the run as ``duplicate`` or ``redirectDuplicate``.
    """

    resources: CrawlResources | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDupeFilter:
        dupefilter = super().from_crawler(crawler)
        # None outside a docs crawl: duplicates are then only logged
        dupefilter.resources = crawler.get_extension(CrawlResources)
        return dupefilter

    @staticmethod
    def redirect_to_itself(request: Request) -> bool:
        """Whether a redirect hop lands on its own page or an earlier hop (never a duplicate)."""
        origin = request.meta.get("docscraper_page_id")
        redirect_urls = request.meta.get("redirect_urls")
        if redirect_urls and origin:
            try:
                return page_id(request.url) in _chain_pages(origin, redirect_urls)
            except ValueError:
                pass
        return False

    def request_seen(self, request: Request) -> bool:
        if self.redirect_to_itself(request):
            return False
        return super().request_seen(request)

    def log(self, request: Request, spider: Spider) -> None:
        super().log(request, spider)
        if self.resources is None or self.resources.target is None:
            return
        outcomes = self.resources.outcomes
        redirect_urls = request.meta.get("redirect_urls")
        if redirect_urls:
            outcomes.duplicate(redirect_urls[0], redirect=True, of=request.url)
        else:
            outcomes.duplicate(request.url)


class RedirectTargetMiddleware:
    """A redirect whose ``Location`` names no http(s) URL is a refusal of the page, recorded with its reason,
    never a failure that would make every run of the site ``partial``.

    Scrapy's RedirectMiddleware raises ``ValueError`` building the next request for a malformed target
    (``http://[``, ``javascript:alert(1)``) and hands on the 3xx of another scheme (``file:///etc/passwd``).
    This downloader middleware sees the response first (order 650, above RedirectMiddleware's 600): the page
    that redirected is refused (``blockedAddress`` for another scheme when the SSRF guard is on, else
    ``redirectOutOfScope``; ``redirectOutOfScope`` for a target that is no URL at all) under the URL first
    requested, and the request is dropped."""

    def __init__(self, resources: CrawlResources) -> None:
        self.outcomes = resources.outcomes
        self.guard = resources.config.ssrf_guard_enabled

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectTargetMiddleware:
        return cls(CrawlResources.of(crawler))

    def process_response(self, request: Request, response: Any) -> Any:
        if response.status not in _REDIRECTS or request.meta.get("dont_redirect") or b"Location" not in response.headers:
            return response
        location = response.headers[b"Location"].decode("latin-1")
        shown = repr(location[:200])  # a target that is no URL is shown quoted
        try:
            target = urljoin(response.url, location)
            shown = target[:200]
            parts = urlsplit(target)
            scheme = parts.scheme.lower()
            if scheme in ("http", "https") and parts.hostname and (parts.port or 0) >= 0:
                return response
        except ValueError as exc:
            reason, why = "redirectOutOfScope", f"not a valid URL ({exc})"
        else:
            reason = SSRF_REASON if self.guard else "redirectOutOfScope"
            why = f"scheme {scheme or '(none)'} is not http(s)" if scheme not in ("http", "https") else "no host"
        origin = (request.meta.get("redirect_urls") or [request.url])[0]
        request.meta["docscraper_refused"] = True
        self.outcomes.refuse(origin, Refusal(reason, f"redirects to {shown}: {why}"),
                             finder=request.meta.get("docscraper_finder"))
        raise IgnoreRequest(f"redirect to {shown} not followed: {why}")


class RedirectScopeMiddleware:
    """Refuse redirect hops that leave the scope or land on a page already claimed this run."""

    def __init__(self, resources: CrawlResources) -> None:
        self.resources = resources
        self.ledger = resources.ledger
        self.outcomes = resources.outcomes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectScopeMiddleware:
        resources = CrawlResources.of(crawler)
        if not resources.config.redirect_scope_enabled:
            raise NotConfigured
        return cls(resources)

    def process_request(self, request: Request) -> Any:
        redirect_urls = request.meta.get("redirect_urls")
        target = self.resources.target
        if not redirect_urls or target is None or "docscraper_page_id" not in request.meta:
            return None
        outcomes = self.outcomes
        origin = redirect_urls[0]
        origin_pid: str = request.meta["docscraper_page_id"]
        if redirect_urls.count(request.url) >= 2:
            request.meta["docscraper_refused"] = True
            chain = " -> ".join([*redirect_urls, request.url])
            logger.warning("Redirect loop, not followed: %s", chain)
            outcomes.failed(origin, "redirectLoop", f"redirect loop: {chain}"[:2000], pid=origin_pid,
                            fetched_at=iso_utc(utcnow()), finder=request.meta.get("docscraper_finder"))
            raise IgnoreRequest(f"redirect loop: {origin} -> ... -> {request.url}")
        refusal = target.scope.check(request.url)
        if refusal is not None:
            request.meta["docscraper_refused"] = True
            outcomes.refuse(origin, Refusal("redirectOutOfScope", f"redirects to {request.url} ({refusal.detail})"))
            raise IgnoreRequest(f"redirect out of scope: {origin} -> {request.url}")
        dest = page_id(request.url)
        if dest in _chain_pages(origin_pid, redirect_urls):  # the same page, or a loop under way
            return None
        holder = self.ledger.claimant(dest)
        if holder is not None and page_id(holder) != origin_pid:
            request.meta["docscraper_refused"] = True
            outcomes.duplicate(origin, redirect=True, of=holder)
            raise IgnoreRequest(f"redirect to a page already claimed: {origin} -> {request.url}")
        if holder is None:
            self.ledger.claim(dest, request.url)
        return None
