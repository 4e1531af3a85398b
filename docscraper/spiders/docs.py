"""The ``docs`` spider: discover, scope and extract a documentation site.

``scrapy crawl docs -a source=URL|NAME [-a allow=GLOBS] [-a block=GLOBS] [-a max_depth=N]
[-a max_pages=N] [-a llms_txt=URL] [-a full=1] [-a render=js|none] [-a save_dir=DIR]``

Discovery runs first, in order, before any page is fetched, so that each page remembers the first
finder that saw it: llms-full.txt (sections mapped to pages become items without a fetch), llms.txt,
sitemaps (from robots.txt ``Sitemap:`` lines and ``sitemap.xml`` at the prefix and the root; indexes
followed to ``DOCSCRAPER_SITEMAP_MAX_DEPTH``), then the link crawl from every fetched page. A
``file://`` source (:mod:`docscraper.localfiles`) is discovered the same way, without robots.txt and
without the filesystem root's ``sitemap.xml``; its ``file://`` links are followed, and no other source's.

Depth: the seed is 0, llms/sitemap pages are 1, a link on a page at depth d is d+1. Requests carry
``docscraper_page_id``, ``docscraper_finder``, ``docscraper_depth`` and ``docscraper_key`` meta keys, and
``docscraper_page_url`` when the URL fetched is a Markdown twin (``page.html.md``) of the page.

Rendering (:mod:`docscraper.rendering`): when the run renders, page requests also carry
``playwright: True`` (and ``docscraper_render``) and go without validators; discovery requests never do.
A page whose static HTML is only scripts, in a run that does not render, is counted
(``needs_rendering``) and its report entry gets a ``hint``. So does a page whose links are client-side
hash routes (``#/guide``; counter ``hash_route_pages``): a page is its URL without the fragment, so such
routes are not crawled, rendered or not.
"""

from __future__ import annotations

import logging
import posixpath
import re
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
from docscraper.content.extraction import Extracted, extract_html, extract_markdown
from docscraper.discovery import (
    html_counterparts,
    is_markdown_url,
    llms_candidates,
    markdown_twin_of,
    parse_llms_txt,
    parse_sitemap,
    sitemaps_from_robots,
    split_llms_full,
)
from docscraper.encoding import body_encoding, decode_body
from docscraper.items import PageItem, PageMetadata
from docscraper.rendering import render_failure_reason, render_meta, renders_url
from docscraper.robots import robots_middleware
from docscraper.run import CrawlRun, _iso
from docscraper.scope import Refusal
from docscraper.ssrf import REASON as SSRF_REASON
from docscraper.state import utcnow
from docscraper.urls import is_http_url, page_id, strip_fragment

__all__ = ["DocsSpider"]

logger = logging.getLogger(__name__)

TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/markdown", "text/x-markdown", "text/plain")
_ERROR_STATUSES = list(range(400, 600))
_BINARY_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS) - {".txt", ".md"}
#: A fragment that is a client-side route (``#/guide``, ``#!/guide``), not an anchor in the page.
_HASH_ROUTE_RE = re.compile(r"!?/.")


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


def _over_size_cap(failure: Failure) -> bool:
    """Whether a download failed for DOWNLOAD_MAXSIZE: cut off by the download handler, or refused by
    HttpCompressionMiddleware when the body grew past it while being decompressed."""
    message = str(failure.value)
    if failure.check(DownloadCancelledError):
        # A body without Content-Length that grows past the cap while it streams in is cut off by
        # cancelling the download: the error then carries no message. Nothing else cancels a download.
        return not message or "max size" in message.lower()
    return bool(failure.check(IgnoreRequest)) and "DOWNLOAD_MAXSIZE" in message


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
            spider.run = CrawlRun(crawler, config, spider.args)  # a distributed run checks its settings
        except ConfigError as exc:
            raise ConfigError(f"docs spider: {exc}") from None
        spider.link_extractor = LinkExtractor(deny_extensions=[], unique=True, strip=True)
        return spider

    # discovery -------------------------------------------------------------------------------------

    async def _fetch(self, url: str, what: str) -> Response | None:
        """Fetch a discovery file through the downloader (robots, retries, redirects apply)."""
        # Error statuses come back as responses; 3xx are left to RedirectMiddleware, which re-checks
        # every hop (scope, SSRF guard): llms.txt and sitemaps often sit behind a redirect.
        request = Request(url, dont_filter=True,
                          meta={"docscraper_discovery": what, "handle_httpstatus_list": _ERROR_STATUSES})
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

    async def _robots_text(self, url: str) -> str:
        """The host's robots.txt, for its ``Sitemap:`` lines: from the robots middleware, which fetches it
        once per host for the whole run, or fetched here when robots.txt is not obeyed."""
        robots = robots_middleware(self.crawler)
        if robots is not None:
            return (await robots.robots_for(url)).text
        response = await self._fetch(urljoin(url, "/robots.txt"), "robots.txt")
        return response.text if isinstance(response, TextResponse) else ""

    @staticmethod
    def _is_text_file(response: Response) -> bool:
        ctype = _header(response, b"Content-Type").lower()
        head = response.body[:256].lstrip().lower()
        return "html" not in ctype and not head.startswith((b"<!doctype", b"<html"))

    async def start(self) -> AsyncIterator[Any]:
        run = self.run
        if not run.opened:
            return
        if run.shared is not None and not run.shared.lead_discovery():
            return  # a distributed run: another worker discovers and seeds the shared queue
        seed = run.seed_url
        candidates: dict[str, _Candidate] = {}
        repeats: list[tuple[str, str]] = []

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
                repeats.append((pid, url))

        llms_items: list[PageItem] = []
        if urlsplit(seed).scheme in ("http", "https", "file"):
            try:
                # robots.txt does not apply to a local folder (docscraper.localfiles)
                robots_text = await self._robots_text(seed) if not run.is_local else ""
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
        # A page listed twice is a duplicate once the first listing claimed it; a refused one (out of
        # scope, blocked...) keeps its refusal as its only outcome.
        for pid, url in repeats:
            if pid in run.claimed:
                run.note_duplicate(url)
        for item in llms_items:
            yield item
        for request in requests:
            if request is not None:
                yield request
        if run.shared is not None:
            run.shared.discovery_finished()  # every request above is in the shared queue now

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
                section_url = markdown_twin_of(section.url) or section.url
                refusal = run.scope.check(section_url) or run.scope.check_depth(1)
                if refusal is not None:
                    run.refuse(section_url, refusal, finder="llms-full")
                    continue
                pid = run.claim(section_url)
                if pid is None:
                    run.note_duplicate(section_url)
                    continue
                if section_url != section.url:
                    run.claim(section.url, alias_of=section_url)
                if not run.take_page_slot():
                    run.refuse(section_url, Refusal("maxPages", run.frontier_cut or "max pages"))
                    continue
                mapped += 1
                extracted = extract_markdown(section.markdown, section_url)
                items.append(self._item(section_url, extracted, pid=pid, key=run.key(section_url),
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
        # the filesystem's root is not a local folder's site root
        roots = () if run.is_local else (urljoin(seed, "/sitemap.xml"),)
        for fallback in (urljoin(run.scope.prefix, "sitemap.xml"), *roots):
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
        if not self._fetchable(url):
            if url[:5].lower() == "file:":
                # another folder's file (file:///etc/passwd) listed by a site: refused, and said so
                run.refuse(url, Refusal(self._scheme_refusal, "scheme file is not http(s)"), finder=finder)
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
        # llms.txt may list a page's Markdown twin (page.html.md): fetched for its clean Markdown, the
        # page is still page.html, so search answers and the report name the page people read.
        page_url = markdown_twin_of(url) if finder in ("llms", "llms-full") else None
        pid = run.claim(page_url or url)
        if pid is None:
            run.note_duplicate(url)
            return None
        if page_url:
            run.claim(url, alias_of=page_url)
        if is_markdown_url(url) and finder in ("llms", "llms-full"):
            for twin in html_counterparts(url):
                run.claim(twin, alias_of=url)
        if not run.take_page_slot():
            run.refuse(url, Refusal("maxPages", run.frontier_cut or "max pages"), finder=finder)
            return None
        key = run.key(page_url or url)
        meta = _meta(pid, finder, depth, key, docscraper_discovery_only=discovery_only)
        if page_url:
            meta["docscraper_page_url"] = page_url
        # Rendered pages (docscraper.rendering) go without validators: the HTML shell's ETag says
        # nothing about what its scripts build.
        rendered = run.render == "js" and renders_url(url)
        if rendered:
            meta.update(render_meta(run.config))
        headers: dict[str, str] = {}
        known = run.lookup(pid)
        if known is not None and known.page_id != pid:
            run.claimed.setdefault(known.page_id, url)  # the canonical page this URL was stored under
        # A page marked by `scrapy reindex` is fetched in full, like every page of a full run.
        if (known is not None and known.status == "active" and known.content_hash and not run.args.full
                and not known.reindex_requested and not rendered):
            if known.etag:
                headers["If-None-Match"] = known.etag
            if known.last_modified:
                headers["If-Modified-Since"] = known.last_modified
            # a 304 has no body to restore a Markdown mirror file deleted by hand (docscraper.mirror)
            if headers and run.mirror is not None and not run.mirror.has_file(known.rel_path or key, known.page_id):
                headers = {}
            if headers:
                meta["handle_httpstatus_list"] = [304]
        return Request(url, callback=self.parse_page, errback=self.on_error, meta=meta, headers=headers,
                       priority=-depth)

    # responses -------------------------------------------------------------------------------------

    def _item(self, url: str, extracted: Extracted, *, pid: str, key: str, finder: str, depth: int,
              http_status: int | None, content_type: str | None, etag: str | None,
              last_modified: str | None, fetched_at: str) -> PageItem:
        known = self.run.lookup(pid)
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
                force=known is not None and known.reindex_requested,
                images=list(extracted.images),
            ),
        )

    async def parse_page(self, response: Response) -> AsyncIterator[Any]:
        run = self.run
        meta = response.meta
        depth: int = meta["docscraper_depth"]
        finder: str = meta["docscraper_finder"]
        pid: str = meta["docscraper_page_id"]
        fetched_at = _iso(utcnow())
        rendered = "playwright" in response.flags
        if rendered:
            rendered_response = self._rendered(response)
            if rendered_response is None:
                return
            response = rendered_response
        page_url = response.url
        if meta.get("redirect_urls"):
            pid = page_id(response.url)
        elif meta.get("docscraper_page_url"):
            page_url = meta["docscraper_page_url"]
        key = run.key(page_url)
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
            encoding = self._encoding(response, html=not is_markdown)
            if isinstance(response, TextResponse) and encoding != response.encoding:
                response = response.replace(encoding=encoding)  # for the link extractor
            if is_markdown:
                extracted = extract_markdown(decode_body(response.body, encoding), response.url)
            else:
                extracted = extract_html(response.body, response.url, encoding=encoding)
        except Exception as exc:  # extraction must never end the run
            logger.error("Cannot extract %s: %s: %s", response.url, exc.__class__.__name__, exc)
            run.page_failed(response.url, "parseError", f"{exc.__class__.__name__}: {exc}", pid=pid,
                            http_status=response.status, fetched_at=fetched_at)
            return
        links, hash_routes = self._links(response, extracted, is_markdown)
        for request in self._follow(links, depth):
            yield request
        if meta.get("docscraper_discovery_only"):
            run.refuse(response.url, Refusal("outOfScope", "seed fetched for its links only (allow/block)"))
            return
        canonical = extracted.canonical_url
        local_canonical = meta.get("docscraper_local_canonical")  # a folder's index.html (localfiles)
        if local_canonical and (not canonical or run.scope.check(canonical) is not None):
            canonical = local_canonical
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
        needs_rendering = extracted.has_scripts_only and not rendered
        if needs_rendering:
            # in the report's item entry and counters, so the user knows to turn rendering on
            run.hints[pid] = "page has scripts but no static content; " + (
                "serve the folder over HTTP and crawl its URL with -a render=js" if run.is_local
                else "crawl it with -a render=js")
            run.count("needs_rendering")
            logger.warning("%s: %s", response.url, run.hints[pid])
        if hash_routes:
            # A hash-routed app (docsify, older Vue/Angular) shows pages at #/...: one URL, one page here.
            hint = (f"{hash_routes} links are client-side hash routes (#/...), not crawled as pages: a page is "
                    "its URL without the fragment")
            run.hints[pid] = f"{run.hints[pid]}; {hint}" if pid in run.hints else hint
            run.count("hash_route_pages")
            logger.warning("%s: %s", response.url, hint)
        if not extracted.markdown.strip():
            run.count("empty_pages")
            if not needs_rendering:
                logger.warning("%s: no main content%s", response.url, " after rendering" if rendered else "")
        item = self._item(
            page_url,
            extracted,
            pid=pid,
            key=key,
            finder=finder,
            depth=depth,
            http_status=response.status,
            content_type=ctype or None,
            # a rendered page is never revalidated with its shell's validators (docscraper.rendering)
            etag=None if rendered else _header(response, b"ETag") or None,
            last_modified=None if rendered else _header(response, b"Last-Modified") or None,
            fetched_at=fetched_at,
        )
        item.metadata.links = links
        if meta.get("redirect_urls"):
            item.metadata.redirects = [*meta["redirect_urls"], response.url]
        yield item

    def _rendered(self, response: Response) -> Response | None:
        """A page rendered in Chromium, as the spider sees it: under the URL requested when the page's own
        scripts changed its address, or None (recorded) when Chromium followed an HTTP redirect out of
        scope or to a page another request claimed (what RedirectScopeMiddleware does for plain pages)."""
        run = self.run
        meta = response.meta
        run.count("rendered_pages")
        redirects = meta.get("redirect_urls")
        requested = response.request.url if response.request is not None else response.url
        if not redirects:
            if strip_fragment(response.url) != strip_fragment(requested):
                logger.debug("%s: the page's scripts moved it to %s; kept as requested", requested, response.url)
                return response.replace(url=requested)
            return response
        origin = redirects[0]
        refusal = run.scope.check(response.url)
        if refusal is not None:
            run.refuse(origin, Refusal("redirectOutOfScope", f"redirects to {response.url} ({refusal.detail})"))
            return None
        target = page_id(response.url)
        holder = run.claimed.get(target)
        if holder is not None and page_id(holder) not in (target, meta["docscraper_page_id"]):
            run.note_duplicate(origin, redirect=True, of=holder)
            return None
        run.claimed.setdefault(target, response.url)
        return response

    def _encoding(self, response: Response, *, html: bool) -> str:
        """The encoding to decode a page with: its declaration, unless the bytes contradict it
        (:mod:`docscraper.encoding`); counted as ``docscraper/encoding/redetected`` when overridden."""
        decided = body_encoding(response.body, _header(response, b"Content-Type"), html=html)
        if decided.redetected:
            self.run.count("encoding/redetected")
            logger.info("%s: decoded as %s, not the %s declared (%s): %s", response.url, decided.encoding,
                        decided.declared, decided.source, decided.redetected)
        return decided.encoding

    def _links(self, response: Response, extracted: Extracted, is_markdown: bool) -> tuple[list[str], int]:
        """Fragment-free http(s) links of a page, in order, without repeats; and how many distinct links
        were client-side hash routes (``#/guide``, ``#!/guide``), which name no page of their own."""
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
        kept = [u for u in urls if self._fetchable(u) or u[:5].lower() == "file:"]
        hash_routes = len({u for u in kept if _HASH_ROUTE_RE.match(urlsplit(u).fragment)})
        return list(dict.fromkeys(strip_fragment(u) for u in kept)), hash_routes

    @property
    def _scheme_refusal(self) -> str:
        """The reason a URL of a scheme that is never fetched (``file:`` off a local source) is refused."""
        return SSRF_REASON if self.settings.getbool("DOCSCRAPER_SSRF_GUARD_ENABLED", True) else "outOfScope"

    def _fetchable(self, url: str) -> bool:
        """http(s) URLs; ``file://`` URLs too when the source is a local folder (others are refused by
        scope, the SSRF guard and the file handler alike; other schemes are not even recorded)."""
        return is_http_url(url) or (self.run.is_local and url.lower().startswith("file:"))

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
            location = urljoin(response.url, _header(response, b"Location")) if 300 <= status < 400 else ""
            scheme = urlsplit(location).scheme.lower() if location else "http"
            if scheme not in ("http", "https"):
                # Scrapy's RedirectMiddleware follows http(s) hops only and hands on the 3xx of any other
                # (file:///etc/passwd...): a refusal of the page, which a hostile site must not turn into
                # a failed page and a partial run. The SSRF guard names such requests blockedAddress.
                origin = (request.meta.get("redirect_urls") or [url])[0]
                reason = SSRF_REASON if self._scheme_refusal == SSRF_REASON else "redirectOutOfScope"
                run.refuse(origin, Refusal(reason, f"redirects to {location}: scheme {scheme or '(none)'} "
                                                   "is not http(s)"), finder=request.meta.get("docscraper_finder"))
                return []
            # a local file's 404/403 says why (docscraper.localfiles)
            detail = request.meta.get("docscraper_local_detail") or f"HTTP {status}"
            run.page_failed(response.url, "httpError", detail, http_status=status,
                            pid=page_id(response.url) if request.meta.get("redirect_urls") else pid,
                            fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
            return []
        if failure.check(IgnoreRequest) and not _over_size_cap(failure):
            message = str(failure.value)
            redirect_urls = request.meta.get("redirect_urls")
            if message == "max redirections reached" and redirect_urls and not request.meta.get("docscraper_refused"):
                # Scrapy's RedirectMiddleware gave up: a failure of the page first requested, which keeps it
                chain = " -> ".join([*redirect_urls, url])
                logger.warning("Redirect limit reached, not followed: %s", chain)
                run.page_failed(redirect_urls[0], "redirectLimit",
                                f"more than {len(redirect_urls)} redirects: {chain}"[:2000], pid=pid,
                                fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
            elif "robots.txt" in message and not request.meta.get("docscraper_refused"):
                # RobotsDenied says whether the rules forbid the URL or robots.txt was unreachable
                run.refuse(url, Refusal("robots", getattr(failure.value, "detail", "disallowed by robots.txt")))
            elif not request.meta.get("docscraper_refused"):
                run.refuse(url, Refusal("ignored", message or "request ignored"))
            return []
        if _over_size_cap(failure):
            # Over DOWNLOAD_MAXSIZE, as sent or decompressed: skipped, not failed; the stored copy (if
            # any) stays as it is, and its stored links lead on. Links never seen make the frontier uncertain: nothing is removed.
            known = run.lookup(pid or page_id(url))
            run.reached.add(known.page_id if known else (pid or page_id(url)))
            detail = str(failure.value) or (
                f"body grew past DOWNLOAD_MAXSIZE "
                f"({request.meta.get('download_maxsize', self.settings.getint('DOWNLOAD_MAXSIZE'))} B) while downloading")
            run.refuse(url, Refusal("sizeLimit", detail[:200]))
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
            reason = render_failure_reason(failure) or "error"  # Chromium's errors, for rendered pages
        kind = failure.type.__name__ if failure.type else "Error"
        run.page_failed(url, reason, f"{kind}: {failure.getErrorMessage()}", pid=pid,
                        fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
        return []
