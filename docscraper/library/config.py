"""What a :class:`~docscraper.library.loader.WebCrawlerLoader` crawls, and how politely.

:class:`CrawlerConfig` is a frozen dataclass checked when it is made: a wrong value is a
:class:`~docscraper.config.ConfigError` (a ``ValueError``) that says what is wrong, before anything is fetched.
It maps onto the ``docs`` spider's arguments and Scrapy's settings (:meth:`CrawlerConfig.spider_args`,
:meth:`CrawlerConfig.settings`), so a loader crawls exactly as ``scrapy crawl docs`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docscraper.config import ConfigError, parse_globs, render_mode
from docscraper.credentials import CREDENTIAL_KINDS, CredentialError, parse_reference

__all__ = ["CrawlerConfig"]


def _globs(name: str, value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    # a string may hold several comma-separated patterns, as -a allow= does
    return parse_globs(name, [p for item in items for p in str(item).split(",")])


def _whole(name: str, value: Any, low: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name} must be a whole number of {low} or more, got {value!r}")
    return value


def _seconds(name: str, value: Any, *, zero: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{name} must be a number of seconds{'' if zero else ' above 0'}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class CrawlerConfig:
    """How a loader crawls. Every field is optional; None keeps the project's setting.

    - ``max_depth``: link depth (the seed is 0; llms.txt and sitemap pages 1; a link on a page at depth d is
      d+1); ``max_pages``: at most this many pages per seed;
    - ``follow`` / ``exclude``: globs over the URL path, relative to the seed's folder (``guide/**``) or
      absolute (``/docs/guide/**``), with the crawl's own rules (``-a allow`` / ``-a block``: ``*`` stays in a
      folder, ``**`` crosses folders, ``!pattern`` in ``follow`` excludes); a string may hold several,
      comma-separated;
    - ``respect_robots_txt`` (``ROBOTSTXT_OBEY``, default on), ``delay`` (``DOWNLOAD_DELAY``: at least this many
      seconds between two requests to a host), ``timeout`` (``DOWNLOAD_TIMEOUT``, seconds), ``user_agent``
      (``USER_AGENT``; default ``docscraper/<version> (+DOCSCRAPER_CONTACT)``);
    - ``render``: ``"js"`` renders pages in Chromium, ``"none"`` fetches their HTML only;
    - ``due``: an incremental loader checks only the pages that are due (new pages, pages whose sitemap
      ``<lastmod>`` moved, known pages whose revisit schedule says so; ``-a due=1``); the others are not fetched
      and yield nothing new;
    - ``auth_headers``, ``auth_basic``, ``auth_cookies``: where a private site's credentials are kept
      (``env:NAME`` or ``file:NAME``, :mod:`docscraper.credentials`): the child crawl reads them from its
      environment (or the secrets folder); they are sent to the seed's origin only and never stored;
    - ``data_dir``: the data directory (``DOCSCRAPER_DATA_DIR``): where an incremental loader keeps its state
      database, index and reports; a non-incremental loader keeps only its run reports and change feeds there
      (its state is temporary). None: the project's (``./data``) for an incremental loader, a temporary folder
      otherwise.
    """

    max_depth: int | None = None
    max_pages: int | None = None
    follow: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_robots_txt: bool = True
    delay: float | None = None
    timeout: float | None = None
    user_agent: str | None = None
    render: str | None = None
    data_dir: Path | None = None
    due: bool = False
    auth_headers: str | None = None
    auth_basic: str | None = None
    auth_cookies: str | None = None

    def __post_init__(self) -> None:
        check: dict[str, Any] = {
            "max_depth": _whole("max_depth", self.max_depth, 0),
            "max_pages": _whole("max_pages", self.max_pages, 1),
            "follow": _globs("follow", self.follow),
            "exclude": _globs("exclude", self.exclude),
            "delay": _seconds("delay", self.delay, zero=True),
            "timeout": _seconds("timeout", self.timeout, zero=False),
            "render": render_mode("render", self.render),
            "data_dir": Path(self.data_dir).expanduser() if self.data_dir is not None else None,
        }
        for kind in CREDENTIAL_KINDS:
            value = getattr(self, f"auth_{kind}")
            try:
                check[f"auth_{kind}"] = parse_reference(value, f"auth_{kind}") if value is not None else None
            except CredentialError as exc:
                raise ConfigError(str(exc)) from None
        if not isinstance(self.due, bool):
            raise ConfigError(f"due must be True or False, got {self.due!r}")
        if not isinstance(self.respect_robots_txt, bool):
            raise ConfigError(f"respect_robots_txt must be True or False, got {self.respect_robots_txt!r}")
        if self.user_agent is not None and (not str(self.user_agent).strip() or not str(self.user_agent).isprintable()):
            raise ConfigError(f"user_agent must be printable text, got {self.user_agent!r}")
        for name, value in check.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> CrawlerConfig:
        """A copy with *changes* (checked again)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ConfigError(f"unknown crawler option(s) {', '.join(unknown)}; CrawlerConfig takes "
                              f"{', '.join(f.name for f in dataclasses.fields(self))}")
        return dataclasses.replace(self, **changes)

    def spider_args(self) -> dict[str, str]:
        """The ``docs`` spider's arguments (``-a``) this configuration sets."""
        args: dict[str, str] = {}
        if self.max_depth is not None:
            args["max_depth"] = str(self.max_depth)
        if self.max_pages is not None:
            args["max_pages"] = str(self.max_pages)
        if self.follow:
            args["allow"] = ",".join(self.follow)
        if self.exclude:
            args["block"] = ",".join(self.exclude)
        if self.render is not None:
            args["render"] = self.render
        if self.due:
            args["due"] = "1"
        for kind in CREDENTIAL_KINDS:
            ref = getattr(self, f"auth_{kind}")
            if ref is not None:
                args[f"auth_{kind}"] = ref  # a name: the child reads the value from its environment
        return args

    def settings(self) -> dict[str, str]:
        """The Scrapy settings (``-s``) this configuration sets."""
        settings = {"ROBOTSTXT_OBEY": "1" if self.respect_robots_txt else "0"}
        if self.delay is not None:
            settings["DOWNLOAD_DELAY"] = repr(self.delay)
        if self.timeout is not None:
            settings["DOWNLOAD_TIMEOUT"] = repr(self.timeout)
        if self.user_agent is not None:
            settings["USER_AGENT"] = self.user_agent
        if self.data_dir is not None:
            settings["DOCSCRAPER_DATA_DIR"] = str(self.data_dir.resolve())
        return settings
