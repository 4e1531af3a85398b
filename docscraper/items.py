"""The item the ``docs`` spider yields: one documentation page as Markdown.

Exported with Scrapy's feeds (``-O pages.jsonl``) as ``{url, title, markdown, metadata}``. Feeds see
the items that leave the pipelines, so an incremental crawl exports its new and changed pages; use
``-a full=1`` to export every page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docscraper.content.images import ImageRef

__all__ = ["PageItem", "PageMetadata"]


@dataclass
class PageMetadata:
    page_id: str
    source: str
    path: str                      # the stats report key: path relative to the scope prefix
    canonical_url: str | None
    language: str | None
    description: str | None
    finder: str                    # llms-full | llms | sitemap | link
    depth: int
    http_status: int | None
    content_type: str | None
    etag: str | None
    last_modified: str | None
    fetched_at: str                # ISO 8601, UTC
    content_hash: str = ""         # SHA-256 of the Markdown, set by the change detector
    change: str = ""               # new | changed | unchanged | alias, set by the change detector
    chunk_count: int | None = None  # set by the vector index pipeline, when enabled
    links: list[str] = field(default_factory=list)  # outgoing links, fragment-free
    # redirect chain: the URL first requested, each hop, the URL that answered; empty when not redirected
    redirects: list[str] = field(default_factory=list)
    # `scrapy reindex` marked the page: re-process it even when unchanged, and embed it afresh
    force: bool = False
    # the page of the source whose content (same Markdown hash) this one is: stored as its alias, not indexed
    alias_of: str | None = None
    alias_of_url: str | None = None   # that page's URL
    # images of the main content (url, alt, caption, title), recorded with the page's state row
    images: list[ImageRef] = field(default_factory=list)
    # the sitemap's <lastmod> for the page this run, and why a due-only run fetched it (docscraper.crawl.schedule)
    sitemap_lastmod: str | None = None
    revisit: str | None = None
    next_check: str | None = None  # ISO 8601: the page's next check after this run's, set by the state commit


@dataclass
class PageItem:
    url: str
    title: str
    markdown: str
    metadata: PageMetadata
    # Not exported (FEED_EXPORT_FIELDS lists the four above). What the spider saw, for the scope middleware:
    # a 304 (the page is unchanged: no body, nothing to process), other URLs of the page to claim (an
    # llms-full section's own URL beside its Markdown twin), a rendered page, a page with scripts but no
    # static content, client-side hash routes among its links.
    not_modified: bool = False
    aliases: list[str] = field(default_factory=list)
    rendered: bool = False
    needs_rendering: bool = False
    hash_routes: int = 0
    # what the report's entry for the page tells the user (set by the scope middleware)
    hint: str | None = None
    # what extraction cut from a page over its size limit (Extracted.truncated): the report entry's detail
    truncated: str | None = None
    # Filled in by the index pipelines.
    chunks: list[Any] = field(default_factory=list)
    embeddings: list[Any] = field(default_factory=list)
    previous_chunks: dict[str, str] = field(default_factory=dict)
    # the chunk ids the index pipeline wrote and deleted for the page (the run's change feed)
    chunks_added: list[str] = field(default_factory=list)
    chunks_deleted: list[str] = field(default_factory=list)
    # a paged document's (a PDF's) chunks written this run: chunk id -> the page it starts on
    chunk_pages: dict[str, int] = field(default_factory=dict)
