"""The ``docs`` spider: discover, scope and extract a documentation site.

``scrapy crawl docs -a source=URL|NAME [-a allow=GLOBS] [-a block=GLOBS] [-a max_depth=N] [-a max_pages=N]
[-a llms_txt=URL] [-a full=1] [-a render=js|none] [-a save_dir=DIR]``. Discovery runs first, before any page is fetched,
so each page keeps the first finder that listed it: llms-full.txt (sections mapped to pages become items without a
fetch), llms.txt, sitemaps (robots.txt ``Sitemap:`` lines, ``sitemap.xml`` at the prefix and the root, indexes to
``DOCSCRAPER_SITEMAP_MAX_DEPTH``), then the links of every fetched page. Requests carry ``docscraper_page_id``,
``docscraper_finder``, ``docscraper_depth``, ``docscraper_key``, and ``docscraper_page_url`` when the URL is a Markdown
twin (``page.html.md``) of the page. A page whose robots directives say ``noindex`` yields no item (its links are
followed); ``nofollow`` drops its links (counter ``nofollow_pages``). The arguments: docs/reference/spider.md; how
discovery, directives and rendering hints work: docs/explanation/flow.md.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import scrapy
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
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TCPTimedOutError, TimeoutError
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from docscraper.crawl.target import CrawlTarget

from docscraper.config import ConfigError, CrawlArgs
from docscraper.content.discovery import (
    SitemapWalk,
    is_markdown_url,
    is_plain_text_file,
    llms_candidates,
    markdown_twin_of,
    parse_llms_txt,
    parse_sitemap,
    split_llms_full,
)
from docscraper.content.documents import (
    ConvertedDocument,
    DocumentKind,
    DocumentLimits,
    convert_document,
    document_kind,
)
from docscraper.content.encoding import BodyEncoding
from docscraper.content.extraction import Extracted, extract_markdown
from docscraper.crawl.ratelimit import parse_retry_after
from docscraper.crawl.rendering import render_failure_reason
from docscraper.crawl.resources import CrawlResources
from docscraper.crawl.robots import RobotsTxtMiddleware
from docscraper.crawl.scope import Refusal
from docscraper.crawl.scope_middleware import ScopeMiddleware
from docscraper.crawl.ssrf import REASON as SSRF_REASON
from docscraper.crawl.workers import CallTimedOut, WorkerCrashed
from docscraper.items import PageItem, PageMetadata
from docscraper.spiders.page_parser import FetchedPage, ParsedPage, header_robots, parse_fetched, response_kind
from docscraper.storage.state import iso_utc, utcnow
from docscraper.urls import page_id, strip_fragment

__all__ = ["DocsSpider"]

logger = logging.getLogger(__name__)

#: how much longer than DOCSCRAPER_DOCUMENT_TIME_LIMIT a document's process may run before it is stopped
_DOCUMENT_GRACE = 30.0
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/markdown", "text/x-markdown", "text/plain")
_ERROR_STATUSES = list(range(400, 600))
#: What a site answers a request without (valid) credentials: a failure ``unauthorized``, never a removal.
UNAUTHORIZED_STATUSES = (401, 403)


@dataclass
class _Candidate:
    url: str
    finder: str
    depth: int
    section_of: str | None = None
    lastmod: str | None = None  # the sitemap's <lastmod> for the page


def _over_size_cap(failure: Failure) -> bool:
    """Whether a download failed for DOWNLOAD_MAXSIZE: cut off by the download handler, or refused by
    HttpCompressionMiddleware when the body grew past it while being decompressed."""
    message = str(failure.value)
    if failure.check(DownloadCancelledError):
        # A body without Content-Length that grows past the cap while it streams in is cut off by
        # cancelling the download: the error then carries no message. Nothing else cancels a download.
        return not message or "max size" in message.lower()
    return bool(failure.check(IgnoreRequest)) and "DOWNLOAD_MAXSIZE" in message


def _lastmods_of_twins(candidates: dict[str, _Candidate], lastmods: dict[str, str]) -> None:
    """An llms.txt entry that is a page's Markdown twin (``page.html.md``) stands for the page: it takes the
    sitemap's ``<lastmod>`` for the page."""
    by_page: dict[str, str] = {}
    for url, lastmod in lastmods.items():
        with contextlib.suppress(ValueError):
            by_page[page_id(strip_fragment(url))] = lastmod
    for candidate in candidates.values():
        twin = markdown_twin_of(candidate.url) if candidate.lastmod is None else None
        if twin is not None:
            with contextlib.suppress(ValueError):
                candidate.lastmod = by_page.get(page_id(twin))


def _header(response: Response, name: bytes) -> str:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else ""


class DocsSpider(scrapy.Spider):
    """Discovers a documentation site's pages, parses each into Markdown and yields items and requests.

    What is fetched and processed (scope, depth, page budget, claims) is decided by
    :class:`~docscraper.crawl.scope_middleware.ScopeMiddleware`, validators are added by
    :class:`~docscraper.crawl.conditional.ConditionalRequestMiddleware`, and page state is written by the
    pipelines only. The spider reads the run's :class:`~docscraper.crawl.target.CrawlTarget` (what it
    crawls) and records in the run's ledger what only it sees: discovery's findings and fetch errors.
    """

    name = "docs"


    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Spider.__init__ would copy every argument onto the spider; arguments are parsed instead.
        super().__init__()
        try:
            self.args = CrawlArgs.parse(kwargs)
        except ConfigError as exc:
            raise ConfigError(f"docs spider: {exc}") from None
        self._resources: CrawlResources | None = None

    # Methods, not properties: Scrapy's feed exports read every attribute of the spider for URI parameters.

    def run_resources(self) -> CrawlResources:
        """The run's resources (built after the spider: read once the crawl runs)."""
        if self._resources is None:
            self._resources = CrawlResources.of(self.crawler)
        return self._resources

    def run_target(self) -> CrawlTarget:
        """What the run crawls (once the run is open)."""
        target = self.run_resources().target
        assert target is not None, "the run is not open"
        return target

    # discovery -------------------------------------------------------------------------------------

    async def _fetch(self, url: str, what: str) -> Response | None:
        """Fetch a discovery file through the downloader (robots, retries, redirects apply)."""
        # Error statuses come back as responses; 3xx are left to RedirectMiddleware, which re-checks
        # every hop (scope, SSRF guard): llms.txt and sitemaps often sit behind a redirect.
        request = Request(url, dont_filter=True,
                          meta={"docscraper_discovery": what, "handle_httpstatus_list": _ERROR_STATUSES})
        discovery = self.run_resources().ledger.discovery
        try:
            assert self.crawler.engine is not None
            response = await self.crawler.engine.download_async(request)
        except IgnoreRequest as exc:
            discovery.setdefault("problems", []).append(f"{what} {url}: {exc}")
            return None
        except Exception as exc:  # network errors: discovery degrades to what is left
            discovery.setdefault("problems", []).append(f"{what} {url}: {exc.__class__.__name__}: {exc}")
            return None
        if response.status != 200:
            return None
        return response

    async def _robots_refused(self, url: str) -> bool:
        """Whether the host's robots.txt answered 401 or 403 (a site behind a login, most likely)."""
        robots = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        return robots is not None and (await robots.robots_for(url)).status in UNAUTHORIZED_STATUSES

    async def _access(self, seed: str) -> int | None:
        """The seed's status when it refuses this run (401 or 403), else None (a network error is left to the
        seed's own request, which reports it)."""
        request = Request(seed, dont_filter=True, meta={"docscraper_discovery": "seed",
                                                        "handle_httpstatus_list": list(UNAUTHORIZED_STATUSES)})
        try:
            assert self.crawler.engine is not None
            response = await self.crawler.engine.download_async(request)
        except Exception:
            return None
        return response.status if response.status in UNAUTHORIZED_STATUSES else None

    def _refused_at_seed(self, url: str, status: int) -> None:
        """The seed answered 401/403: the run stops (closed ``unauthorized``, result aborted, nothing removed)."""
        resources = self.run_resources()
        target = self.run_target()
        if resources.open_error:
            return
        named = (f"the credentials ({target.credentials.describe()}) were refused or have expired"
                 if target.credentials else "the site needs credentials: give them with -a auth_headers=env:NAME, "
                                            "auth_basic= or auth_cookies= (or scrapy sources add --auth-...)")
        resources.open_error = f"HTTP {status} at the seed {url}: {named}"
        logger.error("Source %s: %s", target.source.name, resources.open_error)
        resources.outcomes.count("unauthorized")
        assert self.crawler.engine is not None
        deferred_from_coro(self.crawler.engine.close_spider_async(reason="unauthorized"))

    async def _robots_text(self, url: str) -> str:
        """The host's robots.txt, for its ``Sitemap:`` lines: from the robots middleware, which fetches it
        once per host for the whole run, or fetched here when robots.txt is not obeyed."""
        robots = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        if robots is not None:
            return (await robots.robots_for(url)).text
        response = await self._fetch(urljoin(url, "/robots.txt"), "robots.txt")
        return response.text if isinstance(response, TextResponse) else ""

    def _request(self, url: str, finder: str, depth: int, **flags: Any) -> Request | None:
        """A page request for the scope middleware to judge (None for a URL no request can be made of)."""
        meta = {"docscraper_finder": finder, "docscraper_depth": depth}
        meta.update({f"docscraper_{name}": value for name, value in flags.items() if value is not None})
        try:
            return Request(url, callback=self.parse_page, errback=self.on_error, meta=meta, priority=-depth)
        except ValueError:
            return None

    async def start(self) -> AsyncIterator[Any]:
        resources = self.run_resources()
        if not resources.opened:
            return
        ledger = resources.ledger
        if not ledger.lead_discovery():
            return  # a distributed run: another worker discovers and seeds the shared queue
        target = self.run_target()
        seed = target.seed_url
        candidates: dict[str, _Candidate] = {}
        repeats: list[str] = []

        def offer(url: str, finder: str, depth: int, section_of: str | None = None, lastmod: str | None = None) -> None:
            url = strip_fragment(url)
            try:
                pid = page_id(url)
            except ValueError:
                return
            if pid not in candidates:
                candidates[pid] = _Candidate(url, finder, depth, section_of, lastmod)
            else:
                if lastmod and not candidates[pid].lastmod:
                    candidates[pid].lastmod = lastmod
                repeats.append(url)

        if urlsplit(seed).scheme in ("http", "https") and (target.credentials or await self._robots_refused(seed)):
            # a private source's seed (or one whose robots.txt needs credentials) is asked first: credentials
            # missing or refused are one error, before anything is stored
            status = await self._access(seed)
            if status is not None:
                self._refused_at_seed(seed, status)
                return
        llms_items: list[PageItem] = []
        if urlsplit(seed).scheme in ("http", "https", "file"):
            try:
                # robots.txt does not apply to a local folder (docscraper.crawl.localfiles)
                robots_text = await self._robots_text(seed) if not target.is_local else ""
                llms_links, llms_items = await self._discover_llms()
                for link in llms_links:
                    offer(link, "llms", 1)
                if resources.config.discovery_sitemaps:
                    pages, lastmods = await self._discover_sitemaps(robots_text)
                    for url in pages:
                        offer(url, "sitemap", 1, lastmod=lastmods.get(url))
                    _lastmods_of_twins(candidates, lastmods)
                # Links inside llms-full sections stand for links on those (unfetched) pages.
                for item in llms_items:
                    for link in item.metadata.links:
                        offer(link, "link", 2, item.metadata.page_id)
            except Exception as exc:
                # Crawl what was found, from the seed on; an incomplete discovery must never remove pages.
                logger.exception("Discovery failed; crawling from the seed only")
                ledger.discovery_error = f"{exc.__class__.__name__}: {exc}"
        # The seed is depth 0 whoever listed it.
        seed_pid = page_id(seed)
        seed_candidate = candidates.pop(seed_pid, None)
        seed_finder = seed_candidate.finder if seed_candidate is not None else "link"
        # The scope middleware judges all of these, in this order, before the first request goes out: each
        # page keeps the first finder that listed it.
        for item in llms_items:
            yield item
        outputs = [self._request(seed, seed_finder, 0, seed=True,
                                 lastmod=seed_candidate.lastmod if seed_candidate is not None else None)]
        outputs.extend(self._request(c.url, c.finder, c.depth, candidate=True, section_of=c.section_of,
                                     lastmod=c.lastmod)
                       for c in candidates.values())
        outputs.extend(self._request(url, "link", 1, candidate=True, repeat=True) for url in repeats)
        for request in outputs:
            if request is not None:
                yield request

    async def _discover_llms(self) -> tuple[list[str], list[PageItem]]:
        """llms.txt links, and llms-full.txt sections mapped to pages as items (with the links inside each
        section as the item's links); the scope middleware claims those pages, so they are not fetched."""
        target = self.run_target()
        ledger = self.run_resources().ledger
        info: dict[str, Any] = {}
        info_llms: dict[str, Any] = {"url": None, "links": 0}
        ledger.discovery["llms"] = info_llms
        ledger.discovery["llms-full"] = info
        args = target.args
        if not self.run_resources().config.discovery_llms and not args.llms_txt:
            return [], []
        found: dict[str, tuple[str, str]] = {}
        candidates = llms_candidates(target.seed_url)
        if args.llms_txt:
            candidates = [("llms", args.llms_txt), *[(k, u) for k, u in candidates if k == "llms-full"]]
        for kind, url in candidates:
            if kind in found:
                continue
            response = await self._fetch(url, kind)
            if (response is not None and isinstance(response, TextResponse)
                    and is_plain_text_file(_header(response, b"Content-Type"), response.body)):
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
        if "llms-full" in found:
            url, text = found["llms-full"]
            split = split_llms_full(text, url, titles)
            fetched_at = iso_utc(utcnow())
            for section in split.sections:
                if section.url is None:
                    continue
                section_url = markdown_twin_of(section.url) or section.url
                try:
                    pid = page_id(section_url)
                except ValueError:
                    continue
                extracted = extract_markdown(section.markdown, section_url)
                item = self._item(section_url, extracted, pid=pid, key=target.key(section_url), finder="llms-full",
                                  depth=1, http_status=200, content_type="text/markdown", etag=None,
                                  last_modified=None, fetched_at=fetched_at)
                item.metadata.links = [link.url for link in parse_llms_txt(section.markdown, section.url)]
                if section_url != section.url:
                    item.aliases.append(section.url)
                items.append(item)
            # ``mapped`` and the counter grow as the scope middleware admits sections
            info.update(url=url, sections=len(split.sections), mapped=0, problem=split.problem)
            ledger.counters["llms_full_pages"] = 0
            if split.problem:
                logger.info("llms-full.txt %s: %s; the rest is crawled", url, split.problem)
        else:
            info.update(url=None, sections=0, mapped=0, problem="no llms-full.txt found")
        return links, items

    async def _discover_sitemaps(self, robots_text: str) -> tuple[list[str], dict[str, str]]:
        """The page URLs the site's sitemaps list, and their ``<lastmod>`` where the sitemaps can be believed."""
        target = self.run_target()
        cfg = self.run_resources().config
        # the filesystem's root is not a local folder's site root
        walk = SitemapWalk(target.seed_url, target.scope.prefix, robots_text, site_root=not target.is_local,
                           max_files=cfg.sitemap_max_files, max_depth=cfg.sitemap_max_depth)
        info: dict[str, Any] = {"fromRobots": walk.from_robots, "files": walk.files, "urls": 0,
                                "problems": walk.problems}
        self.run_resources().ledger.discovery["sitemap"] = info
        for url in walk:
            response = await self._fetch(url, "sitemap")
            if response is None:
                continue
            doc = parse_sitemap(response.body, response.url, max_urls=cfg.sitemap_max_urls,
                                max_bytes=cfg.sitemap_max_bytes)
            walk.add(url, doc)
            if doc.problem:
                logger.warning("Sitemap %s: %s", url, doc.problem)
        info["urls"] = len(walk.pages)
        watch = self.run_resources().lastmod
        if watch is not None:
            watch.uniform_files.extend(walk.uniform_lastmod)
        return walk.pages, walk.lastmods

    # responses -------------------------------------------------------------------------------------

    def _item(self, url: str, extracted: Extracted, *, pid: str, key: str, finder: str, depth: int,
              http_status: int | None, content_type: str | None, etag: str | None,
              last_modified: str | None, fetched_at: str) -> PageItem:
        target = self.run_target()
        known = target.lookup(pid)
        if extracted.truncated:
            # indexed from its beginning, and reported so: the entry's detail and a counter
            logger.warning("%s: %s (only its beginning is indexed)", url, extracted.truncated)
            self.run_resources().outcomes.count("truncated_pages")
        return PageItem(
            url=url,
            title=extracted.title,
            markdown=extracted.markdown,
            truncated=extracted.truncated,
            metadata=PageMetadata(
                page_id=pid,
                source=target.source.name,
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

    def follow(self, urls: list[str], depth: int) -> list[Request]:
        """Requests for the links of a page at *depth*, for the scope middleware to judge; none for a link to a
        page claimed already under the same URL (it would be refused with nothing to record). The scope
        middleware asks for the stored links of a page a due-only run does not fetch."""
        quiet = self.run_resources().outcomes.is_quiet_link
        return [request for url in urls
                if not quiet(url) and (request := self._request(url, "link", depth + 1)) is not None]

    async def parse_page(self, response: Response) -> AsyncIterator[Any]:
        target = self.run_target()
        outcomes = self.run_resources().outcomes
        meta = response.meta
        depth: int = meta["docscraper_depth"]
        finder: str = meta["docscraper_finder"]
        pid: str = meta["docscraper_page_id"]
        fetched_at = iso_utc(utcnow())
        rendered = "playwright" in response.flags
        if rendered:
            outcomes.count("rendered_pages")
            response = self._as_requested(response)
        page_url = response.url
        if meta.get("redirect_urls"):
            pid = page_id(response.url)
        elif meta.get("docscraper_page_url"):
            page_url = meta["docscraper_page_url"]
        key = target.key(page_url)
        if response.status == 304:
            outcomes.count("not_modified")
            known = target.lookup(pid)
            if known is None:  # a 304 to a request that sent no validators: nothing to go on
                outcomes.failed(response.url, "httpError", "HTTP 304 without a stored copy", pid=pid,
                                http_status=304, fetched_at=fetched_at)
                return
            # No body: the links stored from the page's last full fetch lead the crawl on.
            for request in self.follow(list(known.links), depth):
                yield request
            item = PageItem(url=response.url, title="", markdown="", not_modified=True,
                            metadata=PageMetadata(
                                page_id=known.page_id, source=target.source.name, path=known.rel_path or key,
                                canonical_url=None, language=None, description=None, finder=finder, depth=depth,
                                http_status=304, content_type=None, etag=None, last_modified=None,
                                fetched_at=fetched_at, sitemap_lastmod=meta.get("docscraper_lastmod"),
                                revisit=meta.get("docscraper_revisit")))
            yield item
            return
        ctype = _header(response, b"Content-Type").split(";")[0].strip().lower()
        is_markdown = ctype in ("text/markdown", "text/x-markdown") or (
            ctype in ("text/plain", "") and is_markdown_url(response.url)
        )
        kind = document_kind(ctype, response.url, self.run_resources().config.document_types)
        if kind is not None:
            async for output in self._parse_document(response, kind, pid=pid, key=key, page_url=page_url,
                                                     finder=finder, depth=depth, fetched_at=fetched_at):
                yield output
            return
        if ctype and ctype not in TEXT_TYPES:
            self.run_resources().ledger.reached.add(pid)
            outcomes.refuse(response.url, Refusal("nonText", f"content type {ctype}"), finder=finder)
            return
        if ctype == "text/plain" and not is_markdown:
            is_markdown = True
        fetched = FetchedPage(response.url, response.body, _header(response, b"Content-Type"), is_markdown,
                              response_kind(response))
        try:
            parsed = await self.run_resources().parsers.run(parse_fetched, fetched)
        except WorkerCrashed as exc:
            parsed = ParsedPage(None, BodyEncoding("utf-8"), error=str(exc))
        self._note_encoding(response.url, parsed.encoding)
        for warning in parsed.warnings:
            logger.warning("%s", warning)
        extracted = parsed.extracted
        if extracted is None:
            logger.error("Cannot extract %s: %s", response.url, parsed.error)
            outcomes.failed(response.url, "parseError", parsed.error or "extraction failed", pid=pid,
                            http_status=response.status, fetched_at=fetched_at)
            return
        links, hash_routes = parsed.links, parsed.hash_routes
        robots = parsed.robots | header_robots(
            [v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")])
        if robots.nofollow:
            # its links are neither requested now nor stored for the next run's 304 to follow
            outcomes.count("nofollow_pages")
            links, hash_routes = [], 0
        for request in self.follow(links, depth):
            yield request
        if robots.noindex:
            outcomes.noindex(key, page_url, pid, f"{robots.source}: noindex", fetched_at=fetched_at, finder=finder,
                             depth=depth, httpStatus=response.status)
            return
        item = self._item(
            page_url,
            extracted,
            pid=pid,
            key=key,
            finder=finder,
            depth=depth,
            http_status=response.status,
            content_type=ctype or None,
            # a rendered page is never revalidated with its shell's validators (docscraper.crawl.rendering)
            etag=None if rendered else _header(response, b"ETag") or None,
            last_modified=None if rendered else _header(response, b"Last-Modified") or None,
            fetched_at=fetched_at,
        )
        item.metadata.links = links
        self._fetched(item, response)
        item.rendered = rendered
        item.needs_rendering = extracted.has_scripts_only and not rendered
        item.hash_routes = hash_routes
        yield item

    async def _parse_document(self, response: Response, kind: DocumentKind, *, pid: str, key: str, page_url: str,
                              finder: str, depth: int, fetched_at: str) -> AsyncIterator[Any]:
        """A document (PDF, Word, notebook...: :mod:`docscraper.content.documents`), converted in a process of its
        own (never on the reactor thread: a 500-page PDF would stall every download), within
        ``DOCSCRAPER_DOCUMENT_TIME_LIMIT``. A document that cannot be
        indexed is refused with its reason; a page the index holds keeps its chunks (DESIGN rule 7), and the
        links stored from it lead the crawl on."""
        resources = self.run_resources()
        outcomes = resources.outcomes
        cfg = resources.config
        limits = DocumentLimits(time_limit=cfg.document_time_limit, max_pages=cfg.document_max_pages,
                                max_unpacked=cfg.document_max_unpacked, ocr=cfg.document_ocr,
                                ocr_languages=cfg.document_ocr_languages)
        try:
            # the conversion checks its time limit between pages; a page that hangs inside a library is cut by
            # the process's own limit, a little longer
            converted = await resources.documents.run(convert_document, kind.name, response.body, response.url,
                                                      limits, timeout=limits.time_limit + _DOCUMENT_GRACE)
        except CallTimedOut as exc:
            converted = ConvertedDocument(None, ("unreadableDocument", f"the conversion {exc}"))
        except Exception as exc:  # the process died on it (a crash in a C library, out of memory)
            converted = ConvertedDocument(None, ("unreadableDocument", f"the conversion failed: "
                                                                       f"{exc.__class__.__name__}: {exc}"[:300]))
        outcomes.count(f"documents/{kind.name}")
        if converted.extracted is None:
            reason, detail = converted.refusal or ("unreadableDocument", "no text")
            resources.ledger.reached.add(pid)
            logger.warning("%s: %s not indexed (%s): %s", response.url, kind.name.upper(), reason, detail)
            outcomes.refuse(response.url, Refusal(reason, detail), finder=finder)
            known = self.run_target().lookup(pid)
            if known is not None and known.links:
                for request in self.follow(list(known.links), depth):
                    yield request
            return
        robots = header_robots([v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")])
        if robots.noindex:
            outcomes.noindex(key, page_url, pid, f"{robots.source}: noindex", fetched_at=fetched_at, finder=finder,
                             depth=depth, httpStatus=response.status)
            return
        if converted.pages:
            outcomes.stat("document_pages", converted.pages)
        item = self._item(page_url, converted.extracted, pid=pid, key=key, finder=finder, depth=depth,
                          http_status=response.status, content_type=kind.content_type,
                          etag=_header(response, b"ETag") or None,
                          last_modified=_header(response, b"Last-Modified") or None, fetched_at=fetched_at)
        self._fetched(item, response)
        yield item

    @staticmethod
    def _fetched(item: PageItem, response: Response) -> None:
        """What the fetch says of a page's item: the sitemap's ``<lastmod>``, why a due-only run fetched it, and the
        redirect chain that led to it."""
        meta = response.meta
        item.metadata.sitemap_lastmod = meta.get("docscraper_lastmod")
        item.metadata.revisit = meta.get("docscraper_revisit")
        if meta.get("redirect_urls"):
            item.metadata.redirects = [*meta["redirect_urls"], response.url]

    @staticmethod
    def _as_requested(response: Response) -> Response:
        """A rendered page whose own scripts changed its address is kept under the URL requested (Chromium's
        HTTP redirects are judged by the scope middleware)."""
        requested = response.request.url if response.request is not None else response.url
        if not response.meta.get("redirect_urls") and strip_fragment(response.url) != strip_fragment(requested):
            logger.debug("%s: the page's scripts moved it to %s; kept as requested", requested, response.url)
            return response.replace(url=requested)
        return response

    def _note_encoding(self, url: str, decided: BodyEncoding) -> None:
        """Count (``docscraper/encoding/redetected``) and log a page decoded otherwise than it declared
        (:mod:`docscraper.content.encoding`)."""
        if decided.redetected:
            self.run_resources().outcomes.count("encoding/redetected")
            logger.info("%s: decoded as %s, not the %s declared (%s): %s", url, decided.encoding,
                        decided.declared, decided.source, decided.redetected)

    def on_error(self, failure: Failure) -> list[Any]:
        resources = self.run_resources()
        outcomes = resources.outcomes
        target = self.run_target()
        request: Request = failure.request  # type: ignore[attr-defined]
        url = request.url
        pid = request.meta.get("docscraper_page_id")
        fetched_at = iso_utc(utcnow())
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
                reason = SSRF_REASON if resources.config.ssrf_guard_enabled else "redirectOutOfScope"
                outcomes.refuse(origin, Refusal(reason, f"redirects to {location}: scheme {scheme or '(none)'} "
                                                        "is not http(s)"), finder=request.meta.get("docscraper_finder"))
                return []
            # a local file's 404/403 says why (docscraper.crawl.localfiles)
            detail = request.meta.get("docscraper_local_detail") or f"HTTP {status}"
            referer = request.headers.get(b"Referer")
            # 401/403 from a site: credentials missing, refused or expired; never a reason to remove a page
            unauthorized = status in UNAUTHORIZED_STATUSES and not target.is_local
            if unauthorized and request.meta.get("docscraper_seed"):
                self._refused_at_seed(response.url, status)
            outcomes.failed(response.url, "unauthorized" if unauthorized else "httpError", detail, http_status=status,
                            pid=page_id(response.url) if request.meta.get("redirect_urls") else pid,
                            fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"),
                            seed=bool(request.meta.get("docscraper_seed")),
                            linked_from=referer.decode("latin-1") if referer else None,
                            retry_after=parse_retry_after(response.headers.get(b"Retry-After")))
            return []
        if failure.check(IgnoreRequest) and not _over_size_cap(failure):
            message = str(failure.value)
            redirect_urls = request.meta.get("redirect_urls")
            if message == "max redirections reached" and redirect_urls and not request.meta.get("docscraper_refused"):
                # Scrapy's RedirectMiddleware gave up: a failure of the page first requested, which keeps it
                chain = " -> ".join([*redirect_urls, url])
                logger.warning("Redirect limit reached, not followed: %s", chain)
                outcomes.failed(redirect_urls[0], "redirectLimit",
                                f"more than {len(redirect_urls)} redirects: {chain}"[:2000], pid=pid,
                                fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
            elif "robots.txt" in message and not request.meta.get("docscraper_refused"):
                # RobotsDenied says whether the rules forbid the URL or robots.txt was unreachable
                outcomes.refuse(url, Refusal("robots", getattr(failure.value, "detail", "disallowed by robots.txt")))
            elif not request.meta.get("docscraper_refused"):
                outcomes.refuse(url, Refusal("ignored", message or "request ignored"))
            return []
        if _over_size_cap(failure):
            # Over DOWNLOAD_MAXSIZE, as sent or decompressed: skipped, not failed; the stored copy (if any)
            # stays as it is, and its stored links lead on. Links never seen make the frontier uncertain:
            # nothing is removed.
            known = target.lookup(pid or page_id(url))
            resources.ledger.reached.add(known.page_id if known else (pid or page_id(url)))
            detail = str(failure.value) or (
                f"body grew past DOWNLOAD_MAXSIZE "
                f"({request.meta.get('download_maxsize', self.settings.getint('DOWNLOAD_MAXSIZE'))} B) while downloading")
            outcomes.refuse(url, Refusal("sizeLimit", detail[:200]))
            if known is None or not known.links:
                ledger = resources.ledger
                ledger.frontier_cut = ledger.frontier_cut or f"the links of {url} are unknown (over the size cap)"
                return []
            # Scrapy does not pass a download error's errback output through the spider middlewares
            follow = self.follow(list(known.links), int(request.meta.get("docscraper_depth", 0)))
            scope = ScopeMiddleware.of(self.crawler)
            return scope.judge_all(follow) if scope is not None else []
        if failure.check(DownloadTimeoutError, TimeoutError, TCPTimedOutError):
            reason = "timeout"
        elif failure.check(CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError,
                           ResponseDataLossError, DNSLookupError, ConnectionRefusedError):
            reason = "network"
        else:
            reason = render_failure_reason(failure) or "error"  # Chromium's errors, for rendered pages
        kind = failure.type.__name__ if failure.type else "Error"
        outcomes.failed(url, reason, f"{kind}: {failure.getErrorMessage()}", pid=pid,
                        fetched_at=fetched_at, finder=request.meta.get("docscraper_finder"))
        return []
