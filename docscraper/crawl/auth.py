"""A private source's credentials on its own origin's requests, and on no other (DESIGN rule 9).

:class:`CredentialsMiddleware`, a downloader middleware after Scrapy's ``CookiesMiddleware`` (700), gives every
request to the source's scheme, host and port the run's :class:`~docscraper.credentials.Credentials` (their
headers; their cookies added to the site's) and takes them off a request to any other origin, whatever copied
them there. A rendered request (``meta["playwright"]``) has the credentials' headers taken off: basic auth goes to
its browser context as ``http_credentials`` (in its meta until the download returns), cookies to
the browser's jar (:mod:`docscraper.crawl.chromium`). No settings. Stats: ``docscraper/credentials/stripped``
(requests to another origin that had them taken off). Why, and the browser's case: docs/explanation/security.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docscraper.crawl.resources import CrawlResources

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from docscraper.credentials import Credentials

__all__ = ["BROWSER_CONTEXT", "CredentialsMiddleware", "apply_credentials"]

#: scrapy-playwright's meta key naming a request's browser context, and the context of a private source's pages
BROWSER_CONTEXT_META = "playwright_context"
BROWSER_CONTEXT = "docscraper-credentials"
_SET_HERE = "docscraper_browser_credentials"


def _cookie_pairs(header: str) -> list[tuple[str, str]]:
    pairs = []
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            pairs.append((name, value))
    return pairs


def apply_credentials(credentials: Credentials, url: str, headers: dict[str, str]) -> tuple[dict[str, str], bool]:
    """*headers* (lowercase names) for a request to *url*: with the credentials on their origin, without them
    elsewhere. Returns the headers and whether anything was taken off."""
    out = {name.lower(): value for name, value in headers.items()}
    mine = credentials.headers_for(url)
    stripped = False
    ours = credentials.cookie_names()
    cookies = _cookie_pairs(out.pop("cookie", ""))
    if mine:
        for name, value in mine.items():
            if name.lower() != "cookie":
                out[name.lower()] = value
        given = _cookie_pairs(mine.get("Cookie", ""))
        names = {name for name, _ in given}
        cookies = [pair for pair in cookies if pair[0] not in names] + given
    else:
        for name in credentials.managed():
            if name.lower() != "cookie" and out.pop(name.lower(), None) is not None:
                stripped = True
        kept = [pair for pair in cookies if pair[0] not in ours]
        stripped = stripped or len(kept) != len(cookies)
        cookies = kept
    if cookies:
        out["cookie"] = "; ".join(f"{name}={value}" for name, value in cookies)
    return out, stripped


class CredentialsMiddleware:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.credentials: Credentials | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if self.credentials is None:
            resources = CrawlResources.find(self.crawler)
            self.credentials = resources.credentials if resources is not None else None
            if self.credentials is None:
                return
        credentials = self.credentials
        if request.meta.get("playwright"):
            self._browser_request(request, credentials)
            return
        current = {name.decode("latin-1").lower(): b", ".join(values).decode("latin-1")
                   for name, values in request.headers.items()}
        managed = {name.lower() for name in credentials.managed()}
        if not credentials.applies_to(request.url) and not managed & set(current):
            return
        wanted, stripped = apply_credentials(credentials, request.url, current)
        for name in list(request.headers.keys()):
            if name.decode("latin-1").lower() not in wanted:
                del request.headers[name]
        for name, value in wanted.items():
            if current.get(name) != value:
                request.headers[name] = value
        if stripped and self.crawler.stats is not None:
            self.crawler.stats.inc_value("docscraper/credentials/stripped")

    def _browser_request(self, request: Request, credentials: Credentials) -> None:
        for name in credentials.managed():
            if name.lower() != "cookie":
                request.headers.pop(name, None)
        browser = credentials.browser_credentials()
        if browser is not None and credentials.applies_to(request.url):
            request.meta[BROWSER_CONTEXT_META] = BROWSER_CONTEXT
            request.meta["playwright_context_kwargs"] = {"http_credentials": browser}
            request.meta[_SET_HERE] = True

    def process_response(self, request: Request, response: Response) -> Response:
        self._forget(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._forget(request)

    @staticmethod
    def _forget(request: Request) -> None:
        """The browser context's options (a password) leave the request's meta once its download returned."""
        if request.meta.pop(_SET_HERE, False):
            request.meta.pop("playwright_context_kwargs", None)
