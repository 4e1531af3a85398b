"""Local folders: the ``file://`` download handler of a ``file://`` source.

:class:`LocalFileDownloadHandler` (``DOWNLOAD_HANDLERS["file"]``) reads only regular files inside the source's folder
(``..`` and symlinks resolved first), typed by extension; it answers a folder with its index file or a ``noindex``
listing (at most :data:`MAX_LISTED` entries), a missing file with a 404, an unreadable one with a 403, a file over
``DOWNLOAD_MAXSIZE`` with ``sizeLimit``, and a matching ``If-None-Match`` with a 304 (no ETag within
:data:`RACY_SECONDS` of a change). Other sources' ``file://`` URLs are refused, but ``-a llms_txt=file://...``.
Meta: reads ``docscraper_page_id``, ``docscraper_finder``, ``download_maxsize``; sets ``docscraper_refused``,
``docscraper_local_detail`` (why a 403/404), ``docscraper_local_canonical`` (a folder's index file asked by name).
Stats: ``docscraper/local/read``, ``.../not_modified``, ``.../refused/<reason>``, ``.../status/<code>``. What it
answers, and why: docs/explanation/flow.md.
"""

from __future__ import annotations

import email.utils
import errno
import html
import logging
import os
import posixpath
import stat
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import quote, unquote_to_bytes, urlsplit

from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes
from scrapy.utils.asyncio import run_in_thread

from docscraper.content.documents import KINDS
from docscraper.crawl.resources import CrawlResources
from docscraper.crawl.scope import Refusal
from docscraper.urls import scope_prefix

if TYPE_CHECKING:
    from scrapy import Request

__all__ = ["MAX_LISTED", "RACY_SECONDS", "LocalFileDownloadHandler", "LocalRead", "content_type_for", "local_root", "read_local"]

logger = logging.getLogger(__name__)

#: A file modified this recently gets no ETag (see the module docstring).
RACY_SECONDS = 2.0

_TYPES = {
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": "text/markdown",
    ".txt": "text/plain",
    ".xml": "application/xml",
    ".gz": "application/gzip",
    # documents: the spider converts those DOCSCRAPER_DOCUMENT_TYPES names (docscraper.content.documents)
    **{extension: kind.content_type for kind in KINDS.values() for extension in kind.extensions},
}
_INDEX_FILES = ("index.html", "index.htm", "index.md")
#: The most entries a folder listing names
MAX_LISTED = 10_000


def content_type_for(path: str) -> str:
    """The Content-Type a local file is served with, from its extension."""
    return _TYPES.get(posixpath.splitext(path)[1].lower(), "application/octet-stream")


def local_root(folder_url: str) -> str:
    """The filesystem path of a ``file://`` source's folder (its scope prefix), without a final ``/``."""
    path = os.fsdecode(unquote_to_bytes(urlsplit(scope_prefix(folder_url)).path))
    return posixpath.normpath(path) if path else "/"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass
class LocalRead:
    """What reading a ``file://`` URL gave: a refusal, a status without a body (304, 403, 404), or a
    body, with the headers to send and the URL to answer under (a folder's URL ends in ``/``)."""

    url: str
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    refusal: Refusal | None = None
    detail: str | None = None
    too_large: int | None = None
    canonical: str | None = None


def _etag(st: os.stat_result) -> str | None:
    if time.time() - st.st_mtime < RACY_SECONDS:
        return None
    return f'"f-{st.st_mtime_ns:x}-{st.st_size:x}-{st.st_ino:x}"'


def read_local(url: str, root: str | None, *, if_none_match: str | None = None, maxsize: int = 0,
               explicit: bool = False) -> LocalRead:
    """Read the file a ``file://`` *url* names, confined to the folder *root* (see the module
    docstring). *explicit*: the user named this very URL (``-a llms_txt``), read wherever it is.
    Blocking: call it off the reactor thread."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        return LocalRead(url, refusal=Refusal("outOfScope", f"file URL on host {parts.netloc}"))
    raw = unquote_to_bytes(parts.path)
    if b"\x00" in raw:
        return LocalRead(url, refusal=Refusal("outOfScope", "NUL in the file path"))
    path = posixpath.normpath(os.fsdecode(raw) or "/")
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if not explicit:
        if root is None:
            return LocalRead(url, refusal=Refusal("outOfScope", "file:// URLs are read only for a file:// source"))
        if not _inside(path, root):
            return LocalRead(url, refusal=Refusal("outOfScope", "outside the source folder"))
        root_real = os.path.realpath(root)
        if not _inside(os.path.realpath(path), root_real):
            return LocalRead(url, refusal=Refusal("outOfScope", "symlink escapes the source folder"))
    else:
        root_real = None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return LocalRead(url, status=404, detail="file not found (404)")
    except NotADirectoryError:
        return LocalRead(url, status=404, detail="file not found (404; a parent is not a folder)")
    except PermissionError:
        return LocalRead(url, status=403, detail="permission denied (403)")
    if stat.S_ISDIR(st.st_mode):
        folder_url = url if parts.path.endswith("/") else url.split("?", 1)[0] + "/"
        for name in _INDEX_FILES:
            candidate = posixpath.join(path, name)
            if root_real is not None and not _inside(os.path.realpath(candidate), root_real):
                return LocalRead(url, refusal=Refusal("outOfScope", f"{name}: symlink escapes the source folder"))
            if os.path.isfile(candidate):
                return _read_file(folder_url, candidate, if_none_match=if_none_match, maxsize=maxsize)
        return _listing(folder_url, path, root_real)
    found = _read_file(url, path, if_none_match=if_none_match, maxsize=maxsize)
    name = posixpath.basename(path)
    if name in _INDEX_FILES and not parts.query:
        # the file its folder's URL serves: the same page (as a site's rel=canonical would say)
        folder = posixpath.dirname(path)
        served = next((n for n in _INDEX_FILES if os.path.isfile(posixpath.join(folder, n))), None)
        if served == name:
            found.canonical = url.rsplit("/", 1)[0] + "/"
    return found


def _listing(url: str, path: str, root_real: str | None) -> LocalRead:
    """A folder without an index file: a page that lists its subfolders and the files a crawl reads, marked
    ``noindex`` (its links are followed, it is not indexed itself), as a web server's automatic index would be.
    Dot files, and entries whose real path leaves the source folder, are not listed. It has no validators:
    every run reads the folder again, so a file added to it is found."""
    try:
        with os.scandir(path) as entries:
            names: list[str] = []
            for entry in entries:
                if len(names) >= MAX_LISTED:
                    break
                if entry.name.startswith("."):
                    continue
                real = os.path.realpath(entry.path)
                if root_real is not None and not _inside(real, root_real):
                    continue
                if os.path.isdir(real):
                    names.append(entry.name + "/")
                elif content_type_for(entry.name) != "application/octet-stream":
                    names.append(entry.name)
    except PermissionError:
        return LocalRead(url, status=403, detail="permission denied (403)")
    except OSError as exc:
        return LocalRead(url, status=404, detail=f"folder not readable ({exc.strerror})")
    links = "".join(f'<li><a href="{html.escape(quote(name))}">{html.escape(name)}</a></li>' for name in sorted(names))
    title = html.escape(f"Index of {posixpath.basename(path.rstrip('/')) or '/'}")
    body = (f'<!doctype html><html><head><meta charset="utf-8"><meta name="robots" content="noindex">'
            f"<title>{title}</title></head><body><h1>{title}</h1><ul>{links}</ul></body></html>").encode()
    return LocalRead(url, body=body, headers={"Content-Type": "text/html; charset=utf-8",
                                              "Content-Length": str(len(body))})


def _read_file(url: str, path: str, *, if_none_match: str | None, maxsize: int) -> LocalRead:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        # The real path: a symlink swapped in after the check above is not followed (O_NOFOLLOW).
        fd = os.open(os.path.realpath(path), flags)
    except FileNotFoundError:
        return LocalRead(url, status=404, detail="file not found (404)")
    except PermissionError:
        return LocalRead(url, status=403, detail="permission denied (403)")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return LocalRead(url, refusal=Refusal("outOfScope", "symlink escapes the source folder"))
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            return LocalRead(url, refusal=Refusal("nonText", "not a regular file"))
        headers = {
            "Content-Type": content_type_for(path),
            "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
        }
        etag = _etag(st)
        if etag is not None:
            headers["ETag"] = etag
            if if_none_match is not None and if_none_match.strip() == etag:
                return LocalRead(url, status=304, headers={"ETag": etag})
        if maxsize and st.st_size > maxsize:
            return LocalRead(url, too_large=st.st_size)
        body = handle.read(maxsize + 1 if maxsize else -1)
    if maxsize and len(body) > maxsize:  # it grew while being read
        return LocalRead(url, too_large=len(body))
    headers["Content-Length"] = str(len(body))
    return LocalRead(url, body=body, headers=headers)


class LocalFileDownloadHandler(BaseDownloadHandler):
    """``DOWNLOAD_HANDLERS["file"]``: read ``file://`` URLs inside a ``file://`` source's folder only."""

    async def download_request(self, request: Request) -> Response:
        resources = CrawlResources.find(self.crawler)
        target = resources.target if resources is not None else None
        root = None
        explicit = False
        if target is not None:
            if target.is_local:
                root = local_root(target.scope.prefix)
            explicit = bool(target.args.llms_txt) and request.url == target.args.llms_txt
        maxsize = int(request.meta.get("download_maxsize", self.crawler.settings.getint("DOWNLOAD_MAXSIZE")))
        inm = request.headers.get(b"If-None-Match")
        found = await run_in_thread(read_local, request.url, root, maxsize=maxsize, explicit=explicit,
                                    if_none_match=inm.decode("latin-1") if inm else None)
        if found.refusal is not None:
            self._refuse(request, found.refusal)
        if found.too_large is not None:
            self._stat("refused/sizeLimit")
            raise DownloadCancelledError(
                f"Expected to receive {found.too_large} bytes which is larger than download max size "
                f"({maxsize}) in request {request}."
            )
        self._stat("not_modified" if found.status == 304 else "read" if found.status == 200
                   else f"status/{found.status}")
        if found.detail:
            request.meta["docscraper_local_detail"] = found.detail
        if found.canonical:
            request.meta["docscraper_local_canonical"] = found.canonical
        headers = Headers(found.headers)
        cls = responsetypes.from_args(headers=headers, url=found.url, body=found.body)
        return cls(url=found.url, status=found.status, headers=headers, body=found.body, request=request)

    def _stat(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"docscraper/local/{name}")

    def _refuse(self, request: Request, refusal: Refusal) -> NoReturn:
        self._stat(f"refused/{refusal.reason}")
        logger.warning("Not reading %s: %s", request.url, refusal.detail)
        resources = CrawlResources.find(self.crawler)
        meta = request.meta
        if resources is not None and "docscraper_page_id" in meta and not meta.get("docscraper_refused"):
            resources.outcomes.refuse(request.url, refusal, finder=meta.get("docscraper_finder"))
            meta["docscraper_refused"] = True
        raise IgnoreRequest(f"{refusal.detail}: {request.url}")
