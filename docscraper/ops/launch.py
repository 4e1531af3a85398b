"""Start a crawl of a registered source in the background and return at once.

:func:`start_crawl` (behind the MCP server's ``recrawl_source`` and the scheduler) refuses an unknown source, a source
whose crawl runs, and a start while *max_running* crawls run with :class:`~docscraper.ops.sources.SourceError`, and bad
arguments (checked as the ``docs`` spider checks them) with :class:`~docscraper.ops.sources.SourceArgumentError`. It
starts either a detached ``python -m scrapy crawl docs -a source=NAME ...`` from the project root, logging to
``DATA_DIR/logs/<source>/<UTC timestamp>.log`` (returns ``{"started": true, "how": "process", "source", "pid",
"log"}``), or, when ``DOCSCRAPER_SCRAPYD_URL`` is set, a Scrapyd job (``{"started": true, "how": "scrapyd", "source",
"jobid", "project"}``). *settings* reach a process through its environment (``DOCSCRAPER_SETTINGS``), a Scrapyd job as
``setting=`` fields without the secret ones. Overrides (``allow``, ``block``, ``max_depth``, ``max_pages``,
``llms_txt``, ``render``; ``None`` left out) apply to that run only. Why each detail: docs/explanation/operations.md.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

from docscraper.config import SETTINGS_ENV, ConfigError, CrawlArgs, DocscraperConfig, user_agent
from docscraper.ops.sources import SourceArgumentError, SourceError, get_source_info
from docscraper.ops.status import crawl_status
from docscraper.secrets import is_secret_name
from docscraper.storage.backends import open_state_store
from docscraper.storage.runs import lock_alive
from docscraper.storage.state import utcnow

__all__ = ["OVERRIDES", "SETTINGS_ENV", "CrawlRunning", "crawl_arguments", "project_root", "start_crawl"]


class CrawlRunning(SourceError):
    """A crawl of the source runs already (or was started from this process and has not opened its run yet)."""

logger = logging.getLogger(__name__)

#: The one-run scope arguments :func:`start_crawl` passes on.
OVERRIDES = ("allow", "block", "max_depth", "max_pages", "llms_txt", "render")

# Processes this one started, by source: a crawl is "running" before it has recorded its run.
_started: dict[str, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


def project_root() -> Path:
    """The folder of the nearest ``scrapy.cfg`` (as Scrapy finds it from the current folder), else the
    current folder."""
    from scrapy.utils.conf import closest_scrapy_cfg

    cfg = closest_scrapy_cfg()
    return Path(cfg).parent if cfg else Path.cwd()


def crawl_arguments(name: str, *, full: bool = False, due: bool = False,
                    overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The ``docs`` spider arguments for a crawl of source *name*, checked as the spider checks them."""
    spargs: dict[str, str] = {"source": name}
    if full:
        spargs["full"] = "1"
    if due:
        spargs["due"] = "1"
    unknown = sorted(set(overrides or {}) - set(OVERRIDES))
    if unknown:
        raise SourceArgumentError(f"unknown argument(s) {', '.join(unknown)}; a crawl takes {', '.join(OVERRIDES)}")
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v).strip() for v in value if str(v).strip())
            if not value:
                continue
        if isinstance(value, bool):
            raise SourceArgumentError(f"{key} must be {'a whole number' if key.startswith('max_') else 'text'}, "
                                      f"got {value!r}")
        spargs[key] = str(value)
    try:
        parsed = CrawlArgs.parse(spargs)
    except ConfigError as exc:
        raise SourceArgumentError(str(exc)) from None
    if parsed.is_url:
        raise SourceArgumentError(f"give a source name, not a URL: {name!r}")
    return spargs


def _running(config: DocscraperConfig, name: str) -> str | None:
    """How a crawl of *name* is running, if one is: what ``scrapy status`` says, the source's lock
    (:mod:`docscraper.storage.runs`), or a process this one started that has not opened its run yet."""
    try:
        statuses = crawl_status(config, name)
    except LookupError as exc:
        raise SourceError(str(exc.args[0] if exc.args else exc)) from None
    for status in statuses:
        if status.state == "running":
            return f"run {status.run_id}, pid {status.pid} on {status.host}"
    store = open_state_store(config)
    try:
        source = store.get_source(name)
        lock = store.get_lock(source.id) if source is not None else None
    finally:
        store.close()
    if lock is not None and lock_alive(lock, now=utcnow(), timeout=config.heartbeat_timeout):
        return f"{lock.describe()} holds the source"
    process = _started.get(name)
    if process is not None and process.poll() is None:
        return f"pid {process.pid}, started from here, has not exited yet"
    return None


def _running_count(config: DocscraperConfig) -> int:
    """Crawls running now: those ``scrapy status`` sees, and those started from here not yet recorded."""
    statuses = [status for status in crawl_status(config) if status.state == "running"]
    recorded = {status.pid for status in statuses}
    return len(statuses) + sum(1 for process in _started.values()
                               if process.poll() is None and process.pid not in recorded)


def start_crawl(config: DocscraperConfig, name: str, *, full: bool = False, due: bool = False,
                overrides: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None,
                root: Path | None = None, timeout: float = 30.0, max_running: int | None = None) -> dict[str, Any]:
    """Start a crawl of source *name* in the background (module docstring) and say how it was started.
    *max_running*: refuse while that many crawls (of any source) run already."""
    get_source_info(config, name)  # unknown source, or a bad name: SourceError
    spargs = crawl_arguments(name, full=full, due=due, overrides=overrides)
    crawl_settings = {str(k): str(v) for k, v in (settings or {}).items()}
    with _lock:
        running = _running(config, name)
        if running:
            raise CrawlRunning(f"a crawl of source {name!r} is running ({running}); wait for it to finish "
                              "(crawl_status, or scrapy status)")
        if max_running is not None and (count := _running_count(config)) >= max_running:
            raise SourceError(f"{count} crawl(s) are running, the most this server starts at once "
                              f"(DOCSCRAPER_SERVER_MAX_CRAWLS={max_running}); try again when one has finished")
        if config.scrapyd_url:
            return _schedule(config, name, spargs, crawl_settings, timeout)
        return _spawn(config, name, spargs, crawl_settings, root or project_root())


def _log_path(config: DocscraperConfig, name: str) -> Path:
    folder = (config.data_dir / "logs" / name).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path, n = folder / f"{stamp}.log", 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{n}.log"
    return path


def _spawn(config: DocscraperConfig, name: str, spargs: dict[str, str], settings: dict[str, str],
           root: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "scrapy", "crawl", "docs"]
    for key, value in spargs.items():
        command += ["-a", f"{key}={value}"]
    # Settings travel in the environment, never on the command line, which any local user can read (ps).
    env = dict(os.environ)
    env.pop(SETTINGS_ENV, None)
    if settings:
        env[SETTINGS_ENV] = json.dumps(settings)
    try:
        log = _log_path(config, name)
        with log.open("xb") as out:
            process = subprocess.Popen(
                command, cwd=root, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, env=env,
            )
    except OSError as exc:
        raise SourceError(f"cannot start a crawl of {name!r}: {exc.__class__.__name__}: {exc}") from exc
    _started[name] = process
    # Reap it when it ends, so that it leaves no zombie behind while this process lives on.
    threading.Thread(target=process.wait, name=f"docscraper-crawl-{process.pid}", daemon=True).start()
    logger.info("Started a crawl of %s: pid %d, log %s", name, process.pid, log)
    return {"started": True, "how": "process", "source": name, "pid": process.pid, "log": str(log)}


def _schedule(config: DocscraperConfig, name: str, spargs: dict[str, str], settings: dict[str, str],
              timeout: float) -> dict[str, Any]:
    assert config.scrapyd_url is not None
    parts = urlsplit(config.scrapyd_url)
    headers = {"User-Agent": user_agent(config.contact), "Accept": "application/json"}
    if parts.username is not None:
        token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
    # Credentials never appear in a message or a result.
    host = parts.netloc.rpartition("@")[2]
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    endpoint = urlunsplit((parts.scheme, host, path + "schedule.json", "", ""))
    # A job's settings are stored and shown by Scrapyd (listjobs, its logs, the runner's command line):
    # secrets stay behind; a node takes them from its own environment.
    kept = {key: value for key, value in settings.items() if not is_secret_name(key)}
    for key in sorted(set(settings) - set(kept)):
        logger.warning("Not sending secret setting %s to Scrapyd (a job's settings are visible there); set it in "
                       "the node's environment", key)
    fields = [("project", config.scrapyd_project), ("spider", "docs"), *spargs.items(),
              *(("setting", f"{key}={value}") for key, value in kept.items())]
    request = urllib.request.Request(endpoint, data=urlencode(fields).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(1024 * 1024)
    except urllib.error.HTTPError as exc:
        detail = f"HTTP {exc.code}"
        with contextlib.suppress(Exception):
            detail += f": {json.loads(exc.read(65536))['message']}"
        exc.close()
        raise SourceError(f"Scrapyd at {endpoint} refused the crawl of {name!r}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise SourceError(f"cannot reach Scrapyd at {endpoint}: {reason}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise SourceError(f"Scrapyd at {endpoint} answered with something other than JSON") from None
    if not isinstance(answer, dict) or answer.get("status") != "ok" or not answer.get("jobid"):
        message = answer.get("message") if isinstance(answer, dict) else None
        raise SourceError(f"Scrapyd at {endpoint} refused the crawl of {name!r}: {message or repr(answer)}")
    logger.info("Scheduled a crawl of %s on Scrapyd %s: job %s", name, endpoint, answer["jobid"])
    return {"started": True, "how": "scrapyd", "source": name, "jobid": str(answer["jobid"]),
            "project": config.scrapyd_project}
