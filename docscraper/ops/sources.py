"""Registered sources: add one (after probing its site), list, show, remove, and mark pages for reindexing.

The Python API behind ``scrapy sources``, ``scrapy reindex`` and ``scrapy recrawl``, which other front ends (the MCP
server) call too. Every function takes a :class:`~docscraper.config.DocscraperConfig`, opens what it needs and closes
it before returning. Errors a user can act on raise :class:`SourceError`, whose text is one sentence meant for them;
bad input (a name, a URL, a glob, a number) raises its subclass :class:`SourceArgumentError`. A source is a name, a
seed URL (stored normalized: one source per URL) and a scope (``prefix``, ``allow``, ``block``, ``max_depth``,
``max_pages``, ``seed``; ``llms_txt`` and ``render`` when registered with them), which ``-a`` arguments override for
one run, never stored. :func:`add_source` adopts a source that a crawl of its URL created, keeping its pages and
vectors. Stored state changes in the order of DESIGN rule 1, Chroma first and the state database last, so repeating
an interrupted command finishes it. Adoption step by step: docs/explanation/operations.md.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import logging
import os
import re
import shutil
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from protego import Protego
from wcmatch import glob

from docscraper import USER_AGENT
from docscraper.config import ConfigError, DocscraperConfig, parse_globs, render_mode
from docscraper.content.discovery import (
    SitemapWalk,
    is_plain_text_file,
    llms_candidates,
    parse_llms_txt,
    parse_sitemap,
    sitemaps_from_robots,
)
from docscraper.content.documents import KINDS, count_types
from docscraper.crawl.recrawls import parse_schedule
from docscraper.crawl.schedule import RevisitPolicy, schedule_view
from docscraper.crawl.scope import Scope
from docscraper.crawl.target import stored_credentials
from docscraper.credentials import CredentialError, CredentialRefs, Credentials, load_credentials
from docscraper.secrets import check_no_credentials, redact_logs, redact_url
from docscraper.storage.backends import open_state_store, open_vector_index
from docscraper.storage.libraries import SourceVersions, check_library, check_version, version_from_url
from docscraper.storage.runs import SourceBusy, hold_source, running_runs
from docscraper.storage.state import (
    PageRecord,
    RunRecord,
    SourceRecord,
    SourceSummary,
    StateError,
    StateStore,
    database_exists,
    iso_utc,
    utcnow,
)
from docscraper.urls import normalize_url

if TYPE_CHECKING:
    from docscraper.storage.vectors import VectorIndex

__all__ = [
    "ProbeGuard",
    "ProbeResult",
    "SourceArgumentError",
    "SourceError",
    "SourceInfo",
    "add_source",
    "get_source_info",
    "list_libraries",
    "list_sources",
    "page_types",
    "probe_site",
    "remove_source",
    "request_reindex",
    "update_source",
    "validate_name",
]

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_GLOB_FLAGS = glob.GLOBSTAR | glob.DOTGLOB
# What one probe reads at most: a body, and sitemap files (indexes included).
_MAX_BODY = 20 * 1024 * 1024
_MAX_SITEMAP_FILES = 50
_MAX_SITEMAP_DEPTH = 3


class SourceError(Exception):
    """A source operation cannot be done; ``str(exc)`` says why, for the user. ``exit_code`` is what a
    command exits with: 1 (state, network, conflicts)."""

    exit_code = 1


class SourceArgumentError(SourceError):
    """Bad input (a name, URL, glob or number): exit status 2."""

    exit_code = 2


# -- results -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeResult:
    """What a one-shot look at a site found.

    ``status`` is the HTTP status of the URL itself (None: unreachable); ``llms_txt``/``llms_full_txt``
    the URLs where they were found; ``sitemaps`` the sitemap files read (indexes included) and
    ``sitemap_urls`` the distinct page URLs they list (``sitemap_urls_in_prefix`` of them under the
    URL's folder); ``robots`` what robots.txt said (``url``,
    ``status``, ``outcome`` as RFC 9309 reads it: ``parsed``, ``unavailable`` or ``unreachable``, the
    ``disallow``/``allow`` rules of the group that applies to docscraper, ``sitemaps``, ``crawl_delay``,
    ``seed_allowed``); ``problems`` what a crawl would trip over; ``llms_links`` the links in llms.txt;
    ``notes`` what else was found (for a ``file://`` folder: how many files a crawl could index there).
    """

    url: str
    status: int | None
    llms_txt: str | None
    llms_full_txt: str | None
    sitemaps: list[str]
    sitemap_urls: int
    robots: dict[str, Any]
    problems: list[str]
    llms_links: int = 0
    sitemap_urls_in_prefix: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SourceInfo:
    """A source as users see it: ``pages`` (active) and ``chunks`` as the state recorded them, and its
    latest run (``run_id``, ``started_at``, ``finished_at``, ``result``, ``close_reason``, ``report_path``,
    ``stats``), None when it was never crawled."""

    name: str
    url: str
    scope: dict[str, Any]
    registered: bool
    pages: int
    chunks: int
    last_run: dict[str, Any] | None
    # revisit schedules (docscraper.crawl.schedule.schedule_view): scheduled, due_now, next_due_at, lastmod_trusted
    schedule: dict[str, Any] | None = None
    # active pages by document type (html, markdown, text, pdf, docx, ipynb, epub, rst, other)
    types: dict[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- validation --------------------------------------------------------------------------------------


def validate_name(name: str) -> str:
    """*name*, when it is a valid source name; :class:`SourceArgumentError` saying why not."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise SourceArgumentError(
            f"invalid source name {name!r}: 1 to 64 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _check_url(url: str, what: str = "URL") -> str:
    text = str(url or "").strip()
    shown = redact_url(text)
    try:
        check_no_credentials(text, what)
    except ValueError as exc:
        raise SourceArgumentError(str(exc)) from None
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise SourceArgumentError(f"{what} {shown!r} is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https", "file"):
        raise SourceArgumentError(f"{what} {shown!r}: give an http(s) URL (https://docs.example.com/)")
    if parts.scheme.lower() != "file" and not parts.hostname:
        raise SourceArgumentError(f"{what} {shown!r} has no host")
    return text


def _whole(name: str, value: int | None, *, low: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            raise SourceArgumentError(f"{name} must be a whole number, got {value!r}") from None
    if value < low:
        raise SourceArgumentError(f"{name} must be {low} or more, got {value}")
    return value


def _scope(url: str, allow: Sequence[str], block: Sequence[str], max_depth: int | None,
           max_pages: int | None, llms_txt: str | None, render: str | None) -> dict[str, Any]:
    try:
        # Comma-separated, as in `-a allow=...`; --allow may also be given several times.
        allow_t = parse_globs("allow", [p for item in allow for p in item.split(",")])
        block_t = parse_globs("block", [p for item in block for p in item.split(",")])
        render = render_mode("render", render)
    except ConfigError as exc:
        raise SourceArgumentError(str(exc)) from None
    scope: dict[str, Any] = Scope.for_source(
        url, allow=allow_t, block=block_t, max_depth=_whole("max_depth", max_depth, low=0),
        max_pages=_whole("max_pages", max_pages, low=1),
    ).as_dict()
    scope["seed"] = url
    if llms_txt:
        scope["llms_txt"] = _check_url(llms_txt, "llms_txt")
    if render:
        scope["render"] = render
    return scope


# -- resources ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _open_store(config: DocscraperConfig, *, create: bool) -> Iterator[StateStore | None]:
    """The state store; None when *create* is false and the SQLite file is not there (no sources)."""
    if not create and not database_exists(config.state_url):
        yield None
        return
    try:
        store = open_state_store(config)
    except StateError as exc:
        raise SourceError(str(exc)) from exc
    try:
        yield store
    finally:
        store.close()


def _open_index(config: DocscraperConfig) -> VectorIndex | None:
    """The vector index when there is one to touch (a server, or an existing directory), else None."""
    if config.chroma_url is None and not config.chroma_path.exists():
        return None
    from docscraper.storage.vectors import IndexError_  # numpy and Chroma's client: only where an index is opened

    try:
        return open_vector_index(config)
    except IndexError_ as exc:
        raise SourceError(str(exc)) from exc


def _source(store: StateStore | None, name: str) -> SourceRecord:
    source = store.get_source(name) if store is not None else None
    if source is None:
        raise SourceError(f"unknown source {name!r}; see scrapy sources list")
    return source


@contextlib.contextmanager
def _holding(store: StateStore, config: DocscraperConfig, source: SourceRecord, doing: str) -> Iterator[None]:
    """Hold the source's lock (:func:`docscraper.storage.runs.hold_source`) while the block changes it: a
    crawl writing to it would fail half-way, or write under the old name. Refused while a crawl (or another
    removal) holds it, and while a run of it is running by ``scrapy status`` (a crawl of a version that took
    no lock)."""
    running = [r.run.run_id for r in running_runs(store, source.id, timeout=config.heartbeat_timeout)]
    if running:
        raise SourceError(f"cannot {doing} source {source.name!r}: a crawl of it is running (run {running[0]}); "
                          "wait for it to finish")
    try:
        with hold_source(store, source, purpose="remove" if doing == "remove" else "adopt",
                         timeout=config.heartbeat_timeout, doing=doing):
            yield
    except SourceBusy as exc:
        raise SourceError(str(exc)) from None


def _run_dict(run: RunRecord | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "run_id": run.run_id,
        "started_at": iso_utc(run.started_at),
        "finished_at": iso_utc(run.finished_at),
        "result": run.result,
        "close_reason": run.close_reason,
        "report_path": run.report_path,
        "stats": run.summary,
    }


def _info(summary: SourceSummary, store: StateStore | None = None, config: DocscraperConfig | None = None
          ) -> SourceInfo:
    s = summary.source
    schedule = types = None
    if store is not None and config is not None:
        schedule = schedule_view(store, s, RevisitPolicy(config))
        types = page_types(store, s.id)
    return SourceInfo(s.name, s.url, dict(s.scope), s.registered, summary.pages, summary.chunks,
                      _run_dict(summary.last_run), schedule, types)


def page_types(store: StateStore, source_id: int) -> dict[str, int]:
    """A source's active pages by document type (:func:`docscraper.content.documents.document_type`), most first."""
    return count_types(store.content_type_counts(source_id))


# -- probing -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fetched:
    url: str
    status: int | None
    body: bytes = b""
    content_type: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    @property
    def is_text_file(self) -> bool:
        """A plain-text answer, not an HTML page served for any path (as the spider judges it)."""
        return is_plain_text_file(self.content_type, self.body)


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to the hosts the user named: a probe is not steered elsewhere."""

    def __init__(self, hosts: set[str], credentials: Credentials | None = None) -> None:
        self.hosts = hosts
        self.credentials = credentials

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if (urlsplit(newurl).hostname or "").lower() not in self.hosts:
            return None  # urllib then raises HTTPError with the 3xx status
        if urlsplit(newurl).scheme.lower() not in ("http", "https"):
            return None
        follow = super().redirect_request(req, fp, code, msg, headers, newurl)
        if follow is not None and self.credentials is not None:
            # urllib carries no unredirected header on: the source's own origin gets its credentials again
            for name, value in self.credentials.headers_for(newurl).items():
                follow.add_unredirected_header(name, value)
        return follow


class ProbeGuard:
    """The crawl's SSRF guard (:mod:`docscraper.crawl.ssrf`) over a probe's fetches: each URL is judged before
    it is fetched, its name resolved and judged, and the address a connection reached is judged again once
    connected (DNS rebinding). *trusted* are the hosts the operator named (the source's own, as a crawl
    trusts it); a client of a server names none (:func:`add_source`'s ``trust_host``)."""

    def __init__(self, config: DocscraperConfig, trusted: Sequence[str] = ()) -> None:
        from docscraper.crawl import ssrf  # the crawl's components; not needed by the other commands

        self.ssrf = ssrf
        self.config = ssrf.SsrfConfig.from_config(config)
        self.trusted = {ssrf.normalize_host(host) for host in trusted if host}

    def refusal(self, url: str) -> str | None:
        """Why *url* must not be fetched, or None (names are resolved here, blocking)."""
        verdict = self.ssrf.check_url(url, self.config, self.trusted)
        if verdict.refusal is not None or verdict.resolve is None:
            return verdict.refusal
        try:
            addresses = self.ssrf.resolve_host(verdict.resolve)
        except (OSError, UnicodeError):
            return None  # the fetch fails on its own, as a network error
        return self.ssrf.check_addresses(verdict.resolve, addresses, self.config,
                                         trusted=verdict.resolve in self.trusted)

    def connected(self, host: str, address: str) -> str | None:
        """Why a connection to *host* that reached *address* must not be used, or None."""
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return None
        name = self.ssrf.normalize_host(host)
        return self.ssrf.check_addresses(name, [ip], self.config, trusted=name in self.trusted)


class _Refused(OSError):
    """A connection the probe's guard refused."""


def _guarded(base: type[http.client.HTTPConnection], guard: ProbeGuard) -> type[http.client.HTTPConnection]:
    class Guarded(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            refusal = guard.connected(self.host, str(self.sock.getpeername()[0]))
            if refusal is not None:
                self.sock.close()
                raise _Refused(f"refused by the SSRF guard: {refusal}")

    return Guarded


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, guard: ProbeGuard) -> None:
        super().__init__()
        self.connection = _guarded(http.client.HTTPConnection, guard)

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self.connection, req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, guard: ProbeGuard) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(context=self.tls)
        self.connection = _guarded(http.client.HTTPSConnection, guard)

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self.connection, req, context=self.tls)


class _Prober:
    def __init__(self, hosts: set[str], timeout: float, user_agent: str, guard: ProbeGuard | None = None,
                 credentials: Credentials | None = None) -> None:
        handlers: list[urllib.request.BaseHandler] = [_SameHostRedirects(hosts, credentials)]
        self.credentials = credentials
        if guard is not None:
            handlers += [_GuardedHTTPHandler(guard), _GuardedHTTPSHandler(guard)]
        self.opener = urllib.request.build_opener(*handlers)
        self.timeout = timeout
        self.user_agent = user_agent
        self.guard = guard

    def fetch(self, url: str) -> _Fetched:
        if self.guard is not None and urlsplit(url).scheme.lower() != "file":
            refusal = self.guard.refusal(url)
            if refusal is not None:
                return _Fetched(url, None, error=f"refused by the SSRF guard: {refusal}")
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent, "Accept": "*/*"})
        if self.credentials is not None:
            # unredirected: a redirect to another origin does not carry them (DESIGN rule 9)
            for name, value in self.credentials.headers_for(url).items():
                request.add_unredirected_header(name, value)
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                body = response.read(_MAX_BODY)
                status = getattr(response, "status", None) or 200  # file:// answers have none
                return _Fetched(response.geturl(), int(status), body, response.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as exc:
            exc.close()
            where = exc.headers.get("Location") if 300 <= exc.code < 400 and exc.headers else None
            detail = f"HTTP {exc.code}" + (f", redirects to {where} (another host; not followed)" if where else "")
            return _Fetched(url, exc.code, error=detail)
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            text = f"{reason.__class__.__name__}: {reason}" if isinstance(reason, BaseException) else str(reason)
            return _Fetched(url, None, error=text)


def _robots_groups(text: str) -> list[tuple[set[str], list[tuple[str, str]]]]:
    """The groups of a robots.txt: (user agents, [(allow|disallow, path)...])."""
    groups: list[tuple[set[str], list[tuple[str, str]]]] = []
    agents: set[str] = set()
    rules: list[tuple[str, str]] = []
    in_rules = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        key = key.lower()
        if key == "user-agent":
            if in_rules:
                groups.append((agents, rules))
                agents, rules, in_rules = set(), [], False
            agents.add(value.lower())
        elif key in ("allow", "disallow"):
            in_rules = True
            if agents and value:
                rules.append((key, value))
    if agents:
        groups.append((agents, rules))
    return groups


def _robots(prober: _Prober, url: str, user_agent: str) -> tuple[dict[str, Any], str]:
    """What the host's robots.txt says to docscraper, and its text (for its ``Sitemap:`` lines)."""
    robots_url = urljoin(url, "/robots.txt")
    fetched = prober.fetch(robots_url)
    info: dict[str, Any] = {"url": robots_url, "status": fetched.status, "outcome": "", "disallow": [],
                            "allow": [], "sitemaps": [], "crawl_delay": None, "seed_allowed": True}
    # RFC 9309 2.3.1: 2xx rules apply; 4xx no rules; 5xx, network errors (and 429) disallow everything
    if fetched.status is None or fetched.status >= 500 or fetched.status == 429:
        info.update(outcome="unreachable", seed_allowed=False, detail=fetched.error)
        return info, ""
    if not fetched.ok:
        info.update(outcome="unavailable", detail=fetched.error)
        return info, ""
    text = fetched.text
    agent = user_agent.lower()
    groups = _robots_groups(text)
    own = [rules for agents, rules in groups if any(a != "*" and a in agent for a in agents)]
    chosen = own or [rules for agents, rules in groups if "*" in agents]
    merged = [rule for rules in chosen for rule in rules]
    parser = Protego.parse(text)
    info.update(
        outcome="parsed",
        disallow=[path for kind, path in merged if kind == "disallow"],
        allow=[path for kind, path in merged if kind == "allow"],
        sitemaps=sitemaps_from_robots(text, url),
        crawl_delay=parser.crawl_delay(user_agent),
        seed_allowed=bool(parser.can_fetch(url, user_agent)),
    )
    return info, text


def probe_site(url: str, *, llms_txt: str | None = None, timeout: float = 10.0,
               user_agent: str | None = None, guard: ProbeGuard | None = None,
               credentials: Credentials | None = None) -> ProbeResult:
    """Look at a documentation site once, over plain HTTP: the URL itself, robots.txt, llms.txt and
    llms-full.txt (at the URL's folder, then the host root, or *llms_txt*), and the sitemaps (robots.txt
    ``Sitemap:`` lines, ``sitemap.xml`` at the folder and the root; indexes followed). Redirects are
    followed only on the URL's host (and *llms_txt*'s). *guard*: the SSRF guard every fetch goes through
    (:class:`ProbeGuard`). *credentials*: a private source's, sent to its origin only. Never raises for what the site answers: an unreachable (or refused) URL has
    ``status`` None and says why in ``problems``. A ``file://`` folder is looked at on disk
    (:func:`_probe_folder`)."""
    url = _check_url(url)
    agent = user_agent or USER_AGENT
    hosts = {(urlsplit(url).hostname or "").lower()}
    if llms_txt:
        hosts.add((urlsplit(_check_url(llms_txt, "llms_txt")).hostname or "").lower())
    prober = _Prober(hosts, timeout, agent, guard, credentials)
    if urlsplit(url).scheme.lower() == "file":
        return _probe_folder(url, llms_txt, prober)
    problems: list[str] = []
    seed = prober.fetch(url)
    if seed.status is None:
        return ProbeResult(url, None, None, None, [], 0, {}, [f"cannot reach {url}: {seed.error}"])
    if seed.status in (401, 403):
        named = ("the credentials given were refused" if credentials is not None else
                 "the site needs credentials: give them with --auth-headers, --auth-basic or --auth-cookies")
        problems.append(f"{url} answered HTTP {seed.status}: {named}")
    elif not seed.ok:
        problems.append(f"{url} answered {seed.error or f'HTTP {seed.status}'}")
    http = urlsplit(url).scheme.lower() in ("http", "https")
    robots: dict[str, Any] = {}
    robots_text = ""
    if http:
        robots, robots_text = _robots(prober, url, agent)
        if robots["outcome"] == "unreachable":
            problems.append(f"robots.txt is unreachable ({robots.get('detail')}): a crawl fetches nothing from "
                            "this host (RFC 9309)")
        elif not robots["seed_allowed"]:
            problems.append(f"robots.txt disallows {url} for docscraper")

    found: dict[str, _Fetched] = {}
    candidates = llms_candidates(url)
    if llms_txt:
        candidates = [("llms", llms_txt), *[(kind, u) for kind, u in candidates if kind == "llms-full"]]
    for kind, candidate in candidates:
        if kind in found:
            continue
        fetched = prober.fetch(candidate)
        if fetched.ok and fetched.is_text_file:
            found[kind] = fetched
    if llms_txt and "llms" not in found:
        problems.append(f"no llms.txt at {llms_txt}")
    llms_links = len(parse_llms_txt(found["llms"].text, found["llms"].url)) if "llms" in found else 0

    sitemaps: list[str] = []
    page_urls: set[str] = set()
    prefix_scope = Scope.for_source(url)
    if http:
        # the sitemaps a crawl would read, read the same way (docscraper.content.discovery.SitemapWalk)
        walk = SitemapWalk(url, prefix_scope.prefix, robots_text, max_files=_MAX_SITEMAP_FILES,
                           max_depth=_MAX_SITEMAP_DEPTH)
        for sitemap_url in walk:
            fetched = prober.fetch(sitemap_url)
            if fetched.ok:
                walk.add(sitemap_url, parse_sitemap(fetched.body, fetched.url))
        sitemaps = [str(f["url"]) for f in walk.files if f["kind"] != "invalid"]
        page_urls = set(walk.pages)
        problems.extend(f"sitemap {problem}" for problem in walk.problems)
    return ProbeResult(
        url=url,
        status=seed.status,
        llms_txt=found["llms"].url if "llms" in found else None,
        llms_full_txt=found["llms-full"].url if "llms-full" in found else None,
        sitemaps=sitemaps,
        sitemap_urls=len(page_urls),
        robots=robots,
        problems=problems,
        llms_links=llms_links,
        sitemap_urls_in_prefix=sum(1 for u in page_urls if prefix_scope.relative_path(u) is not None),
    )


# A local folder's files a crawl can index (docscraper.crawl.localfiles types them by extension), less the
# discovery files; the index files it serves for the folder's own URL; how many entries a probe looks at.
_LOCAL_PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/markdown", "text/plain",
                               *(kind.content_type for kind in KINDS.values())})
_LOCAL_DISCOVERY = frozenset({"llms.txt", "llms-full.txt", "robots.txt"})
_LOCAL_INDEX_FILES = ("index.html", "index.htm", "index.md")
_MAX_FOLDER_ENTRIES = 200_000


def _probe_folder(url: str, llms_txt: str | None, prober: _Prober) -> ProbeResult:
    """The probe of a ``file://`` source: the folder itself, which urllib cannot fetch. It must exist, be a
    readable folder, and hold files a crawl indexes (HTML, Markdown, text: ``status`` 200 and a note that
    counts them); otherwise ``status`` None and the problem. ``llms.txt``, ``llms-full.txt`` and
    ``sitemap.xml`` are looked for in the folder (*llms_txt* where given)."""
    # imported here: the registry's other calls never need the crawl's download handler
    from docscraper.crawl.localfiles import content_type_for, local_root

    root = local_root(url)
    if not os.path.lexists(root):
        problem = f"the folder {root} does not exist"
    elif not os.path.isdir(root):
        problem = f"{root} is not a folder"
    elif not os.access(root, os.R_OK | os.X_OK):
        problem = f"the folder {root} is not readable"
    else:
        problem = None
    if problem is not None:
        return ProbeResult(url, None, None, None, [], 0, {}, [f"cannot read {url}: {problem}"])
    pages = entries = 0
    unreadable: list[str] = []
    for _folder, dirs, files in os.walk(root, onerror=lambda exc: unreadable.append(str(exc.filename))):
        entries += len(dirs) + len(files)
        pages += sum(1 for name in files
                     if name not in _LOCAL_DISCOVERY and content_type_for(name) in _LOCAL_PAGE_TYPES)
        if entries >= _MAX_FOLDER_ENTRIES:
            break
    counted = f"{'at least ' if entries >= _MAX_FOLDER_ENTRIES else ''}{pages}"
    if pages == 0:
        what = "is empty" if entries == 0 else "holds no file to index (HTML, Markdown, text or a document)"
        return ProbeResult(url, None, None, None, [], 0, {}, [f"the folder {root} {what}: a crawl would index nothing"])

    def found(name: str) -> str | None:
        path = os.path.join(root, name)
        return urljoin(url if url.endswith("/") else url + "/", name) if os.path.isfile(path) else None

    problems = [f"cannot read the folder {where}: a crawl skips it" for where in unreadable]
    llms = found("llms.txt")
    if llms_txt:
        llms = llms_txt if prober.fetch(llms_txt).ok else None
        if llms is None:
            problems.append(f"no llms.txt at {llms_txt}")
    index = next((name for name in _LOCAL_INDEX_FILES if os.path.isfile(os.path.join(root, name))), None)
    sitemap = found("sitemap.xml")
    starts = " and ".join(filter(None, (index, "llms.txt" if llms else None, "sitemap.xml" if sitemap else None)))
    notes = [f"folder {root}: {counted} file{'' if pages == 1 else 's'} to index (HTML, Markdown, text, documents)"
             + (f"; a crawl reads those that {starts} lead to" if starts else
                f"; no {', '.join(_LOCAL_INDEX_FILES)}: a crawl reads them all, folder by folder")]
    return ProbeResult(url=url, status=200, llms_txt=llms, llms_full_txt=found("llms-full.txt"),
                       sitemaps=[sitemap] if sitemap else [], sitemap_urls=0, robots={}, problems=problems,
                       notes=notes)


# -- the registry ------------------------------------------------------------------------------------


def probe_source(config: DocscraperConfig, url: str, *, llms_txt: str | None = None, timeout: float = 10.0,
                 user_agent: str | None = None, trust_host: bool = True,
                 credentials: Credentials | None = None) -> ProbeResult:
    """:func:`probe_site` through the crawl's SSRF guard (``DOCSCRAPER_SSRF_GUARD_ENABLED``), as
    :func:`add_source` probes before it registers: *trust_host* trusts the URL's own host (and *llms_txt*'s) as a
    crawl of the source would."""
    guard = None
    if config.ssrf_guard_enabled:
        trusted = [urlsplit(u).hostname or "" for u in (url, llms_txt) if u] if trust_host else []
        guard = ProbeGuard(config, trusted)
    return probe_site(url, llms_txt=llms_txt, timeout=timeout, user_agent=user_agent, guard=guard,
                      credentials=credentials)


def add_source(config: DocscraperConfig, name: str, url: str, *, allow: Sequence[str] = (),
               block: Sequence[str] = (), max_depth: int | None = None, max_pages: int | None = None,
               llms_txt: str | None = None, probe: bool = True, timeout: float = 10.0,
               user_agent: str | None = None, render: str | None = None,
               trust_host: bool = True, credentials: CredentialRefs | None = None,
               library: str | None = None, version: str | None = None, latest: bool = False,
               schedule: str | None = None) -> tuple[SourceInfo, ProbeResult | None]:
    """Register a source called *name* for *url* with its scope, after probing the site (unless *probe*
    is false). *render* (``js`` or ``none``) is stored for :mod:`docscraper.crawl.rendering`. A name in use, a URL registered under another name, or a site that cannot be reached (or
    answers 4xx/5xx) is a :class:`SourceError` and nothing is stored. A source that a crawl of *url*
    created on its own is adopted (module docstring).

    The probe goes through the crawl's SSRF guard (``DOCSCRAPER_SSRF_GUARD_ENABLED``). *trust_host*: whether
    the source's own host is trusted as a crawl trusts it (a private or loopback address the operator named);
    a server registering a client's URL passes False, which is stored (``scope["trust_host"]``) so that the
    source's crawls grant it nothing either: only ``DOCSCRAPER_SSRF_ALLOWED_HOSTS`` lets such a host in.

    *credentials*: where a private source's credentials are kept (:mod:`docscraper.credentials`); the references
    are stored (``scope["auth"]``), the values read for the probe and never stored. A reference whose value is
    missing or malformed is a :class:`SourceArgumentError`.

    *library*, *version*: the source is that version of that library (:mod:`docscraper.storage.libraries`); a
    library without a version takes the one its URL names (``/en/5.0/``), else it is a
    :class:`SourceArgumentError`; *latest* marks it the version a search reads by default. A library's version
    registered already is a :class:`SourceError`."""
    validate_name(name)
    url = _check_url(url)
    scope = _scope(url, allow, block, max_depth, max_pages, llms_txt, render)
    scope.update(_library_scope(url, library, version, latest))
    scope.update(_schedule_scope(schedule))
    loaded = None
    if credentials:
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise SourceArgumentError("credentials apply to http(s) sources, not to a folder's files")
        try:
            loaded = load_credentials(credentials, url, secrets_dir=config.secrets_dir)
        except CredentialError as exc:
            raise SourceArgumentError(f"source {name!r} not added: {exc}") from None
        if loaded is not None:
            redact_logs().add(loaded.secrets())
            if scope.get("render") == "js" and loaded.header_only:
                raise SourceArgumentError(
                    f"source {name!r} not added: header credentials ({', '.join(loaded.header_only)}) are not given "
                    "to Chromium, which carries a request's headers across redirects to other origins; use "
                    "--auth-basic or --auth-cookies with --render js")
        scope["auth"] = credentials.as_dict()
    if not trust_host:
        scope["trust_host"] = False
    normalized = normalize_url(url)
    # Conflicts are found before the network is asked, and asked again before anything is written.
    with _open_store(config, create=False) as store:
        if store is not None:
            _check_conflicts(store, name, normalized)
            _check_version_free(store, scope)
    result = (probe_source(config, url, llms_txt=llms_txt, timeout=timeout, user_agent=user_agent,
                           trust_host=trust_host, credentials=loaded) if probe else None)
    if result is not None and (result.status is None or not 200 <= result.status < 400):
        # a local folder that is missing, unreadable or empty is bad input, not a site that is down
        error = SourceArgumentError if urlsplit(url).scheme.lower() == "file" else SourceError
        raise error(f"source {name!r} not added: {result.problems[0]}")
    with _open_store(config, create=True) as store:
        assert store is not None
        implicit = _check_conflicts(store, name, normalized)
        _check_version_free(store, scope)
        if implicit is None:
            record = store.ensure_source(name, normalized, scope, registered=True)
            if record.url != normalized or not record.registered:  # lost a race for the name
                raise SourceError(f"source {name!r} exists already ({record.url})")
        else:
            with _holding(store, config, implicit, "adopt"):
                if implicit.name != name:
                    index = _open_index(config)
                    if index is not None:
                        try:
                            moved = index.rename_source(implicit.name, name)
                        except Exception as exc:
                            raise SourceError(f"cannot relabel the chunks of {implicit.name!r} in {index.location}: "
                                              f"{exc.__class__.__name__}: {exc}") from exc
                        finally:
                            index.close()
                        logger.info("Relabelled %d chunks of %s as %s", moved, implicit.name, name)
                store.update_source(implicit.id, name=name, scope=scope, registered=True)
                old_reports, new_reports = config.runs_dir / implicit.name, config.runs_dir / name
                if implicit.name != name and old_reports.is_dir() and not new_reports.exists():
                    old_reports.rename(new_reports)
            logger.info("Adopted source %s (%s) as %s", implicit.name, normalized, name)
        summary = store.list_sources(name)
    return _info(summary[0]), result


def _schedule_scope(schedule: str | None) -> dict[str, Any]:
    """The scope keys of a recrawl schedule (:mod:`docscraper.crawl.recrawls`): none for None or ``none``."""
    if schedule is None:
        return {}
    try:
        parsed = parse_schedule(schedule)
    except ConfigError as exc:
        raise SourceArgumentError(str(exc)) from None
    if parsed is None:
        return {}
    return {"schedule": parsed.text, "schedule_since": iso_utc(utcnow())}


def _library_scope(url: str, library: str | None, version: str | None, latest: bool) -> dict[str, Any]:
    """The scope keys of a source's library and version (none without a library)."""
    if library is None:
        if version is not None or latest:
            raise SourceArgumentError("--version and --latest go with --library")
        return {}
    try:
        library = check_library(library)
        if version is None:
            version = version_from_url(url)
            if version is None:
                raise SourceArgumentError(f"no version in {url}: give it with --version")
        version = check_version(version)
    except ValueError as exc:
        raise SourceArgumentError(str(exc)) from None
    scope: dict[str, Any] = {"library": library, "version": version}
    if latest:
        scope["latest"] = True
    return scope


def update_source(config: DocscraperConfig, name: str, *, library: str | None = None, version: str | None = None,
                  latest: bool | None = None, credentials: CredentialRefs | None = None,
                  clear_credentials: bool = False, schedule: str | None = None) -> SourceInfo:
    """Change what a registered source is, keeping its pages and index: its *library* and *version* (a version
    alone keeps the library; a library alone takes the version its URL names), whether it is the *latest* version
    (True moves the mark from another version of the library; False removes it), and where its credentials are
    kept (*credentials* replaces the kinds it names, read once to check them; *clear_credentials* drops them all
    first). Refused while a crawl of the source runs; :class:`SourceArgumentError` for bad input."""
    validate_name(name)
    with _open_store(config, create=False) as store:
        source = _source(store, name)
        assert store is not None
        scope = dict(source.scope)
        if library is not None or version is not None:
            current = scope.get("library")
            if library is None and not current:
                raise SourceArgumentError(f"source {name!r} has no library: give --library with --version")
            scope.update(_library_scope(str(scope.get("seed") or source.url), library or str(current), version,
                                        False))
        if latest is not None and not scope.get("library"):
            raise SourceArgumentError(f"source {name!r} has no library: --latest and --no-latest go with one")
        if latest:
            scope["latest"] = True
        elif latest is False or ("library" in scope and library is not None and library != source.scope.get("library")):
            scope.pop("latest", None)
        if schedule is not None:
            scope.pop("schedule", None)
            scope.pop("schedule_since", None)
            scope.update(_schedule_scope(schedule))  # "none" clears it
        if clear_credentials:
            scope.pop("auth", None)
        if credentials:
            try:
                merged = (CredentialRefs() if clear_credentials else stored_credentials(source)).merged(credentials)
                loaded = load_credentials(merged, source.url, secrets_dir=config.secrets_dir)
            except CredentialError as exc:
                raise SourceArgumentError(f"source {name!r} not updated: {exc}") from None
            if loaded is not None:
                redact_logs().add(loaded.secrets())
            scope["auth"] = merged.as_dict()
        with _holding(store, config, source, "update"):
            others = {n: sc for n, sc in store.source_scopes().items() if n != name}
            _check_version_free_among(others, scope, moving_latest=True)
            if latest and scope.get("library"):
                for other in [n for n, sc in others.items() if sc.get("library") == scope["library"] and sc.get("latest")]:
                    record = store.get_source(other)
                    if record is not None:
                        store.update_source(record.id, scope={k: v for k, v in record.scope.items() if k != "latest"})
            store.update_source(source.id, scope=scope)
        summary = store.list_sources(name)
    return _info(summary[0])


def list_libraries(config: DocscraperConfig) -> list[dict[str, Any]]:
    """Every library with its versions, newest first: ``{library, default, versions: [{version, source, latest}]}``
    (``default``: the version a search reads unless told)."""
    with _open_store(config, create=False) as store:
        versions = SourceVersions.from_scopes(store.source_scopes() if store is not None else {})
    return [{"library": name, "default": versions.default(name),
             "versions": [{"version": e.version, "source": e.source, "latest": e.latest} for e in entries]}
            for name, entries in versions.libraries().items()]


def _check_version_free(store: StateStore, scope: dict[str, Any]) -> None:
    _check_version_free_among(store.source_scopes(), scope)


def _check_version_free_among(scopes: dict[str, dict[str, Any]], scope: dict[str, Any], *,
                              moving_latest: bool = False) -> None:
    if not scope.get("library"):
        return
    versions = SourceVersions.from_scopes(scopes)
    taken = [e.source for e in versions.versions.values()
             if e.library == scope["library"] and e.version == scope["version"]]
    if taken:
        raise SourceError(f"library {scope['library']!r} has version {scope['version']!r} already: source "
                          f"{taken[0]!r}")
    if scope.get("latest") and not moving_latest:
        marked = [e.source for e in versions.versions.values() if e.library == scope["library"] and e.latest]
        if marked:
            raise SourceError(f"source {marked[0]!r} is marked the latest version of {scope['library']!r} already")


def _check_conflicts(store: StateStore, name: str, normalized_url: str) -> SourceRecord | None:
    """Raise when *name* is taken or the URL is registered; the unregistered source of the URL, if any."""
    by_url = store.find_source_by_url(normalized_url)
    existing = store.get_source(name)
    if existing is not None and not (by_url is not None and by_url.id == existing.id and not existing.registered):
        how = "registered" if existing.registered else "created by a crawl of its URL"
        raise SourceError(f"source {name!r} exists already ({existing.url}, {how}); choose another name, or "
                          f"remove it first: scrapy sources remove {name} --yes")
    if by_url is not None and by_url.registered:
        raise SourceError(f"{normalized_url} is registered already, as source {by_url.name!r}")
    return by_url


def list_sources(config: DocscraperConfig) -> list[SourceInfo]:
    """Every source, registered or created by a crawl of its URL, by name."""
    with _open_store(config, create=False) as store:
        return [_info(summary, store, config) for summary in store.list_sources()] if store is not None else []


def get_source_info(config: DocscraperConfig, name: str) -> SourceInfo:
    """The source called *name*; :class:`SourceError` when there is none."""
    validate_name(name)
    with _open_store(config, create=False) as store:
        summaries = store.list_sources(name) if store is not None else []
        if not summaries:
            raise SourceError(f"unknown source {name!r}; see scrapy sources list")
        return _info(summaries[0], store, config)


def remove_source(config: DocscraperConfig, name: str) -> dict[str, int]:
    """Delete a source: its chunks from the vector index, then its pages, runs and row from the state
    database, then its reports folder. Returns the counts (``pages``, ``chunks``, ``runs``)."""
    validate_name(name)
    with _open_store(config, create=False) as store:
        source = _source(store, name)
        assert store is not None
        with _holding(store, config, source, "remove"):
            chunks = 0
            index = _open_index(config)
            if index is not None:
                try:
                    chunks = index.delete_source(name)
                except Exception as exc:
                    raise SourceError(f"source {name!r} not removed: its chunks could not be deleted from "
                                      f"{index.location}: {exc.__class__.__name__}: {exc}") from exc
                finally:
                    index.close()
            counts = store.delete_source(source.id)
    reports = config.runs_dir / name
    if reports.is_dir():
        shutil.rmtree(reports, ignore_errors=True)
    logger.info("Removed source %s: %d pages, %d chunks, %d runs", name, counts["pages"], chunks, counts["runs"])
    return {"pages": counts["pages"], "chunks": chunks, "runs": counts["runs"]}


def _matches(page: PageRecord, pattern: str) -> bool:
    """Whether *pattern* (a URL, an absolute path, or a path relative to the scope prefix; each may be a
    glob as in :mod:`docscraper.crawl.scope`) names the stored page."""
    url = page.url
    parts = urlsplit(url)
    if "://" in pattern:
        with contextlib.suppress(ValueError):
            if normalize_url(pattern) == normalize_url(url):
                return True
        wanted = urlsplit(pattern)
        if (wanted.scheme.lower(), wanted.netloc.lower()) != (parts.scheme.lower(), parts.netloc.lower()):
            return False
        pattern = wanted.path or "/"
    candidates: list[str] = []
    if pattern.startswith("/"):
        candidates.append(parts.path or "/")
    elif page.rel_path is not None:
        candidates += [page.rel_path, page.rel_path.split("?", 1)[0]]
    if any(c == pattern for c in candidates):
        return True
    folders = [c + "/" for c in candidates if c and not c.endswith("/")]
    return any(glob.globmatch(c, pattern, flags=_GLOB_FLAGS) for c in candidates + folders if c)


def request_reindex(config: DocscraperConfig, name: str, pattern: str) -> list[str]:
    """Mark the source's active pages that *pattern* names (a URL, ``/absolute/path``, a path relative to
    the scope prefix; globs allowed) so that the next crawl re-processes them whatever their hash or
    validators and embeds them afresh. Returns the URLs marked; :class:`SourceError` when none match."""
    validate_name(name)
    pattern = str(pattern or "").strip()
    if not pattern:
        raise SourceArgumentError("give a page URL or a glob (guide/**, /docs/faq.html, https://...)")
    with _open_store(config, create=False) as store:
        source = _source(store, name)
        assert store is not None
        pages = [page for page in store.load_pages(source.id).values() if page.status == "active"]
        matched = [page for page in pages if _matches(page, pattern)]
        if not matched:
            prefix = source.scope.get("prefix") or Scope.for_source(source.url).prefix
            raise SourceError(
                f"no stored page of source {name!r} matches {pattern!r}; nothing was marked ({len(pages)} pages "
                f"stored; give a URL, a path relative to {prefix} such as 'guide/**', or an absolute path)"
            )
        store.mark_reindex(source.id, [page.page_id for page in matched])
    return sorted(page.url for page in matched)
