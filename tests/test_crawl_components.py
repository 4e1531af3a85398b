"""The crawl's components one by one, built with Scrapy's ``get_crawler``: the scope middleware, the
conditional-request middleware, the ledger and the reporter's removal gate, over a real SQLite state
database in memory and hand-made requests, responses and items. Whole crawls are in test_crawl.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from docscraper.config import CrawlArgs, DocscraperConfig
from docscraper.crawl.conditional import ConditionalRequestMiddleware
from docscraper.crawl.ledger import MemoryLedger
from docscraper.crawl.reporter import RunReporter
from docscraper.crawl.resources import CrawlResources
from docscraper.crawl.scope_middleware import ScopeMiddleware
from docscraper.crawl.target import open_target
from docscraper.items import PageItem, PageMetadata
from docscraper.storage.state import PageWrite, SqlStateStore, utcnow
from docscraper.urls import normalize_url, page_id

SEED = "https://docs.example.com/guide/"


@dataclass
class Run:
    resources: CrawlResources
    scope: ScopeMiddleware
    conditional: ConditionalRequestMiddleware
    store: SqlStateStore

    @property
    def ledger(self) -> MemoryLedger:
        ledger = self.resources.ledger
        assert isinstance(ledger, MemoryLedger)
        return ledger

    def outcome(self, key: str) -> tuple[str, str] | None:
        entry = self.ledger.get(key)
        return None if entry is None else (entry["status"], entry["statusReason"])


def stored(url: str, content_hash: str = "h1", etag: str | None = '"e1"') -> PageWrite:
    pid = page_id(url)
    rel = url.removeprefix(SEED)
    return PageWrite(pid, url, None, rel, content_hash, etag, "Mon, 23 Nov 2026 10:00:00 GMT", 200, rel, "link",
                     1, "text/html", utcnow(), "r0")


def open_run(*, known: tuple[str, ...] = (), settings: dict[str, Any] | None = None, **args: str) -> Run:
    crawler = get_crawler(settings_dict=settings or {})
    config = DocscraperConfig.from_settings(crawler.settings)
    crawl_args = CrawlArgs.parse({"source": SEED, **args})
    resources = CrawlResources(crawler, config, crawl_args, MemoryLedger.from_crawler(crawler, config, "r1"))
    store = SqlStateStore("sqlite://")
    if known:
        source = store.ensure_source("guide", normalize_url(SEED), {"prefix": SEED})
        for url in known:
            store.commit_page(source.id, stored(url))
    target = open_target(store, crawl_args, "r1", utcnow())
    resources.target, resources.store, resources.opened = target, store, True
    resources.outcomes.bind(target)
    return Run(resources, ScopeMiddleware(crawler, resources), ConditionalRequestMiddleware(resources), store)


@pytest.fixture
def run() -> Iterator[Run]:
    made = open_run()
    yield made
    made.store.close()


def link(url: str, depth: int = 1, **flags: Any) -> Request:
    meta = {"docscraper_finder": "link", "docscraper_depth": depth}
    meta.update({f"docscraper_{k}": v for k, v in flags.items()})
    return Request(url, meta=meta, priority=-depth)


def item(url: str, *, canonical: str | None = None, markdown: str = "# Page\n\ntext") -> PageItem:
    return PageItem(url=url, title="Page", markdown=markdown, metadata=PageMetadata(
        page_id=page_id(url), source="guide", path=url.removeprefix(SEED), canonical_url=canonical, language=None,
        description=None, finder="link", depth=1, http_status=200, content_type="text/html", etag=None,
        last_modified=None, fetched_at="2026-11-24T00:00:00Z"))


def response_for(url: str, **meta: Any) -> HtmlResponse:
    request = Request(url, meta={"docscraper_page_id": page_id(url), **meta})
    return HtmlResponse(url, body=b"<html></html>", request=request)


# -- the scope middleware ---------------------------------------------------------------------------------


def test_requests_in_scope_are_claimed_and_the_rest_refused_with_their_reason(run: Run) -> None:
    admitted = run.scope.judge_all([
        link(SEED + "a.html"),
        link("https://docs.example.com/blog/post.html"),
        link("https://elsewhere.example/guide/x.html"),
        link(SEED + "a.html#part"),          # the same page: a fragment is not another page
        link(SEED + "a.html?utm_source=x"),  # nor a tracking parameter
        link(SEED + "logo.png"),
    ])
    assert [r.url for r in admitted] == [SEED + "a.html"]
    meta = admitted[0].meta
    assert meta["docscraper_page_id"] == page_id(SEED + "a.html") and meta["docscraper_key"] == "a.html"
    assert run.ledger.claimant(page_id(SEED + "a.html")) == SEED + "a.html"
    assert run.outcome("https://docs.example.com/blog/post.html") == ("skipped", "outOfScope")
    assert run.outcome("https://elsewhere.example/guide/x.html") == ("skipped", "outOfScope")
    assert run.outcome("a.html?utm_source=x") == ("skipped", "duplicate")
    assert run.outcome("logo.png") == ("skipped", "nonText")
    assert run.ledger.scheduled_pages == 1


def test_depth_and_page_budget_are_decided_here() -> None:
    run = open_run(max_depth="1", max_pages="2")
    admitted = run.scope.judge_all([link(SEED + "a.html"), link(SEED + "deep.html", depth=2),
                                    link(SEED + "b.html"), link(SEED + "c.html")])
    assert [r.url for r in admitted] == [SEED + "a.html", SEED + "b.html"]
    assert run.outcome("deep.html") == ("skipped", "depth")
    assert run.outcome("c.html") == ("skipped", "maxPages")
    assert run.ledger.frontier_cut == "max_pages 2 reached"


def test_a_seed_refused_by_allow_is_fetched_for_its_links_only() -> None:
    run = open_run(allow="/guide/api/**")
    start = SEED + "start.html"  # the folder's own page is always in scope; another seed page is not
    (seed,) = run.scope.judge_all([link(start, depth=0, seed=True)])
    assert seed.meta["docscraper_discovery_only"] is True
    out = run.scope.judge_all([item(start)], response_for(start, docscraper_discovery_only=True))
    assert out == [] and run.outcome("start.html") == ("skipped", "outOfScope")
    # any other URL refused by allow is not fetched at all
    assert run.scope.judge_all([link(SEED + "other.html")]) == []


def test_a_page_moves_to_its_canonical_url_and_a_second_copy_is_a_duplicate(run: Run) -> None:
    canonical = SEED + "intro.html"
    first = run.scope.judge_all([item(SEED + "intro/index.html", canonical=canonical)],
                                response_for(SEED + "intro/index.html"))
    assert [i.metadata.page_id for i in first] == [page_id(canonical)]
    assert first[0].metadata.path == "intro.html" and run.ledger.is_emitted(page_id(canonical))
    again = run.scope.judge_all([item(SEED + "intro/?print=1", canonical=canonical)],
                                response_for(SEED + "intro/?print=1"))
    assert again == [] and run.outcome("intro/?print=1") == ("skipped", "duplicate")
    # a canonical URL out of scope is not followed: the page keeps its own URL
    (kept,) = run.scope.judge_all([item(SEED + "x.html", canonical="https://other.example/x.html")],
                                  response_for(SEED + "x.html"))
    assert kept.metadata.page_id == page_id(SEED + "x.html")


def test_a_link_to_a_claimed_page_is_quiet_only_when_the_scope_middleware_would_record_nothing(run: Run) -> None:
    outcomes = run.resources.outcomes
    assert not outcomes.is_quiet_link(SEED + "a.html")  # not claimed: the middleware judges it
    (admitted,) = run.scope.judge_all([link(SEED + "a.html")])
    assert admitted.url == SEED + "a.html"
    # claimed by that URL: a link to it, with or without a fragment, would be dropped with nothing recorded
    assert outcomes.is_quiet_link(SEED + "a.html") and outcomes.is_quiet_link(SEED + "a.html#usage")
    assert run.scope.judge_all([link(SEED + "a.html#usage")]) == [] and run.ledger.count("skipped") == 0
    # another spelling of the same page is recorded as a duplicate: not quiet
    variant = SEED + "a.html?utm_source=x"  # (tracking parameters are not part of a page's identity)
    assert page_id(variant) == page_id(SEED + "a.html") and not outcomes.is_quiet_link(variant)
    assert run.scope.judge_all([link(variant)]) == []
    assert run.outcome("a.html?utm_source=x") == ("skipped", "duplicate")
    assert not outcomes.is_quiet_link("not a url")


def test_an_llms_full_section_claims_its_page_and_discovery_listings_of_it_record_nothing(run: Run) -> None:
    run.ledger.discovery["llms-full"] = {"mapped": 0}
    section = item(SEED + "cli.html")
    section.metadata.finder = "llms-full"
    out = run.scope.judge_all([section, link(SEED + "cli.html", candidate=True), link(SEED + "cli.html")])
    assert out == [section]
    # a sitemap listing of the section's page is dropped silently; a link to it is a duplicate as any other
    assert run.ledger.discovery["llms-full"]["mapped"] == 1 and run.ledger.counters["llms_full_pages"] == 1
    assert run.ledger.count("skipped", "duplicate") == 0


def test_a_link_inside_a_refused_section_is_not_followed(run: Run) -> None:
    section = item("https://docs.example.com/other/page.html")
    section.metadata.finder = "llms-full"
    inside = link(SEED + "inner.html", depth=2, candidate=True, section_of=section.metadata.page_id)
    assert run.scope.judge_all([section, inside]) == []
    assert run.outcome("https://docs.example.com/other/page.html") == ("skipped", "outOfScope")
    assert run.ledger.claimant(page_id(SEED + "inner.html")) is None


def test_a_page_that_needs_rendering_gets_a_hint_and_a_count(run: Run) -> None:
    page = item(SEED + "app.html", markdown="")
    page.needs_rendering = True
    (out,) = run.scope.judge_all([page], response_for(SEED + "app.html"))
    assert out.hint is not None and "-a render=js" in out.hint
    assert run.ledger.counters["needs_rendering"] == 1 and run.ledger.counters["empty_pages"] == 1


# -- the conditional-request middleware -----------------------------------------------------------------


def test_validators_are_sent_for_pages_the_index_holds() -> None:
    run = open_run(known=(SEED + "a.html",))
    (request,) = run.scope.judge_all([link(SEED + "a.html")])
    run.conditional.process_request(request)
    assert request.headers[b"If-None-Match"] == b'"e1"'
    assert request.headers[b"If-Modified-Since"] == b"Mon, 23 Nov 2026 10:00:00 GMT"
    assert 304 in request.meta["handle_httpstatus_list"]
    # a page the state does not know goes without
    (new,) = run.scope.judge_all([link(SEED + "b.html")])
    run.conditional.process_request(new)
    assert b"If-None-Match" not in new.headers and "handle_httpstatus_list" not in new.meta


def test_a_full_run_and_a_rendered_page_send_no_validators() -> None:
    full = open_run(known=(SEED + "a.html",), full="1")
    (request,) = full.scope.judge_all([link(SEED + "a.html")])
    full.conditional.process_request(request)
    assert b"If-None-Match" not in request.headers
    plain = open_run(known=(SEED + "a.html",))
    (rendered,) = plain.scope.judge_all([link(SEED + "a.html")])
    rendered.meta["docscraper_render"] = "js"
    plain.conditional.process_request(rendered)
    assert b"If-None-Match" not in rendered.headers


# -- the removal gate -----------------------------------------------------------------------------------


def test_the_removal_gate_says_why_nothing_may_be_removed(run: Run) -> None:
    reporter = RunReporter(run.resources.crawler)
    reporter.bind(run.resources)
    target = run.resources.target
    assert target is not None
    assert reporter.removal_gate("finished", target) is None
    assert reporter.removal_gate("shutdown", target) == "the crawl closed with reason shutdown"
    run.ledger.frontier_cut = "max_pages 5 reached"
    assert reporter.removal_gate("finished", target) == "the frontier was cut short (max_pages 5 reached)"
    narrowed = open_run(known=(SEED + "a.html",), max_depth="1")
    assert narrowed.resources.target is not None and narrowed.resources.target.narrowed
    reporter.bind(narrowed.resources)
    assert reporter.removal_gate("finished", narrowed.resources.target) == (
        "this run narrowed the source's scope with one-time overrides")
