"""Several workers crawling one source together: a shared frontier and run ledger in Redis (scrapy-redis).

Used by the ``settings.distributed`` profile only. Every worker runs ``scrapy crawl docs -a source=... -a run=<id>``
against one Redis, state database and Chroma server; a run's keys live under ``docscraper:<run>:``.
:class:`RedisLedger` shares claims, emitted pages and the page budget; :class:`DistributedScheduler` and
:class:`RedisPageDupeFilter` the queue and fingerprints; :class:`DistributedCoordinator` heartbeats, requeues a dead
worker's requests and decides the end. The last worker to close writes the one report, and removes orphans only
when every worker finished. Settings: ``DOCSCRAPER_LEDGER_CLASS``, ``SCHEDULER``, ``REDIS_URL`` (else
``$DOCSCRAPER_REDIS_URL``), ``DOCSCRAPER_DISTRIBUTED_HEARTBEAT``, ``DOCSCRAPER_DISTRIBUTED_TTL``,
``DOCSCRAPER_DISTRIBUTED_IDLE_GRACE``. Stats: ``docscraper/distributed/requeued``. The keys, and how a run ends:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import redis
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.request import request_from_dict
from scrapy_redis.scheduler import Scheduler as _RedisScheduler
from twisted.internet.task import LoopingCall
from twisted.internet.threads import deferToThread

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.identity import PageDupeFilter
from docscraper.crawl.ledger import MemoryLedger, RunLedger
from docscraper.crawl.resources import CrawlResources
from docscraper.storage.state import iso_utc, utcnow

if TYPE_CHECKING:
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler

__all__ = ["DistributedCoordinator", "DistributedScheduler", "RedisLedger", "RedisPageDupeFilter"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: Meta flag of a request the coordinator popped and handed to the engine (``engine.crawl``): the scheduler
#: sends it next instead of queueing it again.
_HANDOFF = "docscraper_handoff"

#: Keys of a finished run stay this long (a late worker sees ``finished`` and stops at once).
KEEP_SECONDS = 86400

# Pop the best request and record it as in flight for this worker, atomically: a worker killed between
# the two would lose the request.
_POP = """
local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #r == 0 then return false end
redis.call('ZREM', KEYS[1], r[1])
redis.call('HSET', KEYS[2], ARGV[1], r[2] .. '\\n' .. r[1])
return r[1]
"""

# Return every request of a worker's in-flight hash to the queue, atomically; returns how many.
_REQUEUE = """
local entries = redis.call('HVALS', KEYS[2])
for _, entry in ipairs(entries) do
  local cut = string.find(entry, '\\n', 1, true)
  redis.call('ZADD', KEYS[1], string.sub(entry, 1, cut - 1), string.sub(entry, cut + 1))
end
redis.call('DEL', KEYS[2])
return #entries
"""


# Delete a run's keys (KEYS[3:]) when no worker opened it (KEYS[2] absent) and no registered worker (KEYS[1])
# still heartbeats: a worker still opening it, or running it, keeps every key. One script, so that a worker
# registering meanwhile (SADD and its heartbeat in one transaction) either stops the deletion or comes after it.
_FORGET = """
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
for _, worker in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. worker) == 1 then return -1 end
end
local deleted = 0
for i = 3, #KEYS do deleted = deleted + redis.call('DEL', KEYS[i]) end
return deleted
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


class RedisLedger(RunLedger):
    """The run ledger of a worker in a distributed run (``DOCSCRAPER_LEDGER_CLASS`` in
    ``settings.distributed``): claims, emitted pages and the page budget shared through Redis, each outcome
    also written to ``ledger:<w>`` as it is recorded (what a worker did before it was killed still reaches the
    run's report), and at close every worker's part merged by the last worker to close."""

    shared = True

    def __init__(self, crawler: Crawler, run_name: str, url: str, *, heartbeat: float, ttl: float,
                 grace: float) -> None:
        super().__init__()
        self.crawler = crawler
        self.run_name = run_name
        self.worker = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.run_id = f"{run_name}-{self.worker}"
        # the id the run's report is written under (the worker's own if it must report alone)
        self.report_id = run_name
        self.url = url
        self.server = redis_client(url)
        self.prefix = f"docscraper:{run_name}:"
        self.heartbeat = heartbeat
        self.ttl = ttl
        self.grace = grace
        self.leader = False
        # this worker's engine has taken every start output (its discovery, when it leads; nothing else)
        self.start_consumed = False
        # Scrapy's stats of every worker that closed, merged at close (None: this worker's own)
        self._scrapy_stats: dict[str, Any] | None = None
        # in-flight token -> request object, for the requests this worker popped
        self.inflight: dict[str, Request] = {}
        try:
            self.server.ping()  # an unreachable Redis is a clear error at start, not a traceback later
        except redis.RedisError as exc:
            raise ConfigError(f"cannot reach Redis at REDIS_URL {self.url}: {exc}") from None
        self._pop = self.server.register_script(_POP)
        self._requeue = self.server.register_script(_REQUEUE)
        self._forget = self.server.register_script(_FORGET)

    @classmethod
    def from_crawler(cls, crawler: Crawler, config: DocscraperConfig, run_id: str) -> RedisLedger:
        settings = crawler.settings
        args = getattr(crawler.spider, "args", None)
        run_name = getattr(args, "run", None)
        if not run_name:
            raise ConfigError("the distributed profile needs a shared run id: -a run=<id> on every worker")
        scheduler = settings.get("SCHEDULER")
        if not (scheduler is DistributedScheduler or str(scheduler).endswith(".DistributedScheduler")):
            raise ConfigError(f"{config.ledger_class} needs SCHEDULER = 'docscraper.crawl.distributed.DistributedScheduler'")
        url = str(settings.get("REDIS_URL") or os.environ.get("DOCSCRAPER_REDIS_URL") or "redis://127.0.0.1:6379/0")
        return cls(crawler, str(run_name), url, heartbeat=config.distributed_heartbeat, ttl=config.distributed_ttl,
                   grace=config.distributed_idle_grace)

    def k(self, name: str) -> str:
        return self.prefix + name

    # the ledger, shared ----------------------------------------------------------------------------

    def record(self, key: str, status: str, reason: str, *, fetched_at: str | None = None, **details: Any) -> bool:
        recorded = super().record(key, status, reason, fetched_at=fetched_at, **details)
        if recorded:
            self.server.hset(self.k(f"ledger:{self.worker}"), key, json.dumps(self.items[key], default=str))
        return recorded

    def claim(self, pid: str, url: str) -> bool:
        """The first claim of a page wins everywhere. Claims never change once made, so what was read is
        kept locally."""
        if super().claimant(pid) is not None:
            return False
        won = bool(self.server.hsetnx(self.k("claims"), pid, url))
        holder = self.claimant(pid)
        return won and holder == url

    def claimant(self, pid: str) -> str | None:
        local = super().claimant(pid)
        if local is not None:
            return local
        raw = self.server.hget(self.k("claims"), pid)
        if raw is None:
            return None
        value = _text(raw)
        super().claim(pid, value)
        return value

    def emit(self, pid: str) -> None:
        self.server.hset(self.k("emitted"), pid, self.worker)
        super().emit(pid)

    def is_emitted(self, pid: str) -> bool:
        """A page emitted by a worker that died is not emitted: its request went back to the queue, and
        whoever takes it processes it."""
        if super().is_emitted(pid):
            return True
        holder = self.server.hget(self.k("emitted"), pid)
        if holder is None:
            return False
        return not self.server.sismember(self.k("dead"), _text(holder))

    def take_page(self) -> int:
        """Pages scheduled across the run, this one included (max_pages counts the whole run)."""
        return int(self.server.incr(self.k("pages")))

    # opening and discovery -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def opening(self) -> AsyncIterator[None]:
        """Hold the run's open lock (off the reactor thread): workers open the state store one by one."""
        lock = self.server.lock(self.k("open_lock"), timeout=300, blocking_timeout=300, thread_local=False)
        if not await _in_thread(lock.acquire):
            raise redis.exceptions.LockError("timed out waiting for the other workers to open the run")
        try:
            yield
            await _in_thread(self.mark_opened)
        finally:
            await _in_thread(lock.release)

    def mark_opened(self) -> None:
        """This worker opened the run: from now on, workers that fail to open leave its keys alone. It is a
        member again if its keys were deleted while it opened (its heartbeat stopped longer than the TTL)."""
        pipe = self.server.pipeline()
        pipe.set(self.k("opened"), self.worker)
        pipe.sadd(self.k("workers"), self.worker)
        pipe.execute()

    def lead_discovery(self) -> bool:
        """Whether this worker discovers the source (the first to ask); the others wait for the queue."""
        self.leader = bool(self.server.set(self.k("discovery"), self.worker, nx=True))
        logger.info("Distributed run %s: worker %s %s", self.run_name, self.worker,
                    "discovers the source" if self.leader else "waits for the shared queue")
        return self.leader

    def discovery_finished(self) -> None:
        self.start_consumed = True
        if self.leader:
            self.server.set(self.k("discovery_done"), self.worker)

    # the shared queue ------------------------------------------------------------------------------

    def pop(self) -> tuple[str, bytes] | None:
        token = secrets.token_hex(8)
        data = self._pop(keys=[self.k("requests"), self.k(f"inflight:{self.worker}")], args=[token])
        return None if data is None else (token, data)

    def done(self, token: str) -> None:
        self.inflight.pop(token, None)
        self.server.hdel(self.k(f"inflight:{self.worker}"), token)

    def requeue(self, worker: str) -> int:
        return int(self._requeue(keys=[self.k("requests"), self.k(f"inflight:{worker}")]))

    # heartbeat and the end of the run ---------------------------------------------------------------

    def register(self) -> None:
        self.beat(busy=True, register=True)

    def beat(self, *, busy: bool, register: bool = False) -> None:
        """Heartbeat, and publish this worker's counters and what the report needs of it if it dies
        (:meth:`live_part`). Registering, the worker joins the run in the same transaction: a member always
        has a heartbeat, until it expires."""
        pipe = self.server.pipeline()
        if register:
            pipe.sadd(self.k("workers"), self.worker)
        pipe.set(self.k(f"hb:{self.worker}"), "busy" if busy else "idle", px=int(self.ttl * 1000))
        if self.counters:
            pipe.hset(self.k(f"counters:{self.worker}"), mapping=dict(self.counters))  # type: ignore[arg-type]
        pipe.set(self.k(f"live:{self.worker}"), json.dumps(self.live_part(), default=str))
        pipe.execute()

    def live_part(self) -> dict[str, Any]:
        """What the run's report takes from a worker that dies (its ``final`` part is never written): its Scrapy
        stats and the close-time notes that are small, as of now. The pages it reached come from its ledger."""
        stats = self.crawler.stats
        # a copy first: components on other threads (the Markdown mirror's) add stats while this iterates
        return {
            "at": iso_utc(utcnow()),
            "frontierCut": self.frontier_cut,
            "discovery": self.discovery if self.leader else None,
            "discoveryError": self.discovery_error,
            "robotsUnreachable": self.robots_unreachable,
            "scrapy": _numeric_stats(dict(stats.get_stats()) if stats is not None else {}),
        }

    def members(self, name: str) -> set[str]:
        return {_text(m) for m in self.server.smembers(self.k(name))}

    def reap(self) -> int:
        """Declare workers whose heartbeat expired dead and return their requests to the queue."""
        live = self.members("workers") - self.members("dead") - self.members("closed")
        requeued = 0
        for worker in sorted(live - {self.worker}):
            if self.server.exists(self.k(f"hb:{worker}")):
                continue
            if not self.server.set(self.k(f"reaping:{worker}"), self.worker, nx=True, ex=KEEP_SECONDS):
                continue
            # dead first: a page it emitted but did not finish is processed by whoever takes its request
            self.server.sadd(self.k("dead"), worker)
            count = self.requeue(worker)
            requeued += count
            note = f"worker {worker} stopped without closing; {count} request(s) it held went back to the queue"
            if self.server.get(self.k("discovery")) == worker.encode() and not self.server.exists(
                    self.k("discovery_done")):
                note = f"worker {worker} stopped before discovery finished"
                self.server.set(self.k("discovery_done"), self.worker)
            self.server.rpush(self.k("notes"), note)
            logger.warning("Distributed run %s: %s", self.run_name, note)
        return requeued

    def all_idle(self) -> bool:
        """Queue empty, nothing in flight, discovery done, every live worker's last heartbeat idle."""
        if not self.server.exists(self.k("discovery_done")) or self.server.zcard(self.k("requests")):
            return False
        live = self.members("workers") - self.members("dead") - self.members("closed")
        for worker in live:
            if self.server.get(self.k(f"hb:{worker}")) != b"idle" or self.server.hlen(self.k(f"inflight:{worker}")):
                return False
        return True

    async def withdraw(self) -> None:
        """Leave the run without a part in it (this worker could not open the run): see :meth:`leave`."""
        await _in_thread(self.leave)

    def leave(self) -> None:
        """Leave the run without a part in it: this worker's requests, if any, go back to the queue, and it is
        no longer a member, so the others neither wait for it nor count it as a worker that died (which would
        make the run partial). The last worker to leave a run that no worker opened deletes the run's keys:
        no report will ever set them to expire."""
        try:
            self.requeue(self.worker)
            pipe = self.server.pipeline()
            pipe.srem(self.k("workers"), self.worker)
            pipe.delete(self.k(f"hb:{self.worker}"), self.k(f"live:{self.worker}"),
                        self.k(f"counters:{self.worker}"))
            pipe.execute()
            forgotten = self.forget()
        except redis.RedisError as exc:
            logger.error("Distributed run %s: worker %s could not leave the run: %s", self.run_name, self.worker, exc)
            return
        logger.info("Distributed run %s: worker %s did not open the run and left it%s", self.run_name, self.worker,
                    "; no worker opened it, so its keys are deleted" if forgotten else "")

    def forget(self) -> bool:
        """Delete the run's keys if no worker opened it and no member heartbeats (one that was killed while
        opening does not); returns whether they were deleted. The open lock is left alone: a worker that
        holds it has not registered yet, perhaps, and a lock expires by itself."""
        if self.server.exists(self.k("opened")):
            return False
        lock = self.k("open_lock").encode()
        keys = [key for key in self.server.scan_iter(match=self.prefix + "*") if key != lock]
        deleted = int(self._forget(keys=[self.k("workers"), self.k("opened"), *keys], args=[self.k("hb:")]))
        return deleted >= 0

    def finished(self) -> bool:
        return bool(self.server.exists(self.k("finished")))

    def declare_finished(self) -> None:
        self.server.set(self.k("finished"), self.worker, nx=True)

    async def close_worker(self, reason: str) -> str | None:
        """Publish this worker's part of the run; when it is the last worker to close, merge every worker's
        part into this ledger and return the run's close reason (else None). Redis lost at close: this worker
        reports alone, as a partial run under its own id (nothing removed)."""
        try:
            parts = await _in_thread(self._close_worker, reason)
        except redis.RedisError as exc:
            logger.error("Distributed run %s: Redis unreachable at close (%s); writing this worker's own "
                         "partial report", self.run_name, exc)
            self.report_id = self.run_id
            self.incomplete = f"Redis unreachable at close ({exc}): this worker's part of the run only"
            return reason
        if parts is None:
            return None
        return self._merge(parts, reason)

    def _close_worker(self, reason: str) -> dict[str, Any] | None:
        self.beat(busy=False)
        final = {**self.live_part(), "reason": reason, "reached": sorted(self.reached),
                 "redirectedTo": self.redirected_to}
        if self.inflight or self.server.hlen(self.k(f"inflight:{self.worker}")):
            # closed before its requests were done (shutdown): they go back for the others
            self.requeue(self.worker)
        pipe = self.server.pipeline()
        pipe.set(self.k(f"final:{self.worker}"), json.dumps(final, default=str))
        pipe.sadd(self.k("closed"), self.worker)
        pipe.delete(self.k(f"hb:{self.worker}"))
        pipe.execute()
        with self.server.lock(self.k("close_lock"), timeout=120, blocking_timeout=120):
            workers = self.members("workers")
            if workers - self.members("closed") - self.members("dead") or self.server.exists(self.k("reported")):
                return None
            self.server.set(self.k("reported"), self.worker)
            parts: dict[str, Any] = {"notes": [_text(n) for n in self.server.lrange(self.k("notes"), 0, -1)],
                                     "queued": int(self.server.zcard(self.k("requests"))), "workers": {}}
            for worker in sorted(workers):
                raw_final = self.server.get(self.k(f"final:{worker}"))
                raw_live = None if raw_final else self.server.get(self.k(f"live:{worker}"))
                parts["workers"][worker] = {
                    "ledger": {_text(k): json.loads(v) for k, v in
                               self.server.hgetall(self.k(f"ledger:{worker}")).items()},
                    "counters": {_text(k): int(v) for k, v in
                                 self.server.hgetall(self.k(f"counters:{worker}")).items()},
                    "final": json.loads(raw_final) if raw_final else None,
                    "live": json.loads(raw_live) if raw_live else None,
                }
            return parts

    def _merge(self, parts: dict[str, Any], reason: str) -> str:
        """Make this ledger the whole run's: every worker's outcomes, counters and close-time notes. Returns
        the run's close reason (``finished`` only when every worker finished)."""
        merged = MemoryLedger()
        counters: Counter[str] = Counter()
        problems: list[str] = list(parts["notes"])
        scrapy_stats: dict[str, int | float] = {}
        discovery: dict[str, Any] = self.discovery
        died: list[dict[str, Any]] = []
        for worker, part in parts["workers"].items():
            for key, entry in part["ledger"].items():
                entry = dict(entry)
                merged.record(key, entry.pop("status"), entry.pop("statusReason"),
                              fetched_at=entry.pop("fetchedAt", None), **entry)
            counters.update(part["counters"])
            final = part["final"]
            if final is None:
                # a worker that died: what its ledger says it fetched was reached, not an orphan (nothing is
                # removed after a death anyway, but the report's removal candidates stay honest); the rest of
                # its part is what it published with its last heartbeat
                self.reached.update(entry["pageId"] for entry in part["ledger"].values()
                                    if entry.get("pageId") and entry["status"] in ("success", "failed"))
                final = part["live"] or {}
                died.append({"worker": worker, "statsAsOf": final.get("at")})
            elif final["reason"] != "finished" and reason == "finished":
                reason = final["reason"]
                problems.append(f"worker {worker} closed with reason {final['reason']}")
            self.reached.update(final.get("reached", ()))
            self.redirected_to.update(final.get("redirectedTo", {}))
            self.frontier_cut = self.frontier_cut or final.get("frontierCut")
            if final.get("discovery") is not None:
                discovery = final["discovery"]
            self.discovery_error = self.discovery_error or final.get("discoveryError")
            self.robots_unreachable.update(final.get("robotsUnreachable", {}))
            for key, value in (final.get("scrapy") or {}).items():
                scrapy_stats[key] = _merge_stat(key, scrapy_stats.get(key), value)
        if parts["queued"]:
            problems.append(f"{parts['queued']} request(s) were left in the shared queue")
        self.items, self.tally, self.recent = merged.items, merged.tally, merged.recent
        self.counters = counters
        self._scrapy_stats = scrapy_stats
        self.discovery = discovery
        self.discovery["distributed"] = {"run": self.run_name, "workers": sorted(parts["workers"]),
                                         "reportedBy": self.worker, "problems": problems, "died": died}
        if problems:
            self.incomplete = "; ".join(problems)
        return reason

    def scrapy_stats(self, own: Mapping[str, Any]) -> dict[str, Any]:
        """The run's, not the reporting worker's: every worker's counts added up (a worker that died: as of
        its last heartbeat)."""
        stats = dict(own)
        if self._scrapy_stats is not None:
            stats.update(self._scrapy_stats)
        return stats

    async def expire(self) -> None:
        """Keep the run's keys a day after its report: a late worker sees ``finished`` and stops."""
        await _in_thread(self._expire)

    def _expire(self) -> None:
        with contextlib.suppress(redis.RedisError):
            for key in self.server.scan_iter(match=self.prefix + "*"):
                self.server.expire(key, KEEP_SECONDS)


async def _in_thread(func: Callable[..., T], *args: Any) -> T:
    """A blocking Redis call, off the reactor thread."""
    result: T = await maybe_deferred_to_future(deferToThread(func, *args))
    return result


def _numeric_stats(stats: dict[str, Any]) -> dict[str, int | float]:
    """A worker's Scrapy stats that add up across workers (counts, sizes, seconds)."""
    return {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _merge_stat(key: str, mine: int | float | None, theirs: int | float) -> int | float:
    if mine is None:
        return theirs
    # peaks and durations overlap across workers; everything else is a count or a size
    if key.startswith("memusage/") or key.endswith("_max") or key == "elapsed_time_seconds":
        return max(mine, theirs)
    return mine + theirs


def _shared(crawler: Crawler) -> RedisLedger | None:
    resources = CrawlResources.find(crawler)
    return resources.ledger if resources is not None and isinstance(resources.ledger, RedisLedger) else None


class RedisPageDupeFilter(PageDupeFilter):
    """``PageDupeFilter`` over a Redis set (``docscraper:<run>:seen``): one page identity for every
    worker (``PageFingerprinter``), the same redirect rules, duplicates reported to the run."""

    server: redis.Redis
    key: str

    def request_seen(self, request: Request) -> bool:
        if self.redirect_to_itself(request):
            return False
        fingerprint = self.request_fingerprint(request)
        return not self.server.sadd(self.key, fingerprint)


class DistributedScheduler(_RedisScheduler):
    """scrapy-redis's scheduler on the run's keys, recording each popped request as in flight."""

    crawler: Crawler
    shared: RedisLedger
    coordinator: DistributedCoordinator
    ready: deque[Request]  # handed over by the coordinator (tick), sent before the shared queue's next

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedScheduler:
        shared = _shared(crawler)
        if shared is None:
            raise ConfigError("DistributedScheduler needs the docs spider and its Redis ledger "
                              "(SCRAPY_SETTINGS_MODULE=settings.distributed)")
        settings = crawler.settings.copy()
        settings.frozen = False
        settings.set("REDIS_URL", shared.url)
        # one worker closing must never flush the queue and the fingerprints the others crawl from; the
        # last worker to close sets the run's keys to expire (KEEP_SECONDS)
        settings.set("SCHEDULER_PERSIST", True)
        settings.set("SCHEDULER_FLUSH_ON_START", False)
        settings.set("SCHEDULER_QUEUE_CLASS", "scrapy_redis.queue.PriorityQueue")  # what _POP and _REQUEUE use
        settings.set("SCHEDULER_QUEUE_KEY", shared.k("requests"))
        settings.set("SCHEDULER_DUPEFILTER_KEY", shared.k("seen"))
        # scrapy-redis builds no filter for a class with from_spider; RedisPageDupeFilter is set below
        settings.set("DUPEFILTER_CLASS", "scrapy_redis.dupefilter.RFPDupeFilter")
        instance = cls.from_settings(settings)
        instance.stats = crawler.stats
        instance.crawler = crawler
        instance.shared = shared
        dupefilter = RedisPageDupeFilter.from_crawler(crawler)
        assert isinstance(dupefilter, RedisPageDupeFilter)
        dupefilter.server = instance.server
        dupefilter.key = shared.k("seen")
        instance.df = dupefilter
        instance.coordinator = DistributedCoordinator.from_crawler(crawler)
        instance.coordinator.scheduler = instance
        instance.ready = deque()
        return instance

    def has_pending_requests(self) -> bool:
        return bool(self.ready) or super().has_pending_requests()

    def enqueue_request(self, request: Request) -> bool:
        if request.meta.pop(_HANDOFF, False):
            # popped from the shared queue by the coordinator and handed over through engine.crawl(): due now
            self.ready.append(request)
            return True
        # a redirect or retry of a request this worker holds: in the queue (or filtered) now, not in flight
        token = request.meta.pop("docscraper_inflight", None)
        queued = request.dont_filter or not self.df.request_seen(request)
        if queued:
            self.queue.push(request)
            if self.stats:
                self.stats.inc_value("scheduler/enqueued/redis")
        else:
            self.df.log(request, self.spider)
        if token:
            self.shared.done(token)
        return queued

    def next_request(self) -> Request | None:
        if self.ready:
            return self.ready.popleft()
        return self.pop_shared()

    def pop_shared(self) -> Request | None:
        """The next request of the shared queue, recorded as this worker's in flight; None when it is empty."""
        popped = self.shared.pop()
        if popped is None:
            return None
        token, data = popped
        # the queue's serializer is the one scrapy-redis pushed the request with
        request = request_from_dict(self.queue.serializer.loads(data), spider=self.spider)
        request.meta["docscraper_inflight"] = token
        self.shared.inflight[token] = request
        if self.stats:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request


def _in_progress(engine: ExecutionEngine) -> set[Request]:
    """The requests the engine is downloading or whose response the spider and the pipelines are processing:
    the downloader's active requests and the scraper's (queued or active), read from their public attributes."""
    scraper = engine.scraper.slot
    held = set(engine.downloader.active)
    if scraper is not None:
        held |= scraper.active
        held.update(request for _, request, _ in scraper.queue)
    return held


class DistributedCoordinator:
    """Heartbeats, dead-worker recovery and the shared end of a distributed run (module docstring).
    Built by :class:`DistributedScheduler`, so that the scheduler setting alone switches a worker over."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.loop: LoopingCall | None = None
        self.idle_since: float | None = None
        self.closing = False
        self.scheduler: DistributedScheduler | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedCoordinator:
        coordinator = cls(crawler)
        crawler.signals.connect(coordinator.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(coordinator.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(coordinator.spider_closed, signal=signals.spider_closed)
        return coordinator

    def spider_opened(self, spider: Any) -> None:
        shared = _shared(self.crawler)
        if shared is None:
            return
        shared.register()
        self.loop = LoopingCall(self.tick)
        self.loop.start(shared.heartbeat, now=False).addErrback(
            lambda f: logger.error("Distributed heartbeat stopped: %s", f.getErrorMessage()))

    def _heartbeat(self, shared: RedisLedger) -> bool:
        """Publish this worker's state and counters, then release the requests it is done with. Returns
        whether the worker is busy."""
        engine = self.crawler.engine
        assert engine is not None
        inprogress = _in_progress(engine)
        if self.scheduler is not None:
            inprogress.update(self.scheduler.ready)  # handed over, not yet taken
        # downloaded, and its callback and items are done
        done = [token for token, request in shared.inflight.items() if request not in inprogress]
        # a worker still opening the run (or failing to) must not let the others finish without it
        resources = CrawlResources.find(self.crawler)
        busy = resources is None or not resources.opened or len(done) < len(shared.inflight) or \
            not shared.start_consumed or \
            bool(engine.downloader.active) or not engine.scraper.slot.is_idle()  # type: ignore[union-attr]
        shared.beat(busy=busy)
        for token in done:
            shared.done(token)
        return busy

    def tick(self) -> None:
        shared = _shared(self.crawler)
        engine = self.crawler.engine
        if shared is None or engine is None or self.closing:
            return
        busy = self._heartbeat(shared)
        requeued = shared.reap()
        if requeued and self.crawler.stats is not None:
            self.crawler.stats.inc_value("docscraper/distributed/requeued", requeued)
        if not shared.finished():
            if not busy and shared.all_idle():
                now = time.monotonic()
                self.idle_since = self.idle_since or now
                if now - self.idle_since >= shared.grace:
                    shared.declare_finished()
            else:
                self.idle_since = None
        if shared.finished() and not busy:
            self.closing = True
            deferred_from_coro(engine.close_spider_async(reason="finished"))
            return
        if not busy and self.scheduler is not None and shared.server.zcard(shared.k("requests")):
            # work arrived: hand it to the engine now, not at its next 5 s idle check
            request = self.scheduler.pop_shared()
            if request is not None:
                request.meta[_HANDOFF] = True
                engine.crawl(request)

    def spider_idle(self, spider: Any) -> None:
        shared = _shared(self.crawler)
        if shared is not None and not shared.finished():
            raise DontCloseSpider

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
