"""One crawl run: its source, scope, state snapshot, ledger, and the close-time decisions.

A :class:`CrawlRun` is created by the ``docs`` spider from its arguments and opened when the spider
opens. Pipelines, middlewares and the dupefilter reach it with :func:`run_for`. It owns the per-run
resources (the state store and its writer thread) and closes them when the spider closes, after it has
applied DESIGN's rule 3 (orphans) and rule 4 (410/404 retirement) and written the stats report.

Stats (``docscraper/...``): ``pages_scheduled``, ``pages_refused/<reason>``, ``pages_unchanged``,
``pages_changed``, ``pages_new``, ``pages_failed``, ``pages_removed``, ``not_modified`` (304s).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import secrets
import socket
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import unquote, urlsplit

from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from docscraper.config import RENDER_MODES, ConfigError, CrawlArgs, DocscraperConfig
from docscraper.embedding import Embedder, SentenceTransformerEmbedder
from docscraper.progress import ProgressRecorder
from docscraper.rendering import RenderError, render_problem
from docscraper.report import RunLedger, summarize, write_report
from docscraper.scope import Refusal, Scope
from docscraper.state import (
    PageFailure,
    PageRecord,
    PageSeen,
    PageWrite,
    RunRecord,
    SourceRecord,
    SqlStateStore,
    StateError,
    StateStore,
    utcnow,
)
from docscraper.urls import normalize_url, page_id, scope_prefix
from docscraper.vectors import ChromaIndex, IndexError_, VectorIndex

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.distributed import SharedRun
    from docscraper.mirror import Mirror

__all__ = ["CrawlRun", "run_for", "source_name_for_url"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

def source_name_for_url(url: str) -> str:
    """A source name derived from its URL: host, port and path as a slug (``docs.example.com-en``);
    ``local-<folder name>`` for a ``file://`` folder (a clash with another folder's name is settled by
    :meth:`CrawlRun.open` with a hash)."""
    parts = urlsplit(normalize_url(url))
    if parts.scheme == "file":
        folder = unquote(urlsplit(scope_prefix(url)).path).rstrip("/").rsplit("/", 1)[-1]
        raw = f"local-{folder}"
    else:
        raw = "-".join(p for p in [parts.hostname or "local", str(parts.port or ""), *parts.path.split("/")] if p)
    slug = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._") or "source"
    if len(slug) > 64:
        slug = slug[:55].rstrip("-._") + "-" + hashlib.sha256(slug.encode()).hexdigest()[:8]
    return slug


def run_for(crawler: Crawler) -> CrawlRun | None:
    """The run of the crawler's spider, or None when the spider is not a docscraper spider."""
    run = getattr(getattr(crawler, "spider", None), "run", None)
    return run if isinstance(run, CrawlRun) else None


def _stop_threads(threads: ThreadPool) -> None:
    if threads.started:
        threads.stop()


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


class CrawlRun:
    def __init__(self, crawler: Crawler, config: DocscraperConfig, args: CrawlArgs) -> None:
        self.crawler = crawler
        self.config = config
        self.args = args
        self.started_at = utcnow()
        self.run_id = f"{self.started_at:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
        self.ledger = RunLedger()
        self.counters: Counter[str] = Counter()
        self.discovery: dict[str, Any] = {}
        self.store: StateStore | None = None
        self.source: SourceRecord | None = None
        self.scope: Scope = Scope.for_source(args.source) if args.is_url else Scope("about:blank")
        self.stored_scope: Scope | None = None
        self.seed_url: str = args.source if args.is_url else ""
        self.known: dict[str, PageRecord] = {}
        self._known_by_fetch: dict[str, PageRecord] = {}
        self.claimed: dict[str, str] = {}
        self.emitted: set[str] = set()
        self.reached: set[str] = set()
        self.retire: dict[str, str] = {}
        # page redirected to a page claimed by another request -> that page; kept if that one fails
        self.redirected_to: dict[str, str] = {}
        self.frontier_cut: str | None = None
        self.discovery_error: str | None = None
        # the Markdown mirror (-a save_dir), set by pipelines.mirror.MirrorPipeline when enabled
        self.mirror: Mirror | None = None
        # host -> why its robots.txt was unreachable: nothing there was fetched (RFC 9309 2.3.1.4)
        self.robots_unreachable: dict[str, str] = {}
        self.scheduled_pages = 0
        self.opened = False
        self.open_error: str | None = None
        # js: page requests are rendered in Chromium (-a render, else the source's stored render)
        self.render: str = args.render or "none"
        # page id -> what the report's item entry should tell the user (e.g. to turn rendering on)
        self.hints: dict[str, str] = {}
        self._seen: list[PageSeen] = []
        self._failures: list[PageFailure] = []
        self._pools: dict[str, ThreadPool] = {}
        self._pool_triggers: dict[str, Any] = {}
        self.vectors: VectorIndex | None = None
        self._embedder: Embedder | None = None
        self._embedder_error: Exception | None = None
        self._embedder_waiters: list[Deferred[Embedder]] | None = None
        self.progress_recorder: ProgressRecorder | None = None
        # why this run cannot count as complete although it finished (a distributed worker died...)
        self.incomplete: str | None = None
        # a run shared with other workers (settings.distributed; docscraper.distributed), else None
        self.shared: SharedRun | None = None
        if crawler.settings.getbool("DOCSCRAPER_DISTRIBUTED"):
            from docscraper.distributed import SharedRun

            self.shared = SharedRun(self)
        elif args.run:
            raise ConfigError("-a run= names a shared run: crawl with SCRAPY_SETTINGS_MODULE=settings.distributed")
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    # threads ---------------------------------------------------------------------------------------

    def _defer(self, pool: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        from twisted.internet import reactor  # imported late: importing it installs a reactor

        if pool not in self._pools:
            threads = ThreadPool(minthreads=1, maxthreads=1, name=f"docscraper-{pool}")
            threads.start()
            self._pools[pool] = threads
            # A forced shutdown (a second SIGTERM or Ctrl-C) stops the reactor without closing the
            # spider; the pool's threads are not daemons, so unless the reactor stops them the process
            # never exits. Twisted stops its own thread pool the same way.
            self._pool_triggers[pool] = cast("Any", reactor).addSystemEventTrigger(
                "during", "shutdown", _stop_threads, threads
            )
        return deferToThreadPool(reactor, self._pools[pool], func, *args, **kwargs)

    def _stop_pools(self) -> None:
        """Stop the run's thread pools (each after the call it is running, if any) at spider close."""
        from twisted.internet import reactor

        for name, threads in self._pools.items():
            trigger = self._pool_triggers.pop(name, None)
            if trigger is not None:
                cast("Any", reactor).removeSystemEventTrigger(trigger)
            _stop_threads(threads)

    async def call(self, pool: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call on one of the run's single-thread pools: ``state`` (SQL), ``index``
        (Chroma) or ``model`` (the embedder), so the reactor thread never waits and each resource has
        one user at a time."""
        result: T = await maybe_deferred_to_future(self._defer(pool, func, *args, **kwargs))
        return result

    async def db(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking state call on the state thread."""
        return await self.call("state", func, *args, **kwargs)

    async def embedder(self) -> Embedder:
        """The embedding model, loaded once on first use (an unchanged recrawl never loads it).

        A model that cannot load closes the crawl (reason ``embedding_unavailable``): every page would
        fail the same way, and a crawl that did not finish removes nothing.
        """
        if self._embedder is not None:
            return self._embedder
        if self._embedder_error is not None:
            raise self._embedder_error
        waiter: Deferred[Embedder] = Deferred()
        if self._embedder_waiters is None:
            self._embedder_waiters = [waiter]
            cfg = self.config
            loading = self._defer("model", SentenceTransformerEmbedder, cfg.embedding_model,
                                  device=cfg.embedding_device, batch_size=cfg.embedding_batch_size)
            loading.addCallbacks(self._embedder_loaded, self._embedder_failed)
        else:
            self._embedder_waiters.append(waiter)
        result: Embedder = await maybe_deferred_to_future(waiter)
        return result

    def _embedder_loaded(self, embedder: Embedder) -> None:
        self._embedder = embedder
        for waiter in self._embedder_waiters or []:
            waiter.callback(embedder)
        self._embedder_waiters = None

    def _embedder_failed(self, failure: Any) -> None:
        self._embedder_error = failure.value
        logger.error("%s; closing the crawl", failure.value)
        for waiter in self._embedder_waiters or []:
            waiter.errback(failure)
        self._embedder_waiters = None
        engine = self.crawler.engine
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason="embedding_unavailable"))

    # lifecycle -------------------------------------------------------------------------------------

    async def _spider_opened(self, spider: Any) -> None:
        try:
            if self.shared is not None:
                # one worker at a time creates the schema and the source row of a shared state database
                async with self.shared.opening():
                    await self.open()
            else:
                await self.open()
        except (StateError, LookupError, IndexError_, RenderError) as exc:
            self.open_error = str(exc)
            logger.error("%s", exc)
            reasons: dict[type[Exception], str] = {StateError: "state_unavailable", IndexError_: "index_unavailable",
                                                   RenderError: "render_unavailable"}
            reason = reasons.get(type(exc), "unknown_source")
            raise CloseSpider(reason) from exc
        except Exception as exc:
            self.open_error = f"{exc.__class__.__name__}: {exc}"
            logger.exception("Cannot open the run")
            raise CloseSpider("open_failed") from exc

    async def open(self) -> None:
        self.store = await self.db(SqlStateStore, self.config.state_url)
        store = self.store
        if self.args.is_url:
            seed = self.args.source
            stored = await self.db(store.find_source_by_url, normalize_url(seed))
            if stored is None:
                name = source_name_for_url(seed)
                clash = await self.db(store.get_source, name)
                if clash is not None and clash.url != normalize_url(seed):
                    name = name[:55] + "-" + hashlib.sha256(normalize_url(seed).encode()).hexdigest()[:8]
                stored = await self.db(store.ensure_source, name, normalize_url(seed), self._scope_from_args().as_dict())
            self.seed_url = seed
        else:
            stored = await self.db(store.get_source, self.args.source)
            if stored is None:
                raise LookupError(
                    f"unknown source {self.args.source!r}: pass a URL (-a source=https://...) or register it first"
                )
            self.seed_url = self._seed_of(stored)
        self.source = stored
        if "llms_txt" not in self.args.overrides and stored.scope.get("llms_txt"):
            # registered with `scrapy sources add --llms-txt URL`
            self.args = dataclasses.replace(self.args, llms_txt=str(stored.scope["llms_txt"]))
        self.stored_scope = self._scope_from_record(stored)
        self.scope = self._scope_from_args(base=self.stored_scope)
        self.render = self._render_mode(stored)
        if self.render == "js":
            problem = render_problem(self.crawler.settings, self.config)
            if problem:
                raise RenderError(f"cannot render source {stored.name}: {problem}")
        self.known = await self.db(store.load_pages, stored.id)
        # A page stored under its canonical URL is requested under the URL that was fetched.
        self._known_by_fetch = {page_id(rec.url): rec for rec in self.known.values()}
        await self.db(
            store.start_run,
            RunRecord(self.run_id, stored.id, self.started_at, None, None, None, args=self._args_dict()),
            host=socket.gethostname(),
            pid=os.getpid(),
        )
        # live progress and heartbeat for `scrapy status`, from now until close
        self.progress_recorder = ProgressRecorder(self, self.config.progress_interval)
        self.progress_recorder.start()
        if self.config.index_enabled:
            cfg = self.config
            self.vectors = await self.call("index", ChromaIndex, path=cfg.chroma_path, url=cfg.chroma_url,
                                           collection=cfg.chroma_collection, telemetry=cfg.chroma_telemetry)
        self.opened = True
        logger.info(
            "Run %s of source %s (%s): %d known pages, scope %s",
            self.run_id,
            stored.name,
            self.seed_url,
            sum(1 for p in self.known.values() if p.status == "active"),
            self.scope.as_dict(),
        )

    def _scope_from_args(self, base: Scope | None = None) -> Scope:
        a = self.args
        prefix = base.prefix if base else Scope.for_source(a.source).prefix
        return Scope(
            prefix,
            a.allow if "allow" in a.overrides else (base.allow if base else ()),
            a.block if "block" in a.overrides else (base.block if base else ()),
            a.max_depth if "max_depth" in a.overrides else (base.max_depth if base else None),
            a.max_pages if "max_pages" in a.overrides else (base.max_pages if base else None),
        )

    @staticmethod
    def _seed_of(source: SourceRecord) -> str:
        """The URL a source by name is crawled from: as registered (``scope.seed``), else its stored URL,
        in its folder form when it is the scope's folder (``/docs`` is stored for ``/docs/``: asking for
        ``/docs`` would cost a redirect and record one)."""
        seed = source.scope.get("seed")
        if seed:
            return str(seed)
        prefix = str(source.scope.get("prefix") or Scope.for_source(source.url).prefix)
        with contextlib.suppress(ValueError):
            if normalize_url(prefix) == source.url:
                return prefix
        return source.url

    @staticmethod
    def _scope_from_record(source: SourceRecord) -> Scope:
        s = source.scope
        return Scope(
            str(s.get("prefix") or Scope.for_source(source.url).prefix),
            tuple(s.get("allow") or ()),
            tuple(s.get("block") or ()),
            s.get("max_depth"),
            s.get("max_pages"),
        )

    def _render_mode(self, source: SourceRecord) -> str:
        """``-a render`` for this run, else the source's stored ``render`` (``scrapy sources add``)."""
        if self.args.render:
            return self.args.render
        stored = str(source.scope.get("render") or "none").strip().lower()
        if stored not in RENDER_MODES:
            logger.warning("Source %s: unknown stored render %r; not rendering", source.name, stored)
            return "none"
        return stored

    def _args_dict(self) -> dict[str, Any]:
        a = self.args
        return {
            "source": a.source,
            "allow": list(a.allow),
            "block": list(a.block),
            "max_depth": a.max_depth,
            "max_pages": a.max_pages,
            "llms_txt": a.llms_txt,
            "full": a.full,
            "save_dir": str(a.save_dir) if a.save_dir else None,
            "render": a.render,
        }

    # discovery bookkeeping -------------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        """Whether the source is a ``file://`` folder (:mod:`docscraper.localfiles`)."""
        return urlsplit(self.seed_url or self.scope.prefix).scheme == "file"

    def key(self, url: str) -> str:
        return self.scope.key(url)

    def lookup(self, pid: str) -> PageRecord | None:
        """What the state holds for the page a request's URL stands for (by id, or by fetched URL)."""
        return self.known.get(pid) or self._known_by_fetch.get(pid)

    def stat(self, name: str, count: int = 1) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"docscraper/{name}", count)

    def count(self, name: str, amount: int = 1) -> None:
        """A run counter: in the report's ``counters`` and in Scrapy's stats (``docscraper/<name>``)."""
        self.counters[name] += amount
        self.stat(name, amount)

    def refuse(self, url: str, refusal: Refusal, **details: Any) -> None:
        """Record a URL that will not be crawled, with its reason."""
        self.stat(f"pages_refused/{refusal.reason}")
        self.ledger.record(self.key(url), "skipped", refusal.reason, url=url, detail=refusal.detail, **details)

    def claim(self, url: str, *, alias_of: str | None = None) -> str | None:
        """Claim the page a URL stands for; returns the page id, or None when it was claimed already."""
        pid = page_id(url)
        if pid in self.claimed:
            return None
        self.claimed[pid] = alias_of or url
        return pid

    def note_duplicate(self, url: str, *, redirect: bool = False, of: str | None = None) -> None:
        """Record a URL that stands for a page already claimed (*of*, when known), under the key of the
        URL as written. Variants that differ only by a fragment are the same request: not recorded."""
        try:
            pid = page_id(url)
        except ValueError:
            return
        first = of or self.claimed.get(pid)
        key = self.scope.raw_key(url)
        if first is not None and not redirect and key == self.scope.raw_key(first):
            return
        reason = "redirectDuplicate" if redirect else "duplicate"
        if redirect and first is not None:
            with contextlib.suppress(ValueError):
                self.redirected_to[pid] = page_id(first)
        self.stat(f"pages_refused/{reason}")
        self.ledger.record(key, "skipped", reason, url=url, detail=f"same page as {first}" if first else None)

    def note_robots(self, netloc: str, info: dict[str, Any], *, unreachable: str | None = None) -> None:
        """Record what a host's robots.txt said (the report's ``discovery.robots``). An unreachable
        robots.txt means nothing on the host was fetched: the run is partial and removes nothing."""
        self.discovery.setdefault("robots", {})[netloc] = info
        if unreachable:
            self.robots_unreachable[netloc] = unreachable

    def take_page_slot(self) -> bool:
        """Count a page against max_pages; False once the budget is spent (the frontier is then cut)."""
        limit = self.scope.max_pages
        # a distributed run counts its pages across workers (taken then checked, atomically)
        taken = self.scheduled_pages if self.shared is None or limit is None else self.shared.take_page() - 1
        if limit is not None and taken >= limit:
            self.frontier_cut = f"max_pages {limit} reached"
            return False
        self.scheduled_pages += 1
        self.stat("pages_scheduled")
        return True

    # page outcomes ---------------------------------------------------------------------------------

    def page_processed(self, key: str, change: str, fetched_at: str, **details: Any) -> None:
        hint = self.hints.get(details.get("pageId") or "")
        if hint:
            details.setdefault("hint", hint)
        self.stat(f"pages_{change}")
        self.ledger.record(key, "success", change, fetched_at=fetched_at, **details)

    async def page_unchanged(self, pid: str, key: str, *, etag: str | None, last_modified: str | None,
                             http_status: int | None, fetched_at: str, links: list[str] | None = None,
                             redirects: list[str] | None = None, **details: Any) -> None:
        """A page whose content did not change. *links* and *redirects* are None when not fetched (304):
        the stored ones are kept."""
        self.reached.add(pid)
        self.page_processed(key, "unchanged", fetched_at, pageId=pid, redirects=redirects or None, **details)
        self._seen.append(PageSeen(pid, etag, last_modified, http_status, utcnow(),
                                   None if links is None else tuple(links),
                                   None if redirects is None else tuple(redirects)))
        if len(self._seen) >= self.config.seen_flush_size:
            await self.flush()

    async def commit_page(self, write: PageWrite) -> None:
        assert self.store is not None and self.source is not None
        await self.db(self.store.commit_page, self.source.id, write)

    def page_failed(self, url: str, reason: str, detail: str, *, http_status: int | None = None,
                    pid: str | None = None, fetched_at: str | None = None, **details: Any) -> None:
        """A page that could not be fetched or parsed. It is not an orphan; 410 and repeated 404s of a
        page the index holds retire it at a clean close (DESIGN rule 4). A 410 from a page the index does
        not hold (retired already, or never indexed) is no failure: the site says it is gone on purpose,
        so it is skipped as ``gone`` and does not make every later run partial while a link to it stays."""
        pid = pid or page_id(url)
        self.reached.add(pid)
        key = self.key(url)
        prev = self.known.get(pid)
        if http_status == 410 and (prev is None or prev.status != "active"):
            self.stat("pages_refused/gone")
            self.ledger.record(key, "skipped", "gone", fetched_at=fetched_at, url=url, detail=detail,
                               httpStatus=http_status, pageId=pid, **details)
            return
        self.stat("pages_failed")
        not_found = http_status == 404
        gone = http_status == 410 or (not_found and prev is not None
                                      and prev.not_found_runs + 1 >= self.config.gone_after)
        if prev is not None and prev.status == "active" and gone:
            self.retire[pid] = key
        self.ledger.record(key, "failed", reason, fetched_at=fetched_at, url=url, detail=detail,
                           httpStatus=http_status, pageId=pid, **details)
        self._failures.append(
            PageFailure(pid, url, self.scope.relative_path(url), http_status, detail, utcnow(), not_found)
        )

    async def flush(self) -> None:
        """Write buffered seen-marks and failures to the state database."""
        if self.store is None or self.source is None:
            return
        seen, self._seen = self._seen, []
        failures, self._failures = self._failures, []
        if seen:
            await self.db(self.store.mark_seen, self.source.id, self.run_id, seen)
        if failures:
            await self.db(self.store.record_failures, self.source.id, self.run_id, failures)

    # close -----------------------------------------------------------------------------------------

    def _result(self, reason: str) -> tuple[str, str | None]:
        if reason != "finished" or self.open_error:
            return "aborted", self.open_error or f"closed with reason {reason}"
        if self.robots_unreachable:
            return "partial", "; ".join(self.robots_unreachable.values())
        if self.incomplete:
            return "partial", self.incomplete
        failed = self.ledger.count("failed")
        if failed:
            return "partial", f"{failed} URL(s) failed"
        return "success", None

    def _removal_gate(self, reason: str) -> str | None:
        """Why orphans must not be removed this run (DESIGN rule 3), or None when they may be."""
        if reason != "finished":
            return f"the crawl closed with reason {reason}"
        if self.frontier_cut:
            return f"the frontier was cut short ({self.frontier_cut})"
        if self.robots_unreachable:
            return "; ".join(self.robots_unreachable.values())
        if self.stored_scope is not None and self.scope.narrower_than(self.stored_scope):
            return "this run narrowed the source's scope with one-time overrides"
        if self.discovery_error:
            return f"discovery did not complete ({self.discovery_error})"
        if self.incomplete:
            return self.incomplete
        return None

    async def _remove(self, page_ids: list[str]) -> int:
        """Retire pages: their chunks go first, then their state rows (DESIGN rule 1)."""
        assert self.store is not None and self.source is not None
        if not page_ids:
            return 0
        if self.vectors is not None:
            try:
                deleted = await self.call("index", self.vectors.delete_pages, self.source.name, page_ids)
            except Exception as exc:
                logger.error("Not removing %d pages: their chunks could not be deleted: %s", len(page_ids), exc)
                self.count("removal_errors")
                return 0
            self.count("chunks_deleted", deleted)
        return await self.db(self.store.mark_removed, self.source.id, page_ids, self.run_id, utcnow())

    async def _spider_closed(self, spider: Any, reason: str) -> None:
        try:
            await self.close(reason)
        finally:
            if self.progress_recorder is not None:
                self.progress_recorder.stop()
            if self.store is not None:
                self.store.close()
            if self.vectors is not None:
                self.vectors.close()
            if self._embedder is not None:
                self._embedder.close()
            self._stop_pools()

    async def close(self, reason: str) -> dict[str, Any] | None:
        if not self.opened:
            logger.error("Run %s did not open (%s); nothing was stored", self.run_id, self.open_error or reason)
            if self.shared is not None:
                # it registered with the shared run when it opened: leave it, or it counts as a dead worker
                await self.call("shared", self.shared.withdraw)
            if self.progress_recorder is not None and self.store is not None and self.source is not None:
                # its run row exists: finish it, or `scrapy status` would call it died
                self.progress_recorder.stop()
                with contextlib.suppress(Exception):
                    await self.db(self.store.finish_run, RunRecord(self.run_id, self.source.id, self.started_at,
                                                                   utcnow(), reason, "aborted"))
            return None
        assert self.store is not None and self.source is not None
        await self.flush()
        report_id = self.run_id
        if self.shared is not None:
            # every worker publishes its part; the last one to close writes the run's one report
            parts = await self.call("shared", self.shared.close_worker, reason)
            if parts is None:
                await self._finish_worker(reason)
                return None
            reason = self.shared.merge(parts, reason)
            report_id = self.shared.report_id
        now = utcnow()
        removal: dict[str, Any] = {"performed": False, "reason": "", "candidates": 0, "removed": 0,
                                   "refusedByCap": False, "retired": 0}
        gate = self._removal_gate(reason)
        active = {pid: rec for pid, rec in self.known.items() if rec.status == "active"}
        # A page that now redirects to another is not an orphan unless that page was processed: a
        # redirect loop between two linked pages leaves both unprocessed, and neither is removed.
        if self.redirected_to:
            processed: set[str] = set()
            for entry in self.ledger.items.values():
                if entry["status"] != "success":
                    continue
                processed.add(entry.get("pageId", ""))
                if entry.get("url"):
                    with contextlib.suppress(ValueError):
                        processed.add(page_id(entry["url"]))
            self.reached.update(pid for pid, target in self.redirected_to.items() if target not in processed)
        orphans = sorted(pid for pid in active if pid not in self.reached)
        removal["candidates"] = len(orphans)
        if gate is not None:
            removal["reason"] = f"no removal: {gate}"
        else:
            retire = sorted(self.retire)
            to_remove = orphans
            share = len(orphans) / len(active) if active else 0.0
            if orphans and share > self.config.max_delete_ratio and not self.config.force_delete:
                removal["refusedByCap"] = True
                removal["reason"] = (
                    f"refused: {len(orphans)} of {len(active)} pages ({share:.0%}) would be removed, over "
                    f"DOCSCRAPER_MAX_DELETE_RATIO={self.config.max_delete_ratio}; set DOCSCRAPER_FORCE_DELETE=1 "
                    "to remove them"
                )
                logger.warning("Orphan removal %s", removal["reason"])
                to_remove = []
            removed = await self._remove(to_remove + retire)
            removal["performed"] = True
            removal["removed"] = removed
            removal["retired"] = len(retire)
            removal["reason"] = removal["reason"] or "clean finish: pages not reached this run were removed"
            for pid in to_remove:
                rec = active[pid]
                self.ledger.record(rec.rel_path or self.key(rec.url), "success", "removed",
                                   fetched_at=None, url=rec.url, pageId=pid, detail="not reached this run")
            for pid in retire:
                rec = active[pid]
                self.ledger.record(self.retire[pid], "success", "removed", fetched_at=_iso(now), url=rec.url,
                                   pageId=pid, detail="gone (410, or 404 on consecutive runs)")
            self.stat("pages_removed", len(to_remove) + len(retire))
        result, result_reason = self._result(reason)
        items = self.ledger.items
        scrapy_stats = {k: v for k, v in (self.crawler.stats.get_stats() if self.crawler.stats else {}).items()}
        if self.shared is not None and self.shared.scrapy_stats is not None:
            # the run's, not the reporting worker's: every closed worker's counts added up
            scrapy_stats.update(self.shared.scrapy_stats)
        report: dict[str, Any] = {
            "schemaVersion": 1,
            "runId": report_id,
            "scrapydJob": self.args.scrapyd_job,
            "source": self.source.name,
            "seedUrl": self.seed_url,
            "scopePrefix": self.scope.prefix,
            "startedAt": _iso(self.started_at),
            "lastUpdate": _iso(now),
            "durationSeconds": round((now - self.started_at).total_seconds(), 3),
            "closeReason": reason,
            "result": result,
            "resultReason": result_reason,
            "full": self.args.full,
            "render": self.render,
            "scope": self.scope.as_dict(),
            "scopeOverrides": sorted(self.args.overrides),
            "frontierCut": self.frontier_cut,
            "removal": removal,
            "discovery": self.discovery,
            "stats": summarize(items),
            "counters": dict(sorted(self.counters.items())),
            "scrapy": {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in sorted(scrapy_stats.items())},
            "items": dict(sorted(items.items())),
        }
        if self.mirror is not None:
            report["mirror"] = await self.call("mirror", self.mirror.report, items)
        path = write_report(self.config.runs_dir, self.source.name, report_id, report)
        if self.shared is not None:
            self.shared.expire()
        summary = {k: v for k, v in report["stats"].items()}
        if self.progress_recorder is not None:
            await self.progress_recorder.close()
        await self.db(
            self.store.finish_run,
            RunRecord(self.run_id, self.source.id, self.started_at, now, reason, result, summary, str(path)),
        )
        logger.info("Run %s %s: %s; report %s", self.run_id, result, _brief(report["stats"]), path)
        return report

    async def _finish_worker(self, reason: str) -> None:
        """Close a distributed worker that does not write the report: its own run row only."""
        assert self.store is not None and self.source is not None
        if self.progress_recorder is not None:
            await self.progress_recorder.close()
        result, _ = self._result(reason)
        await self.db(self.store.finish_run, RunRecord(self.run_id, self.source.id, self.started_at, utcnow(),
                                                       reason, result, summarize(self.ledger.items)))
        logger.info("Run %s: worker done (%s); the last worker to close writes the report", self.run_id, reason)


def _brief(stats: dict[str, int]) -> str:
    keys = ("success.new", "success.changed", "success.unchanged", "success.removed", "skipped", "failed")
    return ", ".join(f"{k} {stats.get(k, 0)}" for k in keys)
