"""The dashboard's pages and JSON API (Starlette routes), for :mod:`docscraper.ops.server`.

Pages are rendered on the server from Jinja2 templates (``ops/templates``) with autoescaping on, so a page title
or a chunk that holds HTML is shown as text; every form works without JavaScript, and one small script
(``ops/static/live.js``) refreshes the crawls' progress from ``/api/status``. A form that changes something
carries the CSRF token (:class:`Access`); a bearer-token client of the API needs none. The data comes from the
operations the commands use (:mod:`docscraper.ops.sources`, :mod:`docscraper.ops.launch`,
:mod:`docscraper.ops.dashboard`, :mod:`docscraper.ops.verify`).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from docscraper import __version__
from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.progress import format_duration, format_time
from docscraper.ops import dashboard
from docscraper.ops.launch import start_crawl
from docscraper.ops.mcp_server import DocsTools
from docscraper.ops.schedules import ScheduleLoop, schedule_states
from docscraper.ops.sources import (
    SourceArgumentError,
    SourceError,
    add_source,
    get_source_info,
    list_libraries,
    probe_source,
    remove_source,
    request_reindex,
    update_source,
)
from docscraper.ops.status import crawl_status
from docscraper.ops.verify import VerifyError, verify
from docscraper.storage.state import StateError

__all__ = ["Access", "App", "routes", "templates"]

HERE = Path(__file__).parent
#: What a page's "done" notice may say (the query names the notice; its words are ours, never the URL's).
NOTICES = {
    "added": "Source added. Start its first crawl below.",
    "crawl": "Crawl started in the background: follow it on the Crawls page.",
    "full": "Full recrawl started in the background: follow it on the Crawls page.",
    "due": "Due recrawl started in the background: follow it on the Crawls page.",
    "schedule": "Schedule saved.",
    "removed": "Source removed, with its pages, chunks and reports.",
    "loggedout": "Logged out.",
}
CRAWL_MODES = {"incremental": {}, "full": {"full": True}, "due": {"due": True}}


class Access:
    """The server's token and what is derived from it: the session cookie's value and the CSRF token (HMACs of the
    token: they hold across restarts with a configured token, and reveal nothing of it)."""

    def __init__(self, token: str, *, port: int) -> None:
        key = token.encode()
        self.token_digest = hashlib.sha256(key).digest()
        self.session = hmac.new(key, b"docscraper dashboard session", hashlib.sha256).hexdigest()
        self.csrf = hmac.new(key, b"docscraper dashboard csrf", hashlib.sha256).hexdigest()
        # a cookie is shared by every port of a host: one name per port
        self.cookie = f"docscraper_session_{port}"

    def token_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(hashlib.sha256(str(given).strip().encode()).digest(),
                                                   self.token_digest)

    def session_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given).encode(), self.session.encode())

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given).encode(), self.csrf.encode())


@dataclasses.dataclass
class App:
    """What the handlers share. *trust_hosts*: whether a URL typed on the dashboard has its own host trusted as
    ``sources add`` trusts it (a server bound to loopback: its user is on the machine); off loopback a loopback or
    private address needs ``DOCSCRAPER_SSRF_ALLOWED_HOSTS``, as for an MCP client."""

    config: DocscraperConfig
    tools: DocsTools
    access: Access
    scheduler: ScheduleLoop | None
    crawl_settings: dict[str, str]
    trust_hosts: bool
    digests: dashboard.ReportDigests = dataclasses.field(default_factory=dashboard.ReportDigests)


def templates() -> Any:
    """The Jinja2 templates, autoescaping on."""
    import jinja2
    from starlette.templating import Jinja2Templates

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             )
    env.filters["when"] = format_time
    env.filters["size"] = _size
    env.filters["duration"] = _duration
    env.filters["href"] = _href
    return Jinja2Templates(env=env)


def _href(value: Any) -> str:
    """A link target the page may hold: an http(s) or file URL; anything else (``javascript:``...) becomes ``#``."""
    text = str(value or "")
    return text if text.split(":", 1)[0].lower() in ("http", "https", "file") and ":" in text else "#"


def _size(value: Any) -> str:
    if value is None:
        return "-"
    number = float(value)
    for unit in ("B", "kB", "MB"):
        if number < 1000:
            return f"{number:.0f} {unit}" if unit == "B" else f"{number:.1f} {unit}"
        number /= 1000
    return f"{number:.1f} GB"


def _duration(value: Any) -> str:
    return "-" if value is None else format_duration(float(value))


class Refused(Exception):
    """A request the handler refuses: *status* and the sentence the user reads."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _lines(value: str | None) -> list[str]:
    return [line.strip() for line in (value or "").replace(",", "\n").splitlines() if line.strip()]


def _number(form: dict[str, str], key: str) -> int | None:
    text = (form.get(key) or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise SourceArgumentError(f"{key.replace('_', ' ')} must be a whole number, got {text!r}") from None


def routes(app: App) -> list[Any]:
    """The dashboard's and the API's routes over *app*."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    pages = templates()
    config = app.config

    async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(fn, *args, **kwargs)

    def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        done = request.query_params.get("done")
        return pages.TemplateResponse(request, name, {
            "csrf": app.access.csrf, "notice": NOTICES.get(done or ""), "error": None, "version": __version__,
            **context}, status_code=status)

    async def form(request: Request) -> dict[str, str]:
        """The request's form (or JSON object), its CSRF token checked unless the client sent the bearer token."""
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = await request.json()
            except ValueError:
                raise Refused(400, "the body is not JSON") from None
            data = {str(k): "\n".join(map(str, v)) if isinstance(v, list) else "" if v is None else str(v)
                    for k, v in (body if isinstance(body, dict) else {}).items()}
        else:
            raw = await request.form()
            data = {key: "\n".join(str(v) for v in raw.getlist(key)) for key in raw}
        given = data.get("csrf") or request.headers.get("x-csrf-token")
        if request.scope["state"].get("auth") != "bearer" and not app.access.csrf_ok(given):
            raise Refused(403, "this form has expired or did not come from this dashboard: reload the page and "
                               "send it again")
        return data

    async def start(request: Request, name: str) -> tuple[str, dict[str, Any]]:
        """Start the crawl a form asks for (``mode``: incremental, full or due), as the MCP tool does."""
        values = await form(request)
        mode = values.get("mode") or "incremental"
        if mode not in CRAWL_MODES:
            raise Refused(400, f"mode must be one of {', '.join(CRAWL_MODES)}, got {mode!r}")
        started = await call(start_crawl, config, name, settings=app.crawl_settings,
                             max_running=config.server_max_crawls or None, **CRAWL_MODES[mode])
        return mode, started

    def failure(request: Request, exc: Exception) -> tuple[int, str]:
        if isinstance(exc, Refused):
            return exc.status, str(exc)
        if isinstance(exc, VerifyError):
            return 400, str(exc)
        if isinstance(exc, LookupError):
            text = str(exc.args[0]) if exc.args else str(exc)
            return 404, app.tools.message(text)
        text = app.tools.message(str(exc))
        if isinstance(exc, SourceError) and text.startswith("unknown source"):
            return 404, text
        return 400, text

    handled = (Refused, SourceError, ValueError, LookupError, StateError, ConfigError, VerifyError)

    # -- pages ------------------------------------------------------------------------------------------------

    async def sources_page(request: Request, *, error: str | None = None, probe: dict[str, Any] | None = None,
                           values: dict[str, str] | None = None, status: int = 200) -> Response:
        rows = app.tools.answer(await call(dashboard.sources_overview, config))
        return render(request, "sources.html", {"sources": rows, "error": error, "probe": probe,
                                                "values": values or {}, "scheduler": _scheduler(app),
                                                "references": list(config.server_credentials)}, status)

    async def index(request: Request) -> Response:
        return await sources_page(request)

    async def add(request: Request) -> Response:
        values: dict[str, str] = {}
        try:
            values = await form(request)
            url = values.get("url", "").strip()
            app.tools.check_client_url(url, "url")
            if values.get("action") == "probe":
                probe = await call(probe_source, config, url, timeout=app.tools.probe_timeout,
                                   user_agent=app.tools.user_agent, trust_host=app.trust_hosts)
                return await sources_page(request, probe=app.tools.answer(probe.as_dict()), values=values)
            info, _ = await call(
                add_source, config, values.get("name", "").strip(), url, allow=_lines(values.get("allow")),
                block=_lines(values.get("block")), max_depth=_number(values, "max_depth"),
                max_pages=_number(values, "max_pages"), timeout=app.tools.probe_timeout,
                user_agent=app.tools.user_agent, trust_host=app.trust_hosts,
                library=values.get("library", "").strip() or None, version=values.get("version", "").strip() or None,
                latest=bool(values.get("latest")), schedule=values.get("schedule", "").strip() or None,
                credentials=app.tools.client_credentials(
                    {kind: values.get(f"auth_{kind}") or None for kind in ("headers", "basic", "cookies")}))
        except handled as exc:
            status, text = failure(request, exc)
            return await sources_page(request, error=text, values=values, status=status)
        return RedirectResponse(f"/sources/{info.name}?done=added", 303)

    async def source_page(request: Request, *, error: str | None = None, status: int = 200) -> Response:
        name = request.path_params["name"]
        try:
            data = await call(_source_data, app, name)
        except handled as exc:
            code, text = failure(request, exc)
            return render(request, "error.html", {"error": text}, code)
        return render(request, "source.html", {**data, "error": error}, status)

    async def crawl(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            mode, _ = await start(request, name)
        except handled as exc:
            status, text = failure(request, exc)
            return await source_page(request, error=text, status=status)
        return RedirectResponse(f"/sources/{name}?done={'crawl' if mode == 'incremental' else mode}", 303)

    async def reindex(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            values = await form(request)
            marked = await call(request_reindex, config, name, values.get("pattern", "").strip())
        except handled as exc:
            status, text = failure(request, exc)
            return await source_page(request, error=text, status=status)
        data = await call(_source_data, app, name)
        return render(request, "source.html", {**data, "marked": marked})

    async def schedule(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            values = await form(request)
            await call(update_source, config, name, schedule=values.get("schedule", "").strip() or "none")
        except handled as exc:
            status, text = failure(request, exc)
            return await source_page(request, error=text, status=status)
        return RedirectResponse(f"/sources/{name}?done=schedule", 303)

    async def remove_page(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            info = await call(get_source_info, config, name)
        except handled as exc:
            code, text = failure(request, exc)
            return render(request, "error.html", {"error": text}, code)
        return render(request, "remove.html", {"source": app.tools.answer(info.as_dict())})

    async def remove(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            values = await form(request)
            if values.get("confirm", "").strip() != name:
                raise Refused(400, f"type the source's name, {name}, to confirm its removal")
            await call(remove_source, config, name)
        except handled as exc:
            status, text = failure(request, exc)
            if isinstance(exc, Refused) and status == 400:
                info = await call(get_source_info, config, name)
                return render(request, "remove.html", {"source": app.tools.answer(info.as_dict()), "error": text},
                              400)
            return render(request, "error.html", {"error": text}, status)
        return RedirectResponse("/?done=removed", 303)

    async def run_page(request: Request) -> Response:
        name, run_id = request.path_params["name"], request.path_params["run_id"]
        query = request.query_params
        try:
            offset = max(0, int(query.get("offset") or 0))
            report = await call(dashboard.run_report, config, name, run_id, status=query.get("status") or None,
                                reason=query.get("reason") or None, offset=offset)
        except handled as exc:
            code, text = failure(request, exc)
            return render(request, "error.html", {"error": text}, code)

        def page_link(at: int) -> str:
            kept = {k: v for k, v in query.items() if k in ("status", "reason") and v}
            return f"?{urlencode({**kept, 'offset': at})}"

        more = report["offset"] + report["limit"] < report["total"]
        return render(request, "run.html", {
            "name": name, "report": app.tools.answer(report), "status": query.get("status") or "",
            "reason": query.get("reason") or "",
            "next_link": page_link(report["offset"] + report["limit"]) if more else None,
            "prev_link": page_link(max(0, report["offset"] - report["limit"])) if report["offset"] else None})

    async def crawls_page(request: Request) -> Response:
        return render(request, "crawls.html", await call(_status_data, app))

    async def search_page(request: Request) -> Response:
        query = request.query_params
        question = (query.get("q") or "").strip()
        chosen = {key: (query.get(key) or "").strip() for key in ("source", "library", "version")}
        libraries = await call(list_libraries, config)
        context: dict[str, Any] = {"q": question, **chosen, "all_versions": bool(query.get("all_versions")),
                                   "libraries": libraries, "results": None}
        if question:
            try:
                answer = await call(app.tools.search_docs, question, k=_k(query.get("k")),
                                    source=chosen["source"] or None, library=chosen["library"] or None,
                                    version=chosen["version"] or None, all_versions=context["all_versions"],
                                    with_images=True)
                context["results"] = answer["results"]
            except Exception as exc:  # the tools' errors (ToolError) carry the sentence to show
                return render(request, "search.html", {**context, "error": _tool_message(app, exc)}, 400)
        return render(request, "search.html", context)

    async def verify_page(request: Request) -> Response:
        name = (request.query_params.get("source") or "").strip() or None
        context: dict[str, Any] = {"source": name, "result": None, "running": [], "repaired": False}
        if request.query_params.get("run"):
            try:
                result, running = await call(verify, config, name)
            except handled as exc:
                code, text = failure(request, exc)
                return render(request, "verify.html", {**context, "error": text}, code)
            context.update(result=app.tools.answer(result.as_dict()), running=running)
        return render(request, "verify.html", context)

    async def repair(request: Request) -> Response:
        name = None
        try:
            values = await form(request)
            name = values.get("source", "").strip() or None
            if values.get("confirm") != "yes":
                raise Refused(400, "tick the box to confirm the repair")
            result, running = await call(verify, config, name, fix=True)
        except handled as exc:
            code, text = failure(request, exc)
            return render(request, "verify.html", {"source": name, "result": None, "running": [], "repaired": False,
                                                   "error": text}, code)
        return render(request, "verify.html", {"source": name, "result": app.tools.answer(result.as_dict()),
                                               "running": running, "repaired": True})

    # -- logging in ----------------------------------------------------------------------------------------------

    def _next(value: str | None) -> str:
        # only a path of this server: never //host or a scheme
        return value if value and value.startswith("/") and not value.startswith("//") and "\\" not in value \
            else "/"

    def logged_in(request: Request, target: str) -> Response:
        response = RedirectResponse(target, 303)
        # Secure when the browser reached the server over HTTPS (a TLS proxy in front: uvicorn reads its
        # X-Forwarded-Proto from the proxy addresses it trusts); a Secure cookie is never sent over plain HTTP
        response.set_cookie(app.access.cookie, app.access.session, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return response

    async def login(request: Request) -> Response:
        target = _next(request.query_params.get("next"))
        given = request.query_params.get("token")
        if request.method == "POST":
            raw = await request.form()
            given, target = str(raw.get("token") or ""), _next(str(raw.get("next") or ""))
        if given is not None:
            if app.access.token_ok(given):
                return logged_in(request, target)
            return render(request, "login.html", {"next": target, "error": "that is not this server's token"}, 401)
        return render(request, "login.html", {"next": target})

    async def logout(request: Request) -> Response:
        try:
            await form(request)
        except Refused as exc:
            return render(request, "error.html", {"error": str(exc)}, exc.status)
        response = RedirectResponse("/login?done=loggedout", 303)
        response.delete_cookie(app.access.cookie, path="/")
        return response

    # -- the JSON API ----------------------------------------------------------------------------------------

    def api_error(request: Request, exc: Exception) -> JSONResponse:
        status, text = failure(request, exc)
        return JSONResponse({"error": text}, status)

    async def api_sources(request: Request) -> Response:
        try:
            return JSONResponse({"sources": app.tools.answer(await call(dashboard.sources_overview, config))})
        except handled as exc:
            return api_error(request, exc)

    async def api_source(request: Request) -> Response:
        try:
            data = await call(_source_data, app, request.path_params["name"])
        except handled as exc:
            return api_error(request, exc)
        data.pop("charts", None)
        return JSONResponse(data)

    async def api_run(request: Request) -> Response:
        query = request.query_params
        try:
            report = await call(dashboard.run_report, config, request.path_params["name"],
                                request.path_params["run_id"], status=query.get("status") or None,
                                reason=query.get("reason") or None, offset=max(0, int(query.get("offset") or 0)))
        except handled as exc:
            return api_error(request, exc)
        return JSONResponse(app.tools.answer(report))

    async def api_status(request: Request) -> Response:
        try:
            return JSONResponse(await call(_status_data, app))
        except handled as exc:
            return api_error(request, exc)

    async def api_crawl(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            _, started = await start(request, name)
        except handled as exc:
            return api_error(request, exc)
        return JSONResponse(app.tools.answer(started), 202)

    async def api_search(request: Request) -> Response:
        query = request.query_params
        try:
            answer = await call(app.tools.search_docs, query.get("q") or "", k=_k(query.get("k")),
                                source=query.get("source") or None, library=query.get("library") or None,
                                version=query.get("version") or None, all_versions=bool(query.get("all_versions")),
                                with_images=True)
        except Exception as exc:
            return JSONResponse({"error": _tool_message(app, exc)}, 400)
        return JSONResponse(answer)

    async def api_libraries(request: Request) -> Response:
        return JSONResponse(await call(app.tools.list_libraries))

    return [
        Route("/", index),
        Route("/sources", add, methods=["POST"]),
        Route("/sources/{name}", source_page),
        Route("/sources/{name}/crawl", crawl, methods=["POST"]),
        Route("/sources/{name}/reindex", reindex, methods=["POST"]),
        Route("/sources/{name}/schedule", schedule, methods=["POST"]),
        Route("/sources/{name}/remove", remove_page),
        Route("/sources/{name}/remove", remove, methods=["POST"]),
        Route("/sources/{name}/runs/{run_id}", run_page),
        Route("/crawls", crawls_page),
        Route("/search", search_page),
        Route("/verify", verify_page),
        Route("/verify", repair, methods=["POST"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/api/sources", api_sources),
        Route("/api/sources/{name}", api_source),
        Route("/api/sources/{name}/crawl", api_crawl, methods=["POST"]),
        Route("/api/sources/{name}/runs/{run_id}", api_run),
        Route("/api/status", api_status),
        Route("/api/search", api_search),
        Route("/api/libraries", api_libraries),
    ]


def _k(value: str | None) -> int:
    try:
        return min(50, max(1, int(value or 10)))
    except ValueError:
        return 10


def _tool_message(app: App, exc: Exception) -> str:
    from mcp.server.mcpserver.exceptions import ToolError

    if isinstance(exc, ToolError):
        return str(exc)
    raise exc


def _scheduler(app: App) -> dict[str, Any] | None:
    return app.scheduler.as_dict() if app.scheduler is not None else None


def _source_data(app: App, name: str) -> dict[str, Any]:
    """A source's page: what it is, its runs (newest first), their charts, and whether a crawl of it runs."""
    info = get_source_info(app.config, name)
    overview = next((row for row in dashboard.sources_overview(app.config) if row["name"] == name), None)
    history = dashboard.run_history(app.config, name, digests=app.digests)
    return app.tools.answer({
        "source": info.as_dict(), "overview": overview, "history": [run.as_dict() for run in history],
        # shown as images: pygal's SVG carries a script of its own, which an image never runs
        "charts": {key: "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
                   for key, svg in dashboard.history_charts(history).items()},
        "marked": None,
    })


def _status_data(app: App) -> dict[str, Any]:
    """The crawls' progress (the rows ``scrapy status`` reads), the scheduled sources, and the scheduler's last
    rounds."""
    return app.tools.answer({
        "runs": [status.as_dict() for status in crawl_status(app.config)],
        "schedules": list(schedule_states(app.config).values()),
        "scheduler": _scheduler(app),
    })
