"""docscraper as an MCP server: sources, crawls and search as tools for an AI assistant.

Built on the official ``mcp`` Python SDK (:class:`mcp.server.mcpserver.MCPServer`), started from the project root (or
with ``SCRAPY_SETTINGS_MODULE``) as ``scrapy mcp`` or ``docscraper-mcp`` (``--transport stdio|http``, ``--host``,
``--port``, ``-s NAME=VALUE``). :class:`DocsTools` holds the tools, each a wrapper of the Python API the commands use:
``add_source``, ``list_sources``, ``list_libraries``, ``crawl_status``, ``recrawl_source``, ``reindex_page`` and
``search_docs``. Credential references a client may name are those in ``DOCSCRAPER_SERVER_CREDENTIALS``; no answer
holds a secret. Over HTTP, :class:`Gate` checks the Host header, the rate limit and the token. A tool that cannot do
its job answers an error result (``isError``) saying why; an unexpected failure is logged on the server's stderr. The
tools' arguments and answers: docs/howto/mcp.md; the search model's life: docs/explanation/operations.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import quote, unquote, urlsplit

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from scrapy.settings import BaseSettings

from docscraper import __version__
from docscraper.config import ConfigError, DocscraperConfig
from docscraper.credentials import CredentialError, CredentialRefs
from docscraper.ops.launch import start_crawl
from docscraper.ops.sources import (
    SourceArgumentError,
    SourceError,
    add_source,
    get_source_info,
    list_libraries,
    list_sources,
    request_reindex,
)
from docscraper.ops.status import crawl_status
from docscraper.secrets import Redactor, redact_data, redact_logs
from docscraper.storage.backends import load_query_embedder, open_vector_index
from docscraper.storage.embedding import Embedder, EmbeddingError
from docscraper.storage.model_identity import ModelMismatch
from docscraper.storage.search import Searcher
from docscraper.storage.state import StateError
from docscraper.storage.vectors import IndexError_, VectorIndex, forget_persistent_clients, persistent_stamp

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "TRANSPORTS",
    "DocsTools",
    "Gate",
    "RateLimit",
    "add_listen_options",
    "add_options",
    "add_server_options",
    "bind_socket",
    "build_server",
    "cmdline_settings",
    "console_main",
    "host_names",
    "is_loopback",
    "main",
    "serve",
    "serve_options",
    "server_config",
    "server_token",
]

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "http")
#: The environment variable that holds the token HTTP clients must send (``Authorization: Bearer``).
TOKEN_ENV = "DOCSCRAPER_SERVER_TOKEN"
#: The streamable HTTP transport's default port (Chroma's server takes 8000, Scrapyd 6800).
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"

INSTRUCTIONS = """\
docscraper keeps a vector index of documentation sites. Register a site with add_source, crawl it with
recrawl_source (it runs in the background: follow it with crawl_status until its state is 'finished'),
then answer questions with search_docs, which returns the best passages with their page URLs. After a
page changed, reindex_page marks it and the next recrawl_source re-processes it."""

_LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_Globs = str | list[str] | None


@contextlib.contextmanager
def _errors(tools: DocsTools) -> Iterator[None]:
    """The failures a user can act on, as the SDK's anticipated tool errors: their text (cleaned of secrets
    and paths, :meth:`DocsTools.message`) reaches the client."""
    try:
        yield
    except ToolError as exc:
        raise ToolError(tools.message(str(exc))) from None
    except LookupError as exc:  # KeyError's repr quotes; LookupError's first argument is the sentence
        raise ToolError(tools.message(str(exc.args[0]) if exc.args else str(exc))) from None
    except (SourceError, ValueError, StateError, IndexError_, EmbeddingError) as exc:
        raise ToolError(tools.message(str(exc))) from None


_FILE_URL = re.compile(r"file://(/[^\s\"'<>]*)")


def _hide_paths(value: Any, data_dir: Path, folders: Sequence[Path]) -> Any:
    """*value* with every ``file://`` URL outside *data_dir* and *folders* cut to its last part
    (``file:///…/page.md``): a local source's folder is the operator's business."""
    if isinstance(value, str):
        if "file://" not in value:
            return value

        def hide(match: re.Match[str]) -> str:
            path = Path(unquote(match.group(1)))
            if path.is_relative_to(data_dir) or any(path.is_relative_to(folder) for folder in folders):
                return match.group(0)
            return f"file:///\N{HORIZONTAL ELLIPSIS}/{quote(path.name)}"

        return _FILE_URL.sub(hide, value)
    if isinstance(value, Mapping):
        return {k: _hide_paths(v, data_dir, folders) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide_paths(v, data_dir, folders) for v in value]
    return value


class DocsTools:
    """What the tools do, over one :class:`DocscraperConfig`; keeps the search model between calls.

    *crawl_settings* are passed on to the crawls :meth:`recrawl_source` starts; *probe_timeout* and
    *user_agent* go to the site probe of :meth:`add_source`.
    """

    def __init__(self, config: DocscraperConfig, *, crawl_settings: Mapping[str, str] | None = None,
                 probe_timeout: float = 10.0, user_agent: str | None = None,
                 redactor: Redactor | None = None) -> None:
        self.config = config
        self.crawl_settings = dict(crawl_settings or {})
        self.probe_timeout = probe_timeout
        self.user_agent = user_agent
        # what no answer may carry: the secret settings' values, credentials in URLs, and the other settings'
        # values that name places (the state database, the Chroma and Scrapyd servers)
        self.redactor = redactor or Redactor()
        self.redactor.add(str(value) for value in (config.state_url, config.chroma_url, config.scrapyd_url,
                                                   config.webhook_url) if value)
        self.folders = config.server_allowed_folders
        self.data_dir = config.data_dir.resolve()
        # Tools run on worker threads; Chroma's per-process client cache is shared, so every use of the
        # index (a search, an adopting add_source) holds this lock.
        self._index_lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None
        self._searcher: Searcher | None = None
        self._stamp: object = None

    # the client's reach ----------------------------------------------------------------------------

    def check_client_url(self, url: str, what: str) -> None:
        """A ``file:`` URL from a client must lie in a folder the operator allowed; the same refusal whether
        the path exists or not, so an answer never tells what is on the server's disk."""
        try:
            parts = urlsplit(str(url).strip())
        except ValueError:
            return  # add_source says what is wrong with it
        if parts.scheme.lower() != "file":
            return
        refusal = (f"{what}: file: URLs are refused by this server unless the operator allowed their folder "
                   "(scrapy mcp --allow-folder DIR, or DOCSCRAPER_SERVER_ALLOWED_FOLDERS)")
        path = Path(os.path.normpath(unquote(parts.path) or "/"))
        if not path.is_absolute() or not any(path.is_relative_to(folder) for folder in self.folders):
            raise ToolError(refusal)
        # a link inside an allowed folder that points out of it is refused the same way
        if not any(path.resolve().is_relative_to(folder) for folder in self.folders):
            raise ToolError(refusal)

    def answer(self, value: Any) -> Any:
        """*value* as a client may see it: no secret, no setting's value, no path outside the data directory
        and the allowed folders."""
        return _hide_paths(redact_data(value, self.redactor), self.data_dir, self.folders)

    def message(self, text: str) -> str:
        cleaned = self.answer(text)
        return cleaned if isinstance(cleaned, str) else text

    # the tools ------------------------------------------------------------------------------------

    def add_source(self, name: str, url: str, *, allow: _Globs = None, block: _Globs = None,
                   max_depth: int | None = None, max_pages: int | None = None,
                   llms_txt: str | None = None, auth_headers: str | None = None, auth_basic: str | None = None,
                   auth_cookies: str | None = None, library: str | None = None, version: str | None = None,
                   latest: bool = False) -> dict[str, Any]:
        with _errors(self), self._index_lock:
            self.check_client_url(url, "url")
            credentials = self.client_credentials({"headers": auth_headers, "basic": auth_basic,
                                                    "cookies": auth_cookies})
            if llms_txt:
                self.check_client_url(llms_txt, "llms_txt")
            # a client's URL gets no trust of its own host: private and loopback addresses only when the
            # operator allowed them (DOCSCRAPER_SSRF_ALLOWED_HOSTS), for the probe and for every crawl after it
            info, probe = add_source(
                self.config, name, url, allow=_globs(allow), block=_globs(block), max_depth=max_depth,
                max_pages=max_pages, llms_txt=llms_txt, timeout=self.probe_timeout, user_agent=self.user_agent,
                trust_host=False, credentials=credentials, library=library or None, version=version or None,
                latest=latest,
            )
        return self.answer({"source": info.as_dict(), "probe": probe.as_dict() if probe is not None else None})

    def client_credentials(self, given: dict[str, str | None]) -> CredentialRefs:
        """The credential references a client gave, each one the operator allowed
        (``DOCSCRAPER_SERVER_CREDENTIALS``); :class:`SourceArgumentError` otherwise."""
        try:
            refs = CredentialRefs.parse(given)
        except CredentialError as exc:
            raise SourceArgumentError(str(exc)) from None
        allowed = set(self.config.server_credentials)
        refused = sorted(ref for ref in refs.as_dict().values() if ref not in allowed)
        if refused:
            raise SourceArgumentError(
                f"credential reference(s) {', '.join(refused)} are not allowed for this server's clients: the "
                "operator lists those a client may use in DOCSCRAPER_SERVER_CREDENTIALS")
        return refs

    def list_libraries(self) -> dict[str, Any]:
        with _errors(self):
            return self.answer({"libraries": list_libraries(self.config)})

    def list_sources(self) -> dict[str, Any]:
        with _errors(self):
            return self.answer({"sources": [info.as_dict() for info in list_sources(self.config)]})

    def crawl_status(self, name: str | None = None) -> dict[str, Any]:
        with _errors(self):
            return self.answer({"runs": [status.as_dict() for status in crawl_status(self.config, name or None)]})

    def recrawl_source(self, name: str, *, full: bool = False, due: bool = False, allow: _Globs = None,
                       block: _Globs = None, max_depth: int | None = None, max_pages: int | None = None
                       ) -> dict[str, Any]:
        overrides = {"allow": _globs(allow) or None, "block": _globs(block) or None, "max_depth": max_depth,
                     "max_pages": max_pages}
        with _errors(self):
            started = start_crawl(self.config, name, full=full, due=due, overrides=overrides,
                                  settings=self.crawl_settings,
                                  max_running=self.config.server_max_crawls or None)
            return self.answer(started)

    def reindex_page(self, name: str, url_or_glob: str) -> dict[str, Any]:
        with _errors(self):
            marked = request_reindex(self.config, name, url_or_glob)
        return self.answer({"source": name, "marked": marked, "count": len(marked),
                            "next": f"recrawl_source {name} re-processes them"})

    def search_docs(self, question: str, *, k: int = 5, source: str | None = None, library: str | None = None,
                    version: str | None = None, all_versions: bool = False,
                    with_images: bool = False) -> dict[str, Any]:
        """The MCP tool's answer; *with_images* (the dashboard's) adds each result's page images."""
        with _errors(self):
            with self._index_lock:
                results = self._current_searcher().search(question, k=k, source=source or None,
                                                          with_aliases=True, library=library or None,
                                                          version=version or None, all_versions=all_versions,
                                                          with_images=with_images)
            if not results and source:
                get_source_info(self.config, source)  # an unknown source is the better answer
        keys = ("rank", "score", "url", "title", "heading", "text", "source", "aliases", "library", "version")
        return self.answer({"results": [
            {**{key: getattr(result, key) for key in keys},
             # a PDF's chunk: the page it is on (its url ends with #page=N)
             **({"page": result.page_number} if result.page_number is not None else {}),
             **({"images": result.images} if with_images else {})}
            for result in results]})

    def _current_searcher(self) -> Searcher:
        """The one :class:`Searcher`; its Chroma index reopened when another process wrote to it."""
        config = self.config
        persistent = config.chroma_url is None
        if persistent and not config.chroma_path.exists():
            raise ToolError(f"no index at {config.chroma_path} yet; crawl a source first (recrawl_source)")
        stamp = persistent_stamp(config.chroma_path) if persistent else None
        if self._searcher is None or stamp != self._stamp:
            if self._embedder is None:
                self._embedder = load_query_embedder(config)
            if self._index is not None:
                self._index.close()
                self._index = None
                if persistent:
                    forget_persistent_clients()
            self._index = open_vector_index(config)
            try:
                self._searcher = Searcher(config, embedder=self._embedder, index=self._index, check=True)
            except ModelMismatch as exc:
                raise ToolError(str(exc)) from None
            # after opening: opening writes to the directory itself
            self._stamp = persistent_stamp(config.chroma_path) if persistent else None
        return self._searcher

    def close(self) -> None:
        with self._index_lock:
            if self._index is not None:
                self._index.close()
                self._index = None
            if self._embedder is not None:
                self._embedder.close()
                self._embedder = None
            self._searcher = None


def _globs(value: _Globs) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


# -- the MCP server ----------------------------------------------------------------------------------

_Name = Annotated[str, Field(description="the source's name: lowercase letters, digits, '.', '_', '-'")]
_Allow = Annotated[_Globs, Field(description="globs over URL paths a page must match (guide/**, /docs/*.html); "
                                             "'!pattern' excludes")]
_Block = Annotated[_Globs, Field(description="globs over URL paths that exclude pages")]
_MaxDepth = Annotated[int | None, Field(ge=0, description="link depth limit (0: the start page only)")]
_MaxPages = Annotated[int | None, Field(ge=1, description="at most this many pages")]


def build_server(tools: DocsTools, *, log_level: _LogLevel = "INFO") -> MCPServer:
    """An :class:`~mcp.server.mcpserver.MCPServer` with the tools over *tools*."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server: MCPServer = MCPServer("docscraper", title="docscraper", version=__version__,
                                  instructions=INSTRUCTIONS, log_level=log_level)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
    def add_source(
        name: _Name,
        url: Annotated[str, Field(description="the documentation's start URL (https://docs.example.com/guide/)")],
        allow: _Allow = None,
        block: _Block = None,
        max_depth: _MaxDepth = None,
        max_pages: _MaxPages = None,
        llms_txt: Annotated[str | None, Field(description="URL of an llms.txt that auto-detection misses")] = None,
        auth_headers: Annotated[str | None, Field(
            description="a private site's request headers: the reference env:NAME or file:NAME the operator "
                        "allowed (DOCSCRAPER_SERVER_CREDENTIALS), never a value")] = None,
        auth_basic: Annotated[str | None, Field(
            description="HTTP basic auth: an allowed reference env:NAME or file:NAME, never a value")] = None,
        auth_cookies: Annotated[str | None, Field(
            description="cookies: an allowed reference env:NAME or file:NAME, never a value")] = None,
        library: Annotated[str | None, Field(description="the library this source is a version of")] = None,
        version: Annotated[str | None, Field(
            description="its version (default: the version the URL names, such as /en/5.0/)")] = None,
        latest: Annotated[bool, Field(description="searches of the library read this version by default")] = False,
    ) -> dict[str, Any]:
        """Register a documentation site as a source, after probing it (robots.txt, llms.txt, sitemaps).
        Returns the source (name, url, scope...) and what the probe found. Crawl it with recrawl_source."""
        return tools.add_source(name, url, allow=allow, block=block, max_depth=max_depth, max_pages=max_pages,
                                llms_txt=llms_txt, auth_headers=auth_headers, auth_basic=auth_basic,
                                auth_cookies=auth_cookies, library=library, version=version, latest=latest)

    @server.tool(annotations=reads)
    def list_sources() -> dict[str, Any]:
        """Every source: name, url, scope, registered, pages and chunks stored, and its last run."""
        return tools.list_sources()

    @server.tool(annotations=reads)
    def crawl_status(
        name: Annotated[str | None, Field(description="only this source's runs")] = None,
    ) -> dict[str, Any]:
        """Crawls running now, crawls that died, and each source's last finished crawl, with progress
        (pages done/known/queued, new/changed/unchanged, failures) and, once finished, the result."""
        return tools.crawl_status(name)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
    def recrawl_source(
        name: _Name,
        full: Annotated[bool, Field(description="process every page as changed, not only changed pages")] = False,
        due: Annotated[bool, Field(description="check only what is due: new pages, pages whose sitemap lastmod "
                                               "moved, and pages whose revisit schedule says so")] = False,
        allow: _Allow = None,
        block: _Block = None,
        max_depth: _MaxDepth = None,
        max_pages: _MaxPages = None,
    ) -> dict[str, Any]:
        """Start a crawl of a registered source in the background and return at once (pid and log file,
        or the Scrapyd job id). Incremental unless full; only what is due with due. Scope arguments apply to this run only. Follow it
        with crawl_status. Refused while a crawl of the source is running."""
        return tools.recrawl_source(name, full=full, due=due, allow=allow, block=block, max_depth=max_depth,
                                    max_pages=max_pages)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    def reindex_page(
        name: _Name,
        url_or_glob: Annotated[str, Field(description="a page URL, an absolute path (/docs/faq.html) or a glob "
                                                      "relative to the source's prefix (guide/**)")],
    ) -> dict[str, Any]:
        """Mark stored pages of a source so that the next crawl re-processes and re-embeds them whatever
        their content. Returns the URLs marked."""
        return tools.reindex_page(name, url_or_glob)

    @server.tool(annotations=reads)
    def search_docs(
        question: Annotated[str, Field(description="a question or keywords, in plain words")],
        k: Annotated[int, Field(ge=1, le=50, description="how many results")] = 5,
        source: Annotated[str | None, Field(description="only this source's pages")] = None,
        library: Annotated[str | None, Field(description="only this library (see list_libraries)")] = None,
        version: Annotated[str | None, Field(
            description="with library: this version of it (default: its latest)")] = None,
        all_versions: Annotated[bool, Field(
            description="read every version of each library (answers may mix versions)")] = False,
    ) -> dict[str, Any]:
        """Search the indexed documentation: the k passages that best answer the question, at most one per
        page, best first, each with its page url, title, heading, score (cosine similarity) and text, the
        page's other URLs (aliases) that serve the same content, and its library and version. One version of
        each library is read: the one asked for, else its latest."""
        return tools.search_docs(question, k=k, source=source, library=library, version=version,
                                 all_versions=all_versions)

    @server.tool(annotations=reads)
    def list_libraries() -> dict[str, Any]:
        """Every library with its versions (newest first), the source of each, and the version a search reads
        by default."""
        return tools.list_libraries()

    return server


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on *host*:*port* (0: a free port), for uvicorn to serve on."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # listening before the address is printed: a client that connects at once waits in the backlog
        # until uvicorn accepts, instead of being refused
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock


def is_loopback(host: str) -> bool:
    """Whether binding *host* listens on loopback only (``127.0.0.1``, ``::1``, ``localhost``)."""
    text = host.strip().strip("[]").lower()
    if text == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def host_names(host: str, port: int, extra: Sequence[str] = ()) -> frozenset[str]:
    """The ``Host`` header values a server bound to *host*:*port* answers (DNS rebinding: a page of
    another site that makes a browser call this server sends that site's name): the bound address, the
    loopback names when bound to loopback, this machine's name and addresses when bound to every address,
    and the *extra* names the operator gave; each with and without the port."""
    names: set[str] = {host.strip().strip("[]").lower(), *(h.strip().lower() for h in extra if h.strip())}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "::1"}
    elif host.strip().strip("[]") in ("0.0.0.0", "::", ""):
        names |= {"127.0.0.1", "localhost", "::1", socket.gethostname().lower()}
        with contextlib.suppress(OSError):
            names |= {str(info[4][0]).split("%", 1)[0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    values: set[str] = set()
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        values |= {shown, f"{shown}:{port}"}
    return frozenset(values)


class RateLimit:
    """At most *per_minute* requests from one client in any 60 seconds (on the monotonic clock)."""

    def __init__(self, per_minute: int, clock: Any = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self.seen: dict[str, deque[float]] = {}

    def wait(self, client: str) -> float:
        """0 when *client*'s request may go on (and counts it), else the seconds until it may."""
        now = self.clock()
        times = self.seen.setdefault(client, deque())
        while times and times[0] <= now - 60.0:
            times.popleft()
        if len(times) >= self.per_minute:
            return max(0.001, times[0] + 60.0 - now)
        times.append(now)
        if len(self.seen) > 10_000:  # forget clients that went quiet
            self.seen = {c: t for c, t in self.seen.items() if t and t[-1] > now - 60.0}
        return 0.0


class Gate:
    """ASGI middleware in front of the HTTP server: the ``Host`` header must name this server
    (:func:`host_names`; else 421), a client may send at most ``DOCSCRAPER_SERVER_RATE_LIMIT`` requests a
    minute (else 429 with ``Retry-After``), and with a token every request must carry it
    (``Authorization: Bearer TOKEN``, compared in constant time; else 401)."""

    def __init__(self, app: Any, *, hosts: frozenset[str], token: str | None, rate: int) -> None:
        self.app = app
        self.hosts = hosts
        self.token = hashlib.sha256(token.encode()).digest() if token else None
        self.limit = RateLimit(rate) if rate else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in scope.get("headers", ())}
        if headers.get("host", "").strip().lower() not in self.hosts:
            await _refuse(send, 421, "this server does not answer to that Host header")
            return
        if self.limit is not None:
            client = str((scope.get("client") or ("?",))[0])
            wait = self.limit.wait(client)
            if wait:
                await _refuse(send, 429, "too many requests; slow down", [(b"retry-after", str(int(wait) + 1).encode())])
                return
        if self.token is not None:
            scheme, _, given = headers.get("authorization", "").partition(" ")
            digest = hashlib.sha256(given.strip().encode()).digest()
            if scheme.lower() != "bearer" or not hmac.compare_digest(digest, self.token):
                await _refuse(send, 401, "a token is required: Authorization: Bearer TOKEN",
                              [(b"www-authenticate", b'Bearer realm="docscraper"')])
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _serve_http(server: MCPServer, host: str, port: int, log_level: str, token: str | None,
                      extra_hosts: Sequence[str], rate: int) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # Bound here, so that --port 0 can say which port it got.
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    hosts = host_names(host, bound, extra_hosts)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts),
                                         allowed_origins=sorted(f"{scheme}://{h}" for h in hosts
                                                                for scheme in ("http", "https")))
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host, transport_security=security)
    where = f"[{host}]" if ":" in host else host
    print(f"docscraper MCP server: streamable HTTP at http://{where}:{bound}{HTTP_PATH}"
          + (" (token required)" if token else ""), file=sys.stderr, flush=True)
    config = uvicorn.Config(Gate(app, hosts=hosts, token=token, rate=rate), log_level=log_level.lower(),
                            lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


def cmdline_settings(settings: BaseSettings) -> dict[str, str]:
    """The settings given on the command line (``-s NAME=VALUE``), to pass on to crawls."""
    from scrapy.settings import SETTINGS_PRIORITIES

    cmdline = SETTINGS_PRIORITIES["cmdline"]
    return {str(name): str(settings[name]) for name in settings if settings.getpriority(name) == cmdline}


def _log_level(settings: BaseSettings) -> _LogLevel:
    value = settings.get("LOG_LEVEL") or "INFO"
    name = logging.getLevelName(value) if isinstance(value, int) else str(value).upper()
    name = {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(name, name)
    levels: tuple[_LogLevel, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    for level in levels:
        if level == name:
            return level
    return "INFO"


def server_token(token_file: str | None = None) -> str | None:
    """The token clients must send: the contents of *token_file*, else ``$DOCSCRAPER_SERVER_TOKEN`` (never
    a setting or an option's value: those are visible in the process list and in logs)."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"--token-file {token_file}: {exc.strerror or exc}") from None
        if not token:
            raise ConfigError(f"--token-file {token_file} is empty")
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if token and len(token) < 16:
        raise ConfigError(f"the server token must be at least 16 characters (got {len(token)})")
    return token or None


def server_config(settings: BaseSettings, allow_folders: Sequence[str] = ()) -> DocscraperConfig:
    """A server's settings: the project's, with *allow_folders* (``--allow-folder``) added to
    ``DOCSCRAPER_SERVER_ALLOWED_FOLDERS``."""
    import dataclasses

    config = DocscraperConfig.from_settings(settings)
    folders = list(config.server_allowed_folders)
    for folder in allow_folders:
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--allow-folder {folder}: not a folder")
        folders.append(path.resolve())
    return dataclasses.replace(config, server_allowed_folders=tuple(folders))


def serve(settings: BaseSettings, *, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, allow_folders: Sequence[str] = (), allowed_hosts: Sequence[str] = (),
          token_file: str | None = None) -> None:
    """Run the MCP server over *transport* until the client leaves (stdio) or the process is stopped
    (http). *allow_folders* add to ``DOCSCRAPER_SERVER_ALLOWED_FOLDERS`` (the only folders a client may name
    in a ``file:`` URL), *allowed_hosts* to ``DOCSCRAPER_SERVER_ALLOWED_HOSTS``. Over HTTP off loopback a
    token is required (:func:`server_token`). Raises :class:`~docscraper.config.ConfigError` for bad
    settings or a missing token, :class:`ValueError` for a bad transport, :class:`OSError` when the port
    cannot be bound."""
    import anyio

    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    config = server_config(settings, allow_folders)
    token = server_token(token_file)
    if transport == "http" and not is_loopback(host) and token is None:
        raise ConfigError(f"binding {host} (not loopback) needs a token: set {TOKEN_ENV} in the server's "
                          "environment or pass --token-file FILE (clients send Authorization: Bearer TOKEN)")
    redactor = redact_logs(settings)
    if token:
        redactor.add([token])
    tools = DocsTools(config, crawl_settings=cmdline_settings(settings),
                      probe_timeout=min(float(settings.getfloat("DOWNLOAD_TIMEOUT", 30)), 30.0),
                      user_agent=config.user_agent(settings), redactor=redactor)
    level = _log_level(settings)
    # Scrapy's log format on stderr; the SDK's own set-up (a Rich console) then leaves it alone.
    logging.basicConfig(level=level, format="%(asctime)s [%(name)s] %(levelname)s: %(message)s", stream=sys.stderr)
    redact_logs(settings)  # the handler basicConfig added
    server = build_server(tools, log_level=level)
    try:
        if transport == "stdio":
            # The SDK points fd 1 at stderr while it serves: stray prints cannot corrupt the protocol.
            anyio.run(server.run_stdio_async)
        else:
            anyio.run(_serve_http, server, host, port, level, token,
                      [*config.server_allowed_hosts, *allowed_hosts], config.server_rate_limit)
    finally:
        tools.close()


def add_listen_options(parser: argparse.ArgumentParser, *, port: int, http: str = "") -> None:
    """``--host``, ``--port`` and the access options, shared by ``scrapy mcp`` and ``scrapy serve``; *http*
    prefixes the help of those that apply to HTTP only."""
    parser.add_argument("--host", default="127.0.0.1",
                        help=f"{http}the address to listen on (default 127.0.0.1; another needs ${TOKEN_ENV})")
    parser.add_argument("--port", type=int, default=port, help=f"{http}the port (default {port}; 0 picks a free one)")
    parser.add_argument("--allow-folder", action="append", default=[], metavar="DIR",
                        help="a folder clients may register as a file: source (repeatable; default none)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help=f"{http}a Host header name to answer besides the bound address (repeatable)")
    parser.add_argument("--token-file", metavar="FILE",
                        help=f"{http}read the token clients must send from FILE (default ${TOKEN_ENV})")


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """``--transport``, ``--host``, ``--port`` and the access options: shared by ``scrapy mcp`` and
    ``docscraper-mcp``."""
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio",
                        help="stdio (default: the client spawns the server) or http (streamable HTTP)")
    add_listen_options(parser, port=DEFAULT_PORT, http="http: ")


#: what :class:`docscraper.ops.cli.ServerCommand` calls
add_options = add_server_options


def serve_options(opts: argparse.Namespace) -> dict[str, Any]:
    """:func:`serve`'s keyword arguments from the options of :func:`add_server_options`."""
    return {"transport": opts.transport, "host": opts.host, "port": opts.port, "allow_folders": opts.allow_folder,
            "allowed_hosts": opts.allowed_host, "token_file": opts.token_file}


def console_main(argv: Sequence[str] | None, *, prog: str, description: str,
                 add_options: Callable[[argparse.ArgumentParser], None],
                 run: Callable[[BaseSettings, argparse.Namespace], None]) -> int:
    """A server's console script (``docscraper-mcp``, ``docscraper-serve``): its options (*add_options*), ``-s
    NAME=VALUE`` settings over the project's (``scrapy.cfg`` found from the current folder, or
    ``SCRAPY_SETTINGS_MODULE``), then *run*. Exit status 2 for bad usage or settings, 1 when the port cannot be
    bound, 0 when stopped."""
    from scrapy.utils.project import get_project_settings

    from docscraper.ops.cli import one_line_errors

    parser = argparse.ArgumentParser(prog=prog, description=description)
    one_line_errors(parser)  # bad usage: one error line, exit status 2, as every docscraper command
    add_options(parser)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting (repeatable); also passed on to the crawls it starts")
    opts = parser.parse_args(argv)
    if not 0 <= opts.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, got {opts.port}")
    settings = get_project_settings()
    if settings.get("COMMANDS_MODULE") != "docscraper.commands":
        print(f"error: docscraper's settings not found: run {prog} from the project root (where "
              "scrapy.cfg is), or set SCRAPY_SETTINGS_MODULE", file=sys.stderr)
        return 2
    for pair in opts.set:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            parser.error(f"-s takes NAME=VALUE, got {pair!r}")
        settings.set(name, value, priority="cmdline")
    try:
        run(settings, opts)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot serve on {opts.host}:{opts.port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``docscraper-mcp`` console script (:func:`console_main`)."""
    return console_main(argv, prog="docscraper-mcp", description="docscraper's MCP server",
                        add_options=add_server_options,
                        run=lambda settings, opts: serve(settings, **serve_options(opts)))


if __name__ == "__main__":
    sys.exit(main())
