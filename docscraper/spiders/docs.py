"""The ``docs`` spider: discover, scope and extract a documentation site.

``scrapy crawl docs -a source=URL|NAME [-a allow=GLOBS] [-a block=GLOBS] [-a max_depth=N]
[-a max_pages=N] [-a llms_txt=URL] [-a full=1]``

Discovery runs first, in order, before any page is fetched, so that each page remembers the first
finder that saw it: llms-full.txt (sections mapped to pages become items without a fetch), llms.txt,
sitemaps (from robots.txt ``Sitemap:`` lines and ``sitemap.xml`` at the prefix and the root; indexes
followed to ``DOCSCRAPER_SITEMAP_MAX_DEPTH``), then the link crawl from every fetched page.

Depth: the seed is 0, llms/sitemap pages are 1, a link on a page at depth d is d+1. Requests carry
``docscraper_page_id``, ``docscraper_finder``, ``docscraper_depth`` and ``docscraper_key`` meta keys.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import Request, Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS, LinkExtractor
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TCPTimedOutError, TimeoutError
from twisted.python.failure import Failure

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.discovery import (
    html_counterparts,
    is_markdown_url,
    llms_candidates,
    parse_llms_txt,
    parse_sitemap,
    sitemaps_from_robots,
    split_llms_full,
)
from docscraper.extraction import Extracted, extract_html, extract_markdown
from docscraper.items import PageItem, PageMetadata
from docscraper.run import CrawlRun, _iso
from docscraper.scope import Refusal
from docscraper.state import utcnow
from docscraper.urls import is_http_url, page_id, strip_fragment

__all__ = ["DocsSpider"]

logger = logging.getLogger(__name__)

TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/markdown", "text/x-markdown", "text/plain")
_BINARY_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS) - {".txt", ".md"}


@dataclass
class _Candidate:
    url: str
    finder: str
    depth: int


def _meta(pid: str, finder: str, depth: int, key: str, **extra: Any) -> dict[str, Any]:
    return {
        "docscraper_page_id": pid,
        "docscraper_finder": finder,
        "docscraper_depth": depth,
        "docscraper_key": key,
        "depth": depth,
        **extra,
    }


def _header(response: Response, name: bytes) -> str:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else ""


class DocsSpider(scrapy.Spider):
    name = "docs"

    run: CrawlRun
    link_extractor: LinkExtractor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Spider.__init__ would copy every argument onto the spider; arguments are parsed instead.
        super().__init__()
        self.args = CrawlArgs.parse(kwargs)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DocsSpider:
        try:
            spider = super().from_crawler(crawler, *args, **kwargs)
            config = DocscraperConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            raise ConfigError(f"docs spider: {exc}") from None
        spider.run = CrawlRun(crawler, config, spider.args)
        spider.link_extractor = LinkExtractor(deny_extensions=[], unique=True, strip=True)
        return spider

    # discovery -------------------------------------------------------------------------------------

    async def _fetch(self, url: str, what: str) -> Response | None:
        """Fetch a discovery file through the downloader (robots, retries, redirects apply)."""
        request = Request(url, dont_filter=True, meta={"docscraper_discovery": what, "handle_httpstatus_all": True})
        try:
            assert self.crawler.engine is not None
            response = await self.crawler.engine.download_async(request)
        except IgnoreRequest as exc:
            self.run.discovery.setdefault("problems", []).append(f"{what} {url}: {exc}")
            return None
        except Exception as exc:  # network errors: discovery degrades to what is left
            self.run.discovery.setdefault("problems", []).append(f"{what} {url}: {exc.__class__.__name__}: {exc}")
            return None
        if response.status != 200:
            return None
        return response

    @staticmethod
    def _is_text_file(response: Response) -> bool:
        ctype = _header(response, b"Content-Type").lower()
        head = response.body[:256].lstrip().lower()
        return "html" not in ctype and not head.startswith((b"<!doctype", b"<html"))

    async def start(self) -> AsyncIterator[Any]:
        run = self.run
        if not run.opened:
            return
        seed = run.seed_url
        candidates: dict[str, _Candidate] = {}

        def offer(url: str, finder: str, depth: int) -> None:
            url = strip_fragment(url)
            try:
                pid = page_id(url)
            except ValueError:
                return
            if pid in run.claimed:
                return
            if pid not in candidates:
                candidates[pid] = _Candidate(url, finder, depth)
            else:
                run.note_duplicate(url)

        llms_items: list[PageItem] = []
        if urlsplit(seed).scheme in ("http", "https"):
            try:
                robots = await self._fetch(urljoin(seed, "/robots.txt"), "robots.txt")
                robots_text = robots.text if isinstance(robots, TextResponse) else ""
                llms_links, llms_items, section_links = await self._discover_llms()
                for link in llms_links:
                    offer(link, "llms", 1)
                if run.config.discovery_sitemaps:
                    for url in await self._discover_sitemaps(robots_text):
                        offer(url, "sitemap", 1)
                # Links inside llms-full sections stand for links on those (unfetched) pages.
                for link in section_links:
                    offer(link, "link", 2)
            except Exception as exc:
                # Crawl what was found, from the seed on; an incomplete discovery must never remove pages.
                logger.exception("Discovery failed; crawling from the seed only")
                run.discovery_error = f"{exc.__class__.__name__}: {exc}"
        # The seed is depth 0 whoever listed it.
        seed_pid = page_id(seed)
        seed_finder = candidates.pop(seed_pid).finder if seed_pid in candidates else "link"
        # Claim every discovered page before the first request goes out: the engine reads start()
        # lazily, and a link found on the seed must not claim a page a sitemap listed.
        requests = [self._page_request(seed, seed_finder, 0, seed=True)]
        requests.extend(self._page_request(c.url, c.finder, c.depth) for c in candidates.values())
        for item in llms_items:
            yield item
        for request in requests:
            if request is not None:
                yield request

    async def _discover_llms(self) -> tuple[list[str], list[PageItem], list[str]]:
        """llms.txt links, llms-full.txt items (mapped sections, claimed so they are not fetched) and the
        links inside those sections."""
        run = self.run
        info: dict[str, Any] = {}
        info_llms: dict[str, Any] = {"url": None, "links": 0}
        run.discovery["llms"] = info_llms
        run.discovery["llms-full"] = info
        if not run.config.discovery_llms and not run.args.llms_txt:
            return [], [], []
        found: dict[str, tuple[str, str]] = {}
        candidates = llms_candidates(run.seed_url)
        if run.args.llms_txt:
            candidates = [("llms", run.args.llms_txt), *[(k, u) for k, u in candidates if k == "llms-full"]]
        for kind, url in candidates:
            if kind in found:
                continue
            response = await self._fetch(url, kind)
            if response is not None and isinstance(response, TextResponse) and self._is_text_file(response):
                found[kind] = (response.url, response.text)
        links: list[str] = []
        titles: dict[str, str] = {}
        if "llms" in found:
            url, text = found["llms"]
            parsed = parse_llms_txt(text, url)
            info_llms.update(url=url, links=len(parsed))
            for link in parsed:
                links.append(link.url)
                if link.title:
                    titles.setdefault(link.title, link.url)
        items: list[PageItem] = []
        section_links: list[str] = []
        if "llms-full" in found:
            url, text = found["llms-full"]
            split = split_llms_full(text, url, titles)
            fetched_at = _iso(utcnow())
            mapped = 0
            for section in split.sections:
                if section.url is None:
                    continue
                refusal = run.scope.check(section.url) or run.scope.check_depth(1)
                if refusal is not None:
                    run.refuse(section.url, refusal, finder="llms-full")
                    continue
                pid = run.claim(section.url)
                if pid is None:
                    run.note_duplicate(section.url)
                    continue
                if not run.take_page_slot():
                    run.refuse(section.url, Refusal("maxPages", run.frontier_cut or "max pages"))
                    continue
                mapped += 1
                extracted = extract_markdown(section.markdown, section.url)
                items.append(self._item(section.url, extracted, pid=pid, key=run.key(section.url),
                                        finder="llms-full", depth=1,
                                        http_status=200, content_type="text/markdown", etag=None,
                                        last_modified=None, fetched_at=fetched_at))
                section_links.extend(link.url for link in parse_llms_txt(section.markdown, section.url))
            info.update(url=url, sections=len(split.sections), mapped=mapped, problem=split.problem)
            run.counters["llms_full_pages"] = mapped
            if split.problem:
                logger.info("llms-full.txt %s: %s; the rest is crawled", url, split.problem)
        else:
            info.update(url=None, sections=0, mapped=0, problem="no llms-full.txt found")
        return links, items, section_links

    async def _discover_sitemaps(self, robots_text: str) -> list[str]:
        run = self.run
        cfg = run.config
        seed = run.seed_url
        queue: list[tuple[str, int]] = [(u, 0) for u in sitemaps_from_robots(robots_text, seed)]
        from_robots = bool(queue)
        for fallback in (urljoin(run.scope.prefix, "sitemap.xml"), urljoin(seed, "/sitemap.xml")):
            if fallback not in (u for u, _ in queue):
                queue.append((fallback, 0))
        seen: set[str] = set()
        pages: list[str] = []
        info: dict[str, Any] = {"fromRobots": from_robots, "files": [], "urls": 0, "problems": []}
        run.discovery["sitemap"] = info
        host = urlsplit(seed).netloc
        while queue:
            url, level = queue.pop(0)
            if url in seen:
                continue
            seen.add(url)
            if len(info["files"]) >= cfg.sitemap_max_files:
                info["problems"].append(f"more than {cfg.sitemap_max_files} sitemap files; the rest ignored")
                break
            if urlsplit(url).netloc != host:
                info["problems"].append(f"{url}: sitemap on another host ignored")
                continue
            response = await self._fetch(url, "sitemap")
            if response is None:
                continue
            doc = parse_sitemap(response.body, response.url, max_urls=cfg.sitemap_max_urls,
                                max_bytes=cfg.sitemap_max_bytes)
            info["files"].append({"url": url, "kind": doc.kind, "entries": len(doc.entries)})
            if doc.problem:
                info["problems"].append(f"{url}: {doc.problem}")
                logger.warning("Sitemap %s: %s", url, doc.problem)
            if doc.kind == "sitemapindex":
                if level + 1 > cfg.sitemap_max_depth:
                    info["problems"].append(f"{url}: nested deeper than {cfg.sitemap_max_depth}; children ignored")
                    continue
                queue.extend((entry.url, level + 1) for entry in doc.entries if entry.url not in seen)
            elif doc.kind == "urlset":
                pages.extend(entry.url for entry in doc.entries)
        info["urls"] = len(pages)
        return pages

    # requests --------------------------------------------------------------------------------------

    def _page_request(self, url: str, finder: str, depth: int, *, seed: bool = False) -> Request | None:
        """A request for a page, or None (recorded with its reason) when it must not be fetched."""
        run = self.run
        url = strip_fragment(url)
        if not is_http_url(url):
            return None
        refusal = run.scope.check(url)
        discovery_only = False
        if refusal is not None:
            if not seed:
                run.refuse(url, refusal, finder=finder)
                return None
            discovery_only = refusal.detail.startswith(("blocked by", "not matched by"))
            if not discovery_only:
                run.refuse(url, refusal, finder=finder)
                return None
        depth_refusal = run.scope.check_depth(depth)
        if depth_refusal is not None:
            run.refuse(url, depth_refusal, finder=finder, depth=depth)
            return None
        extension = posixpath.splitext(urlsplit(url).path)[1].lower()
        if extension in _BINARY_EXTENSIONS:
            run.refuse(url, Refusal("nonText", f"extension {extension}"), finder=finder)
            return None
        pid = run.claim(url)
        if pid is None:
            run.note_duplicate(url)
            return None
        if is_markdown_url(url) and finder in ("llms", "llms-full"):
            for twin in html_counterparts(url):
                run.claim(twin, alias_of=url)
        if not run.take_page_slot():
            run.refuse(url, Refusal("maxPages", run.frontier_cut or "max pages"), finder=finder)
            return None
        key = run.key(url)
        meta = _meta(pid, finder, depth, key, docscraper_discovery_only=discovery_only)
        headers: dict[str, str] = {}
        known = run.lookup(pid)
        if known is not None and known.page_id != pid:
            run.claimed.setdefault(known.page_id, url)  # the canonical page this URL was stored under
        if known is not None and known.status == "active" and known.content_hash and not run.args.full:
            if known.etag:
                headers["If-None-Match"] = known.etag
            if known.last_modified:
                headers["If-Modified-Since"] = known.last_modified
            if headers:
                meta["handle_httpstatus_list"] = [304]
        return Request(url, callback=self.parse_page, errback=self.on_error, meta=meta, headers=headers,
                       priority=-depth)

    # responses -------------------------------------------------------------------------------------

    def _item(self, url: str, extracted: Extracted, *, pid: str, key: str, finder: str, depth: int,
              http_status: int | None, content_type: str | None, etag: str | None,
              last_modified: str | None, fetched_at: str) -> PageItem:
        return PageItem(
            url=url,
            title=extracted.title,
            markdown=extracted.markdown,
            metadata=PageMetadata(
                page_id=pid,
                source=self.run.source.name if self.run.source else "",
                path=key,
                canonical_url=extracted.canonical_url,
                language=extracted.language,
                description=extracted.description,
                finder=finder,
                depth=depth,
                http_status=http_status,
                content_type=content_type,
                etag=etag,
                last_modified=last_modified,
                fetched_at=fetched_at,
            ),
        )

    async def parse_page(self, response: Response) -> AsyncIterator[Any]:
        run = self.run
        meta = response.meta
        depth: int = meta["docscraper_depth"]
        finder: str = meta["docscraper_finder"]
        pid: str = meta["docscraper_page_id"]
        fetched_at = _iso(utcnow())
        if meta.get("redirect_urls"):
            pid = page_id(response.url)
        key = run.key(response.url)
        if response.status == 304:
            run.count("not_modified")
            known = run.lookup(pid)
            if known is None:  # a 304 to a request that sent no validators: nothing to go on
                run.page_failed(response.url, "httpError", "HTTP 304 without a stored copy", pid=pid,
                                http_status=304, fetched_at=fetched_at)
                return
            # No body: the links stored from the page's last full fetch lead the crawl on.
            for request in self._follow(list(known.links), depth):
                yield request
            pid, key = known.page_id, known.rel_path or key
            run.emitted.add(pid)
            await run.page_unchanged(pid, key, etag=None, last_modified=None, http_status=304,
                                     fetched_at=fetched_at, url=response.url, finder=finder, depth=depth,
                                     httpStatus=304)
            return
        ctype = _header(response, b"Content-Type").split(";")[0].strip().lower()
        is_markdown = ctype in ("text/markdown", "text/x-markdown") or (
            ctype in ("text/plain", "") and is_markdown_url(response.url)
        )
        if ctype and ctype not in TEXT_TYPES:
            run.reached.add(pid)
            run.refuse(response.url, Refusal("nonText", f"content type {ctype}"), finder=finder)
            return
        if ctype == "text/plain" and not is_markdown:
            is_markdown = True
        try:
            if is_markdown:
                text = response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")
                extracted = extract_markdown(text, response.url)
            else:
                encoding = response.encoding if isinstance(response, TextResponse) else None
                extracted = extract_html(response.body, response.url, encoding=encoding)
        except Exception as exc:  # extraction must never end the run
            logger.error("Cannot extract %s: %s: %s", response.url, exc.__class__.__name__, exc)
            run.page_failed(response.url, "parseError", f"{exc.__class__.__name__}: {exc}", pid=pid,
                            http_status=response.status, fetched_at=fetched_at)
            return
        links = self._links(response, extracted, is_markdown)
        for request in self._follow(links, depth):
            yield request
        if meta.get("docscraper_discovery_only"):
            run.refuse(response.url, Refusal("outOfScope", "seed fetched for its links only (allow/block)"))
            return
        canonical = extracted.canonical_url
        if canonical and canonical != response.url and run.scope.check(canonical) is None:
            canonical_pid = page_id(canonical)
            if canonical_pid != pid:
                if canonical_pid in run.emitted:
                    run.reached.add(pid)
                    run.note_duplicate(response.url, of=canonical)
                    return
                run.claimed.setdefault(canonical_pid, canonical)
                pid, key = canonical_pid, run.key(canonical)
        if pid in run.emitted:
            run.note_duplicate(response.url, of=run.claimed.get(pid))
            return
        run.emitted.add(pid)
        if not extracted.markdown.strip():
            detail = "page has scripts but no static content; try rendering" if extracted.has_scripts_only else "no main content"
            run.count("empty_pages")
            logger.warning("%s: %s", response.url, detail)
        item = self._item(
            response.url,
            extracted,
            pid=pid,
            key=key,
            finder=finder,
            depth=depth,
            http_status=response.status,
            content_type=ctype or None,
            etag=_header(response, b"ETag") or None,
            last_modified=_header(response, b"Last-Modified") or None,
            fetched_at=fetched_at,
        )
        item.metadata.links = links
        yield item

    def _links(self, response: Response, extracted: Extracted, is_markdown: bool) -> list[str]:
        """Fragment-free http(s) links of a page, in order, without repeats."""
        if is_markdown:
            urls = [link.url for link in parse_llms_txt(extracted.markdown, response.url)]
        elif isinstance(response, TextResponse):
            try:
                urls = [link.url for link in self.link_extractor.extract_links(response)]
            except Exception as exc:
                logger.warning("Cannot extract links from %s: %s", response.url, exc)
                urls = []
        else:
            urls = []
        return list(dict.fromkeys(strip_fragment(u) for u in urls if is_http_url(u)))

    def _follow(self, urls: list[str], depth: int) -> list[Request]:
        run = self.run
        requests = []
        for url in urls:
            try:
                pid = page_id(url)
            except ValueError:
                continue
            if pid in run.claimed:
                run.note_duplicate(url)
                continue
            request = self._page_request(url, "link", depth + 1)
            if request is not None:
                requests.append(request)
        return requests

    def on_error(self, failure: Failure) -> list[Request]:
        run = self.run
        request: Request = failure.request  # type: ignore[attr-defined]
        url = request.url
        pid = request.meta.get("docscraper_page_id")
        fetched_at = _iso(utcnow())
        if failure.check(HttpError):
            assert isinstance(failure.value, HttpError)
            response = failure.value.response
            status = response.status
            run.page_failed(response.url, "httpError", f"HTTP {status}", http_status=status,
                            pid=page_id(response.url) if request.meta.get("redirect_urls") else pid,
                            fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
            return []
        if failure.check(IgnoreRequest):
            message = str(failure.value)
            if "robots.txt" in message:
                run.refuse(url, Refusal("robots", "disallowed by robots.txt"))
            elif not request.meta.get("docscraper_refused"):
                run.refuse(url, Refusal("ignored", message or "request ignored"))
            return []
        if failure.check(DownloadCancelledError) and "max size" in str(failure.value).lower():
            # Over DOWNLOAD_MAXSIZE: skipped, not failed; the stored copy (if any) stays as it is, and
            # its stored links lead on. Links never seen make the frontier uncertain: nothing is removed.
            known = run.lookup(pid or page_id(url))
            run.reached.add(known.page_id if known else (pid or page_id(url)))
            run.refuse(url, Refusal("sizeLimit", str(failure.value)[:200]))
            if known is None or not known.links:
                run.frontier_cut = run.frontier_cut or f"the links of {url} are unknown (over the size cap)"
                return []
            return self._follow(list(known.links), int(request.meta.get("docscraper_depth", 0)))
        if failure.check(DownloadTimeoutError, TimeoutError, TCPTimedOutError):
            reason = "timeout"
        elif failure.check(CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError,
                           ResponseDataLossError, DNSLookupError, ConnectionRefusedError):
            reason = "network"
        else:
            reason = "error"
        kind = failure.type.__name__ if failure.type else "Error"
        run.page_failed(url, reason, f"{kind}: {failure.getErrorMessage()}", pid=pid,
                        fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
        return []
