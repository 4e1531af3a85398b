"""scrapy-playwright's download handler, launching docscraper's Chromium: imported only when a crawl
renders its first page (see :mod:`docscraper.crawl.rendering`)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from docscraper.crawl.rendering import RenderError, render_problem
from docscraper.crawl.resources import CrawlResources, crawl_config
from docscraper.crawl.ssrf import SsrfConfig, check_addresses, check_url, normalize_host

if TYPE_CHECKING:
    from playwright.async_api import Request as PlaywrightRequest
    from scrapy.crawler import Crawler

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
        # PLAYWRIGHT_ABORT_REQUEST, if set, judges what the rules below let through
        self._user_abort: Callable[[PlaywrightRequest], Any] | None = getattr(self, "abort_request", None)
        self.abort_request = self._abort

    def _trusted(self) -> set[str]:
        target = self._resources.target if self._resources is not None else None
        if target is None:
            return set()
        hosts = set()
        for url in (target.seed_url, target.args.llms_txt):
            if url:
                hosts.add(normalize_host(urlsplit(url).hostname or ""))
        return hosts

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

    async def _abort(self, request: PlaywrightRequest) -> bool:
        kind = request.resource_type
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
