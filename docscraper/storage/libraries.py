"""Libraries and their versions: sources that are versions of one library, and which of them a search reads.

A source may belong to a library and carry a version (``scrapy sources add acme-5.0 URL --library acme
--version 5.0 [--latest]``; the version may be left to the URL when one path segment is a version number:
:func:`version_from_url`). Both live in the source's stored scope (``library``, ``version``, ``latest``).

A search reads one version of each library (:func:`search_sources`): the one asked for, else the one marked
latest, else the highest by version order (PEP 440 through ``packaging`` when the versions parse, a natural
order otherwise); ``all_versions`` reads them all. Sources without a library are always read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.version import InvalidVersion, Version

__all__ = [
    "LibraryVersion",
    "SourceVersions",
    "check_library",
    "check_version",
    "search_sources",
    "version_from_url",
    "version_order",
]

_LIBRARY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,31}$")
# a path segment that is a version number: 5.0, v2, 3.12, 1.4.x, 2.0.0rc1
_URL_VERSION = re.compile(r"^v?\d+(?:\.(?:\d+|x))*(?:[.-]?(?:a|b|rc|alpha|beta|post|dev)\d*)?$", re.IGNORECASE)


def check_library(name: str) -> str:
    """A library name: lowercase letters, digits, ``.``, ``_``, ``-`` (``ValueError`` otherwise)."""
    text = str(name or "").strip()
    if not _LIBRARY.match(text):
        raise ValueError(f"library {name!r} must be lowercase letters, digits, '.', '_' or '-' (at most 64)")
    return text


def check_version(version: str) -> str:
    """A version label: letters, digits, ``.``, ``_``, ``+``, ``-`` (``ValueError`` otherwise)."""
    text = str(version or "").strip()
    if not _VERSION.match(text):
        raise ValueError(f"version {version!r} must be letters, digits, '.', '_', '+' or '-' (at most 32)")
    return text


def version_from_url(url: str) -> str | None:
    """The version a URL names, when exactly one of its path segments is a version number (``/en/5.0/``,
    ``/v2/``, ``/3.12/library/``); None when none is, or more than one (ambiguous)."""
    segments = [unquote(s) for s in urlsplit(url).path.split("/") if s]
    found = [s for s in segments if _URL_VERSION.match(s)]
    if len(found) != 1:
        return None
    return found[0][1:] if found[0][:1] in "vV" else found[0]


def version_order(version: str) -> tuple[Any, ...]:
    """A sort key: PEP 440 order for versions ``packaging`` parses (``3.10`` after ``3.9``), ahead of the others in
    natural order (numbers compared as numbers, before words)."""
    try:
        return (1, Version(version), ())
    except InvalidVersion:
        parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[a-z]+", version.lower()))
        return (0, Version("0"), parts)


@dataclass(frozen=True)
class LibraryVersion:
    """One source as a version of a library."""

    source: str
    library: str
    version: str
    latest: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "library": self.library, "version": self.version, "latest": self.latest}


@dataclass(frozen=True)
class SourceVersions:
    """Every source's library and version: built from ``{source name: stored scope}``."""

    sources: tuple[str, ...]
    versions: Mapping[str, LibraryVersion]  # source name -> its library and version (sources with one)

    @classmethod
    def from_scopes(cls, scopes: Mapping[str, Mapping[str, Any]]) -> SourceVersions:
        versions = {}
        for name, scope in scopes.items():
            library, version = scope.get("library"), scope.get("version")
            if library and version:
                versions[name] = LibraryVersion(name, str(library), str(version), bool(scope.get("latest")))
        return cls(tuple(sorted(scopes)), versions)

    def libraries(self) -> dict[str, list[LibraryVersion]]:
        """Library -> its versions, newest first (by :func:`version_order`)."""
        grouped: dict[str, list[LibraryVersion]] = {}
        for entry in self.versions.values():
            grouped.setdefault(entry.library, []).append(entry)
        return {name: sorted(entries, key=lambda e: version_order(e.version), reverse=True)
                for name, entries in sorted(grouped.items())}

    def default(self, library: str) -> str:
        """The version a search of *library* reads unless told: the one marked latest, else the highest."""
        entries = self.libraries()[library]
        marked = [e for e in entries if e.latest]
        return (marked[0] if marked else entries[0]).version

    def siblings(self, source: str) -> list[str]:
        """The other sources of *source*'s library (none when it has no library)."""
        mine = self.versions.get(source)
        if mine is None:
            return []
        return [e.source for e in self.versions.values() if e.library == mine.library and e.source != source]


def search_sources(versions: SourceVersions, *, library: str | None = None, version: str | None = None,
                   all_versions: bool = False) -> list[str] | None:
    """The sources a search reads (None: every source, no filter). ``LookupError`` for an unknown library or
    version (the message lists the known ones); ``ValueError`` for a version without a library."""
    libraries = versions.libraries()
    if library is None:
        if version is not None:
            raise ValueError("a version goes with a library: give --library too")
        if all_versions or not libraries:
            return None
        hidden = {e.source for name, entries in libraries.items() for e in entries
                  if e.version != versions.default(name)}
        return [name for name in versions.sources if name not in hidden]
    if library not in libraries:
        known = ", ".join(libraries) or "none (sources add NAME URL --library LIB --version V)"
        raise LookupError(f"unknown library {library!r}; libraries: {known}")
    entries = libraries[library]
    if version is not None:
        chosen = [e.source for e in entries if e.version == version]
        if not chosen:
            raise LookupError(f"library {library!r} has no version {version!r}; versions: "
                              f"{', '.join(e.version for e in entries)}")
        return chosen
    if all_versions:
        return [e.source for e in entries]
    default = versions.default(library)
    return [e.source for e in entries if e.version == default]
