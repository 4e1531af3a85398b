"""Settings and spider arguments, parsed once into frozen, validated objects.

Everything docscraper reads from Scrapy settings is namespaced ``DOCSCRAPER_*`` and parsed here, once,
by :meth:`DocscraperConfig.from_settings`. Spider arguments (``-a source=... -a allow=...``) are parsed
by :meth:`CrawlArgs.parse`. Both raise :class:`ConfigError` with one sentence that says what is wrong,
before anything is fetched or stored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import BaseSettings

__all__ = ["ConfigError", "CrawlArgs", "DocscraperConfig", "parse_globs"]

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A setting or spider argument is wrong; the message is one line meant for the user."""


def _positive_int(name: str, value: Any, *, allow_zero: bool = False) -> int:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None
    if number < 0 or (number == 0 and not allow_zero):
        low = "0 or more" if allow_zero else "1 or more"
        raise ConfigError(f"{name} must be {low}, got {number}")
    return number


def _ratio(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{name} must be between 0 and 1, got {number}")
    return number


def _flag(name: str, value: Any) -> bool:
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


def _chroma_url(value: Any) -> str | None:
    if not value:
        return None
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"DOCSCRAPER_CHROMA_URL must be http(s)://host:port, got {text!r}")
    return text


def _collection_name(value: Any) -> str:
    text = str(value).strip()
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$", text):
        raise ConfigError(f"DOCSCRAPER_CHROMA_COLLECTION {text!r}: 3-63 letters, digits, '.', '_' or '-'")
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

    The vector index: ``DOCSCRAPER_INDEX_ENABLED`` (on), ``DOCSCRAPER_CHROMA_URL`` (a Chroma server;
    default: a persistent directory at ``DATA_DIR/chroma``), ``DOCSCRAPER_CHROMA_COLLECTION`` (``docs``),
    ``DOCSCRAPER_CHROMA_TELEMETRY`` (off), ``DOCSCRAPER_EMBEDDING_MODEL`` (the bundled all-MiniLM-L6-v2),
    ``DOCSCRAPER_EMBEDDING_DEVICE`` (cuda when present, else cpu), ``DOCSCRAPER_EMBEDDING_BATCH_SIZE`` (64
    texts), ``DOCSCRAPER_EMBEDDING_FLUSH_SECONDS`` (0.2: a partial batch waits at most this long),
    ``DOCSCRAPER_CHUNK_TARGET_TOKENS`` (200), ``DOCSCRAPER_CHUNK_OVERLAP_TOKENS`` (32),
    ``DOCSCRAPER_CHUNK_MIN_TOKENS`` (48).
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
    embedding_batch_size: int = 64
    embedding_flush_seconds: float = 0.2
    chunk_target_tokens: int = 200
    chunk_overlap_tokens: int = 32
    chunk_min_tokens: int = 48

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
            max_delete_ratio=_ratio(
                "DOCSCRAPER_MAX_DELETE_RATIO", settings.get("DOCSCRAPER_MAX_DELETE_RATIO", 0.5)
            ),
            force_delete=_flag("DOCSCRAPER_FORCE_DELETE", settings.get("DOCSCRAPER_FORCE_DELETE", False)),
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
            discovery_llms=_flag("DOCSCRAPER_DISCOVERY_LLMS", settings.get("DOCSCRAPER_DISCOVERY_LLMS", True)),
            discovery_sitemaps=_flag(
                "DOCSCRAPER_DISCOVERY_SITEMAPS", settings.get("DOCSCRAPER_DISCOVERY_SITEMAPS", True)
            ),
            seen_flush_size=_positive_int(
                "DOCSCRAPER_SEEN_FLUSH_SIZE", settings.get("DOCSCRAPER_SEEN_FLUSH_SIZE", 200)
            ),
            index_enabled=_flag("DOCSCRAPER_INDEX_ENABLED", settings.get("DOCSCRAPER_INDEX_ENABLED", True)),
            chroma_url=_chroma_url(settings.get("DOCSCRAPER_CHROMA_URL")),
            chroma_collection=_collection_name(settings.get("DOCSCRAPER_CHROMA_COLLECTION") or "docs"),
            chroma_telemetry=_flag("DOCSCRAPER_CHROMA_TELEMETRY", settings.get("DOCSCRAPER_CHROMA_TELEMETRY", False)),
            embedding_model=str(settings.get("DOCSCRAPER_EMBEDDING_MODEL") or "bundled:all-MiniLM-L6-v2"),
            embedding_device=settings.get("DOCSCRAPER_EMBEDDING_DEVICE") or None,
            embedding_batch_size=_positive_int(
                "DOCSCRAPER_EMBEDDING_BATCH_SIZE", settings.get("DOCSCRAPER_EMBEDDING_BATCH_SIZE", 64)
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
        )


_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

_KNOWN_ARGS = {"source", "allow", "block", "max_depth", "max_pages", "llms_txt", "full"}


@dataclass(frozen=True)
class CrawlArgs:
    """The ``docs`` spider's arguments.

    ``source`` (required) is an http(s) URL, a ``file://`` URL, or a registered source's name.
    ``allow``/``block`` are comma-separated globs over URL paths (``!pattern`` in ``allow`` blocks).
    ``max_depth``/``max_pages`` are whole numbers (``max_depth=0`` crawls the source page only).
    ``llms_txt`` is the URL of an llms.txt that auto-detection cannot find. ``full=1`` processes every
    page as changed.
    """

    source: str
    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None
    llms_txt: str | None = None
    full: bool = False
    overrides: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_url(self) -> bool:
        return "://" in self.source

    @classmethod
    def parse(cls, kwargs: Mapping[str, Any]) -> CrawlArgs:
        unknown = sorted(set(kwargs) - _KNOWN_ARGS)
        if unknown:
            raise ConfigError(
                f"unknown argument(s) {', '.join(unknown)}; the docs spider takes "
                f"{', '.join(sorted(_KNOWN_ARGS))}"
            )
        source = str(kwargs.get("source") or "").strip()
        if not source:
            raise ConfigError("missing source: run scrapy crawl docs -a source=https://docs.example.com/")
        if "://" in source:
            parts = urlsplit(source)
            try:
                parts.port  # noqa: B018 - validates the port
            except ValueError:
                raise ConfigError(f"source {source!r} has an invalid port") from None
            if parts.scheme.lower() not in ("http", "https", "file"):
                raise ConfigError(f"source {source!r}: only http, https and file URLs are supported")
            if parts.scheme.lower() != "file" and not parts.hostname:
                raise ConfigError(f"source {source!r} has no host")
        elif not _SOURCE_NAME.match(source):
            raise ConfigError(
                f"source {source!r} is neither a URL (https://...) nor a valid source name "
                "(lowercase letters, digits, '.', '_', '-')"
            )
        llms_txt = kwargs.get("llms_txt")
        if llms_txt is not None:
            llms_txt = str(llms_txt).strip()
            if urlsplit(llms_txt).scheme.lower() not in ("http", "https", "file"):
                raise ConfigError(f"llms_txt must be an http(s) or file URL, got {llms_txt!r}")
        max_depth = kwargs.get("max_depth")
        max_pages = kwargs.get("max_pages")
        overrides = frozenset(
            k for k in ("allow", "block", "max_depth", "max_pages", "llms_txt") if kwargs.get(k) is not None
        )
        return cls(
            source=source,
            allow=parse_globs("allow", kwargs.get("allow")),
            block=parse_globs("block", kwargs.get("block")),
            max_depth=None if max_depth is None else _positive_int("max_depth", max_depth, allow_zero=True),
            max_pages=None if max_pages is None else _positive_int("max_pages", max_pages),
            llms_txt=llms_txt,
            full=_flag("full", kwargs.get("full", False)),
            overrides=overrides,
        )
