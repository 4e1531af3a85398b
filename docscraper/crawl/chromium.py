"""scrapy-playwright's download handler, launching docscraper's Chromium: imported only when a crawl
renders its first page (see :mod:`docscraper.crawl.rendering`)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from docscraper.crawl.rendering import RenderError, render_problem
from docscraper.crawl.resources import CrawlResources, crawl_config
from docscraper.crawl.ssrf import (
    SsrfConfig,
    check_addresses,
    check_url,
    environment_proxy_hosts,
    normalize_host,
    record_refusal,
    source_hosts,
)
from docscraper.credentials import Credentials, origin_of

if TYPE_CHECKING:
    from playwright.async_api import Request as PlaywrightRequest
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["ChromiumDownloadHandler"]

logger = logging.getLogger(__name__)

#: Resource types a page's text never depends on: not fetched.
SKIPPED_TYPES = frozenset({"image", "media", "font"})

_UNCHECKED_SCHEMES = frozenset({"data", "blob", "about"})


class ChromiumDownloadHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler, built only for a run that renders (its launch options come from
    :class:`~docscraper.crawl.rendering.RenderingAddon`), with every request the page makes judged first
    (:meth:`_abort`). A setting that keeps Chromium from starting is a :class:`RenderError` here."""

    def __init__(self, crawler: Crawler) -> None:
        config = crawl_config(crawler)
        problem = render_problem(crawler.settings, config)
        if problem:
            raise RenderError(problem)
        super().__init__(crawler)
        self.crawler = crawler
        self._resources = CrawlResources.find(crawler)
        ssrf = SsrfConfig.from_config(config)
        self._ssrf: SsrfConfig | None = ssrf if ssrf.enabled else None
        self._verdicts: dict[str, str | None] = {}
        # a proxy in the environment, the launch options or a context: the address Chromium connects to may be it
        contexts = [crawler.settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS") or {},
                    *(c for c in (crawler.settings.getdict("PLAYWRIGHT_CONTEXTS") or {}).values() if isinstance(c, dict))]
        self._proxy_configured = bool(environment_proxy_hosts()) or any(c.get("proxy") for c in contexts)
        # PLAYWRIGHT_ABORT_REQUEST, if set, judges what the rules below let through
        self._user_abort: Callable[[PlaywrightRequest], Any] | None = getattr(self, "abort_request", None)
        self.abort_request = self._abort
        # PLAYWRIGHT_PROCESS_REQUEST_HEADERS (default: scrapy-playwright's use_scrapy_headers) decides, then a
        # private source's credentials are put on its origin's requests and taken off every other's
        self._user_headers: Callable[..., Any] | None = getattr(self, "process_request_headers", None)
        self._jars: weakref.WeakSet[Any] = weakref.WeakSet()  # browser contexts given the source's cookies
        self.process_request_headers = self._headers

    def _trusted(self) -> set[str]:
        return source_hosts(self._resources.target if self._resources is not None else None)

    async def _refusal(self, url: str) -> str | None:
        """Why the browser must not fetch *url* (the SSRF guard's rules), or None."""
        if self._ssrf is None or urlsplit(url).scheme.lower() in _UNCHECKED_SCHEMES:
            return None
        check = check_url(url, self._ssrf, self._trusted())
        if check.refusal is not None or check.resolve is None:
            return check.refusal
        host = check.resolve
        if host not in self._verdicts:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError:
                verdict = None  # Chromium cannot resolve it either
            else:
                addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
                verdict = check_addresses(host, addresses, self._ssrf)
            self._verdicts[host] = verdict
        return self._verdicts[host]

    async def download_request(self, request: Request) -> Response:
        """scrapy-playwright's download, then the navigation's redirect hops and final connection judged by the
        SSRF guard's rules (:meth:`_navigation_refusal`): a page refused so is recorded as ``blockedAddress`` and
        its content never used."""
        response: Response = await super().download_request(request)
        if request.meta.get("playwright") and self._ssrf is not None:
            refusal = await self._navigation_refusal(request, response, self._ssrf)
            if refusal is not None:
                record_refusal(self.crawler, self._resources, request, refusal)
        return response

    async def _navigation_refusal(self, request: Request, response: Response, ssrf: SsrfConfig) -> str | None:
        """Why a rendered page must not be used: a hop of the HTTP redirects Chromium followed, or the page it
        reached, that the guard refuses (Playwright routes a redirect's first request only, so these hops went
        out unjudged: the page's content is what is kept from them), or a final connection to a refused address
        (a name that resolved to another address for Chromium than for the guard: DNS rebinding)."""
        redirects = request.meta.get("redirect_urls")
        for hop in [*redirects[1:], response.url] if redirects else []:
            refusal = await self._refusal(hop)
            if refusal is not None:
                return f"redirects to {hop}: {refusal}"
        # the address is that of the navigation's last HTTP response: without redirects, the URL requested (a
        # script may have moved the page's URL since, which the spider ignores)
        reached = response.url if redirects else request.url
        host = normalize_host(urlsplit(reached).hostname or "")
        if response.ip_address is not None and host and not self._proxied(request):
            address = ipaddress.ip_address(str(response.ip_address))
            refusal = check_addresses(host, [address], ssrf, trusted=host in self._trusted())
            if refusal is not None:
                return f"{reached}: Chromium connected to {address}: {refusal}"
        return None

    def _proxied(self, request: Request) -> bool:
        """Whether Chromium may have gone through a proxy (the user's, trusted as by the guard's middleware), so
        that the address it connected to is the proxy's: one configured for the run, or in the request's context."""
        return self._proxy_configured or bool((request.meta.get("playwright_context_kwargs") or {}).get("proxy"))

    async def _headers(self, *, browser_type_name: str, playwright_request: PlaywrightRequest,
                       scrapy_request_data: dict[str, Any]) -> dict[str, str]:
        """The headers of a request the page makes (navigation or subresource): the user's choice
        (scrapy-playwright's default uses the Scrapy request's for navigations), without any credential header:
        basic auth is the context's ``http_credentials`` (:mod:`docscraper.crawl.auth`), cookies its jar."""
        if self._user_headers is None:  # PLAYWRIGHT_PROCESS_REQUEST_HEADERS = None: the browser's own
            headers: Any = await playwright_request.all_headers()
        else:
            headers = self._user_headers(browser_type_name=browser_type_name, playwright_request=playwright_request,
                                         scrapy_request_data=scrapy_request_data)
            if asyncio.iscoroutine(headers):
                headers = await headers
        credentials = self._resources.credentials if self._resources is not None else None
        if credentials is None:
            return dict(headers)
        if credentials.cookies:
            await self._jar(playwright_request, credentials)
        # no credential header is given to the browser (it would carry it across redirects: crawl.auth); one
        # that reached this far is taken off, and Chromium ignores a Cookie override (its jar sends them: _jar)
        final = {name.lower(): value for name, value in dict(headers).items()}
        managed = {name.lower() for name in credentials.managed()}
        stripped = bool(managed & set(final) - {"cookie"})
        final = {name: value for name, value in final.items() if name not in managed}
        if stripped:
            self.stats.inc_value("docscraper/credentials/stripped")
        return final

    async def _jar(self, request: PlaywrightRequest, credentials: Credentials) -> None:
        """Put the source's cookies in the page's browser context once, before its first request goes out:
        Chromium takes cookies from its jar only (a ``Cookie`` header override is ignored). The jar would send
        them to the source's host on any port or scheme: :meth:`_abort` refuses those other origins."""
        context = request.frame.page.context
        if context in self._jars:
            return
        self._jars.add(context)
        scheme, host, port = credentials.origin
        await context.add_cookies([
            {"name": c.name, "value": c.value, "url": f"{scheme}://{host}:{port}{c.path or '/'}",
             **({"expires": float(c.expires)} if c.expires else {})}
            for c in credentials.cookies if c.host == host or (c.subdomains and host.endswith("." + c.host))
        ])

    def _cookie_refusal(self, url: str) -> str | None:
        """Why a page's request to *url* must not go out: the source's host on another origin, which Chromium
        would send the source's cookies to."""
        credentials = self._resources.credentials if self._resources is not None else None
        if credentials is None or not credentials.cookies:
            return None
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        if origin[1] == credentials.origin[1] and origin != credentials.origin:
            return "the source's host on another scheme or port, which the browser would send its cookies to"
        return None

    async def _abort(self, request: PlaywrightRequest) -> bool:
        kind = request.resource_type
        cookie_refusal = self._cookie_refusal(request.url)
        if cookie_refusal is not None:
            logger.info("Rendering: not fetching %s: %s", request.url, cookie_refusal)
            self.stats.inc_value("docscraper/credentials/refused")
            return True
        if kind in SKIPPED_TYPES:
            self.stats.inc_value(f"docscraper/render/skipped/{kind}")
            return True
        refusal = await self._refusal(request.url)
        if refusal is not None:
            logger.warning("Rendering: the browser may not fetch %s: %s", request.url, refusal)
            self.stats.inc_value("docscraper/render/refused")
            return True
        if self._user_abort is not None:
            verdict: Any = self._user_abort(request)
            if asyncio.iscoroutine(verdict):
                verdict = await verdict
            return bool(verdict)
        return False
