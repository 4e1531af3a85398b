"""A loopback HTTP server for the fixture documentation site under ``tests/site``.

The crawler's tests and ``make demo`` crawl this server instead of the internet. It serves static files
from a root folder and adds the few dynamic behaviours a real documentation host has:

* ``/path/`` serves ``/path/index.html``; ``/path`` where ``path`` is a folder answers 301 to ``/path/``.
* ``__BASE__`` in ``.html``, ``.xml``, ``.txt`` and ``.md`` files is replaced by :attr:`DocsServer.base_url`
  at serve time, so sitemaps and ``llms.txt`` can hold absolute URLs although the port is chosen by the OS.
* ``X.gz`` that does not exist on disk while ``X`` does is served as the gzip of (substituted) ``X``, with
  ``Content-Type: application/gzip`` (a ``.gz`` file, not a ``Content-Encoding``).
* Every file response carries a strong ``ETag`` (hash of the bytes sent) and ``Last-Modified`` (file
  mtime); matching ``If-None-Match`` / ``If-Modified-Since`` get 304.
* Query strings are ignored when looking a file up.
* ``_routes.json`` in the root maps a path to a canned answer (redirects, 410, 500, slow pages): ``{"/p":
  {"status": 301, "location": "__BASE__/q", "body": "...", "headers": {...}, "delay": 0.5}}``. It is read
  on every request, so a test can edit the routes of its private copy of the site (:func:`copy_site`).
  ``"times": N`` makes a route answer only the first N requests for its path; later ones are served as if
  the route were not there (a 429 once, then the page from disk). Uses are counted per server.
  Hostile bodies: ``"body_encoding": "cp1252"`` sends the body text in that Python codec instead of
  UTF-8 (bytes that disagree with the declared charset); ``"repeat": N`` sends the body N times over;
  ``"gzip": true`` sends it gzip-compressed with ``Content-Encoding: gzip``, compressed as a stream, so a
  large ``repeat`` makes a decompression bomb of a few kilobytes without holding it in memory;
  ``"no_length": true`` sends no ``Content-Length`` (the body ends when the connection closes), so a
  client learns how big it is only while reading it.
* ``_routes.json``, dot files and anything outside the root are never served.
* :meth:`DocsServer.hold` makes requests for a path wait, unanswered, until :meth:`DocsServer.release` (or 60
  seconds): a test can keep a crawl from finishing until it has seen what it waits for.

Every request is recorded in :attr:`DocsServer.requests` so tests can assert what was (not) fetched, and
its arrival time (``time.monotonic()``) at the same index of :attr:`DocsServer.request_times`.
Nothing is logged per request.

Run ``python -m tests.mockserver [--port 8000] [--root tests/site]`` to serve the site in the foreground.
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import gzip
import hashlib
import html
import json
import logging
import posixpath
import shutil
import sys
import threading
import time
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["SITE_ROOT", "DocsServer", "copy_site", "main"]

logger = logging.getLogger(__name__)

#: The fixture site shipped with the tests.
SITE_ROOT = Path(__file__).resolve().parent / "site"

#: The placeholder replaced by the server's base URL in text files.
BASE_PLACEHOLDER = "__BASE__"

ROUTES_FILE = "_routes.json"

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".gz": "application/gzip",
    ".zip": "application/zip",
}
_TEMPLATED_SUFFIXES = frozenset({".html", ".htm", ".xml", ".txt", ".md"})


def copy_site(dest: Path) -> Path:
    """Copy the fixture site to *dest* (created if needed) and return *dest*.

    Tests that edit, add or delete pages serve their own copy: ``DocsServer(copy_site(tmp_path / "site"))``.
    """
    dest = Path(dest)
    shutil.copytree(SITE_ROOT, dest, dirs_exist_ok=True)
    return dest


def _content_type(name: str) -> str:
    return _CONTENT_TYPES.get(posixpath.splitext(name)[1].lower(), "application/octet-stream")


def _error_page(status: int, detail: str = "") -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:  # a route may use any code
        phrase = "Status"
    text = html.escape(detail or phrase)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{status} {phrase}</title>'
        f"</head><body><h1>{status} {phrase}</h1><p>{text}</p></body></html>\n"
    ).encode()


def _gzip_repeated(data: bytes, times: int) -> bytes:
    """gzip of *data* repeated *times*, compressed piece by piece: never more than ~1 MiB in memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip header and trailer
    out = []
    per_piece = max(1, (1 << 20) // max(1, len(data)))
    piece = data * per_piece
    full, rest = divmod(times, per_piece)
    for _ in range(full):
        out.append(compressor.compress(piece))
    out.append(compressor.compress(data * rest))
    out.append(compressor.flush())
    return b"".join(out)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], docs: DocsServer) -> None:
        self.docs = docs
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-response (a cancelled crawl) is not an error worth a traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "DocsMockServer/1.0"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- entry points -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record()
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._record()
        self._serve(head=True)

    def do_POST(self) -> None:
        self._record()
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, _error_page(405), head=False, headers={"Allow": "GET, HEAD"})

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

    # --- helpers ------------------------------------------------------------------------------------

    def _record(self) -> None:
        self.server.docs._record(self.command, self.path, dict(self.headers.items()))

    def _send(
        self,
        status: int,
        body: bytes,
        *,
        head: bool,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        length: bool = True,
    ) -> None:
        self.send_response(status)
        extra = dict(headers or {})
        lowered = {k.lower() for k in extra}
        if status != HTTPStatus.NOT_MODIFIED:
            if "content-type" not in lowered:
                self.send_header("Content-Type", content_type)
            if length and "content-length" not in lowered:
                self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if not head and status != HTTPStatus.NOT_MODIFIED and body:
            self.wfile.write(body)

    def _substitute(self, data: bytes) -> bytes:
        return data.replace(BASE_PLACEHOLDER.encode(), self.server.docs.base_url.encode())

    def _serve(self, *, head: bool) -> None:
        docs = self.server.docs
        split = urlsplit(self.path)
        raw_path = split.path or "/"
        path = unquote(raw_path)
        docs._wait_if_held(path)
        segments = path.split("/")
        if not path.startswith("/") or "\x00" in path or "\\" in path or any(seg in ("..", ".") for seg in segments):
            self._send(HTTPStatus.BAD_REQUEST, _error_page(400, "Invalid path."), head=head)
            return

        if not docs.authorized(self.headers):
            self._send(HTTPStatus.UNAUTHORIZED, _error_page(401, "Credentials required."), head=head,
                       headers={"WWW-Authenticate": 'Basic realm="docs"'})
            return

        route = docs._routes().get(path)
        if route is not None and docs._use_route(path, route):
            self._serve_route(route, head=head)
            return

        if path == "/" + ROUTES_FILE or any(seg.startswith(".") for seg in segments if seg):
            self._not_found(head)
            return

        target = docs.root.joinpath(*[seg for seg in segments if seg])
        try:
            target = target.resolve()
        except (OSError, RuntimeError):
            self._not_found(head)
            return
        if target != docs.root and not target.is_relative_to(docs.root):
            self._not_found(head)
            return

        if target.is_dir():
            if not path.endswith("/"):
                location = docs.base_url + raw_path + "/" + (f"?{split.query}" if split.query else "")
                body = _error_page(301, f"Moved to {location}")
                self._send(HTTPStatus.MOVED_PERMANENTLY, body, head=head, headers={"Location": location})
                return
            target = target / "index.html"

        if target.is_file():
            data = target.read_bytes()
            if target.suffix.lower() in _TEMPLATED_SUFFIXES:
                data = self._substitute(data)
            self._serve_bytes(data, _content_type(target.name), target.stat().st_mtime, head=head)
            return

        if target.suffix.lower() == ".gz":
            source = target.with_suffix("")
            if source.is_file() and source.resolve().is_relative_to(docs.root):
                data = source.read_bytes()
                if source.suffix.lower() in _TEMPLATED_SUFFIXES:
                    data = self._substitute(data)
                # mtime=0 keeps the bytes, hence the ETag, stable between requests.
                gz = gzip.compress(data, mtime=0)
                self._serve_bytes(gz, "application/gzip", source.stat().st_mtime, head=head)
                return

        self._not_found(head)

    def _not_found(self, head: bool) -> None:
        self._send(HTTPStatus.NOT_FOUND, _error_page(404, "The requested page does not exist."), head=head)

    def _serve_route(self, route: dict[str, Any], *, head: bool) -> None:
        delay = float(route.get("delay", 0) or 0)
        if delay > 0:
            time.sleep(delay)
        status = int(route.get("status", 200))
        headers = {str(k): self._substitute(str(v).encode()).decode() for k, v in route.get("headers", {}).items()}
        if "location" in route:
            headers["Location"] = self._substitute(str(route["location"]).encode()).decode()
        if "body" in route:
            text = str(route["body"]).replace(BASE_PLACEHOLDER, self.server.docs.base_url)
            body = text.encode(str(route.get("body_encoding") or "utf-8"))
        else:
            body = _error_page(status) if status != HTTPStatus.NOT_MODIFIED else b""
        repeat = int(route.get("repeat", 1) or 1)
        if route.get("gzip"):
            body = _gzip_repeated(body, repeat)
            if "content-encoding" not in {k.lower() for k in headers}:
                headers["Content-Encoding"] = "gzip"
        elif repeat > 1:
            body *= repeat
        self._send(status, body, head=head, headers=headers, length=not route.get("no_length"))

    def _serve_bytes(self, data: bytes, content_type: str, mtime: float, *, head: bool) -> None:
        etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        last_modified = email.utils.formatdate(int(mtime), usegmt=True)
        validators = {"ETag": etag, "Last-Modified": last_modified}
        if self._not_modified(etag, int(mtime)):
            self._send(HTTPStatus.NOT_MODIFIED, b"", head=head, headers=validators)
            return
        self._send(HTTPStatus.OK, data, head=head, content_type=content_type, headers=validators)

    def _not_modified(self, etag: str, mtime: int) -> bool:
        inm = self.headers.get("If-None-Match")
        if inm is not None:
            # Weak comparison, as RFC 9110 prescribes for If-None-Match.
            tags = {t.strip().removeprefix("W/") for t in inm.split(",")}
            return "*" in tags or etag in tags
        ims = self.headers.get("If-Modified-Since")
        if ims is not None:
            try:
                since = email.utils.parsedate_to_datetime(ims)
            except (TypeError, ValueError, IndexError):
                return False
            return since is not None and mtime <= int(since.timestamp())
        return False


class DocsServer:
    """Serve a documentation folder on loopback from a daemon thread.

    The socket is bound in ``__init__`` (``port=0`` lets the OS choose), so :attr:`base_url` is known
    before :meth:`start`. Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"site root {self.root} is not a folder")
        #: ``(method, path with query, request headers)`` of every request received, in arrival order.
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        #: ``time.monotonic()`` when each request of :attr:`requests` arrived (same index).
        self.request_times: list[float] = []
        self._route_uses: dict[str, int] = {}
        #: ``(header name, value)`` a request must carry to be served (401 otherwise); ``("Cookie", "a=b")``
        #: needs that cookie among others. None: no credentials needed (:meth:`require`).
        self.required: tuple[str, str] | None = None
        self._held: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), self)
        self.host = host
        self.port = int(self._httpd.server_address[1])
        self.base_url = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> DocsServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"DocsServer:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> DocsServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the command line entry point)."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    # --- credentials --------------------------------------------------------------------------------

    def require(self, name: str | None, value: str = "") -> None:
        """Answer 401 to every request without header *name* set to *value* (``Cookie``: holding the cookie
        *value*, ``name=value``); None serves everyone again."""
        self.required = (name, value) if name else None

    def authorized(self, headers: Any) -> bool:
        required = self.required
        if required is None:
            return True
        name, value = required
        given = headers.get(name)
        if given is None:
            return False
        if name.lower() == "cookie":
            return value in [part.strip() for part in given.split(";")]
        return bool(given == value)

    # --- inspection ---------------------------------------------------------------------------------

    def url(self, path: str = "/") -> str:
        """Absolute URL of *path* on this server."""
        return self.base_url + ("" if path.startswith("/") else "/") + path

    def hits(self, path_prefix: str) -> int:
        """How many requests' paths (query included) start with *path_prefix*."""
        with self._lock:
            return sum(1 for _, path, _ in self.requests if path.startswith(path_prefix))

    def reset_requests(self) -> None:
        """Forget the requests recorded so far (between two crawls of one test)."""
        with self._lock:
            self.requests.clear()
            self.request_times.clear()

    def hold(self, path: str) -> None:
        """Keep requests for *path* waiting, unanswered, until :meth:`release` (60 seconds at most)."""
        with self._lock:
            self._held[path] = threading.Event()

    def release(self, path: str) -> None:
        """Answer the requests for *path* that :meth:`hold` kept waiting, and the next ones at once."""
        with self._lock:
            held = self._held.pop(path, None)
        if held is not None:
            held.set()

    def _wait_if_held(self, path: str) -> None:
        with self._lock:
            held = self._held.get(path)
        if held is not None:
            held.wait(60)

    def _record(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append((method, path, headers))
            self.request_times.append(time.monotonic())

    def _use_route(self, path: str, route: dict[str, Any]) -> bool:
        """Whether *route* answers this request: always, or its first ``times`` requests."""
        if route.get("times") is None:
            return True
        with self._lock:
            used = self._route_uses.get(path, 0)
            if used >= int(route["times"]):
                return False
            self._route_uses[path] = used + 1
            return True

    def _routes(self) -> dict[str, dict[str, Any]]:
        # Read on every request: the file is tiny, and tests edit the routes of their copy mid-run.
        routes_path = self.root / ROUTES_FILE
        try:
            text = routes_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        routes = json.loads(text)
        if not isinstance(routes, dict):
            raise ValueError(f"{routes_path} must hold a JSON object mapping paths to routes")
        return routes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mockserver", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--root", type=Path, default=SITE_ROOT)
    args = parser.parse_args(argv)
    server = DocsServer(args.root, host=args.host, port=args.port)
    print(server.base_url, flush=True)
    print(f"docs: {server.base_url}/docs/  (Ctrl-C to stop)", file=sys.stderr, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
