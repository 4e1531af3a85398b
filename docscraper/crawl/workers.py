"""Worker processes for CPU-bound page work (decoding, extraction to Markdown, link extraction).

:class:`WorkerProcesses` runs calls in a :class:`concurrent.futures.ProcessPoolExecutor` (``spawn``, started by the
first call; until the workers have imported their modules, calls run in the calling thread) and hands the results
back to the reactor's asyncio loop. ``workers=0`` (``DOCSCRAPER_PARSE_WORKERS=0``) runs every call in the calling
thread. A worker that dies breaks the pool: it is started again and the call tried once more; a second break raises
:class:`WorkerCrashed`, the page's failure. Workers end with the crawl's process, however it ends. Log records a call
emits in a worker come back with its result and are logged again here (:func:`run_logged`, :func:`replay`).
:class:`BoundedProcess` is one process whose calls have a time limit (:class:`CallTimedOut`). Why processes, not
threads: docs/explanation/architecture.md.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["BoundedProcess", "CallTimedOut", "Logged", "WorkerCrashed", "WorkerProcesses", "replay", "run_logged"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class WorkerCrashed(RuntimeError):
    """A worker process died while running the call, twice."""


class CallTimedOut(RuntimeError):
    """A :class:`BoundedProcess` call did not finish in its time: its process was terminated."""


@dataclass(frozen=True)
class Logged(Generic[T]):
    """A call's result and the log records (logger name, level, message) it emitted."""

    value: T
    records: tuple[tuple[str, int, str], ...] = ()


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append((record.name, record.levelno, record.getMessage()))
        except Exception:  # a record whose arguments do not format: keep what can be kept
            self.records.append((record.name, record.levelno, str(record.msg)))


def run_logged(func: Callable[..., T], *args: Any) -> Logged[T]:
    """Call *func* and collect what it logs under the ``docscraper`` loggers (in a worker process, where
    nothing else would show it)."""
    collector = _Collector()
    root = logging.getLogger("docscraper")
    level = root.level
    root.addHandler(collector)
    root.setLevel(logging.DEBUG)
    try:
        value = func(*args)
    finally:
        root.removeHandler(collector)
        root.setLevel(level)
    return Logged(value, tuple(collector.records))


def replay(records: tuple[tuple[str, int, str], ...]) -> None:
    """Log again, in this process, the records a worker collected."""
    for name, level, message in records:
        logging.getLogger(name).log(level, "%s", message)


def _ready() -> bool:
    return True


def _exit_with(parent: int) -> None:
    """In a worker: end the process when the crawl that started it is gone (killed with SIGKILL, it
    cannot stop its workers, which would otherwise wait for work for ever)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="docscraper-parent-watch", daemon=True).start()


class WorkerProcesses:
    """A lazily started process pool whose results come back on the reactor (see the module docstring)."""

    def __init__(self, workers: int, name: str = "parse") -> None:
        self.workers = max(0, workers)
        self.name = name
        #: how many times the pool was replaced after a worker died
        self.restarts = 0
        #: calls run in a worker process / in the calling thread
        self.in_workers = 0
        self.here = 0
        self._executor: ProcessPoolExecutor | None = None
        self._warming: list[Future[bool]] = []
        self._closed = False
        #: why the worker processes could not start, when they could not
        self.start_error: str | None = None

    @property
    def ready(self) -> bool:
        """Whether every worker process has started and answered."""
        return bool(self._warming) and all(f.done() and not f.exception() for f in self._warming)

    def _warmed(self, future: Future[bool]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is not None and not self._closed and not self.start_error:
            # the pages go on being parsed in the crawl's own thread: slower, never lost
            self.start_error = f"{error.__class__.__name__}: {error}"
            logger.warning("The %s worker processes could not start (%s); parsing goes on in the crawl's "
                           "own thread", self.name, self.start_error)

    @property
    def generation(self) -> int:
        return self.restarts

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=context,
                                             initializer=_exit_with, initargs=(os.getpid(),))
        # one trivial call per worker: they start now, in parallel with the crawl, and ``ready`` says when
        self._warming = [self._executor.submit(_ready) for _ in range(self.workers)]
        for future in self._warming:
            future.add_done_callback(self._warmed)
        logger.debug("Started %d %s worker process(es)", self.workers, self.name)

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in a worker process (*func* and the arguments must pickle), or in this thread
        while the workers start, when there are none, or after :meth:`close`."""
        if self.workers == 0 or self._closed:
            self.here += 1
            return func(*args)
        if self._executor is None:
            self._start()
        if not self.ready:
            self.here += 1
            return func(*args)
        self.in_workers += 1
        generation = self.generation
        try:
            return await self._submit(func, *args)
        except BrokenProcessPool:
            if self._closed:
                raise
            self._restart(generation)
            generation = self.generation
            try:
                return await self._submit(func, *args)
            except BrokenProcessPool as exc:
                self._restart(generation)
                raise WorkerCrashed(f"a {self.name} worker process died on this call twice") from exc

    def _restart(self, generation: int) -> None:
        """Replace the pool that broke under a call; once, however many calls were waiting on it (the
        calls that were submitted to an older pool find it already replaced)."""
        if generation != self.generation or self._closed:
            return
        logger.warning("A %s worker process died; starting the pool again", self.name)
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        self._start()
        self.restarts += 1

    async def _submit(self, func: Callable[..., T], *args: Any) -> T:
        assert self._executor is not None
        future: Future[Logged[T]] = self._executor.submit(run_logged, func, *args)
        # the executor settles the future from its own thread; asyncio hands the result to the reactor's
        # loop (docscraper runs on Scrapy's asyncio reactor, which scrapy-playwright needs too)
        logged = await asyncio.wrap_future(future)
        replay(logged.records)
        return logged.value

    def close(self) -> None:
        """Stop the processes; calls still queued are cancelled, later calls run in the calling thread."""
        self._closed = True
        if self._executor is not None:
            # waits for the idle workers to exit (milliseconds): a pool left to shut down on its own races
            # Python's exit handler for process pools, which then writes to a closed pipe (a traceback at exit)
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class BoundedProcess:
    """One worker process for calls that may never end (a document whose one page hangs inside a C library):
    a call gets a time limit, and a call past it terminates the process (``multiprocessing.Pool.terminate``, its
    public way to stop workers) and raises :class:`CallTimedOut`; the next call starts a new process. Calls run
    one at a time, so a limit is the call's own time, never its wait behind another. Started on first use
    (``spawn``), it ends with the crawl's process however that ends. *workers* 0 runs every call here."""

    def __init__(self, workers: int, name: str = "documents") -> None:
        self.workers = workers
        self.name = name
        #: calls whose process was terminated for running past their limit
        self.terminated = 0
        self._pool: Any = None
        self._lock: asyncio.Lock | None = None
        self._closed = False

    async def run(self, func: Callable[..., T], *args: Any, timeout: float) -> T:
        """``func(*args)`` in the process, within *timeout* seconds (see the class docstring)."""
        if self.workers == 0 or self._closed:
            return func(*args)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = context.Pool(1, initializer=_exit_with, initargs=(os.getpid(),))
            loop = asyncio.get_running_loop()
            done: asyncio.Future[Logged[T]] = loop.create_future()

            def settle(value: Any, error: BaseException | None = None) -> None:
                if not done.done():
                    if error is not None:
                        done.set_exception(error)
                    else:
                        done.set_result(value)

            self._pool.apply_async(run_logged, (func, *args),
                                   callback=lambda value: loop.call_soon_threadsafe(settle, value),
                                   error_callback=lambda exc: loop.call_soon_threadsafe(settle, None, exc))
            try:
                logged = await asyncio.wait_for(done, timeout)
            except TimeoutError:
                self.terminated += 1
                pool, self._pool = self._pool, None
                logger.warning("A %s call ran past %.0f s: its process is terminated", self.name, timeout)
                await asyncio.to_thread(_terminate, pool)
                raise CallTimedOut(f"did not finish in {timeout:g} s (its {self.name} process was stopped)") from None
        replay(logged.records)
        return logged.value

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            _terminate(self._pool)
            self._pool = None


def _terminate(pool: Any) -> None:
    pool.terminate()
    pool.join()
