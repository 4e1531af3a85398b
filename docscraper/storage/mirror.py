"""The Markdown mirror: every page's Markdown as a file under a folder, laid out like the site (``-a save_dir=DIR``).

:meth:`Mirror.save` (called by :class:`pipelines.mirror.MirrorPipeline`) writes a page at its report key
(:func:`mirror_path`): ``./`` is ``index.md``, ``guide`` (the page of ``guide/``) ``guide/index.md``, a page suffix
(``.html``, ``.md``...) gives way to ``.md``, a query adds ``~q`` and its hash, a segment over
:data:`MAX_SEGMENT_BYTES` is cut and ends in a hash. Each file starts with YAML front matter (``url``, ``title``,
``fetched_at``, ``content_hash``, ``page_id``, ``source``); a file that already carries the page's ``content_hash``
is not rewritten. No key writes outside DIR: an unsafe segment refuses the page (:class:`MirrorRefused`), folders
and the final path are checked to resolve inside DIR, writes are atomic. :meth:`Mirror.report` is the report's
``mirror`` object. Stats: ``docscraper/mirror/written``, ``.../unchanged``, ``.../refused``, ``.../errors``.
The rules in full: docs/explanation/flow.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from docscraper.items import PageItem

__all__ = ["MAX_SEGMENT_BYTES", "Mirror", "MirrorRefused", "front_matter", "mirror_path"]

logger = logging.getLogger(__name__)

#: The longest file or folder name the mirror writes, in UTF-8 bytes (most filesystems allow 255).
MAX_SEGMENT_BYTES = 200

_DOC_SUFFIXES = (".html", ".htm", ".xhtml", ".markdown", ".mdx", ".md", ".txt")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Characters YAML does not allow raw in a double-quoted scalar, or reads as line breaks.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")
_FRONT_MATTER_FIELD = re.compile(r'^(content_hash|page_id): "([^"\\]*)"$', re.MULTILINE)
_HEAD_BYTES = 8192


class MirrorRefused(ValueError):
    """A page that cannot be mirrored safely; the message is the reason."""


def _hash(text: str, length: int = 10) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _cut(stem: str, suffix: str, whole: str) -> str:
    """``stem + suffix``, the stem cut (at a character boundary) and marked with a hash of *whole* when
    the name would be longer than MAX_SEGMENT_BYTES."""
    name = stem + suffix
    if len(name.encode("utf-8", "surrogateescape")) <= MAX_SEGMENT_BYTES:
        return name
    mark = "~" + _hash(whole, 12)
    room = MAX_SEGMENT_BYTES - len((mark + suffix).encode("utf-8"))
    cut = stem.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return cut + mark + suffix


def _segment(raw: str) -> str:
    """One path segment of a key, percent-decoded, or MirrorRefused when it could leave its folder."""
    decoded = os.fsdecode(unquote_to_bytes(raw))
    if decoded in (".", ".."):
        raise MirrorRefused(f"path segment {raw!r} is {decoded!r}")
    if "/" in decoded or "\\" in decoded:
        raise MirrorRefused(f"path segment {raw!r} holds a slash or backslash")
    if _CONTROL.search(decoded):
        raise MirrorRefused(f"path segment {raw!r} holds NUL or a control character")
    return decoded


def mirror_path(key: str, *, tag: str | None = None) -> tuple[str, ...]:
    """The mirror file of the page with report key *key*, as path segments relative to the mirror's
    folder (see the module docstring). *tag* (a collision) is added to the file's stem.

    Raises MirrorRefused for a key that is a full URL (out of scope) or holds an unsafe segment.
    """
    if "://" in key or key.startswith("/"):
        raise MirrorRefused(f"{key!r} is not a path relative to the source")
    path, _, query = key.partition("?")
    raw_segments = [s for s in path.split("/") if s not in ("", ".")]
    segments = [_segment(s) for s in raw_segments]
    extra = (f"~q{_hash(query)}" if query else "") + (f"~{tag}" if tag else "")
    if not segments or path.endswith("/"):
        folders, stem = segments, "index"
    else:
        folders, last = segments[:-1], segments[-1]
        lowered = last.lower()
        suffix = next((s for s in _DOC_SUFFIXES if lowered.endswith(s) and len(last) > len(s)), None)
        if suffix is not None:
            stem = last[: -len(suffix)]
        elif "." not in last:
            folders, stem = segments, "index"
        else:
            stem = last
    parts = [_cut(folder, "", folder) for folder in folders]
    parts.append(_cut(stem + extra, ".md", key))
    return tuple(parts)


def _yaml_string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def front_matter(fields: Mapping[str, str | None]) -> str:
    """A YAML front matter block (``---`` lines included) of string fields; None values are ``null``."""
    lines = ["---"]
    for name, value in fields.items():
        lines.append(f"{name}: {'null' if value is None else _yaml_string(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _read_fields(path: str) -> dict[str, str]:
    """``content_hash`` and ``page_id`` from the front matter of a mirror file; {} when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    if not head.startswith("---\n"):
        return {}
    block = head[4:].split("\n---\n", 1)[0]
    return dict(_FRONT_MATTER_FIELD.findall(block))


@dataclass
class _Outcome:
    status: str  # written | unchanged | refused | error
    path: str | None = None
    reason: str | None = None


class Mirror:
    """The mirror folder of one run. :meth:`save` and :meth:`report` do blocking I/O: call them off the
    reactor thread (``CrawlResources.call("mirror", ...)``, one thread, so two pages never race for a name)."""

    def __init__(self, directory: Path, *, stats: StatsCollector | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        # mkstemp creates 0600 files; a mirror is read by other tools and users, as a file written in
        # place would be: the mode the umask gives. Read once, here, before any writer thread runs.
        umask = os.umask(0o022)
        os.umask(umask)
        self._mode = 0o666 & ~umask
        self.directory = directory
        self.root = os.path.realpath(directory)
        self._stats = stats
        self.written: dict[str, str] = {}     # key -> mirror path written this run
        self.current: dict[str, str] = {}     # key -> mirror path found up to date
        self.refused: dict[str, str] = {}     # key -> why it was not mirrored
        self.failed: set[str] = set()       # keys whose file could not be written (I/O error)
        self._owners: dict[str, str] = {}     # mirror path -> page id, this run

    # paths -----------------------------------------------------------------------------------------

    def _inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root.rstrip(os.sep) + os.sep)

    def _folder(self, folders: tuple[str, ...], *, create: bool) -> str | None:
        """The real path of the mirror's sub-folder *folders*, created one level at a time when *create*;
        None when it does not exist (and *create* is false). MirrorRefused when a level resolves outside
        the mirror's folder or is not a folder."""
        current = self.root
        for name in folders:
            nxt = os.path.join(current, name)
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(nxt)
            elif not os.path.lexists(nxt):
                return None
            real = os.path.realpath(nxt)
            if not self._inside(real):
                raise MirrorRefused(f"{'/'.join(folders)}: a symlink leads out of the mirror folder")
            if not os.path.isdir(real):
                raise MirrorRefused(f"{'/'.join(folders)}: a file is in the way of a folder")
            current = real
        return current

    def _target(self, key: str, page_id: str, *, create: bool) -> tuple[str, str] | None:
        """(relative path, absolute path) of the page's file: the primary name unless another page holds
        it. None when not *create* and its folder does not exist."""
        for tag in (None, page_id[-8:]):
            parts = mirror_path(key, tag=tag)
            folder = self._folder(parts[:-1], create=create)
            if folder is None:
                return None
            target = os.path.join(folder, parts[-1])
            if not self._inside(os.path.normpath(target)):
                raise MirrorRefused(f"{key!r} leads out of the mirror folder")
            rel = "/".join(parts)
            owner = self._owners.get(rel)
            if owner is None and os.path.isfile(target) and not os.path.islink(target):
                owner = _read_fields(target).get("page_id") or None
            if owner is None or owner == page_id:
                return rel, target
        raise MirrorRefused(f"{key!r}: both names for its file are held by other pages")

    def has_file(self, key: str, page_id: str) -> bool:
        """Whether the page's mirror file exists (True when the page cannot be mirrored at all: there is
        nothing to restore). Cheap: a few ``stat`` calls and a read of the file's front matter, no write."""
        try:
            found = self._target(key, page_id, create=False)
        except MirrorRefused:
            return True
        except OSError:
            return False
        return found is not None and os.path.isfile(found[1])

    def stored_hash(self, key: str, page_id: str) -> str | None:
        """The ``content_hash`` in the front matter of the page's mirror file; None when it has no file (or
        cannot be mirrored). Reads only: for ``scrapy verify``."""
        try:
            found = self._target(key, page_id, create=False)
        except (MirrorRefused, OSError):
            return None
        if found is None or not os.path.isfile(found[1]):
            return None
        return _read_fields(found[1]).get("content_hash")

    # writing ---------------------------------------------------------------------------------------

    def _stat(self, name: str) -> None:
        if self._stats is not None:
            self._stats.inc_value(f"docscraper/mirror/{name}")

    def save(self, item: PageItem, content_hash: str) -> _Outcome:
        """Write the page's file unless it already holds this content. Never raises for a bad path or an
        I/O error: the outcome says what happened, and it is counted."""
        meta = item.metadata
        key = meta.path
        try:
            found = self._target(key, meta.page_id, create=True)
        except MirrorRefused as exc:
            logger.warning("Not mirrored: %s", exc)
            self.refused[key] = str(exc)
            self._stat("refused")
            return _Outcome("refused", reason=str(exc))
        except OSError as exc:
            return self._error(key, exc)
        assert found is not None  # created, so never missing
        rel, target = found
        self._owners[rel] = meta.page_id
        if not os.path.islink(target) and _read_fields(target) == {"content_hash": content_hash,
                                                                   "page_id": meta.page_id}:
            self.current[key] = rel
            self._stat("unchanged")
            return _Outcome("unchanged", rel)
        text = front_matter({
            "url": item.url,
            "title": item.title,
            "fetched_at": meta.fetched_at,
            "content_hash": content_hash,
            "page_id": meta.page_id,
            "source": meta.source,
        }) + "\n" + item.markdown.rstrip("\n") + "\n"
        try:
            self._write(target, text.encode("utf-8", "surrogateescape"), self._mode)
        except OSError as exc:
            return self._error(key, exc)
        self.current.pop(key, None)
        self.written[key] = rel
        self._stat("written")
        return _Outcome("written", rel)

    def _error(self, key: str, exc: OSError) -> _Outcome:
        logger.error("Cannot mirror %s: %s: %s", key, exc.__class__.__name__, exc)
        self.failed.add(key)
        self._stat("errors")
        return _Outcome("error", reason=f"{exc.__class__.__name__}: {exc}")

    @staticmethod
    def _write(target: str, data: bytes, mode: int) -> None:
        folder = os.path.dirname(target)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".docscraper-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(data)
            os.replace(tmp, target)  # a symlink at target is replaced, never followed
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # the report ------------------------------------------------------------------------------------

    def report(self, items: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """The report's ``mirror`` object. Pages removed this run whose file is still there are listed
        in ``removedKept``; every other page processed this run and not written was already current."""
        removed_kept: list[str] = []
        unchanged = 0
        for key, entry in items.items():
            if entry.get("status") != "success" or key in self.written or key in self.refused or key in self.failed:
                continue
            if entry.get("statusReason") != "removed":
                unchanged += 1
                continue
            page_id = str(entry.get("pageId") or "")
            try:
                found = self._target(key, page_id, create=False)
            except (MirrorRefused, OSError):
                continue
            if found is not None and os.path.isfile(found[1]):
                removed_kept.append(found[0])
        return {
            "dir": str(self.directory),
            "written": len(self.written),
            "unchanged": unchanged,
            "refused": [{"key": k, "reason": r} for k, r in sorted(self.refused.items())],
            "errors": len(self.failed),
            "removedKept": sorted(removed_kept),
        }
