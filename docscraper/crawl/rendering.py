"""JavaScript rendering: page requests rendered in Chromium through scrapy-playwright.

Asked for per run (``-a render=js``; ``render=none`` turns it off) or per source (``"render": "js"`` in its scope).
The scope middleware adds :func:`render_meta` to http(s) page requests (:func:`renders_url`); discovery stays plain
HTTP. :class:`RenderingDownloadHandler` (``http``/``https``) hands those to scrapy-playwright's handler, created when
a run that renders opens, and everything else to Scrapy's HTTP/1.1 handler; a run that renders nothing never imports
Playwright. :class:`RenderingAddon` sets docscraper's launch options (:class:`BrowserConfig`) in
``PLAYWRIGHT_LAUNCH_OPTIONS``; :func:`render_problem` says why a run cannot render. Settings:
``DOCSCRAPER_CHROMIUM_PATH``, ``DOCSCRAPER_RENDER_IDLE_TIMEOUT``, ``PLAYWRIGHT_*``. Meta: ``playwright``,
``playwright_page_methods``, ``docscraper_render``. Stats: ``docscraper/rendered_pages``,
``docscraper/render/skipped/<resource type>``, ``docscraper/render/refused``. Why: docs/explanation/flow.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, Settings
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.python.failure import Failure

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.content.documents import KINDS
from docscraper.crawl.sendgate import before_sending
from docscraper.crawl.signals import run_opened

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

__all__ = [
    "ASYNCIO_REACTOR",
    "CHROMIUM_ARGS",
    "BrowserConfig",
    "RenderError",
    "RenderingAddon",
    "RenderingDownloadHandler",
    "chromium_problem",
    "render_failure_reason",
    "render_meta",
    "render_problem",
    "renders_url",
]

logger = logging.getLogger(__name__)

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

#: Chromium's command line: headless, no sandbox (containers), and no background connections, which a
#: closed network would leave hanging.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_INSTALL_HINT = (
    "install it with `apt-get install -y chromium` or point DOCSCRAPER_CHROMIUM_PATH at a Chromium "
    "binary (docscraper never downloads a browser)"
)


#: The download handler that renders in Chromium (scrapy-playwright's, with docscraper's launch and guards).
BROWSER_HANDLER = "docscraper.crawl.chromium.ChromiumDownloadHandler"


class RenderError(RuntimeError):
    """Rendering was asked for but cannot work (no Chromium, a contradictory setting); one line."""


def chromium_problem(path: str) -> str | None:
    """Why the Chromium binary at *path* cannot be launched, or None."""
    if not os.path.isfile(path):
        return f"Chromium not found at {path} (DOCSCRAPER_CHROMIUM_PATH); {_INSTALL_HINT}"
    if not os.access(path, os.X_OK):
        return f"Chromium at {path} (DOCSCRAPER_CHROMIUM_PATH) is not executable; {_INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class BrowserConfig:
    """How Chromium is launched: :data:`CHROMIUM_ARGS` and ``DOCSCRAPER_CHROMIUM_PATH``, overridden key by
    key by ``PLAYWRIGHT_LAUNCH_OPTIONS``. ``remote`` is true when scrapy-playwright connects to a browser
    elsewhere (``PLAYWRIGHT_CDP_URL``/``PLAYWRIGHT_CONNECT_URL``): no local binary is needed then."""

    chromium_path: str
    launch_options: Mapping[str, Any] = field(default_factory=dict)
    remote: bool = False

    @classmethod
    def from_settings(cls, settings: BaseSettings, config: DocscraperConfig) -> BrowserConfig:
        browser_type = str(settings.get("PLAYWRIGHT_BROWSER_TYPE") or "chromium")
        if browser_type != "chromium":
            raise ConfigError(f"PLAYWRIGHT_BROWSER_TYPE={browser_type!r}: docscraper renders with Chromium only")
        reactor = settings.get("TWISTED_REACTOR")
        if not settings.getbool("TWISTED_REACTOR_ENABLED", True) or (reactor and reactor != ASYNCIO_REACTOR):
            raise ConfigError(f"rendering needs TWISTED_REACTOR={ASYNCIO_REACTOR} (scrapy-playwright)")
        user = dict(settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS") or {})
        user_path = user.get("executable_path")
        if user_path and str(user_path) != config.chromium_path:
            raise ConfigError(
                f"PLAYWRIGHT_LAUNCH_OPTIONS executable_path {user_path!r} contradicts "
                f"DOCSCRAPER_CHROMIUM_PATH {config.chromium_path!r}; set DOCSCRAPER_CHROMIUM_PATH only"
            )
        options: dict[str, Any] = {
            "executable_path": config.chromium_path,
            "headless": True,
            "args": list(CHROMIUM_ARGS),
        }
        options.update(user)
        remote = bool(settings.get("PLAYWRIGHT_CDP_URL") or settings.get("PLAYWRIGHT_CONNECT_URL"))
        return cls(chromium_path=str(options["executable_path"]), launch_options=options, remote=remote)


def render_problem(settings: BaseSettings, config: DocscraperConfig) -> str | None:
    """Why a crawl that renders cannot start (a setting, a missing Chromium), or None."""
    try:
        browser = BrowserConfig.from_settings(settings, config)
    except ConfigError as exc:
        return str(exc)
    return None if browser.remote else chromium_problem(browser.chromium_path)


#: Files whose text needs no browser (Markdown twins, plain text, data): fetched as they are.
_PLAIN_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".xml", ".json",
                   # documents are converted from their bytes (docscraper.content.documents), never rendered
                   *(extension for kind in KINDS.values() for extension in kind.extensions))


def renders_url(url: str) -> bool:
    """Whether a page request for *url* is rendered when its run renders: http(s) pages, not text files or
    documents (``.pdf``, ``.docx``...)."""
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and not parts.path.lower().endswith(_PLAIN_SUFFIXES)


async def _settle(page: Any, timeout: float) -> None:
    """Give the page's scripts up to *timeout* seconds after ``load`` to finish their requests."""
    from playwright.async_api import TimeoutError as PlaywrightTimeoutError

    if timeout <= 0:
        return
    with contextlib.suppress(PlaywrightTimeoutError):
        await page.wait_for_load_state("networkidle", timeout=timeout * 1000)


def render_meta(config: DocscraperConfig) -> dict[str, Any]:
    """The meta keys that make a page request rendered."""
    # here, not with the module: only a crawl that renders imports scrapy-playwright (and Playwright)
    from scrapy_playwright.page import PageMethod

    return {
        "playwright": True,
        "playwright_page_methods": [PageMethod(_settle, config.render_idle_timeout)],
        "docscraper_render": "js",
    }


def render_failure_reason(failure: Failure) -> str | None:
    """``timeout`` or ``network`` for a failed render (a Playwright error), None for other failures."""
    error = failure.value
    module = type(error).__module__ or ""
    if not module.startswith("playwright"):
        return None
    if type(error).__name__ == "TimeoutError":
        return "timeout"
    return "network" if "net::ERR_" in str(error) else "error"


class RenderingAddon:
    """A Scrapy add-on (``ADDONS``) that gives scrapy-playwright docscraper's Chromium launch options
    (:class:`BrowserConfig`: Debian's Chromium, :data:`CHROMIUM_ARGS`, headless) in its own setting,
    ``PLAYWRIGHT_LAUNCH_OPTIONS``, keeping the keys a user set there. Settings that contradict each other
    are left as they are: :func:`render_problem` reports them when a run asks to render."""

    def update_settings(self, settings: Settings) -> None:
        try:
            browser = BrowserConfig.from_settings(settings, DocscraperConfig.from_settings(settings))
        except ConfigError:
            return
        priority = max(settings.getpriority("PLAYWRIGHT_LAUNCH_OPTIONS") or 0, SETTINGS_PRIORITIES["addon"])
        settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", dict(browser.launch_options), priority=priority)


class _Browser:
    """The crawl's one scrapy-playwright handler, shared by the http and https handlers: created when a run
    that renders opens (before the engine starts, so scrapy-playwright starts its driver on
    ``engine_started`` as it always does), never for a run that renders nothing."""

    def __init__(self) -> None:
        self.handler: Any = None
        self.error: str | None = None
        self.closed = False

    def open(self, crawler: Crawler) -> None:
        if self.handler is not None or self.error is not None:
            return
        try:
            # by dotted path, as Scrapy names download handlers: only a crawl that renders imports Playwright
            self.handler = load_object(BROWSER_HANDLER)(crawler)
        except RenderError as exc:
            self.error = str(exc)
            logger.error("Cannot render: %s", exc)

    def get(self) -> Any:
        if self.closed:
            raise RenderError("the browser is closed")
        if self.handler is None:
            raise RenderError(self.error or "this run does not render (-a render=js, or the source's render)")
        return self.handler

    async def close(self) -> None:
        self.closed = True
        handler, self.handler = self.handler, None
        if handler is not None:
            await handler.close()


_BROWSERS: weakref.WeakKeyDictionary[Crawler, _Browser] = weakref.WeakKeyDictionary()


class RenderingDownloadHandler:
    """The ``http``/``https`` download handler: Scrapy's HTTP/1.1 handler for plain requests, Chromium
    (through scrapy-playwright, started when a run that renders opens) for requests with
    ``meta["playwright"]``."""

    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._http = build_from_crawler(HTTP11DownloadHandler, crawler)
        crawler.signals.connect(self.run_opened, signal=run_opened)

    def run_opened(self, resources: Any) -> None:
        """Start the browser's handler when the run renders (its target says so, once the run is open)."""
        target = getattr(resources, "target", None)
        if target is not None and target.render == "js":
            self._browser().open(self.crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderingDownloadHandler:
        return cls(crawler)

    def _browser(self) -> _Browser:
        browser = _BROWSERS.get(self.crawler)
        if browser is None:
            browser = _BROWSERS[self.crawler] = _Browser()
        return browser

    async def download_request(self, request: Request) -> Response:
        # an origin's Retry-After pause and a crawl stopped by 429s hold or refuse what the slot had queued
        await before_sending(self.crawler, request)
        if request.meta.get("playwright"):
            handler = self._browser().get()
            response: Response = await handler.download_request(request)
            return response
        return await self._http.download_request(request)

    async def close(self) -> None:
        try:
            await self._http.close()
        finally:
            browser = _BROWSERS.get(self.crawler)
            if browser is not None:
                await browser.close()
