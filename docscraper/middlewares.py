"""Downloader middleware and request identity for the ``docs`` spider.

:class:`RedirectScopeMiddleware` re-checks every redirect hop against the run's scope and against the
pages already claimed, so a redirect can neither leave the source nor fetch a page twice. It sits after
Scrapy's ``RedirectMiddleware`` in the chain (a lower order number), so it sees each redirected request
before it is downloaded. Refusals are recorded as ``redirectOutOfScope`` / ``redirectDuplicate`` under the
key of the URL that was first requested. Stats: ``docscraper/pages_refused/redirect*``.

:class:`PageFingerprinter` makes a request's identity that of the page it stands for (normalized URL),
so Scrapy's dupefilter folds ``/page/``, ``/page?utm_source=x`` and ``/page`` into one request.
:class:`PageDupeFilter` tells the run about the duplicates it filters, so they reach the report.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request

from docscraper.run import run_for
from docscraper.scope import Refusal
from docscraper.urls import normalize_url, page_id

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

__all__ = ["PageDupeFilter", "PageFingerprinter", "RedirectScopeMiddleware"]

logger = logging.getLogger(__name__)


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

    A redirect whose target is the same page as its origin (``/guide`` -> ``/guide/``) is not a
    duplicate. A filtered request is reported to the run as ``duplicate`` or ``redirectDuplicate``.
    """

    crawler: Crawler | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDupeFilter:
        dupefilter = super().from_crawler(crawler)
        dupefilter.crawler = crawler
        return dupefilter

    def request_seen(self, request: Request) -> bool:
        origin = request.meta.get("docscraper_page_id")
        if request.meta.get("redirect_urls") and origin:
            try:
                if page_id(request.url) == origin:
                    return False
            except ValueError:
                pass
        return super().request_seen(request)

    def log(self, request: Request, spider: Spider) -> None:
        super().log(request, spider)
        run = run_for(self.crawler) if self.crawler else None
        if run is None:
            return
        redirect_urls = request.meta.get("redirect_urls")
        if redirect_urls:
            run.note_duplicate(redirect_urls[0], redirect=True, of=request.url)
        else:
            run.note_duplicate(request.url)


class RedirectScopeMiddleware:
    """Refuse redirect hops that leave the scope or land on a page already claimed this run."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectScopeMiddleware:
        if not crawler.settings.getbool("DOCSCRAPER_REDIRECT_SCOPE_ENABLED", True):
            raise NotConfigured
        return cls(crawler)

    def process_request(self, request: Request) -> Any:
        redirect_urls = request.meta.get("redirect_urls")
        run = run_for(self.crawler)
        if not redirect_urls or run is None or "docscraper_page_id" not in request.meta:
            return None
        origin = redirect_urls[0]
        refusal = run.scope.check(request.url)
        if refusal is not None:
            request.meta["docscraper_refused"] = True
            run.refuse(origin, Refusal("redirectOutOfScope", f"redirects to {request.url} ({refusal.detail})"))
            raise IgnoreRequest(f"redirect out of scope: {origin} -> {request.url}")
        target = page_id(request.url)
        if target == request.meta["docscraper_page_id"]:
            return None
        holder = run.claimed.get(target)
        if holder is not None and page_id(holder) != request.meta["docscraper_page_id"]:
            request.meta["docscraper_refused"] = True
            run.note_duplicate(origin, redirect=True, of=holder)
            raise IgnoreRequest(f"redirect to a page already claimed: {origin} -> {request.url}")
        run.claimed.setdefault(target, request.url)
        return None
