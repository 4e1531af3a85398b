"""The extension that owns a ``docs`` crawl's shared parts and resources.

:class:`CrawlResources` (``EXTENSIONS``) parses the ``DOCSCRAPER_*`` settings once into
:class:`~docscraper.config.DocscraperConfig` and builds the run ledger (``DOCSCRAPER_LEDGER_CLASS``); at
``spider_opened`` it opens the state store and the vector index (``DOCSCRAPER_STATE_STORE_CLASS``,
``DOCSCRAPER_VECTOR_INDEX_CLASS``), resolves the run's :class:`~docscraper.crawl.target.CrawlTarget` and sends
:data:`~docscraper.crawl.signals.run_opened`; at ``spider_closed`` it sends
:data:`~docscraper.crawl.signals.run_closing`, then closes them. The embedder (``DOCSCRAPER_EMBEDDER_CLASS``) loads on
first use. Components take it with :meth:`CrawlResources.of` and make blocking calls with :meth:`CrawlResources.call`.
A run that cannot open closes with its reason (``source_busy``, ``state_unavailable``, ``index_unavailable``,
``render_unavailable``, ``unknown_source``, ``credentials_unavailable``, ``model_mismatch``, else ``open_failed``).
Why: docs/explanation/architecture.md.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy import signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.crawl.outcomes import RunOutcomes
from docscraper.crawl.rendering import RenderError, render_problem
from docscraper.crawl.schedule import LastmodWatch, RevisitPolicy
from docscraper.crawl.signals import run_closing, run_opened
from docscraper.crawl.target import CrawlTarget, open_target, remember_credentials
from docscraper.crawl.workers import BoundedProcess, WorkerProcesses
from docscraper.credentials import CredentialError, Credentials, load_credentials
from docscraper.secrets import redact_logs
from docscraper.storage.backends import export_for_questions, load_crawl_embedder, open_state_store, open_vector_index
from docscraper.storage.consistency import Verification, claim_index, reconcile
from docscraper.storage.embedding import Embedder
from docscraper.storage.libraries import SourceVersions
from docscraper.storage.mirror import Mirror
from docscraper.storage.model_identity import ModelIdentity, ModelMismatch, model_identity
from docscraper.storage.runs import SourceBusy, running_runs, take_lock, this_process
from docscraper.storage.state import RunRecord, StateError, StateStore, utcnow
from docscraper.storage.vectors import IndexError_, VectorIndex

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.crawl.ledger import RunLedger

__all__ = ["CrawlResources", "crawl_config"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_OPEN_ERRORS: dict[type[Exception], str] = {
    SourceBusy: "source_busy",
    StateError: "state_unavailable",
    IndexError_: "index_unavailable",
    RenderError: "render_unavailable",
    LookupError: "unknown_source",
    CredentialError: "credentials_unavailable",
    ModelMismatch: "model_mismatch",
}


def crawl_config(crawler: Crawler) -> DocscraperConfig:
    """The crawl's parsed settings: the :class:`CrawlResources`' own in a ``docs`` crawl (parsed once), else
    parsed from the crawler's settings (a component built by hand, outside a ``docs`` crawl)."""
    resources = CrawlResources.find(crawler)
    return resources.config if resources is not None else DocscraperConfig.from_settings(crawler.settings)


def _stop_threads(threads: ThreadPool) -> None:
    if threads.started:
        threads.stop()


class CrawlResources:
    """See the module docstring. Attributes: :attr:`config`, :attr:`args`, :attr:`ledger`,
    :attr:`outcomes`, :attr:`mirror` (from ``from_crawler`` on); :attr:`target`, :attr:`store`, :attr:`index`
    (once open)."""

    def __init__(self, crawler: Crawler, config: DocscraperConfig, args: CrawlArgs, ledger: RunLedger) -> None:
        self.crawler = crawler
        self.config = config
        self.args = args
        self.ledger = ledger
        # when each page is checked next, and which pages a due-only run fetches (docscraper.crawl.schedule)
        self.revisit = RevisitPolicy(config)
        self.outcomes = RunOutcomes(ledger, crawler.stats, config.gone_after, self.revisit)
        # whether the source's sitemap <lastmod> may be believed (once open)
        self.lastmod: LastmodWatch | None = None
        self.started_at = utcnow()
        self.target: CrawlTarget | None = None
        # a private source's credentials, read when the run opens (docscraper.credentials); never stored
        self.credentials: Credentials | None = None
        # the other sources of the source's library (docscraper.storage.libraries): their vectors are shared
        self.siblings: list[str] = []
        self.store: StateStore | None = None
        self.index: VectorIndex | None = None
        # the model the index records (checked at open against the configured one)
        self.model: ModelIdentity | None = None
        # what this run reconciled of the index writes earlier runs (or its own failed writes) left behind
        self.reconciled: dict[str, Any] | None = None
        # the Markdown mirror (-a save_dir, DOCSCRAPER_SAVE_DIR), or None
        self.mirror: Mirror | None = None
        # processes that parse fetched pages off the reactor (DOCSCRAPER_PARSE_WORKERS), started on first use
        self.parsers = WorkerProcesses(config.parse_workers, name="parse")
        # the process that converts documents (docscraper.content.documents), each within a hard time limit
        self.documents = BoundedProcess(min(1, config.parse_workers), name="document")
        self.opened = False
        self.open_error: str | None = None
        # the source's lock, once taken (the run's id, or its shared run's)
        self.lock_holder: str | None = None
        self._pools: dict[str, ThreadPool] = {}
        self._pool_triggers: dict[str, Any] = {}
        self._embedder: Embedder | None = None
        self._embedder_error: Exception | None = None
        self._embedder_waiters: list[Deferred[Embedder]] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        args = getattr(crawler.spider, "args", None)
        if not isinstance(args, CrawlArgs):
            raise NotConfigured("not a docscraper crawl (the spider has no docscraper arguments)")
        try:
            config = DocscraperConfig.from_settings(crawler.settings)
            if args.run and not config.distributed:
                raise ConfigError("-a run= names a shared run: crawl with SCRAPY_SETTINGS_MODULE=settings.distributed")
            started = utcnow()
            run_id = f"{started:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
            ledger = load_object(config.ledger_class).from_crawler(crawler, config, run_id)
        except ConfigError as exc:
            raise ConfigError(f"docs spider: {exc}") from None
        resources = cls(crawler, config, args, ledger)
        resources.started_at = started
        directory = args.save_dir or config.save_dir
        if directory is not None:
            try:
                resources.mirror = Mirror(directory, stats=crawler.stats)
            except OSError as exc:
                raise ConfigError(f"save_dir {str(directory)!r}: cannot create it: {exc}") from None
            logger.info("Markdown mirror in %s", directory)
        crawler.signals.connect(resources.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(resources.spider_closed, signal=signals.spider_closed)
        return resources

    @staticmethod
    def find(crawler: Crawler) -> CrawlResources | None:
        """The crawl's resources, or None in a crawl that has none (not a ``docs`` crawl, or a crawler built
        by hand whose extensions were never built)."""
        try:
            return crawler.get_extension(CrawlResources)
        except RuntimeError:
            return None

    @staticmethod
    def of(crawler: Crawler) -> CrawlResources:
        """The crawl's resources, for another component's ``from_crawler``; ``NotConfigured`` in a crawl
        that has none (not a ``docs`` crawl)."""
        resources = CrawlResources.find(crawler)
        if resources is None:
            raise NotConfigured("docscraper.crawl.resources.CrawlResources is not enabled")
        return resources

    @property
    def run_id(self) -> str:
        return self.ledger.run_id

    # threads ---------------------------------------------------------------------------------------

    def _defer(self, pool: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        from twisted.internet import reactor  # imported late: importing it installs a reactor

        if pool not in self._pools:
            threads = ThreadPool(minthreads=1, maxthreads=1, name=f"docscraper-{pool}")
            threads.start()
            self._pools[pool] = threads
            # A forced shutdown (a second SIGTERM or Ctrl-C) stops the reactor without closing the spider;
            # the pool's threads are not daemons, so unless the reactor stops them the process never exits.
            # Twisted stops its own thread pool the same way.
            self._pool_triggers[pool] = cast("Any", reactor).addSystemEventTrigger(
                "during", "shutdown", _stop_threads, threads
            )
        return deferToThreadPool(reactor, self._pools[pool], func, *args, **kwargs)

    def _stop_pools(self) -> None:
        from twisted.internet import reactor

        for name, threads in self._pools.items():
            trigger = self._pool_triggers.pop(name, None)
            if trigger is not None:
                cast("Any", reactor).removeSystemEventTrigger(trigger)
            _stop_threads(threads)

    async def call(self, pool: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call on one of the run's single-thread pools: ``state`` (SQL), ``index``
        (Chroma), ``model`` (the embedder), ``chunk``, ``mirror``, ``shared`` (Redis), ``stream`` (a loader's pipe)."""
        result: T = await maybe_deferred_to_future(self._defer(pool, func, *args, **kwargs))
        return result

    async def db(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking state call on the state thread."""
        return await self.call("state", func, *args, **kwargs)

    async def embedder(self) -> Embedder:
        """The embedding model, loaded once on first use (an unchanged recrawl never loads it): its ONNX export
        when there is one and the model runs on the CPU (:func:`~docscraper.storage.backends.load_crawl_embedder`).

        A model that cannot load closes the crawl (reason ``embedding_unavailable``): every page would fail
        the same way, and a crawl that did not finish removes nothing."""
        if self._embedder is not None:
            return self._embedder
        if self._embedder_error is not None:
            raise self._embedder_error
        waiter: Deferred[Embedder] = Deferred()
        self.load_embedder_soon()
        assert self._embedder_waiters is not None
        self._embedder_waiters.append(waiter)
        result: Embedder = await maybe_deferred_to_future(waiter)
        return result

    def load_embedder_soon(self) -> None:
        """Start loading the embedding model on its thread now, without waiting for it (nothing when it is
        loaded, loading, or failed to load)."""
        if self._embedder is not None or self._embedder_error is not None or self._embedder_waiters is not None:
            return
        self._embedder_waiters = []
        loading = self._defer("model", load_crawl_embedder, self.config)
        loading.addCallbacks(self._embedder_loaded, self._embedder_failed)

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

    async def spider_opened(self, spider: Any) -> None:
        try:
            # one worker of a shared run at a time creates the schema and the source row
            async with self.ledger.opening():
                await self._open()
        except tuple(_OPEN_ERRORS) as exc:
            self.open_error = str(exc)
            logger.error("%s", exc)
            raise CloseSpider(next(r for t, r in _OPEN_ERRORS.items() if isinstance(exc, t))) from exc
        except Exception as exc:
            self.open_error = f"{exc.__class__.__name__}: {exc}"
            logger.exception("Cannot open the run")
            raise CloseSpider("open_failed") from exc
        await self.crawler.signals.send_catch_log_async(run_opened, resources=self)

    async def _open(self) -> None:
        cfg = self.config
        store = await self.db(open_state_store, cfg)
        self.store = store
        target = await self.db(open_target, store, self.args, self.run_id, self.started_at)
        if target.credentials:
            self.credentials = load_credentials(target.credentials, target.seed_url, secrets_dir=cfg.secrets_dir)
            if self.credentials is not None:
                redact_logs().add(self.credentials.secrets())  # nothing logged carries them from now on
                if target.render == "js" and self.credentials.header_only:
                    raise CredentialError(
                        f"source {target.source.name} renders pages (render=js), and header credentials "
                        f"({', '.join(self.credentials.header_only)} from {target.credentials.headers}) cannot be "
                        "given to Chromium safely: it carries a request's headers across redirects to other origins. "
                        "Use auth_basic or auth_cookies for a rendered source, or crawl it with -a render=none")
                if self.crawler.settings.getbool("HTTPCACHE_ENABLED"):
                    raise CredentialError("HTTPCACHE_ENABLED would write the credentials of source "
                                          f"{target.source.name} to the cache folder; turn it off for it")
                target = await self.db(remember_credentials, store, target)
                logger.info("Source %s sends credentials (%s) to %s only", target.source.name,
                            target.credentials.describe(), "://".join(self.credentials.origin[:2]) +
                            f":{self.credentials.origin[2]}")
        self.siblings = SourceVersions.from_scopes(await self.db(store.source_scopes)).siblings(target.source.name)
        if target.render == "js":
            problem = render_problem(self.crawler.settings, cfg)
            if problem:
                raise RenderError(f"cannot render source {target.source.name}: {problem}")
        self.target = target
        self.outcomes.bind(target)
        self.lastmod = LastmodWatch(target.source, self.revisit, self.revisit.now())
        await self._take_source(store, target)
        host, pid, start = this_process()
        await self.db(
            store.start_run,
            RunRecord(self.run_id, target.source.id, self.started_at, None, None, None, args=target.args_dict()),
            host=host,
            pid=pid,
            process_start=start,
        )
        if cfg.index_enabled:
            self.index = await self.call("index", open_vector_index, cfg)
            # an index bound to another state database is refused (index_unavailable): their chunk ids collide
            await self.call("index", claim_index, self.index, await self.db(store.state_id), record=True)
            self.model, reset = await self._check_model(store, self.index, target)
            if reset:  # every page of the source is marked: this run re-processes them as forced
                target = target.with_known(await self.db(store.load_pages, target.source.id))
            target = await self._reconcile(store, self.index, target)
            self.target = target
            self.outcomes.bind(target)
        self.opened = True
        if cfg.index_enabled and not any(p.status == "active" for p in target.known.values()):
            # a source with no page indexed: every page will be new, so the model is needed; it loads
            # while discovery and the first fetches run (a recrawl loads it at its first new or changed page)
            self.load_embedder_soon()
            self.outcomes.stat("embedding/loaded_at_open")
        logger.info(
            "Run %s of source %s (%s): %d known pages, scope %s",
            self.run_id,
            target.source.name,
            target.seed_url,
            sum(1 for p in target.known.values() if p.status == "active"),
            target.scope.as_dict(),
        )

    async def _take_source(self, store: StateStore, target: CrawlTarget) -> None:
        """Take the source's lock (DESIGN rule 10) for this run, or for the shared run its workers crawl
        together: a second crawl of the source, its removal and its repair are refused while it is held.
        Held by another live process: :class:`~docscraper.storage.runs.SourceBusy` (close reason
        ``source_busy``), before anything is written."""
        holder = self.ledger.report_id if self.ledger.shared else self.run_id
        busy = await self.db(take_lock, store, target.source.id, holder, purpose="crawl",
                             timeout=self.config.heartbeat_timeout, shared=self.ledger.shared)
        if busy is not None:
            raise SourceBusy(f"source {target.source.name!r} is busy: {busy.describe()} holds it; this crawl "
                             "stops without touching it", busy)
        self.lock_holder = holder

    async def _check_model(self, store: StateStore, index: VectorIndex,
                           target: CrawlTarget) -> tuple[ModelIdentity, bool]:
        """The configured model, checked against the one the index records (see
        :mod:`docscraper.storage.model_identity`). Another model: :class:`ModelMismatch`, unless this run
        re-embeds everything (``-a full=1``): then every vector goes (every source's), and every page of every
        source is marked to be embedded again (this run does this source's; the others' next runs do theirs).
        Returns the model, and whether the index was reset."""
        identity = await self.call("model", model_identity, self.config)
        recorded = await self.call("index", index.recorded_model)
        if recorded is None:
            # a new collection, or one written before the model was recorded (by the bundled model then)
            await self.call("index", index.record_model, identity)
            return identity, False
        if recorded.same_model(identity):
            return (recorded if recorded.dimension else identity), False
        where = f"collection {self.config.chroma_collection!r} at {index.location}"
        if not self.args.full:
            raise ModelMismatch(
                f"the {where} holds vectors of model {recorded.describe()}; this crawl embeds with "
                f"{identity.describe()}, and two models' vectors cannot share an index. Crawl with -a full=1 "
                f"(scrapy recrawl {target.source.name} --full) to embed everything again with the new model (every "
                "source's vectors are dropped; the other sources are re-embedded at their next crawl), set "
                "DOCSCRAPER_EMBEDDING_MODEL back, or use another DOCSCRAPER_CHROMA_COLLECTION")
        marked = 0
        for summary in await self.db(store.list_sources):
            pages = await self.db(store.load_pages, summary.source.id)
            marked += await self.db(store.mark_reindex, summary.source.id,
                                    [pid for pid, page in pages.items() if page.status == "active"])
        deleted = await self.call("index", index.reset, identity)
        logger.warning("The embedding model changed from %s to %s: the %s was emptied (%d chunks) and %d pages of "
                       "every source are marked to be embedded again", recorded.describe(), identity.describe(),
                       where, deleted, marked)
        self.outcomes.count("model_reset_chunks", deleted)
        return identity, True

    async def _reconcile(self, store: StateStore, index: VectorIndex, target: CrawlTarget) -> CrawlTarget:
        """Reconcile the index writes that runs of this source began and never committed, when those runs are
        over (finished, or died: a worker of a shared run that still runs keeps its own): their pages' chunks
        are made to agree with the state rows (:func:`docscraper.storage.consistency.reconcile`), and a page
        left without its chunks is marked to be indexed again, by this run. Reported as ``reconciled``."""
        pending = await self.db(store.index_writes, target.source.id)
        if not pending:
            return target
        running = {state.run.run_id for state in await self.db(running_runs, store, target.source.id,
                                                                 timeout=self.config.heartbeat_timeout)}
        over = sorted(pid for pid, run_id in pending.items() if run_id != self.run_id and run_id not in running)
        if not over:
            return target
        runs = sorted({pending[pid] for pid in over})
        found = await self.call("index", reconcile, store, index, target.source, over)
        self.note_reconciled(found, runs=runs, pages=over)
        logger.warning("Reconciled %d page(s) that run(s) %s wrote to the index without committing: %s",
                       len(over), ", ".join(runs), found.repaired)
        if found.repaired.get("pagesMarked"):
            target = target.with_known(await self.db(store.load_pages, target.source.id))
        return target

    def note_reconciled(self, found: Verification, *, runs: list[str], pages: list[str]) -> None:
        """Add a reconciliation to the run's report (``reconciled``) and counters."""
        note = self.reconciled or {"runs": [], "pages": 0, "chunksDeleted": 0, "pagesMarked": 0, "disagreements": {}}
        note["runs"] = sorted(set(note["runs"]) | set(runs))
        note["pages"] += len(pages)
        note["chunksDeleted"] += found.repaired.get("chunksDeleted", 0)
        note["pagesMarked"] += found.repaired.get("pagesMarked", 0)
        for kind, count in found.counts().items():
            note["disagreements"][kind] = note["disagreements"].get(kind, 0) + count
        self.reconciled = note
        self.outcomes.count("reconciled_pages", len(pages))

    async def spider_closed(self, spider: Any, reason: str) -> None:
        if self.crawler.stats is not None:
            for name, value in (("in_workers", self.parsers.in_workers), ("in_reactor", self.parsers.here),
                                ("worker_restarts", self.parsers.restarts)):
                self.crawler.stats.set_value(f"docscraper/parse/{name}", value)
            if self.parsers.start_error:
                self.crawler.stats.set_value("docscraper/parse/workers_unavailable", 1)
        try:
            await self.crawler.signals.send_catch_log_async(run_closing, resources=self, reason=reason)
            if self._embedder is not None:
                if self.index is not None and self.model is not None and not self.model.dimension:
                    # the dimension is known once the model is loaded
                    self.model = self.model.with_dimension(self._embedder.dimension)
                    await self.call("index", self.index.record_model, self.model)
                # once per model and data directory: questions are then embedded without torch
                await self.call("model", export_for_questions, self.config, self._embedder)
        finally:
            if self.store is not None:
                if self.lock_holder is not None and self.target is not None:
                    try:
                        self.store.release_lock(self.target.source.id, self.lock_holder)
                    except Exception as exc:  # its heartbeat stops: another process takes it over then
                        logger.warning("Cannot release the lock of source %s: %s", self.target.source.name, exc)
                self.store.close()
            if self.index is not None:
                self.index.close()
            if self._embedder is not None:
                self._embedder.close()
            self.parsers.close()
            self.documents.close()
            self._stop_pools()
