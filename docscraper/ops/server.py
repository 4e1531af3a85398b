"""``scrapy serve``: one long-running process with the web dashboard, its JSON API, the MCP endpoint and the scheduler
of recrawls.

:func:`build_app` serves the dashboard (server-rendered Jinja2 pages, their data from :mod:`docscraper.ops.dashboard`),
the JSON API under ``/api/``, the MCP endpoint at ``/mcp`` (the tools of :mod:`docscraper.ops.mcp_server`) and
``/static/``, behind :class:`ServerGate`: the Host header must name the server (421), the dashboard and the API need the
token (``Authorization: Bearer TOKEN``, or the session cookie ``/login`` sets), and a state-changing request made with
the cookie needs the page's CSRF token and, when the browser sends one, an ``Origin`` naming this server. Crawls start
as the MCP tools start them (:func:`docscraper.ops.launch.start_crawl`), never in this process; the scheduler calls
:func:`docscraper.ops.schedules.start_due` every ``--tick`` seconds. The token, and what a page may show:
docs/howto/server.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import sys
from collections.abc import AsyncIterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from scrapy.settings import BaseSettings

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.ops.mcp_server import (
    TOKEN_ENV,
    DocsTools,
    RateLimit,
    add_listen_options,
    bind_socket,
    build_server,
    cmdline_settings,
    console_main,
    host_names,
    is_loopback,
    server_config,
    server_token,
)
from docscraper.ops.schedules import ScheduleLoop
from docscraper.ops.web import Access, App, routes
from docscraper.secrets import redact_logs

__all__ = ["DEFAULT_PORT", "DEFAULT_TICK", "ServerGate", "add_options", "build_app", "main", "serve", "serve_options"]

logger = logging.getLogger(__name__)

#: ``scrapy serve``'s default port (``scrapy mcp`` takes 8765).
DEFAULT_PORT = 8766
#: How often the scheduler looks for due recrawls, in seconds.
DEFAULT_TICK = 30.0
HERE = Path(__file__).parent
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Every dashboard answer: no framing (clickjacking), no sniffing, no referrer to other sites (with "no-referrer" a
#: browser sends "Origin: null" with its own forms, which the Origin check refuses), scripts
#: and stylesheets from this server only; images also from data: URIs (the charts) and the sites' own (search).
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; "
                                 b"img-src 'self' data: http: https:; frame-ancestors 'none'; form-action 'self'; "
                                 b"base-uri 'none'; object-src 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


def _bearer(headers: Any) -> str | None:
    scheme, _, given = str(headers.get("authorization", "")).partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


class ServerGate:
    """ASGI middleware before everything: the Host header, the rate limit, the token (bearer or session cookie) and,
    for a state-changing request made with the cookie, the Origin. The CSRF token itself is checked by the handler
    that reads the form. Adds :data:`SECURITY_HEADERS` to the dashboard's answers."""

    def __init__(self, app: Any, *, hosts: frozenset[str], access: Access, mcp_path: str, mcp_token: bool,
                 rate: int) -> None:
        self.app = app
        self.hosts = hosts
        self.access = access
        self.mcp_path = mcp_path
        self.mcp_token = mcp_token
        self.limit = RateLimit(rate) if rate else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from starlette.requests import Request
        from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse

        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = request.headers.get("host", "").strip().lower()
        if host not in self.hosts:
            await PlainTextResponse("this server does not answer to that Host header\n", 421)(scope, receive, send)
            return
        if self.limit is not None:
            wait = self.limit.wait(str((scope.get("client") or ("?",))[0]))
            if wait:
                await PlainTextResponse("too many requests; slow down\n", 429,
                                        {"retry-after": str(int(wait) + 1)})(scope, receive, send)
                return
        path = str(scope.get("path", ""))
        given = _bearer(request.headers)
        if path == self.mcp_path or path.startswith(self.mcp_path + "/"):
            if self.mcp_token and not self.access.token_ok(given):
                await PlainTextResponse("a token is required: Authorization: Bearer TOKEN\n", 401,
                                        {"www-authenticate": 'Bearer realm="docscraper"'})(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", "GET")).upper()
        how = ("bearer" if self.access.token_ok(given)
               else "session" if self.access.session_ok(request.cookies.get(self.access.cookie)) else None)
        scope.setdefault("state", {})["auth"] = how

        async def guarded_send(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            await send(message)

        if method not in SAFE_METHODS and how != "bearer" and not _same_origin(request.headers, host):
            await PlainTextResponse("cross-site request refused\n", 403)(scope, receive, guarded_send)
            return
        if how is None and not (path == "/login" or path.startswith("/static/")):
            if path.startswith("/api/") or method not in SAFE_METHODS:
                await JSONResponse({"error": "a token is required: Authorization: Bearer TOKEN, or log in at /login"},
                                   401, {"www-authenticate": 'Bearer realm="docscraper"'})(scope, receive, guarded_send)
            else:
                target = path + (f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else "")
                await RedirectResponse(f"/login?next={quote(target, safe='')}", 303)(scope, receive, guarded_send)
            return
        await self.app(scope, receive, guarded_send)


def _same_origin(headers: Any, host: str) -> bool:
    """Whether a browser's request comes from this server's own pages: ``Sec-Fetch-Site`` (when sent) is
    ``same-origin`` or ``none``, and ``Origin`` (when sent) names this host. Clients that send neither are not
    browsers acting for another site."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and (parts.netloc or "").lower() == host


def build_app(state: App, mcp: Any, *, hosts: frozenset[str], mcp_token: bool) -> Any:
    """The ASGI application: the dashboard's routes, the API, ``/static``, the MCP endpoint, behind
    :class:`ServerGate`. Its lifespan runs the MCP session manager and the scheduler."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    # the SDK's own checks too: the Host and Origin an MCP request names
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts),
        allowed_origins=sorted(f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")))
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            task = asyncio.create_task(state.scheduler.run()) if state.scheduler is not None else None
            try:
                yield
            finally:
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    table = [*routes(state), Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
              Mount("/", app=mcp_app)]
    app = Starlette(routes=table, lifespan=lifespan)
    return ServerGate(app, hosts=hosts, access=state.access, mcp_path="/mcp", mcp_token=mcp_token,
                      rate=state.config.server_rate_limit)


def serve(settings: BaseSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          allow_folders: Sequence[str] = (), allowed_hosts: Sequence[str] = (), token_file: str | None = None,
          tick: float = DEFAULT_TICK, schedule: bool = True) -> None:
    """Run the server until the process is stopped. Raises :class:`~docscraper.config.ConfigError` for bad settings
    or a missing token off loopback, :class:`OSError` when the port cannot be bound."""
    import anyio

    config = server_config(settings, allow_folders)
    if tick <= 0:
        raise ConfigError(f"--tick must be more than 0 seconds, got {tick}")
    token = server_token(token_file)
    if not is_loopback(host) and token is None:
        raise ConfigError(f"binding {host} (not loopback) needs a token: set {TOKEN_ENV} in the server's "
                          "environment or pass --token-file FILE")
    configured = token is not None
    token = token or secrets.token_urlsafe(24)
    redactor = redact_logs(settings)
    redactor.add([token])
    crawl_settings = cmdline_settings(settings)
    tools = DocsTools(config, crawl_settings=crawl_settings,
                      probe_timeout=min(float(settings.getfloat("DOWNLOAD_TIMEOUT", 30)), 30.0),
                      user_agent=config.user_agent(settings), redactor=redactor)
    level = str(settings.get("LOG_LEVEL") or "INFO").upper()
    logging.basicConfig(level=level if level in logging.getLevelNamesMapping() else "INFO",
                        format="%(asctime)s [%(name)s] %(levelname)s: %(message)s", stream=sys.stderr)
    redact_logs(settings)
    try:
        anyio.run(_serve, config, tools, token, configured, host, port, [*config.server_allowed_hosts, *allowed_hosts],
                  tick if schedule else None, crawl_settings)
    finally:
        tools.close()


async def _serve(config: DocscraperConfig, tools: DocsTools, token: str, configured: bool, host: str, port: int,
                 extra_hosts: Sequence[str], tick: float | None, crawl_settings: dict[str, str]) -> None:
    import uvicorn
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    hosts = host_names(host, bound, extra_hosts)
    access = Access(token, port=bound)
    scheduler = ScheduleLoop(config, tick=tick, settings=crawl_settings) if tick else None
    mcp = build_server(tools, log_level="WARNING")
    state = App(config, tools, access, scheduler, crawl_settings, trust_hosts=is_loopback(host))
    app = build_app(state, mcp, hosts=hosts, mcp_token=configured)
    where = f"[{host}]" if ":" in host else host
    base = f"http://{'127.0.0.1' if where in ('0.0.0.0', '[::]') else where}:{bound}"
    print(f"docscraper server: dashboard at {base}/ , MCP at {base}/mcp"
          + (" (token required)" if configured else ""), file=sys.stderr)
    if configured:
        print("log in with the server's token", file=sys.stderr)
    else:
        print(f"log in at {base}/login?token={token}", file=sys.stderr)
    if scheduler is None:
        print("scheduled recrawls are off (--no-schedule)", file=sys.stderr)
    sys.stderr.flush()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


def add_options(parser: argparse.ArgumentParser) -> None:
    """``scrapy serve``'s and ``docscraper-serve``'s options."""
    add_listen_options(parser, port=DEFAULT_PORT)
    parser.add_argument("--tick", type=float, default=DEFAULT_TICK, metavar="SECONDS",
                        help=f"how often to look for due scheduled recrawls (default {DEFAULT_TICK:g})")
    parser.add_argument("--no-schedule", action="store_true", help="start no scheduled recrawls")


def serve_options(opts: argparse.Namespace) -> dict[str, Any]:
    return {"host": opts.host, "port": opts.port, "allow_folders": opts.allow_folder,
            "allowed_hosts": opts.allowed_host, "token_file": opts.token_file, "tick": opts.tick,
            "schedule": not opts.no_schedule}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``docscraper-serve`` console script (:func:`~docscraper.ops.mcp_server.console_main`)."""
    return console_main(argv, prog="docscraper-serve", description="docscraper's server and dashboard",
                        add_options=add_options, run=lambda settings, opts: serve(settings, **serve_options(opts)))


if __name__ == "__main__":
    sys.exit(main())
