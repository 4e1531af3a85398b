"""The downloader middleware that makes page requests conditional: a page the index holds is asked for with
the validators stored from its last fetch, so an unchanged page costs a 304 and no body.

:class:`ConditionalRequestMiddleware` adds ``If-None-Match`` (stored ETag) and ``If-Modified-Since`` (stored
Last-Modified) to a page request (meta ``docscraper_page_id``) whose page is active in the state with a
content hash, or an alias whose content the page it names still holds, and lets a 304 through to the spider
(``handle_httpstatus_list``). It sends none in a full run (``-a full=1``), for a page marked by ``scrapy
reindex``, for a rendered page (the HTML shell's validators say nothing about what its scripts build), or when
the Markdown mirror lost the page's file (a 304 has no body to restore it from). The spider turns a 304 into an ``unchanged`` item; only the pipelines write page state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docscraper.crawl.resources import CrawlResources

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request

__all__ = ["ConditionalRequestMiddleware"]


class ConditionalRequestMiddleware:
    """See the module docstring."""

    def __init__(self, resources: CrawlResources) -> None:
        self.resources = resources

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(CrawlResources.of(crawler))

    def process_request(self, request: Request) -> None:
        meta = request.meta
        pid = meta.get("docscraper_page_id")
        target = self.resources.target
        # a redirect hop or a retry carries the first request's headers already
        if (pid is None or target is None or meta.get("redirect_urls") or "If-None-Match" in request.headers
                or "If-Modified-Since" in request.headers):
            return
        known = target.lookup(pid)
        if (known is None or known.status not in ("active", "alias") or not known.content_hash or target.args.full
                or known.reindex_requested or meta.get("docscraper_render") == "js"):
            return
        if known.status == "alias" and not known.alias_current(target.known):
            return  # an alias is asked conditionally while the page that holds its content still holds it
        headers: dict[str, str] = {}
        if known.etag:
            headers["If-None-Match"] = known.etag
        if known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        mirror = self.resources.mirror
        if headers and mirror is not None and not mirror.has_file(known.rel_path or meta["docscraper_key"],
                                                                  known.page_id):
            headers = {}
        if headers:
            for name, value in headers.items():
                request.headers[name] = value
            meta["handle_httpstatus_list"] = [*meta.get("handle_httpstatus_list", ()), 304]
