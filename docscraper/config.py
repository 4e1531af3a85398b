"""Settings and spider arguments, parsed once into frozen, validated objects.

Everything docscraper reads from Scrapy settings is namespaced ``DOCSCRAPER_*`` and parsed here, once,
by :meth:`DocscraperConfig.from_settings`. Spider arguments (``-a source=... -a allow=...``) are parsed
by :meth:`CrawlArgs.parse`. Both raise :class:`ConfigError` with one sentence that says what is wrong,
before anything is fetched or stored.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from scrapy.settings import BaseSettings

from docscraper._version import USER_AGENT, __version__
from docscraper.credentials import CREDENTIAL_KINDS, CredentialError, CredentialRefs, parse_reference
from docscraper.secrets import check_no_credentials

__all__ = [
    "MEMORY_LEDGER",
    "RENDER_MODES",
    "SETTINGS_ENV",
    "ConfigError",
    "CrawlArgs",
    "DocscraperConfig",
    "file_source_url",
    "flag",
    "parse_globs",
    "render_mode",
    "save_dir_path",
    "user_agent",
]

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


#: The environment variable that carries settings (a JSON object of names to values) to a docscraper command,
#: applied at command-line priority as ``-s`` options would be: how a server hands its settings to the crawls it
#: starts, and how an operator gives secret ones, which stay off the command line that every local user can read.
SETTINGS_ENV = "DOCSCRAPER_SETTINGS"

#: The default run ledger: one process (:mod:`docscraper.crawl.ledger`).
MEMORY_LEDGER = "docscraper.crawl.ledger.MemoryLedger"


class ConfigError(ValueError):
    """A setting or spider argument is wrong; the message is one line meant for the user."""


#: The kinds of document a crawl can index (``docscraper.content.documents.KINDS`` converts each)
DOCUMENT_TYPES = ("pdf", "docx", "ipynb", "epub", "rst")


def _positive_int(name: str, value: Any, *, allow_zero: bool = False) -> int:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None
    if number < 0 or (number == 0 and not allow_zero):
        low = "0 or more" if allow_zero else "1 or more"
        raise ConfigError(f"{name} must be {low}, got {number}")
    return number


def default_parse_workers(cpus: int | None = None) -> int:
    """``DOCSCRAPER_PARSE_WORKERS=auto``: one process per core but the reactor's, at least one, at most
    four (past four, fetching and the pipelines on the reactor thread are the limit, not parsing)."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(4, cpus - 1))


def _parse_workers(value: Any) -> int:
    text = str(value if value is not None else "auto").strip().lower()
    if text in ("", "auto"):
        return default_parse_workers()
    return _positive_int("DOCSCRAPER_PARSE_WORKERS", text, allow_zero=True)


def _number_between(name: str, value: Any, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number between {low:g} and {high:g}, got {value!r}") from None
    if not low <= number <= high:
        raise ConfigError(f"{name} must be between {low:g} and {high:g}, got {number}")
    return number


def _ratio(name: str, value: Any) -> float:
    return _number_between(name, value, 0.0, 1.0)


def _entries(value: Any) -> tuple[str, ...]:
    """A list setting given as a list or as a comma- or space-separated string."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple, set, frozenset)) else re.split(r"[,\s]+", str(value))
    return tuple(str(item).strip() for item in items if str(item).strip())


def _folders(name: str, value: Any) -> tuple[Path, ...]:
    """Absolute folders (a list, or a comma-separated string), resolved; a relative one is an error."""
    folders = []
    for entry in _entries(value):
        path = Path(entry).expanduser()
        if not path.is_absolute():
            raise ConfigError(f"{name}: give absolute folders, got {entry!r}")
        folders.append(path.resolve())
    return tuple(folders)


def _dotted(name: str, value: Any) -> str:
    text = str(value).strip()
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$", text):
        raise ConfigError(f"{name} must be a dotted path such as package.module.Class, got {text!r}")
    return text


def flag(name: str, value: Any) -> bool:
    """A boolean setting or argument: 1/0, true/false, yes/no, on/off."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{name} must be 1 or 0 (true/false), got {value!r}")


def _seconds(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number of seconds, got {value!r}") from None
    if number < 0:
        raise ConfigError(f"{name} must be 0 or more, got {number}")
    return number


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(name: str, value: Any) -> float:
    """A length of time: seconds, or a number with a unit (``90s``, ``10m``, ``6h``, ``1d``, ``2w``)."""
    text = str(value).strip().lower()
    unit = _DURATION_UNITS.get(text[-1:]) if text else None
    try:
        number = float(text[:-1] if unit is not None else text) * (unit or 1)
    except ValueError:
        raise ConfigError(f"{name} must be a duration (seconds, or a number with s, m, h, d or w), "
                          f"got {value!r}") from None
    if number <= 0 or number != number or number == float("inf"):
        raise ConfigError(f"{name} must be a duration of more than 0 seconds, got {value!r}")
    return number


def _durations(name: str, value: Any) -> tuple[float, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    steps = tuple(duration(name, item) for item in items if str(item).strip())
    if not steps:
        raise ConfigError(f"{name} must list at least one interval")
    if any(later < earlier for earlier, later in itertools.pairwise(steps)):
        raise ConfigError(f"{name} must not shrink from one step to the next, got {value!r}")
    return steps


def _factor(name: str, value: Any, *, above_one: bool) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if (above_one and not number > 1) or (not above_one and not 0 < number <= 1):
        raise ConfigError(f"{name} must be {'more than 1' if above_one else 'more than 0 and at most 1'}, "
                          f"got {value!r}")
    return number


_REVISIT_POLICIES = ("steps", "adaptive")


def _interval(name: str, value: Any) -> float:
    number = _seconds(name, value)
    if number <= 0:
        raise ConfigError(f"{name} must be more than 0 seconds, got {number}")
    return number


_PROGRESS_LINE_MODES = {"auto": "auto", "on": "on", "off": "off", **dict.fromkeys(_TRUE, "on"),
                        **dict.fromkeys(_FALSE - {""}, "off")}


def _progress_line(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value if value is not None else "auto").strip().lower() or "auto"
    if text not in _PROGRESS_LINE_MODES:
        raise ConfigError(f"DOCSCRAPER_PROGRESS_LINE must be auto, on or off, got {value!r}")
    return _PROGRESS_LINE_MODES[text]


def _chroma_url(value: Any) -> str | None:
    if not value:
        return None
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"DOCSCRAPER_CHROMA_URL must be http(s)://host:port, got {text!r}")
    return text


def _scrapyd_url(value: Any) -> str | None:
    if not value or not str(value).strip():
        return None
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"DOCSCRAPER_SCRAPYD_URL must be http(s)://host:port/, got {text!r}")
    return text


def _scrapyd_project(value: Any) -> str:
    text = str(value).strip()
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", text):
        raise ConfigError(f"DOCSCRAPER_SCRAPYD_PROJECT {text!r}: letters, digits, '.', '_' or '-'")
    return text


def _collection_name(value: Any) -> str:
    text = str(value).strip()
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$", text):
        raise ConfigError(f"DOCSCRAPER_CHROMA_COLLECTION {text!r}: 3-63 letters, digits, '.', '_' or '-'")
    return text


_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")


def contact(value: Any) -> str | None:
    """``DOCSCRAPER_CONTACT``: how a site's operator reaches whoever runs the crawler, an http(s) URL or an
    e-mail address (``mailto:`` or bare); None when unset. Anything a header cannot carry is refused."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    address = text.removeprefix("mailto:")
    if _EMAIL.match(address):
        return f"mailto:{address}"
    parts = urlsplit(text)
    if (parts.scheme in ("http", "https") and parts.hostname and text.isascii()
            and not re.search(r"[\s();\x00-\x1f\x7f]", text)):
        return text
    raise ConfigError(f"DOCSCRAPER_CONTACT must be an http(s) URL or an e-mail address, got {text!r}")


def user_agent(contact_url: str | None) -> str:
    """docscraper's user agent: the product, its version, and the operator's contact when set
    (``docscraper/0.1.0 (+https://ops.example.com/crawler)``)."""
    return f"docscraper/{__version__} (+{contact_url})" if contact_url else USER_AGENT


def _stream_fd(value: Any) -> int | None:
    if value is None or str(value).strip() == "":
        return None
    try:
        fd = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"DOCSCRAPER_STREAM_FD must be a file descriptor number, not {value!r}") from None
    if fd < 0:
        raise ConfigError(f"DOCSCRAPER_STREAM_FD must be a file descriptor number, not {value!r}")
    return fd


def _webhook_url(value: Any) -> str | None:
    if not value or not str(value).strip():
        return None
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"DOCSCRAPER_WEBHOOK_URL must be an http(s) URL, got {text!r}")
    return text


def parse_globs(name: str, value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Split a comma-separated glob list; reject empty and obviously broken patterns."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    patterns = tuple(p.strip() for p in items if p.strip())
    for pattern in patterns:
        body = pattern[1:] if pattern.startswith("!") else pattern
        if not body:
            raise ConfigError(f"{name}: empty pattern {pattern!r}")
        if "://" in body:
            raise ConfigError(
                f"{name}: patterns match URL paths, not URLs; write {urlsplit(body).path or '/'!r} "
                f"instead of {pattern!r}"
            )
        if body.count("[") != body.count("]"):
            raise ConfigError(f"{name}: unbalanced brackets in pattern {pattern!r}")
    return patterns


@dataclass(frozen=True)
class DocscraperConfig:
    """All ``DOCSCRAPER_*`` settings, validated.

    Settings: ``DOCSCRAPER_DATA_DIR`` (default ``./data``), ``DOCSCRAPER_STATE_URL`` (SQLAlchemy URL,
    default SQLite at ``DATA_DIR/state.db``), ``DOCSCRAPER_MAX_DELETE_RATIO`` (0.5),
    ``DOCSCRAPER_FORCE_DELETE`` (off), ``DOCSCRAPER_GONE_AFTER`` (2 consecutive 404 runs),
    ``DOCSCRAPER_SITEMAP_MAX_DEPTH`` (3 levels of sitemap indexes), ``DOCSCRAPER_SITEMAP_MAX_URLS``
    (50,000 per file), ``DOCSCRAPER_SITEMAP_MAX_BYTES`` (50 MiB decompressed),
    ``DOCSCRAPER_SITEMAP_MAX_FILES`` (500 sitemap files per run), ``DOCSCRAPER_DISCOVERY_LLMS``
    (probe llms.txt/llms-full.txt, on), ``DOCSCRAPER_DISCOVERY_SITEMAPS`` (on),
    ``DOCSCRAPER_SEEN_FLUSH_SIZE`` (rows per state write batch, 200).

    Revisit schedules (:mod:`docscraper.crawl.schedule`; durations in seconds or with a unit, ``10m``, ``1d``):
    ``DOCSCRAPER_REVISIT_POLICY`` (``steps``: the next interval while a page stays unchanged is the next of
    ``DOCSCRAPER_REVISIT_INTERVALS``, default ``1d,3d,7d,14d``, back to the first on a change; ``adaptive``:
    Nutch's schedule, the interval times ``DOCSCRAPER_REVISIT_GROW`` (1.4) when unchanged and
    ``DOCSCRAPER_REVISIT_SHRINK`` (0.8) when changed, between ``DOCSCRAPER_REVISIT_MIN_INTERVAL`` (1h) and
    ``DOCSCRAPER_REVISIT_MAX_INTERVAL`` (the last step, 14d)), ``DOCSCRAPER_REVISIT_ERROR_BASE`` (10m: a page
    that failed n times in a row is checked again after base x 2^(n-1), at most the maximum interval, or after
    its ``Retry-After`` when longer), ``DOCSCRAPER_REVISIT_JITTER`` (0.1: a check is planned up to this share
    of its interval early, by an amount drawn from the page's id, so that pages crawled together fall due
    apart; 0 plans every check at its interval), ``DOCSCRAPER_REVISIT_CLOCK_OFFSET`` (0 s: moves the
    schedule's clock forward, for simulations and tests).

    Documents (:mod:`docscraper.content.documents`): ``DOCSCRAPER_DOCUMENT_TYPES`` (``pdf,docx,ipynb,epub,rst``:
    the kinds converted and indexed; ``none`` for none), ``DOCSCRAPER_DOCUMENT_TIME_LIMIT`` (120 s a document,
    checked between pages), ``DOCSCRAPER_DOCUMENT_MAX_PAGES`` (5000: a longer PDF is refused, never cut),
    ``DOCSCRAPER_DOCUMENT_MAX_UNPACKED`` (200 MiB: what a ``.docx`` or ``.epub`` may unpack to),
    ``DOCSCRAPER_DOCUMENT_OCR`` (off: read a PDF's pages without a text layer with Tesseract, when installed),
    ``DOCSCRAPER_DOCUMENT_OCR_LANGUAGES`` (``eng``; Tesseract's codes joined with ``+``).

    The vector index: ``DOCSCRAPER_INDEX_ENABLED`` (on), ``DOCSCRAPER_CHROMA_URL`` (a Chroma server;
    default: a persistent directory at ``DATA_DIR/chroma``), ``DOCSCRAPER_CHROMA_COLLECTION`` (``docs``),
    ``DOCSCRAPER_CHROMA_TELEMETRY`` (off), ``DOCSCRAPER_EMBEDDING_MODEL`` (the bundled all-MiniLM-L6-v2),
    ``DOCSCRAPER_EMBEDDING_DEVICE`` (cuda when present, else cpu), ``DOCSCRAPER_EMBEDDING_BATCH_SIZE`` (texts
    per forward pass of the model; default chosen for the device: 16 on a CPU, 128 on a GPU),
    ``DOCSCRAPER_EMBEDDING_FLUSH_SECONDS`` (0.2: a partial batch waits at most this long),
    ``DOCSCRAPER_CHUNK_TARGET_TOKENS`` (200), ``DOCSCRAPER_CHUNK_OVERLAP_TOKENS`` (32),
    ``DOCSCRAPER_CHUNK_MIN_TOKENS`` (48).

    Search (:mod:`docscraper.storage.search`): ``DOCSCRAPER_SEARCH_KEYWORD_WEIGHT`` (0.75: the weight of the BM25
    keyword ranking against the vector ranking's 1 when the two are fused; 0 ranks by vectors alone).

    Rate limits (:mod:`docscraper.crawl.ratelimit`): ``DOCSCRAPER_RATELIMIT_ENABLED`` (on),
    ``DOCSCRAPER_RETRY_AFTER_MAX`` (300 s: the longest ``Retry-After`` pause; 0 ignores the header),
    ``DOCSCRAPER_MAX_CONSECUTIVE_429`` (3: the crawl stops after that many 429s in a row from a host; 0
    never stops), ``DOCSCRAPER_CRAWL_DELAY_MAX`` (60 s: the largest robots.txt ``Crawl-delay`` honoured;
    0 ignores it).

    Watching a crawl (:mod:`docscraper.crawl.progress`, :mod:`docscraper.crawl.watchdog`):
    ``DOCSCRAPER_PROGRESS_INTERVAL`` (5 s between two writes of a running crawl's progress to the state
    database; ``scrapy status`` calls a run dead after max(3 intervals, 30 s) without one),
    ``DOCSCRAPER_PROGRESS_LINE`` (``auto``: a progress line on stderr when it is a terminal; ``on``,
    ``off``), ``DOCSCRAPER_WATCHDOG_SECONDS`` (900: a crawl without a response, an item or a finished page
    for that long closes with reason ``stalled``; 0 turns the watchdog off).

    Parsing (:mod:`docscraper.crawl.workers`): ``DOCSCRAPER_PARSE_WORKERS`` (``auto``: one process per
    core but one, at least 1 and at most 4, that decode, extract and find the links of fetched pages while
    the reactor goes on fetching; ``0`` parses on the reactor thread).

    Questions (:mod:`docscraper.storage.onnx_embedding`): ``DOCSCRAPER_QUERY_ONNX`` (on: searches embed the
    question with the ONNX export of the model, made once under the data directory, without importing torch;
    off: with the model itself, and no export is made), ``DOCSCRAPER_CRAWL_ONNX`` (on: a crawl whose model
    runs on the CPU embeds its chunks with that export too, once it exists; off: always with the model).

    The Markdown mirror (:mod:`docscraper.storage.mirror`): ``DOCSCRAPER_SAVE_DIR`` (unset: no mirror; the
    spider argument ``-a save_dir=DIR`` wins over it).

    JavaScript rendering (:mod:`docscraper.crawl.rendering`, asked for with ``-a render=js`` or a source's
    stored ``render``): ``DOCSCRAPER_CHROMIUM_PATH`` (``/usr/bin/chromium``: the Chromium binary; never
    downloaded), ``DOCSCRAPER_RENDER_IDLE_TIMEOUT`` (5 s: after the ``load`` event, how long a page's
    scripts may keep the network busy before its DOM is read anyway).

    Implementations, each a dotted path (as Scrapyd chooses its job storage):
    ``DOCSCRAPER_LEDGER_CLASS`` (the run ledger, :mod:`docscraper.crawl.ledger`; the ``settings.distributed``
    profile sets the Redis one), ``DOCSCRAPER_STATE_STORE_CLASS`` (``docscraper.storage.state.SqlStateStore``),
    ``DOCSCRAPER_VECTOR_INDEX_CLASS`` (``docscraper.storage.vectors.ChromaIndex``), ``DOCSCRAPER_EMBEDDER_CLASS``
    (``docscraper.storage.embedding.SentenceTransformerEmbedder``).

    A distributed run (:mod:`docscraper.crawl.distributed`): ``DOCSCRAPER_DISTRIBUTED_HEARTBEAT`` (0.5 s
    between heartbeats), ``DOCSCRAPER_DISTRIBUTED_TTL`` (10 s without one before a worker is dead),
    ``DOCSCRAPER_DISTRIBUTED_IDLE_GRACE`` (2 s of every worker idle before the run finishes).

    ``DOCSCRAPER_CHANGE_DETECTION_ENABLED`` (on: unchanged pages are dropped before chunking).

    Identity: ``DOCSCRAPER_CONTACT`` (an http(s) URL or an e-mail address where a site's operator reaches
    whoever runs the crawl; the default ``USER_AGENT`` becomes ``docscraper/<version> (+<contact>)``, see
    :func:`user_agent`; unset: ``docscraper/<version>``, and a crawl says so once in its log).

    The change feed and the webhook (:mod:`docscraper.crawl.changefeed`, :mod:`docscraper.crawl.webhook`):
    ``DOCSCRAPER_CHANGES_ENABLED`` (on: every run writes ``runs/<source>/<run-id>.changes.jsonl``),
    ``DOCSCRAPER_WEBHOOK_URL`` (unset: no webhook; set: a JSON summary of each run is POSTed there once its
    report is written), ``DOCSCRAPER_WEBHOOK_ON_ABORT`` (off: an aborted run sends nothing),
    ``DOCSCRAPER_WEBHOOK_RETRIES`` (3 more tries after a failed POST), ``DOCSCRAPER_WEBHOOK_BACKOFF`` (1 s,
    doubled after each try), ``DOCSCRAPER_WEBHOOK_TIMEOUT`` (10 s per POST).

    Guards: ``DOCSCRAPER_REDIRECT_SCOPE_ENABLED`` (on: redirect hops are checked against the scope and the
    claims), ``DOCSCRAPER_SSRF_GUARD_ENABLED`` (on), ``DOCSCRAPER_SSRF_ALLOWED_HOSTS`` (names, IPs and CIDR
    networks the guard lets through; :mod:`docscraper.crawl.ssrf` validates them).

    Liveness (:mod:`docscraper.storage.runs`): ``DOCSCRAPER_HEARTBEAT_TIMEOUT`` (60 s: a run on another machine
    whose heartbeat is older is dead; a run on this machine is dead only when its process is gone).

    Servers (``scrapy mcp``; :mod:`docscraper.ops.mcp_server`): ``DOCSCRAPER_SERVER_ALLOWED_FOLDERS`` (absolute
    folders a client may register or read as ``file://`` sources; none by default),
    ``DOCSCRAPER_SERVER_ALLOWED_HOSTS`` (Host header names accepted besides the bound address),
    ``DOCSCRAPER_SERVER_MAX_CRAWLS`` (2 crawls running at once started by a server; 0: no cap),
    ``DOCSCRAPER_SERVER_RATE_LIMIT`` (120 requests a minute per client over HTTP; 0: no limit). The token a
    server bound off loopback requires comes from the environment, never a setting (below).
    ``DOCSCRAPER_SERVER_CREDENTIALS``: the credential references (``env:NAME``, ``file:NAME``) a server's client
    may give a source it adds (none by default: a client could otherwise send any variable to a site it names).

    Private sources (:mod:`docscraper.credentials`): ``DOCSCRAPER_SECRETS_DIR`` (``~/.config/docscraper/secrets``:
    the folder of the files that ``file:NAME`` credential references name; each must be private, mode 600).

    Background crawls (:mod:`docscraper.ops.launch`, the MCP server's ``recrawl_source``):
    ``DOCSCRAPER_SCRAPYD_URL`` (unset: a detached ``scrapy crawl`` process on this machine; set: scheduled
    on that Scrapyd), ``DOCSCRAPER_SCRAPYD_PROJECT`` (``docscraper``: the project deployed there).

    Environment variables, read from the process's environment rather than as settings:
    ``DOCSCRAPER_SETTINGS`` (a JSON object of settings applied at command-line priority and then removed from
    the environment: how a background crawl gets its settings without showing them on its command line),
    ``DOCSCRAPER_SERVER_TOKEN`` (the token a server's clients must send, unless ``--token-file`` names one;
    required when the server binds an address off loopback), ``DOCSCRAPER_LOG_LEVEL`` (``INFO``: the settings
    module's ``LOG_LEVEL``), ``DOCSCRAPER_REDIS_URL`` (``redis://127.0.0.1:6379/0``: the Redis of a distributed
    run when the ``REDIS_URL`` setting is not given). The Python loader (:mod:`docscraper.library.loader`) sets
    ``DOCSCRAPER_STREAM_FD`` for its child crawl (the file descriptor the crawl streams its documents to; not
    one to set by hand).
    """

    data_dir: Path
    state_url: str
    max_delete_ratio: float = 0.5
    force_delete: bool = False
    gone_after: int = 2
    sitemap_max_depth: int = 3
    sitemap_max_urls: int = 50_000
    sitemap_max_bytes: int = 50 * 1024 * 1024
    sitemap_max_files: int = 500
    discovery_llms: bool = True
    discovery_sitemaps: bool = True
    seen_flush_size: int = 200
    index_enabled: bool = True
    chroma_url: str | None = None
    chroma_collection: str = "docs"
    chroma_telemetry: bool = False
    embedding_model: str = "bundled:all-MiniLM-L6-v2"
    embedding_device: str | None = None
    embedding_batch_size: int | None = None  # None: chosen for the device (embedding.default_batch_size)
    embedding_flush_seconds: float = 0.2
    chunk_target_tokens: int = 200
    chunk_overlap_tokens: int = 32
    chunk_min_tokens: int = 48
    search_keyword_weight: float = 0.75
    ratelimit_enabled: bool = True
    retry_after_max: float = 300.0
    max_consecutive_429: int = 3
    crawl_delay_max: float = 60.0
    progress_interval: float = 5.0
    progress_line: str = "auto"
    watchdog_seconds: float = 900.0
    chromium_path: str = "/usr/bin/chromium"
    render_idle_timeout: float = 5.0
    save_dir: Path | None = None
    scrapyd_url: str | None = None
    scrapyd_project: str = "docscraper"
    ledger_class: str = MEMORY_LEDGER
    state_store_class: str = "docscraper.storage.state.SqlStateStore"
    vector_index_class: str = "docscraper.storage.vectors.ChromaIndex"
    embedder_class: str = "docscraper.storage.embedding.SentenceTransformerEmbedder"
    distributed_heartbeat: float = 0.5
    distributed_ttl: float = 10.0
    distributed_idle_grace: float = 2.0
    redirect_scope_enabled: bool = True
    ssrf_guard_enabled: bool = True
    ssrf_allowed_hosts: tuple[str, ...] = ()
    change_detection_enabled: bool = True
    parse_workers: int = 1
    query_onnx: bool = True
    crawl_onnx: bool = True
    contact: str | None = None
    changes_enabled: bool = True
    # a loader's crawl: the file descriptor its documents are streamed to (docscraper.crawl.stream); None: none
    stream_fd: int | None = None
    webhook_url: str | None = None
    webhook_on_abort: bool = False
    webhook_retries: int = 3
    webhook_backoff: float = 1.0
    webhook_timeout: float = 10.0
    server_allowed_folders: tuple[Path, ...] = ()
    server_allowed_hosts: tuple[str, ...] = ()
    server_credentials: tuple[str, ...] = ()
    secrets_dir: Path | None = None
    server_max_crawls: int = 2
    server_rate_limit: int = 120
    heartbeat_timeout: float = 60.0
    revisit_policy: str = "steps"
    revisit_intervals: tuple[float, ...] = (86400.0, 3 * 86400.0, 7 * 86400.0, 14 * 86400.0)
    revisit_min_interval: float = 3600.0
    revisit_max_interval: float = 14 * 86400.0
    revisit_error_base: float = 600.0
    revisit_grow: float = 1.4
    revisit_shrink: float = 0.8
    revisit_jitter: float = 0.1
    revisit_clock_offset: float = 0.0
    document_types: tuple[str, ...] = DOCUMENT_TYPES
    document_time_limit: float = 120.0
    document_max_pages: int = 5000
    document_max_unpacked: int = 200 * 1024 * 1024
    document_ocr: bool = False
    document_ocr_languages: str = "eng"

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DocscraperConfig:
        data_dir = Path(settings.get("DOCSCRAPER_DATA_DIR") or "data").expanduser()
        state_url = settings.get("DOCSCRAPER_STATE_URL") or f"sqlite:///{(data_dir / 'state.db').resolve()}"
        return cls(
            data_dir=data_dir,
            state_url=str(state_url),
            save_dir=save_dir_path("DOCSCRAPER_SAVE_DIR", settings.get("DOCSCRAPER_SAVE_DIR")),
            max_delete_ratio=_ratio(
                "DOCSCRAPER_MAX_DELETE_RATIO", settings.get("DOCSCRAPER_MAX_DELETE_RATIO", 0.5)
            ),
            force_delete=flag("DOCSCRAPER_FORCE_DELETE", settings.get("DOCSCRAPER_FORCE_DELETE", False)),
            gone_after=_positive_int("DOCSCRAPER_GONE_AFTER", settings.get("DOCSCRAPER_GONE_AFTER", 2)),
            sitemap_max_depth=_positive_int(
                "DOCSCRAPER_SITEMAP_MAX_DEPTH", settings.get("DOCSCRAPER_SITEMAP_MAX_DEPTH", 3)
            ),
            sitemap_max_urls=_positive_int(
                "DOCSCRAPER_SITEMAP_MAX_URLS", settings.get("DOCSCRAPER_SITEMAP_MAX_URLS", 50_000)
            ),
            sitemap_max_bytes=_positive_int(
                "DOCSCRAPER_SITEMAP_MAX_BYTES", settings.get("DOCSCRAPER_SITEMAP_MAX_BYTES", 50 * 1024 * 1024)
            ),
            sitemap_max_files=_positive_int(
                "DOCSCRAPER_SITEMAP_MAX_FILES", settings.get("DOCSCRAPER_SITEMAP_MAX_FILES", 500)
            ),
            discovery_llms=flag("DOCSCRAPER_DISCOVERY_LLMS", settings.get("DOCSCRAPER_DISCOVERY_LLMS", True)),
            discovery_sitemaps=flag(
                "DOCSCRAPER_DISCOVERY_SITEMAPS", settings.get("DOCSCRAPER_DISCOVERY_SITEMAPS", True)
            ),
            seen_flush_size=_positive_int(
                "DOCSCRAPER_SEEN_FLUSH_SIZE", settings.get("DOCSCRAPER_SEEN_FLUSH_SIZE", 200)
            ),
            index_enabled=flag("DOCSCRAPER_INDEX_ENABLED", settings.get("DOCSCRAPER_INDEX_ENABLED", True)),
            chroma_url=_chroma_url(settings.get("DOCSCRAPER_CHROMA_URL")),
            chroma_collection=_collection_name(settings.get("DOCSCRAPER_CHROMA_COLLECTION") or "docs"),
            chroma_telemetry=flag("DOCSCRAPER_CHROMA_TELEMETRY", settings.get("DOCSCRAPER_CHROMA_TELEMETRY", False)),
            embedding_model=str(settings.get("DOCSCRAPER_EMBEDDING_MODEL") or "bundled:all-MiniLM-L6-v2"),
            embedding_device=settings.get("DOCSCRAPER_EMBEDDING_DEVICE") or None,
            embedding_batch_size=(
                None if (batch := settings.get("DOCSCRAPER_EMBEDDING_BATCH_SIZE")) in (None, "")
                else _positive_int("DOCSCRAPER_EMBEDDING_BATCH_SIZE", batch)
            ),
            embedding_flush_seconds=_seconds(
                "DOCSCRAPER_EMBEDDING_FLUSH_SECONDS", settings.get("DOCSCRAPER_EMBEDDING_FLUSH_SECONDS", 0.2)
            ),
            chunk_target_tokens=_positive_int(
                "DOCSCRAPER_CHUNK_TARGET_TOKENS", settings.get("DOCSCRAPER_CHUNK_TARGET_TOKENS", 200)
            ),
            chunk_overlap_tokens=_positive_int(
                "DOCSCRAPER_CHUNK_OVERLAP_TOKENS", settings.get("DOCSCRAPER_CHUNK_OVERLAP_TOKENS", 32),
                allow_zero=True,
            ),
            chunk_min_tokens=_positive_int(
                "DOCSCRAPER_CHUNK_MIN_TOKENS", settings.get("DOCSCRAPER_CHUNK_MIN_TOKENS", 48), allow_zero=True
            ),
            ratelimit_enabled=flag(
                "DOCSCRAPER_RATELIMIT_ENABLED", settings.get("DOCSCRAPER_RATELIMIT_ENABLED", True)
            ),
            retry_after_max=_seconds(
                "DOCSCRAPER_RETRY_AFTER_MAX", settings.get("DOCSCRAPER_RETRY_AFTER_MAX", 300.0)
            ),
            max_consecutive_429=_positive_int(
                "DOCSCRAPER_MAX_CONSECUTIVE_429", settings.get("DOCSCRAPER_MAX_CONSECUTIVE_429", 3), allow_zero=True
            ),
            crawl_delay_max=_seconds(
                "DOCSCRAPER_CRAWL_DELAY_MAX", settings.get("DOCSCRAPER_CRAWL_DELAY_MAX", 60.0)
            ),
            progress_interval=_interval(
                "DOCSCRAPER_PROGRESS_INTERVAL", settings.get("DOCSCRAPER_PROGRESS_INTERVAL", 5.0)
            ),
            progress_line=_progress_line(settings.get("DOCSCRAPER_PROGRESS_LINE", "auto")),
            parse_workers=_parse_workers(settings.get("DOCSCRAPER_PARSE_WORKERS", "auto")),
            query_onnx=flag("DOCSCRAPER_QUERY_ONNX", settings.get("DOCSCRAPER_QUERY_ONNX", True)),
            crawl_onnx=flag("DOCSCRAPER_CRAWL_ONNX", settings.get("DOCSCRAPER_CRAWL_ONNX", True)),
            watchdog_seconds=_seconds(
                "DOCSCRAPER_WATCHDOG_SECONDS", settings.get("DOCSCRAPER_WATCHDOG_SECONDS", 900.0)
            ),
            chromium_path=str(settings.get("DOCSCRAPER_CHROMIUM_PATH") or "/usr/bin/chromium"),
            render_idle_timeout=_seconds(
                "DOCSCRAPER_RENDER_IDLE_TIMEOUT", settings.get("DOCSCRAPER_RENDER_IDLE_TIMEOUT", 5.0)
            ),
            scrapyd_url=_scrapyd_url(settings.get("DOCSCRAPER_SCRAPYD_URL")),
            search_keyword_weight=_number_between(
                "DOCSCRAPER_SEARCH_KEYWORD_WEIGHT", settings.get("DOCSCRAPER_SEARCH_KEYWORD_WEIGHT", 0.75), 0.0, 100.0
            ),
            scrapyd_project=_scrapyd_project(settings.get("DOCSCRAPER_SCRAPYD_PROJECT") or "docscraper"),
            ledger_class=_dotted("DOCSCRAPER_LEDGER_CLASS", settings.get("DOCSCRAPER_LEDGER_CLASS") or MEMORY_LEDGER),
            state_store_class=_dotted("DOCSCRAPER_STATE_STORE_CLASS",
                                      settings.get("DOCSCRAPER_STATE_STORE_CLASS") or cls.state_store_class),
            vector_index_class=_dotted("DOCSCRAPER_VECTOR_INDEX_CLASS",
                                       settings.get("DOCSCRAPER_VECTOR_INDEX_CLASS") or cls.vector_index_class),
            embedder_class=_dotted("DOCSCRAPER_EMBEDDER_CLASS",
                                   settings.get("DOCSCRAPER_EMBEDDER_CLASS") or cls.embedder_class),
            distributed_heartbeat=_interval(
                "DOCSCRAPER_DISTRIBUTED_HEARTBEAT", settings.get("DOCSCRAPER_DISTRIBUTED_HEARTBEAT", 0.5)
            ),
            distributed_ttl=_interval("DOCSCRAPER_DISTRIBUTED_TTL", settings.get("DOCSCRAPER_DISTRIBUTED_TTL", 10.0)),
            distributed_idle_grace=_seconds(
                "DOCSCRAPER_DISTRIBUTED_IDLE_GRACE", settings.get("DOCSCRAPER_DISTRIBUTED_IDLE_GRACE", 2.0)
            ),
            redirect_scope_enabled=flag(
                "DOCSCRAPER_REDIRECT_SCOPE_ENABLED", settings.get("DOCSCRAPER_REDIRECT_SCOPE_ENABLED", True)
            ),
            ssrf_guard_enabled=flag("DOCSCRAPER_SSRF_GUARD_ENABLED", settings.get("DOCSCRAPER_SSRF_GUARD_ENABLED", True)),
            ssrf_allowed_hosts=_entries(settings.get("DOCSCRAPER_SSRF_ALLOWED_HOSTS")),
            change_detection_enabled=flag(
                "DOCSCRAPER_CHANGE_DETECTION_ENABLED", settings.get("DOCSCRAPER_CHANGE_DETECTION_ENABLED", True)
            ),
            contact=contact(settings.get("DOCSCRAPER_CONTACT")),
            changes_enabled=flag("DOCSCRAPER_CHANGES_ENABLED", settings.get("DOCSCRAPER_CHANGES_ENABLED", True)),
            stream_fd=_stream_fd(settings.get("DOCSCRAPER_STREAM_FD")),
            webhook_url=_webhook_url(settings.get("DOCSCRAPER_WEBHOOK_URL")),
            webhook_on_abort=flag("DOCSCRAPER_WEBHOOK_ON_ABORT", settings.get("DOCSCRAPER_WEBHOOK_ON_ABORT", False)),
            webhook_retries=_positive_int(
                "DOCSCRAPER_WEBHOOK_RETRIES", settings.get("DOCSCRAPER_WEBHOOK_RETRIES", 3), allow_zero=True
            ),
            webhook_backoff=_seconds("DOCSCRAPER_WEBHOOK_BACKOFF", settings.get("DOCSCRAPER_WEBHOOK_BACKOFF", 1.0)),
            webhook_timeout=_interval(
                "DOCSCRAPER_WEBHOOK_TIMEOUT", settings.get("DOCSCRAPER_WEBHOOK_TIMEOUT", 10.0)
            ),
            server_allowed_folders=_folders(
                "DOCSCRAPER_SERVER_ALLOWED_FOLDERS", settings.get("DOCSCRAPER_SERVER_ALLOWED_FOLDERS")
            ),
            server_allowed_hosts=_entries(settings.get("DOCSCRAPER_SERVER_ALLOWED_HOSTS")),
            server_credentials=_references("DOCSCRAPER_SERVER_CREDENTIALS",
                                           settings.get("DOCSCRAPER_SERVER_CREDENTIALS")),
            secrets_dir=(Path(str(settings.get("DOCSCRAPER_SECRETS_DIR"))).expanduser()
                         if settings.get("DOCSCRAPER_SECRETS_DIR") else None),
            server_max_crawls=_positive_int(
                "DOCSCRAPER_SERVER_MAX_CRAWLS", settings.get("DOCSCRAPER_SERVER_MAX_CRAWLS", 2), allow_zero=True
            ),
            server_rate_limit=_positive_int(
                "DOCSCRAPER_SERVER_RATE_LIMIT", settings.get("DOCSCRAPER_SERVER_RATE_LIMIT", 120), allow_zero=True
            ),
            heartbeat_timeout=_interval(
                "DOCSCRAPER_HEARTBEAT_TIMEOUT", settings.get("DOCSCRAPER_HEARTBEAT_TIMEOUT", 60.0)
            ),
            **_revisit_settings(settings),
            **_document_settings(settings),
        )

    def user_agent(self, settings: BaseSettings) -> str:
        """The user agent to send: ``USER_AGENT`` when it is not docscraper's default, else
        :func:`user_agent` with ``DOCSCRAPER_CONTACT``."""
        configured = str(settings.get("USER_AGENT") or "")
        if not configured or configured == USER_AGENT or configured == user_agent(self.contact):
            return user_agent(self.contact)
        return configured

    @property
    def distributed(self) -> bool:
        """Whether the run is shared by several workers: decided by the ledger's implementation alone."""
        return self.ledger_class != MEMORY_LEDGER


def _revisit_settings(settings: BaseSettings) -> dict[str, Any]:
    """The revisit schedule's settings (:mod:`docscraper.crawl.schedule`)."""
    policy = str(settings.get("DOCSCRAPER_REVISIT_POLICY") or "steps").strip().lower()
    if policy not in _REVISIT_POLICIES:
        raise ConfigError(f"DOCSCRAPER_REVISIT_POLICY must be one of {', '.join(_REVISIT_POLICIES)}, got {policy!r}")
    intervals = _durations("DOCSCRAPER_REVISIT_INTERVALS",
                           settings.get("DOCSCRAPER_REVISIT_INTERVALS") or "1d,3d,7d,14d")
    low = duration("DOCSCRAPER_REVISIT_MIN_INTERVAL", settings.get("DOCSCRAPER_REVISIT_MIN_INTERVAL") or "1h")
    high = duration("DOCSCRAPER_REVISIT_MAX_INTERVAL",
                    settings.get("DOCSCRAPER_REVISIT_MAX_INTERVAL") or intervals[-1])
    if low > high:
        raise ConfigError("DOCSCRAPER_REVISIT_MIN_INTERVAL must not be longer than DOCSCRAPER_REVISIT_MAX_INTERVAL")
    return {
        "revisit_policy": policy,
        "revisit_intervals": tuple(min(step, high) for step in intervals),
        "revisit_min_interval": low,
        "revisit_max_interval": high,
        "revisit_error_base": duration("DOCSCRAPER_REVISIT_ERROR_BASE",
                                       settings.get("DOCSCRAPER_REVISIT_ERROR_BASE") or "10m"),
        "revisit_grow": _factor("DOCSCRAPER_REVISIT_GROW", settings.get("DOCSCRAPER_REVISIT_GROW") or 1.4,
                                above_one=True),
        "revisit_shrink": _factor("DOCSCRAPER_REVISIT_SHRINK", settings.get("DOCSCRAPER_REVISIT_SHRINK") or 0.8,
                                  above_one=False),
        "revisit_jitter": _number_between("DOCSCRAPER_REVISIT_JITTER",
                                          settings.get("DOCSCRAPER_REVISIT_JITTER", 0.1), 0.0, 0.5),
        "revisit_clock_offset": _seconds("DOCSCRAPER_REVISIT_CLOCK_OFFSET",
                                         settings.get("DOCSCRAPER_REVISIT_CLOCK_OFFSET") or 0),
    }


def _document_settings(settings: BaseSettings) -> dict[str, Any]:
    """Which documents are indexed and the bounds of their conversion (:mod:`docscraper.content.documents`)."""
    raw = settings.get("DOCSCRAPER_DOCUMENT_TYPES")
    types = _entries(",".join(DOCUMENT_TYPES) if raw is None else raw)
    unknown = [t for t in types if t.lower() not in DOCUMENT_TYPES and t.lower() != "none"]
    if unknown:
        raise ConfigError(f"DOCSCRAPER_DOCUMENT_TYPES: unknown type(s) {', '.join(unknown)}; choose from "
                          f"{', '.join(DOCUMENT_TYPES)} (or none)")
    languages = str(settings.get("DOCSCRAPER_DOCUMENT_OCR_LANGUAGES") or "eng").strip()
    if not re.fullmatch(r"[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*", languages):
        raise ConfigError(f"DOCSCRAPER_DOCUMENT_OCR_LANGUAGES: Tesseract language codes joined with +, such as "
                          f"eng or eng+deu; got {languages!r}")
    return {
        "document_types": tuple(t.lower() for t in types if t.lower() != "none"),
        "document_time_limit": _seconds("DOCSCRAPER_DOCUMENT_TIME_LIMIT",
                                        settings.get("DOCSCRAPER_DOCUMENT_TIME_LIMIT") or 120),
        "document_max_pages": _positive_int("DOCSCRAPER_DOCUMENT_MAX_PAGES",
                                            settings.get("DOCSCRAPER_DOCUMENT_MAX_PAGES") or 5000),
        "document_max_unpacked": _positive_int("DOCSCRAPER_DOCUMENT_MAX_UNPACKED",
                                               settings.get("DOCSCRAPER_DOCUMENT_MAX_UNPACKED") or 200 * 1024 * 1024),
        "document_ocr": flag("DOCSCRAPER_DOCUMENT_OCR", settings.get("DOCSCRAPER_DOCUMENT_OCR") or False),
        "document_ocr_languages": languages,
    }


def save_dir_path(name: str, value: Any) -> Path | None:
    """The Markdown mirror's folder (``-a save_dir`` / ``DOCSCRAPER_SAVE_DIR``): None when unset; an
    error when it names something that is not a folder."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if "\x00" in text:
        raise ConfigError(f"{name}: NUL in path {text!r}")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name} {text!r} is not a folder")
    return path


def file_source_url(source: str) -> str:
    """The canonical URL of a ``file://`` source: an absolute path, ``..`` resolved, percent-encoded as
    links to it are, with a final ``/`` when it is a folder (whatever its name looks like)."""
    parts = urlsplit(source)
    if parts.netloc not in ("", "localhost"):
        raise ConfigError(f"source {source!r}: write a local folder as file:///absolute/path/to/docs")
    raw = unquote_to_bytes(parts.path)
    if not raw.startswith(b"/") or b"\x00" in raw:
        raise ConfigError(f"source {source!r}: write a local folder as file:///absolute/path/to/docs")
    path = os.path.normpath(os.fsdecode(raw))
    if os.path.isdir(path):
        uri = Path(path).as_uri()
        return uri if uri.endswith("/") else uri + "/"
    if os.path.isfile(path):
        return Path(path).as_uri()
    raise ConfigError(f"source {source!r}: no such folder {path}")


_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _run_id(value: Any) -> str | None:
    """A distributed run's shared id (``-a run=``): letters, digits, ``.``, ``_``, ``-``."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if not _RUN_ID.match(text):
        raise ConfigError(f"run must be letters, digits, ., _ or - (at most 64), got {value!r}")
    return text

def _no_credentials(url: str, what: str) -> None:
    try:
        check_no_credentials(url, what)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


#: The spider arguments that name a private source's credentials (:mod:`docscraper.credentials`).
CREDENTIAL_ARGS = {f"auth_{kind}": kind for kind in CREDENTIAL_KINDS}

def _references(name: str, value: Any) -> tuple[str, ...]:
    """Credential references in a setting (a list, or a comma-separated string), in canonical form."""
    try:
        return tuple(dict.fromkeys(parse_reference(entry, name) for entry in _entries(value)))
    except CredentialError as exc:
        raise ConfigError(str(exc)) from None


_KNOWN_ARGS = {
    "source", "allow", "block", "max_depth", "max_pages", "llms_txt", "full", "due", "save_dir", "render", "run",
    *CREDENTIAL_ARGS,
}
# Scrapyd passes every job's id as a spider argument (-a _job=<id>).
_SCRAPYD_JOB_ARG = "_job"

#: How a source's pages are fetched: ``js`` renders them in Chromium, ``none`` fetches the HTML only.
RENDER_MODES = ("js", "none")


def render_mode(name: str, value: Any) -> str | None:
    """A render mode (:data:`RENDER_MODES`), or None when unset."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip().lower()
    if text not in RENDER_MODES:
        raise ConfigError(f"{name} must be js (render pages in Chromium) or none, got {value!r}")
    return text


@dataclass(frozen=True)
class CrawlArgs:
    """The ``docs`` spider's arguments.

    ``source`` (required) is an http(s) URL, a ``file://`` URL, or a registered source's name.
    ``allow``/``block`` are comma-separated globs over URL paths (``!pattern`` in ``allow`` blocks).
    ``max_depth``/``max_pages`` are whole numbers (``max_depth=0`` crawls the source page only).
    ``llms_txt`` is the URL of an llms.txt that auto-detection cannot find. ``full=1`` processes every
    page as changed. ``due=1`` checks only the pages that are due (:mod:`docscraper.crawl.schedule`): new pages,
    pages whose sitemap ``<lastmod>`` moved, and known pages whose next check has come. ``save_dir`` is the folder of the Markdown mirror (:mod:`docscraper.storage.mirror`; it wins
    over ``DOCSCRAPER_SAVE_DIR``). A ``file://`` source must exist; it is rewritten to its canonical URL
    (:func:`file_source_url`). ``render=js`` renders the pages in Chromium for this run (http(s) pages
    only: with a ``file://`` source it is an error), ``render=none`` fetches their HTML only (the
    source's stored ``render`` otherwise; :mod:`docscraper.crawl.rendering`).
    ``_job`` is the id Scrapyd gives a job it runs (``scrapyd_job``, in the report as ``scrapydJob``).
    ``run`` is the run id shared by the workers of a distributed run (``settings.distributed`` only).
    ``auth_headers``, ``auth_basic``, ``auth_cookies`` name where a private source's credentials are kept
    (``env:NAME`` or ``file:NAME``; :mod:`docscraper.credentials`): for this run, and stored with a source this
    crawl of a URL creates; never the values.
    """

    source: str
    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None
    llms_txt: str | None = None
    full: bool = False
    due: bool = False
    overrides: frozenset[str] = field(default_factory=frozenset)
    save_dir: Path | None = None
    render: str | None = None
    scrapyd_job: str | None = None
    run: str | None = None
    credentials: CredentialRefs = field(default_factory=CredentialRefs)

    @property
    def is_url(self) -> bool:
        return "://" in self.source

    @classmethod
    def parse(cls, kwargs: Mapping[str, Any]) -> CrawlArgs:
        unknown = sorted(set(kwargs) - _KNOWN_ARGS - {_SCRAPYD_JOB_ARG})
        if unknown:
            raise ConfigError(
                f"unknown argument(s) {', '.join(unknown)}; the docs spider takes "
                f"{', '.join(sorted(_KNOWN_ARGS))}"
            )
        source = str(kwargs.get("source") or "").strip()
        if not source:
            raise ConfigError("missing source: run scrapy crawl docs -a source=https://docs.example.com/")
        if "://" in source:
            _no_credentials(source, "source")
            parts = urlsplit(source)
            try:
                parts.port  # noqa: B018 - validates the port
            except ValueError:
                raise ConfigError(f"source {source!r} has an invalid port") from None
            if parts.scheme.lower() not in ("http", "https", "file"):
                raise ConfigError(f"source {source!r}: only http, https and file URLs are supported")
            if parts.scheme.lower() != "file" and not parts.hostname:
                raise ConfigError(f"source {source!r} has no host")
            if parts.scheme.lower() == "file":
                source = file_source_url(source)
        elif not _SOURCE_NAME.match(source):
            raise ConfigError(
                f"source {source!r} is neither a URL (https://...) nor a valid source name "
                "(lowercase letters, digits, '.', '_', '-')"
            )
        llms_txt = kwargs.get("llms_txt")
        if llms_txt is not None:
            llms_txt = str(llms_txt).strip()
            _no_credentials(llms_txt, "llms_txt")
            if urlsplit(llms_txt).scheme.lower() not in ("http", "https", "file"):
                raise ConfigError(f"llms_txt must be an http(s) or file URL, got {llms_txt!r}")
        render = render_mode("render", kwargs.get("render"))
        if render == "js" and source.startswith("file:"):
            # Chromium renders http(s) pages only (docscraper.crawl.rendering.renders_url)
            raise ConfigError("render=js renders http(s) pages only, not a folder's files: serve the folder "
                              "(python3 -m http.server) and crawl its URL with -a render=js")
        max_depth = kwargs.get("max_depth")
        max_pages = kwargs.get("max_pages")
        full = flag("full", kwargs.get("full", False))
        due = flag("due", kwargs.get("due", False))
        if full and due:
            raise ConfigError("full=1 re-processes every page and due=1 checks only the pages that are due: "
                              "pass one of them")
        overrides = frozenset(
            k for k in ("allow", "block", "max_depth", "max_pages", "llms_txt") if kwargs.get(k) is not None
        )
        try:
            credentials = CredentialRefs.parse({kind: kwargs.get(arg) for arg, kind in CREDENTIAL_ARGS.items()})
        except CredentialError as exc:
            raise ConfigError(str(exc)) from None
        if credentials and source.startswith("file:"):
            raise ConfigError("auth_* credentials apply to http(s) sources, not to a folder's files")
        return cls(
            source=source,
            allow=parse_globs("allow", kwargs.get("allow")),
            block=parse_globs("block", kwargs.get("block")),
            max_depth=None if max_depth is None else _positive_int("max_depth", max_depth, allow_zero=True),
            max_pages=None if max_pages is None else _positive_int("max_pages", max_pages),
            llms_txt=llms_txt,
            full=full,
            due=due,
            overrides=overrides,
            save_dir=save_dir_path("save_dir", kwargs.get("save_dir")),
            render=render,
            scrapyd_job=str(kwargs[_SCRAPYD_JOB_ARG]) if kwargs.get(_SCRAPYD_JOB_ARG) else None,
            run=_run_id(kwargs.get("run")),
            credentials=credentials,
        )
