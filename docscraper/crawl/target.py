"""What a run crawls: its source, seed, scope, render mode and the pages the state database knows.

:func:`open_target` resolves the spider's arguments against the state store once, when the run opens (a
URL registers its source on first use; a name must be registered), and returns a frozen
:class:`CrawlTarget` that the crawl's components read and never change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from docscraper.config import RENDER_MODES, CrawlArgs
from docscraper.crawl.scope import Scope
from docscraper.credentials import CredentialError, CredentialRefs
from docscraper.storage.state import PageRecord, SourceRecord, StateStore
from docscraper.urls import normalize_url, page_id, scope_prefix

__all__ = ["CrawlTarget", "open_target", "remember_credentials", "source_name_for_url", "stored_credentials"]

logger = logging.getLogger(__name__)


def source_name_for_url(url: str) -> str:
    """A source name derived from its URL: host, port and path as a slug (``docs.example.com-en``);
    ``local-<folder name>`` for a ``file://`` folder (a clash with another folder's name is settled by
    :func:`open_target` with a hash)."""
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


@dataclass(frozen=True)
class CrawlTarget:
    """The run's source as it opened (see the module docstring)."""

    source: SourceRecord
    args: CrawlArgs               # the spider's arguments, ``llms_txt`` filled in from the source when registered
    seed_url: str
    scope: Scope                  # the stored scope with this run's one-time overrides
    stored_scope: Scope
    render: str                   # js | none
    run_id: str
    started_at: datetime
    known: Mapping[str, PageRecord]
    known_by_fetch: Mapping[str, PageRecord]
    # where the source's credentials are kept (stored with the source, this run's -a auth_* over them)
    credentials: CredentialRefs = dataclasses.field(default_factory=CredentialRefs)

    @property
    def is_local(self) -> bool:
        """Whether the source is a ``file://`` folder (:mod:`docscraper.crawl.localfiles`)."""
        return urlsplit(self.seed_url or self.scope.prefix).scheme == "file"

    def key(self, url: str) -> str:
        """The report's key of *url*."""
        return self.scope.key(url)

    def with_known(self, known: Mapping[str, PageRecord]) -> CrawlTarget:
        """The same target with the state's pages read again."""
        return dataclasses.replace(self, known=known, known_by_fetch={page_id(rec.url): rec for rec in known.values()})

    def lookup(self, pid: str) -> PageRecord | None:
        """What the state holds for the page a request's URL stands for (by id, or by fetched URL)."""
        return self.known.get(pid) or self.known_by_fetch.get(pid)

    @property
    def narrowed(self) -> bool:
        """Whether this run narrowed the source's scope with one-time overrides."""
        return self.scope.narrower_than(self.stored_scope)

    def args_dict(self) -> dict[str, Any]:
        """The spider's arguments as the run's row in the state database records them."""
        a = self.args
        return {
            "source": a.source,
            "allow": list(a.allow),
            "block": list(a.block),
            "max_depth": a.max_depth,
            "max_pages": a.max_pages,
            "llms_txt": a.llms_txt,
            "full": a.full,
            "due": a.due,
            "save_dir": str(a.save_dir) if a.save_dir else None,
            "render": a.render,
            "auth": a.credentials.as_dict() or None,
        }


def _scope_from_args(args: CrawlArgs, base: Scope | None = None) -> Scope:
    prefix = base.prefix if base else Scope.for_source(args.source).prefix
    return Scope(
        prefix,
        args.allow if "allow" in args.overrides else (base.allow if base else ()),
        args.block if "block" in args.overrides else (base.block if base else ()),
        args.max_depth if "max_depth" in args.overrides else (base.max_depth if base else None),
        args.max_pages if "max_pages" in args.overrides else (base.max_pages if base else None),
    )


def _scope_from_record(source: SourceRecord) -> Scope:
    s = source.scope
    return Scope(
        str(s.get("prefix") or Scope.for_source(source.url).prefix),
        tuple(s.get("allow") or ()),
        tuple(s.get("block") or ()),
        s.get("max_depth"),
        s.get("max_pages"),
    )


def _seed_of(source: SourceRecord) -> str:
    """The URL a source by name is crawled from: as registered (``scope.seed``), else its stored URL, in its
    folder form when it is the scope's folder (``/docs`` is stored for ``/docs/``: asking for ``/docs`` would
    cost a redirect and record one)."""
    seed = source.scope.get("seed")
    if seed:
        return str(seed)
    prefix = str(source.scope.get("prefix") or Scope.for_source(source.url).prefix)
    with contextlib.suppress(ValueError):
        if normalize_url(prefix) == source.url:
            return prefix
    return source.url


def _render_mode(args: CrawlArgs, source: SourceRecord) -> str:
    """``-a render`` for this run, else the source's stored ``render`` (``scrapy sources add``)."""
    if args.render:
        return args.render
    stored = str(source.scope.get("render") or "none").strip().lower()
    if stored not in RENDER_MODES:
        logger.warning("Source %s: unknown stored render %r; not rendering", source.name, stored)
        return "none"
    return stored


def stored_credentials(source: SourceRecord) -> CredentialRefs:
    """The credential references a source stores (``scope["auth"]``: names, never values)."""
    auth = source.scope.get("auth")
    if not auth:
        return CredentialRefs()
    try:
        return CredentialRefs.parse(dict(auth))
    except (CredentialError, TypeError, ValueError) as exc:
        raise CredentialError(f"source {source.name}: stored credentials are malformed ({exc})") from None


def remember_credentials(store: StateStore, target: CrawlTarget) -> CrawlTarget:
    """Store this run's ``-a auth_*`` references with a source that has none yet (a source a crawl of its URL
    created), once they were read and accepted: later runs by name or URL use them. Blocking."""
    if not target.args.credentials or target.source.scope.get("auth"):
        return target
    scope = {**target.source.scope, "auth": target.args.credentials.as_dict()}  # references, never values
    return dataclasses.replace(target, source=store.update_source(target.source.id, scope=scope))


def open_target(store: StateStore, args: CrawlArgs, run_id: str, started_at: datetime) -> CrawlTarget:
    """Resolve the run's source in the state store (blocking: call it off the reactor thread).

    Raises :class:`LookupError` for a source name that is not registered."""
    if args.is_url:
        seed = args.source
        stored = store.find_source_by_url(normalize_url(seed))
        if stored is None:
            name = source_name_for_url(seed)
            clash = store.get_source(name)
            if clash is not None and clash.url != normalize_url(seed):
                name = name[:55] + "-" + hashlib.sha256(normalize_url(seed).encode()).hexdigest()[:8]
            stored = store.ensure_source(name, normalize_url(seed), _scope_from_args(args).as_dict())
    else:
        stored = store.get_source(args.source)
        if stored is None:
            raise LookupError(f"unknown source {args.source!r}: pass a URL (-a source=https://...) or register it first")
        seed = _seed_of(stored)
    if "llms_txt" not in args.overrides and stored.scope.get("llms_txt"):
        # registered with `scrapy sources add --llms-txt URL`
        args = dataclasses.replace(args, llms_txt=str(stored.scope["llms_txt"]))
    stored_scope = _scope_from_record(stored)
    known = store.load_pages(stored.id)
    return CrawlTarget(
        source=stored,
        args=args,
        seed_url=seed,
        scope=_scope_from_args(args, base=stored_scope),
        stored_scope=stored_scope,
        render=_render_mode(args, stored),
        run_id=run_id,
        started_at=started_at,
        known=known,
        # A page stored under its canonical URL is requested under the URL that was fetched.
        known_by_fetch={page_id(rec.url): rec for rec in known.values()},
        credentials=stored_credentials(stored).merged(args.credentials),
    )
