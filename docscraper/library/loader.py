"""docscraper as a library: crawl a documentation site from Python and get its pages as documents.

:class:`WebCrawlerLoader` crawls one or more seeds (http(s) URLs or local folders) exactly as ``scrapy crawl docs -a
source=...`` does, in a child process (``python -m scrapy crawl docs`` with the project's settings, its log in a
temporary file) whose :class:`~docscraper.crawl.stream.DocumentStream` writes each page to a pipe:
:meth:`WebCrawlerLoader.lazy_load` yields a :class:`Document` while the crawl goes on, :meth:`WebCrawlerLoader.load`
returns the list. Leaving the loop early stops the crawl as Ctrl-C does (reason ``shutdown``; nothing removed). A
crawl that aborts raises :class:`CrawlError`; one that finished with pages failed does not
(:attr:`WebCrawlerLoader.last_report`). ``incremental=False`` (the default) yields every page in scope, keeping its
state in a temporary database and building no index; ``incremental=True`` uses the data directory's state and index as
``scrapy crawl`` does and yields new and changed pages, then a :class:`RemovedPage` per page removed. Loaders combine:
``a + b``, or :class:`CombinedLoader`. Both modes, and why a child process: docs/howto/python-api.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

from docscraper.config import SETTINGS_ENV
from docscraper.library.config import CrawlerConfig

__all__ = ["CombinedLoader", "CrawlError", "Document", "RemovedPage", "WebCrawlerLoader", "search_config"]

#: How long a crawl stopped early may take to close before it is killed (seconds).
STOP_TIMEOUT = 60.0


class CrawlError(RuntimeError):
    """A crawl that did not finish: ``reason`` is the crawl's own (its report's ``resultReason``, or the error
    it printed), ``report`` the report's summary when one was written."""

    def __init__(self, message: str, *, seed: str, reason: str, report: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.seed = seed
        self.reason = reason
        self.report = dict(report) if report is not None else None


@dataclass(frozen=True)
class Document:
    """One page: its URL, title, Markdown and metadata (``page_id``, ``source``, ``content_hash``, ``finder``,
    ``depth``, ``fetched_at``, ``images``, ``change``, ``path``, ``canonical_url``, ``language``,
    ``description``, ``http_status``, ``content_type``, ``chunk_ids``, and the loader's own ``metadata``)."""

    url: str
    title: str
    markdown: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def page_id(self) -> str:
        return str(self.metadata.get("page_id", ""))


@dataclass(frozen=True)
class RemovedPage:
    """A page an incremental crawl removed: gone from the site, or no longer reached by a complete crawl.
    ``chunk_ids`` are the chunks deleted from docscraper's index with it."""

    url: str
    page_id: str
    source: str
    content_hash: str | None
    chunk_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


def search_config(data_dir: str | os.PathLike[str] | None = None) -> Any:
    """The :class:`~docscraper.config.DocscraperConfig` a loader's crawl uses (the project's settings,
    ``SCRAPY_SETTINGS_MODULE``, default ``settings``), with *data_dir* as its data directory when given: what
    the retrievers search."""
    from scrapy.settings import Settings

    from docscraper.config import DocscraperConfig

    settings = Settings()
    settings.setmodule(os.environ.get("SCRAPY_SETTINGS_MODULE") or "settings", priority="project")
    if data_dir is not None:
        settings.set("DOCSCRAPER_DATA_DIR", str(Path(data_dir).expanduser()), priority="cmdline")
    return DocscraperConfig.from_settings(settings)


def _seed_url(seed: str | os.PathLike[str]) -> str:
    """A seed as the spider takes it: a URL or a registered source's name as given, a folder as ``file://``."""
    if isinstance(seed, os.PathLike):
        return Path(seed).expanduser().resolve().as_uri()
    text = str(seed).strip()
    if not text:
        raise ValueError("empty seed: give a URL, a folder or a registered source's name")
    if "://" in text:
        return text
    path = Path(text).expanduser()
    if text.startswith((".", "/", "~")) or path.exists():
        if not path.is_dir():
            raise ValueError(f"seed {text!r}: no such folder")
        return path.resolve().as_uri()
    return text  # a registered source's name (incremental loaders)


class _Loader:
    """What every loader offers: iterate, list, combine."""

    def lazy_load(self) -> Iterator[Document | RemovedPage]:
        raise NotImplementedError

    def load(self) -> list[Document | RemovedPage]:
        """Every document (and, for an incremental loader, every removal), once the crawls have finished."""
        return list(self.lazy_load())

    def __iter__(self) -> Iterator[Document | RemovedPage]:
        return self.lazy_load()

    def __add__(self, other: _Loader) -> CombinedLoader:
        if not isinstance(other, _Loader):
            return NotImplemented
        return CombinedLoader([self, other])


class WebCrawlerLoader(_Loader):
    """Crawl *seeds* (a URL, a folder, or a sequence of them; an incremental loader may also name a
    registered source) and yield their pages as :class:`Document`. *config* is a :class:`CrawlerConfig`;
    keyword options (``max_depth=3``...) are its fields and override it. *metadata* is added to every
    document's metadata. *settings* are more Scrapy settings for the crawl (``{"DOWNLOAD_DELAY": "1"}``).
    """

    def __init__(self, seeds: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 config: CrawlerConfig | None = None, *, incremental: bool = False,
                 metadata: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None,
                 **options: Any) -> None:
        items = [seeds] if isinstance(seeds, (str, os.PathLike)) else list(seeds)
        if not items:
            raise ValueError("no seed: give a URL or a folder")
        self.seeds = [_seed_url(seed) for seed in items]
        if not incremental:
            named = [seed for seed in self.seeds if "://" not in seed]
            if named:
                raise ValueError(f"seed {named[0]!r} is neither a URL nor a folder (a registered source's name "
                                 "needs incremental=True, which uses its state)")
        self.config = (config or CrawlerConfig()).replace(**options) if options else (config or CrawlerConfig())
        self.incremental = incremental
        self.metadata = dict(metadata or {})
        self.settings = {str(k): str(v) for k, v in (settings or {}).items()}
        #: The last crawl's report (without its ``items``), once its iteration ended; None before, or when
        #: the iteration was closed early.
        self.last_report: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"WebCrawlerLoader({self.seeds!r}, incremental={self.incremental})"

    def lazy_load(self) -> Iterator[Document | RemovedPage]:
        """Each page's :class:`Document` as the crawl processes it; for an incremental loader only new and
        changed pages, then a :class:`RemovedPage` per removed page. Seeds are crawled one after another."""
        scratch = None if self.incremental else tempfile.mkdtemp(prefix="docscraper-loader-")
        try:
            for seed in self.seeds:
                yield from self._crawl(seed, scratch)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def command(self, seed: str) -> list[str]:
        """The child's command line for *seed*: its spider arguments. Its settings travel in its environment
        (:meth:`crawl_settings`): a command line is visible to every local user, and settings hold secrets."""
        args = {"source": seed, **self.config.spider_args()}
        command = [sys.executable, "-m", "scrapy", "crawl", "docs"]
        for name, value in args.items():
            command += ["-a", f"{name}={value}"]
        return command

    def crawl_settings(self, scratch: str | None = None) -> dict[str, str]:
        """The child's settings, applied as ``-s`` options would be (``DOCSCRAPER_SETTINGS``)."""
        settings = self.config.settings()
        if scratch is not None:
            # non-incremental: a state of its own, no index (no model), reports in data_dir or the scratch
            settings["DOCSCRAPER_STATE_URL"] = f"sqlite:///{Path(scratch, 'state.db')}"
            settings["DOCSCRAPER_INDEX_ENABLED"] = "0"
            settings.setdefault("DOCSCRAPER_DATA_DIR", scratch)
        settings.update(self.settings)
        return settings

    def _crawl(self, seed: str, scratch: str | None) -> Iterator[Document | RemovedPage]:
        self.last_report = None
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.setdefault("SCRAPY_SETTINGS_MODULE", "settings")
        env[SETTINGS_ENV] = json.dumps({**self.crawl_settings(scratch), "DOCSCRAPER_STREAM_FD": str(write_fd)})
        command = self.command(seed)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace", prefix="docscraper-crawl-",
                                    suffix=".log") as log:
            try:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                           env=env, pass_fds=(write_fd,))
            finally:
                os.close(write_fd)
            stream = os.fdopen(read_fd, "r", encoding="utf-8")
            finished: dict[str, Any] | None = None
            done = False
            try:
                for line in stream:
                    event = json.loads(line)
                    kind = event.get("event")
                    if kind == "document":
                        yield Document(event["url"], event["title"], event["markdown"],
                                       {**event["metadata"], **self.metadata})
                    elif kind == "removed":
                        yield RemovedPage(event["url"], event["pageId"], str(event.get("source", "")),
                                          event.get("contentHash"), tuple(event.get("chunksDeleted", ())),
                                          dict(self.metadata))
                    elif kind == "finished":
                        finished = event
                done = True
            finally:
                if not done:
                    # closed early (break, an exception in the caller): stop the crawl as Ctrl-C does, reading
                    # (and dropping) what it still sends until it exits: a pipe closed under it would make it
                    # close a second way at once, and Scrapy then stops the reactor before the report is written
                    _stop(process, stream)
                else:
                    process.wait()
                stream.close()
            self._check(seed, process.returncode, finished, log)

    def _check(self, seed: str, returncode: int, finished: dict[str, Any] | None, log: TextIO) -> None:
        if finished is not None:
            report = dict(finished.get("report") or {})
            self.last_report = {**report, "path": finished.get("path")}
            if report.get("result") == "aborted":
                reason = str(report.get("resultReason") or report.get("closeReason") or "aborted")
                raise CrawlError(f"the crawl of {seed} aborted: {reason}", seed=seed, reason=reason, report=report)
            return
        log.seek(0)
        lines = log.read().splitlines()
        # the crawl command's own "error: ..." line (a wrong argument), else its last ERROR log line
        errors = [line for line in lines if line.startswith("error:")] or [line for line in lines if " ERROR: " in line]
        reason = (errors[-1] if errors else (lines[-1] if lines else f"exit status {returncode}")).strip()
        raise CrawlError(f"the crawl of {seed} failed (exit status {returncode}): {reason}", seed=seed,
                         reason=reason)


def _drain(stream: IO[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for _ in stream:
            pass


def _stop(process: subprocess.Popen[Any], stream: IO[str]) -> None:
    """Stop a crawl as Ctrl-C does (its spider closes with reason ``shutdown``), or kill it if it will not;
    what it writes to *stream* meanwhile is read and dropped (on a thread: it may never stop writing)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
    drain = threading.Thread(target=_drain, args=(stream,), name="docscraper-loader-drain", daemon=True)
    drain.start()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    drain.join(timeout=5)


class CombinedLoader(_Loader):
    """Several loaders, crawled one after another: ``a + b``, or ``CombinedLoader(iterable of loaders)``."""

    def __init__(self, loaders: Iterable[_Loader]) -> None:
        self.loaders: list[_Loader] = []
        for loader in loaders:
            if not isinstance(loader, _Loader):
                raise TypeError(f"not a loader: {loader!r}")
            # flatten, so a + b + c is one list
            self.loaders.extend(loader.loaders if isinstance(loader, CombinedLoader) else [loader])

    def __repr__(self) -> str:
        return f"CombinedLoader({self.loaders!r})"

    def lazy_load(self) -> Iterator[Document | RemovedPage]:
        for loader in self.loaders:
            yield from loader.lazy_load()
