"""robots.txt per RFC 9309: fetched once per host per run, parsed with Protego, and obeyed on errors too.

:class:`RobotsTxtMiddleware` takes the slot of Scrapy's own. A host's :class:`RobotsTxt` is ``parsed`` (a 2xx after
redirects), ``unavailable`` (a 4xx, a redirect not followed: everything allowed) or ``unreachable`` (a 5xx, a network
error or a 429, after retries: everything refused, the run ``partial``, no orphan removed). A refused request raises
:class:`RobotsDenied` (reason ``robots``). Other components ask the enabled instance: ``await robots_for(url)``
fetches once; :meth:`~RobotsTxtMiddleware.get` and :meth:`~RobotsTxtMiddleware.crawl_delay` never fetch. Settings:
``ROBOTSTXT_OBEY`` (off: ``NotConfigured``), ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``. Meta:
``dont_obey_robotstxt``. Signal: ``robots_parsed``. Stats: ``docscraper/robots/fetched``, ``.../parsed``,
``.../unavailable``, ``.../unreachable``, ``.../status/<code>``, ``.../disallowed``, ``.../disallowed_unreachable``.
Why these readings of the RFC: docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import decode_robotstxt
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from docscraper.crawl.ratelimit import apply_crawl_delay
from docscraper.crawl.resources import CrawlResources

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

__all__ = ["RobotsDenied", "RobotsTxt", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

PARSED = "parsed"
UNAVAILABLE = "unavailable"
UNREACHABLE = "unreachable"


def _netloc(url_or_netloc: str) -> str:
    return (urlsplit(url_or_netloc).netloc if "://" in url_or_netloc else url_or_netloc).lower()


@dataclass(frozen=True)
class RobotsTxt:
    """What one host's robots.txt said this run.

    ``outcome`` is ``parsed``, ``unavailable`` (no rules: everything allowed) or ``unreachable``
    (everything refused); ``cause`` is the short why (``HTTP 503``, ``DownloadTimeoutError: ...``);
    ``text`` the decoded body of a 2xx (for its ``Sitemap:`` lines), ``parser`` its ``ROBOTSTXT_PARSER``
    instance; ``crawl_delay`` the ``Crawl-delay`` of the group that applies to docscraper.
    """

    netloc: str
    url: str
    outcome: str
    cause: str
    status: int | None = None
    final_url: str | None = None
    text: str = ""
    parser: RobotParser | None = None
    crawl_delay: float | None = None

    @property
    def disallow_all(self) -> bool:
        return self.outcome == UNREACHABLE

    @property
    def detail(self) -> str:
        """A sentence for logs, the report and each refused URL."""
        if self.outcome == PARSED:
            return f"robots.txt rules apply ({self.cause})"
        if self.outcome == UNAVAILABLE:
            return f"robots.txt unavailable ({self.cause}): everything allowed (RFC 9309 2.3.1.3)"
        return f"robots.txt unreachable ({self.cause}): nothing on {self.netloc} is fetched (RFC 9309 2.3.1.4)"

    def as_report(self) -> dict[str, Any]:
        """The entry of the report's ``discovery.robots`` for this host."""
        report: dict[str, Any] = {"url": self.url, "outcome": self.outcome, "httpStatus": self.status,
                                  "detail": self.detail, "crawlDelay": self.crawl_delay}
        if self.final_url and self.final_url != self.url:
            report["finalUrl"] = self.final_url
        return report


class RobotsDenied(IgnoreRequest):
    """A request refused because of robots.txt; ``detail`` says why (rules, or robots.txt unreachable)."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class RobotsTxtMiddleware:
    """Downloader middleware: obey robots.txt as RFC 9309 says, errors included (see the module)."""

    #: The robots.txt request goes ahead of the pages waiting for it (Scrapy's value).
    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler: Crawler, *, parser_class: type[RobotParser], user_agent: str,
                 robots_user_agent: str | None) -> None:
        self.crawler = crawler
        self._parser_class = parser_class
        self._user_agent = user_agent
        self._robots_user_agent = robots_user_agent
        self._hosts: dict[str, RobotsTxt] = {}
        self._waiting: dict[str, list[Deferred[RobotsTxt]]] = {}
        self.resources: CrawlResources | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        parser_class: type[RobotParser] = load_object(settings["ROBOTSTXT_PARSER"])
        build_from_crawler(parser_class, crawler, b"")  # a parser whose library is missing fails now
        middleware = cls(crawler, parser_class=parser_class, user_agent=str(settings["USER_AGENT"] or ""),
                         robots_user_agent=settings.get("ROBOTSTXT_USER_AGENT") or None)
        # where what each host's robots.txt said is recorded (None outside a docs crawl)
        middleware.resources = CrawlResources.find(crawler)
        return middleware

    # what other components read ------------------------------------------------------------------

    @property
    def user_agent(self) -> str:
        """The user agent robots.txt groups are matched against (``ROBOTSTXT_USER_AGENT`` or ``USER_AGENT``)."""
        return self._robots_user_agent or self._user_agent

    def get(self, url_or_netloc: str) -> RobotsTxt | None:
        """What the host's robots.txt said, or None when it has not been fetched (yet) this run."""
        return self._hosts.get(_netloc(url_or_netloc))

    def crawl_delay(self, url_or_netloc: str) -> float | None:
        """The ``Crawl-delay`` (seconds) that the host's robots.txt sets for docscraper, or None: no
        robots.txt fetched yet, none found, or no ``Crawl-delay`` in the group that applies."""
        found = self.get(url_or_netloc)
        return found.crawl_delay if found is not None else None

    async def robots_for(self, url: str) -> RobotsTxt:
        """What the robots.txt of *url*'s host says, fetched on first use; concurrent callers share the
        one request."""
        netloc = _netloc(url)
        found = self._hosts.get(netloc)
        if found is not None:
            return found
        if netloc in self._waiting:
            waiter: Deferred[RobotsTxt] = Deferred()
            self._waiting[netloc].append(waiter)
            result: RobotsTxt = await maybe_deferred_to_future(waiter)
            return result
        self._waiting[netloc] = []
        try:
            found = await self._fetch(urlsplit(url).scheme or "http", netloc)
        except Exception as exc:  # never leave the waiters hanging; an unknown error is "unreachable"
            logger.exception("robots.txt of %s", netloc)
            found = RobotsTxt(netloc, f"http://{netloc}/robots.txt", UNREACHABLE, f"{exc.__class__.__name__}: {exc}")
        self._hosts[netloc] = found
        for waiter in self._waiting.pop(netloc):
            waiter.callback(found)
        return found

    # the middleware ------------------------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        if request.meta.get("dont_obey_robotstxt") or urlparse_cached(request).scheme not in ("http", "https"):
            return
        robots = await self.robots_for(request.url)
        if robots.disallow_all:
            self._stat("disallowed_unreachable")
            raise RobotsDenied(f"robots.txt of {robots.netloc} unreachable ({robots.cause})", robots.detail)
        if robots.parser is None:
            return
        agent = self._robots_user_agent or request.headers.get(b"User-Agent") or self._user_agent
        if not robots.parser.allowed(request.url, agent):
            logger.debug("Forbidden by robots.txt: %s", request)
            self._stat("disallowed")
            raise RobotsDenied("Forbidden by robots.txt", "disallowed by robots.txt")

    # fetching ------------------------------------------------------------------------------------

    def _stat(self, name: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"docscraper/robots/{name}")

    async def _fetch(self, scheme: str, netloc: str) -> RobotsTxt:
        url = f"{scheme}://{netloc}/robots.txt"
        # No handle_httpstatus_* meta: RedirectMiddleware must follow redirects, and a downloader call
        # returns every status anyway. Retries of 5xx and timeouts happen before the verdict.
        request = Request(url, priority=self.DOWNLOAD_PRIORITY, meta={"dont_obey_robotstxt": True},
                          callback=NO_CALLBACK)
        self._stat("fetched")
        engine = self.crawler.engine
        assert engine is not None
        try:
            response = await engine.download_async(request)
        except IgnoreRequest as exc:
            if "redirect" in str(exc):  # more hops than REDIRECT_MAX_TIMES: RFC 9309 2.3.1.2
                found = RobotsTxt(netloc, url, UNAVAILABLE, str(exc))
            else:  # refused on the way (another middleware): nothing is known, so nothing is allowed
                found = RobotsTxt(netloc, url, UNREACHABLE, f"{exc.__class__.__name__}: {exc}")
        except Exception as exc:
            found = RobotsTxt(netloc, url, UNREACHABLE, f"{exc.__class__.__name__}: {exc}")
        else:
            found = await self._verdict(netloc, url, request, response)
        self._stat(found.outcome)
        self._report(found)
        return found

    async def _verdict(self, netloc: str, url: str, request: Request, response: Response) -> RobotsTxt:
        status = response.status
        self._stat(f"status/{status}")
        cause = f"HTTP {status}"
        if 200 <= status < 300:
            redirects = len(response.meta.get("redirect_urls", ())) if response.request is not None else 0
            if redirects:
                cause += f" at {response.url} after {redirects} redirect(s)"
            try:
                parser = build_from_crawler(self._parser_class, self.crawler, response.body)
                delay = parser.crawl_delay(self.user_agent)
            except Exception as exc:  # a broken file is no reason to stop; Protego itself never raises
                logger.warning("robots.txt %s cannot be parsed (%s); treated as empty", response.url, exc)
                parser = build_from_crawler(self._parser_class, self.crawler, b"")
                delay = None
            await self.crawler.signals.send_catch_log_async(signal=signals.robots_parsed, robotparser=parser,
                                                            request=request)
            if delay and redirects:
                # The rate limiter reads Crawl-delay from /robots.txt responses itself; a robots.txt
                # served from elsewhere after redirects reaches it only this way.
                apply_crawl_delay(self.crawler, url, float(delay))
            return RobotsTxt(netloc, url, PARSED, cause, status, response.url,
                             decode_robotstxt(response.body, self.crawler.spider), parser, delay)
        if status == 429 or status >= 500 or status < 200:
            return RobotsTxt(netloc, url, UNREACHABLE, cause, status, response.url)
        return RobotsTxt(netloc, url, UNAVAILABLE, cause, status, response.url)

    def _report(self, found: RobotsTxt) -> None:
        if found.outcome == UNREACHABLE:
            logger.warning("%s", found.detail)
        else:
            logger.info("%s: %s", found.url, found.detail)
        resources = self.resources
        if resources is not None:
            # the report's ``discovery.robots``; an unreachable robots.txt means nothing on the host was
            # fetched: the run is partial and removes nothing
            ledger = resources.ledger
            ledger.discovery.setdefault("robots", {})[found.netloc] = found.as_report()
            if found.disallow_all:
                ledger.robots_unreachable[found.netloc] = found.detail
