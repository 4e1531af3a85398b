"""The spider middleware that decides what a run fetches and processes: scope, depth, page budget, claims.

:class:`ScopeMiddleware` judges what the ``docs`` spider yields. A **request** must be fetchable, in scope, within
``max_depth``, not a binary file, for a page no other URL claimed, within ``max_pages`` and (``-a due=1``) due:
admitted, it gets its page's meta (``docscraper_page_id``, ``docscraper_key``, render meta) and a breadth-first
priority; refused, it is recorded with its reason and dropped. An **item** moves to its in-scope ``rel=canonical``
URL, and is dropped as a duplicate when its page was already emitted. Meta read: ``docscraper_finder``,
``docscraper_depth``, ``docscraper_seed``, ``docscraper_lastmod``, ``docscraper_candidate``, ``docscraper_repeat``,
``docscraper_section_of``; set: ``docscraper_revisit``. Stats: ``docscraper/pages_scheduled``,
``docscraper/pages_refused/<reason>``; counters ``needs_rendering``, ``hash_route_pages``, ``empty_pages``,
``llms_full_pages``, ``due/<reason>``. The rules in full: docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
import posixpath
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.http import Request, Response
from scrapy.linkextractors import IGNORED_EXTENSIONS

from docscraper.content.discovery import html_counterparts, is_markdown_url, markdown_twin_of
from docscraper.content.documents import KINDS
from docscraper.crawl.rendering import render_meta, renders_url
from docscraper.crawl.resources import CrawlResources
from docscraper.crawl.schedule import parse_lastmod
from docscraper.crawl.scope import Refusal
from docscraper.crawl.ssrf import REASON as SSRF_REASON
from docscraper.items import PageItem
from docscraper.urls import is_http_url, page_id

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.crawl.target import CrawlTarget
    from docscraper.storage.state import PageRecord

__all__ = ["ScopeMiddleware"]

logger = logging.getLogger(__name__)

_BINARY_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS) - {".txt", ".md"}


class ScopeMiddleware:
    """See the module docstring."""

    def __init__(self, crawler: Crawler, resources: CrawlResources) -> None:
        self.crawler = crawler
        self.resources = resources
        self.ledger = resources.ledger
        self.outcomes = resources.outcomes
        self.config = resources.config
        # the documents indexed (DOCSCRAPER_DOCUMENT_TYPES) are fetched, whatever Scrapy's list of binary extensions
        self.binary_extensions = _BINARY_EXTENSIONS - {
            extension for name in self.config.document_types for extension in KINDS[name].extensions}
        # llms-full.txt sections admitted as pages (their links are followed), and every page id they
        # claimed (discovery's other listings of those pages are dropped without a record)
        self._sections: set[str] = set()
        self._quiet: set[str] = set()
        # requests for the stored links of pages a due-only run does not fetch, judged next
        self._pending: deque[Request] = deque()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, CrawlResources.of(crawler))

    @staticmethod
    def of(crawler: Crawler) -> ScopeMiddleware | None:
        """The crawl's scope middleware, for output that Scrapy does not pass through spider middlewares (a
        download error's errback)."""
        return crawler.get_spider_middleware(ScopeMiddleware)

    @property
    def target(self) -> CrawlTarget:
        target = self.resources.target
        assert target is not None, "the run is not open"
        return target

    # spider middleware -----------------------------------------------------------------------------

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # every page discovery listed is judged before the stored links of those not due: each keeps the finder
        # that listed it, and its sitemap <lastmod>
        admitted = [out async for out in self.judge(start, None, follow_later=True)]
        admitted.extend(self._judge_pending())
        for out in admitted:
            yield out
        # the engine has scheduled every request discovery found (in a shared run: they are in the shared
        # queue, and the other workers may finish once it is empty)
        self.ledger.discovery_finished()

    async def process_spider_output_async(self, response: Response, result: AsyncIterator[Any]
                                          ) -> AsyncIterator[Any]:
        if "playwright" in response.flags and not self._rendered_admitted(response):
            async for _ in result:
                pass
            return
        async for out in self.judge(result, response):
            yield out

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        if "playwright" in response.flags and not self._rendered_admitted(response):
            return
        for out in result:
            judged = self._judge_one(out, response)
            if judged is not None:
                yield judged
            yield from self._judge_pending()

    async def judge(self, outputs: AsyncIterator[Any], response: Response | None, *,
                    follow_later: bool = False) -> AsyncIterator[Any]:
        async for out in outputs:
            judged = self._judge_one(out, response)
            if judged is not None:
                yield judged
            if not follow_later:
                for follow in self._judge_pending():
                    yield follow

    def judge_all(self, outputs: Iterable[Any], response: Response | None = None) -> list[Any]:
        """Judge output that bypasses the spider middlewares (the spider's errback for download errors)."""
        judged_all: list[Any] = []
        for out in outputs:
            judged = self._judge_one(out, response)
            if judged is not None:
                judged_all.append(judged)
            judged_all.extend(self._judge_pending())
        return judged_all

    def _judge_pending(self) -> Iterator[Any]:
        """The stored links of pages not due, and theirs in turn (a worklist: a chain of pages not due is long)."""
        while self._pending:
            judged = self._judge_one(self._pending.popleft(), None)
            if judged is not None:
                yield judged

    def _judge_one(self, out: Any, response: Response | None) -> Any:
        if isinstance(out, Request):
            if "docscraper_finder" not in out.meta or "docscraper_page_id" in out.meta:
                return out  # not a page request, or judged already
            return self._admit_request(out)
        if isinstance(out, PageItem):
            return self._admit_item(out, response)
        return out

    # requests --------------------------------------------------------------------------------------

    def _fetchable(self, url: str) -> bool:
        """http(s) URLs; ``file://`` URLs too when the source is a local folder."""
        return is_http_url(url) or (self.target.is_local and url.lower().startswith("file:"))

    def take_page_slot(self) -> bool:
        """Count a page against max_pages; False once the budget is spent (the frontier is then cut)."""
        ledger = self.ledger
        limit = self.target.scope.max_pages
        # a distributed run counts its pages across workers (taken, then checked, atomically)
        taken = ledger.take_page() - 1 if limit is not None else ledger.scheduled_pages
        if limit is not None and taken >= limit:
            ledger.frontier_cut = f"max_pages {limit} reached"
            return False
        ledger.scheduled_pages += 1
        self.outcomes.stat("pages_scheduled")
        return True

    def _admit_request(self, request: Request) -> Request | None:
        """The request for a page, or None (recorded with its reason) when it must not be fetched."""
        target = self.target
        ledger = self.ledger
        outcomes = self.outcomes
        meta = request.meta
        url = request.url
        finder: str = meta["docscraper_finder"]
        depth: int = meta["docscraper_depth"]
        seed = bool(meta.get("docscraper_seed"))
        try:
            pid = page_id(url)
        except ValueError:
            return None
        if meta.get("docscraper_candidate") and pid in self._quiet:
            return None  # discovery listed a page an llms-full.txt section stands for: not a duplicate
        section = meta.get("docscraper_section_of")
        if section is not None and section not in self._sections:
            return None  # a link inside an llms-full section that was not admitted as a page
        if meta.get("docscraper_repeat"):
            # a URL discovery listed twice: a duplicate once its first listing claimed the page; a refused
            # one keeps its refusal as its only outcome
            if ledger.claimant(pid) is not None:
                outcomes.duplicate(url)
            return None
        if not seed and not meta.get("docscraper_candidate") and ledger.claimant(pid) is not None:
            outcomes.duplicate(url)  # a link to a page claimed already
            return None
        if not self._fetchable(url):
            if url[:5].lower() == "file:":
                # another folder's file (file:///etc/passwd) listed by a site: refused, and said so
                outcomes.refuse(url, Refusal(self._scheme_refusal, "scheme file is not http(s)"), finder=finder)
            return None
        refusal = target.scope.check(url)
        discovery_only = False
        if refusal is not None:
            if not seed:
                outcomes.refuse(url, refusal, finder=finder)
                return None
            discovery_only = refusal.detail.startswith(("blocked by", "not matched by"))
            if not discovery_only:
                outcomes.refuse(url, refusal, finder=finder)
                return None
        depth_refusal = target.scope.check_depth(depth)
        if depth_refusal is not None:
            outcomes.refuse(url, depth_refusal, finder=finder, depth=depth)
            return None
        extension = posixpath.splitext(urlsplit(url).path)[1].lower()
        if extension in self.binary_extensions:
            outcomes.refuse(url, Refusal("nonText", f"extension {extension}"), finder=finder)
            return None
        # llms.txt may list a page's Markdown twin (page.html.md): fetched for its clean Markdown, the page is
        # still page.html, so search answers and the report name the page people read.
        page_url = markdown_twin_of(url) if finder in ("llms", "llms-full") else None
        pid = page_id(page_url or url)
        if not ledger.claim(pid, page_url or url):
            outcomes.duplicate(url)
            return None
        if page_url:
            ledger.claim(page_id(url), page_url)
        if is_markdown_url(url) and finder in ("llms", "llms-full"):
            for twin in html_counterparts(url):
                ledger.claim(page_id(twin), url)
        known = target.lookup(pid)
        if target.args.due and not discovery_only and not self._due(request, known, url, finder, depth):
            return None
        if not self.take_page_slot():
            outcomes.refuse(url, Refusal("maxPages", ledger.frontier_cut or "max pages"), finder=finder)
            return None
        meta.update({
            "docscraper_page_id": pid,
            "docscraper_key": target.key(page_url or url),
            "docscraper_discovery_only": discovery_only,
            "depth": depth,
        })
        if page_url:
            meta["docscraper_page_url"] = page_url
        # Rendered pages (docscraper.crawl.rendering) go without validators: the HTML shell's ETag says nothing
        # about what its scripts build.
        if target.render == "js" and renders_url(url):
            meta.update(render_meta(self.config))
        if known is not None and known.page_id != pid and ledger.claimant(known.page_id) is None:
            ledger.claim(known.page_id, url)  # the canonical page this URL was stored under
        return request

    def _due(self, request: Request, known: PageRecord | None, url: str, finder: str, depth: int) -> bool:
        """Whether a due-only run fetches this page; a page not due is recorded and its stored links judged."""
        resources = self.resources
        watch = resources.lastmod
        lastmod = request.meta.get("docscraper_lastmod")
        moment = parse_lastmod(lastmod) if watch is not None and watch.trusted else None
        reason = resources.revisit.why_due(known, resources.revisit.now(), moment)
        if reason is not None:
            request.meta["docscraper_revisit"] = reason
            self.outcomes.count(f"due/{reason}")
            return True
        assert known is not None  # a page the state does not hold is always due ("new")
        self.outcomes.not_due(url, known.page_id, known.next_check_at, finder=finder, depth=depth)
        spider = self.crawler.spider
        if known.links and spider is not None and hasattr(spider, "follow"):
            self._pending.extend(spider.follow(list(known.links), depth))
        return False

    @property
    def _scheme_refusal(self) -> str:
        """The reason a URL of a scheme that is never fetched (``file:`` off a local source) is refused."""
        return SSRF_REASON if self.config.ssrf_guard_enabled else "outOfScope"

    # items -----------------------------------------------------------------------------------------

    def _admit_item(self, item: PageItem, response: Response | None) -> PageItem | None:
        if item.not_modified:
            self.ledger.emit(item.metadata.page_id)
            return item
        if item.metadata.finder == "llms-full" and response is None:
            return item if self._admit_section(item) else None
        assert response is not None
        return self._admit_page(item, response)

    def _admit_section(self, item: PageItem) -> bool:
        """An llms-full.txt section mapped to a page: claimed, and counted against the page budget."""
        target = self.target
        ledger = self.ledger
        url = item.url
        refusal = target.scope.check(url) or target.scope.check_depth(1)
        if refusal is not None:
            self.outcomes.refuse(url, refusal, finder="llms-full")
            return False
        pid = item.metadata.page_id
        if not ledger.claim(pid, url):
            self.outcomes.duplicate(url)
            return False
        self._quiet.add(pid)
        for alias in item.aliases:
            ledger.claim(page_id(alias), url)
            self._quiet.add(page_id(alias))
        if not self.take_page_slot():
            self.outcomes.refuse(url, Refusal("maxPages", ledger.frontier_cut or "max pages"))
            return False
        self._sections.add(pid)
        ledger.counters["llms_full_pages"] += 1
        info = ledger.discovery.get("llms-full")
        if isinstance(info, dict):
            info["mapped"] = info.get("mapped", 0) + 1
        return True

    def _admit_page(self, item: PageItem, response: Response) -> PageItem | None:
        target = self.target
        ledger = self.ledger
        outcomes = self.outcomes
        meta = item.metadata
        pid = meta.page_id
        if response.meta.get("docscraper_discovery_only"):
            outcomes.refuse(response.url, Refusal("outOfScope", "seed fetched for its links only (allow/block)"))
            return None
        canonical = meta.canonical_url
        local_canonical = response.meta.get("docscraper_local_canonical")  # a folder's index.html (localfiles)
        if local_canonical and (not canonical or target.scope.check(canonical) is not None):
            canonical = local_canonical
        by_canonical = False
        if canonical and canonical != response.url and target.scope.check(canonical) is None:
            canonical_pid = page_id(canonical)
            if canonical_pid != pid:
                by_canonical = True
                if ledger.is_emitted(canonical_pid):
                    ledger.reached.add(pid)
                    outcomes.duplicate(response.url, of=canonical)
                    return None
                if ledger.claimant(canonical_pid) is None:
                    ledger.claim(canonical_pid, canonical)
                pid = canonical_pid
                meta.page_id = pid
                meta.path = target.key(canonical)
                known = target.lookup(pid)
                meta.force = known is not None and known.reindex_requested
        if ledger.is_emitted(pid):
            outcomes.duplicate(response.url, of=ledger.claimant(pid))
            return None
        if by_canonical:
            # fetched under another URL than its canonical one: that URL is a duplicate of the page, whichever
            # of the two was answered first (two workers of a shared run may answer them in either order)
            outcomes.duplicate(response.url, of=canonical)
        ledger.emit(pid)
        self._hints(item, response)
        return item

    def _hints(self, item: PageItem, response: Response) -> None:
        """What the report's entry for the page should tell the user, and the counters that go with it."""
        hints: list[str] = []
        if item.needs_rendering:
            hints.append("page has scripts but no static content; " + (
                "serve the folder over HTTP and crawl its URL with -a render=js" if self.target.is_local
                else "crawl it with -a render=js"))
            self.outcomes.count("needs_rendering")
            logger.warning("%s: %s", response.url, hints[-1])
        if item.hash_routes:
            # A hash-routed app (docsify, older Vue/Angular) shows pages at #/...: one URL, one page here.
            hints.append(f"{item.hash_routes} links are client-side hash routes (#/...), not crawled as pages: a "
                         "page is its URL without the fragment")
            self.outcomes.count("hash_route_pages")
            logger.warning("%s: %s", response.url, hints[-1])
        if hints:
            item.hint = "; ".join(hints)
        if not item.markdown.strip():
            self.outcomes.count("empty_pages")
            if not item.needs_rendering:
                logger.warning("%s: no main content%s", response.url, " after rendering" if item.rendered else "")

    def _rendered_admitted(self, response: Response) -> bool:
        """A page rendered in Chromium whose HTTP redirects Chromium followed itself: refused (recorded) when
        they left the scope or reached a page another request claimed, as the redirect middleware does for
        plain pages."""
        meta = response.meta
        redirects = meta.get("redirect_urls")
        if not redirects:
            return True
        origin = redirects[0]
        refusal = self.target.scope.check(response.url)
        if refusal is not None:
            self.outcomes.refuse(origin, Refusal("redirectOutOfScope", f"redirects to {response.url} ({refusal.detail})"))
            return False
        dest = page_id(response.url)
        holder = self.ledger.claimant(dest)
        if holder is not None and page_id(holder) not in (dest, meta["docscraper_page_id"]):
            self.outcomes.duplicate(origin, redirect=True, of=holder)
            return False
        if holder is None:
            self.ledger.claim(dest, response.url)
        return True
