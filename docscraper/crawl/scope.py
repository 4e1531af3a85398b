"""Crawl scope: which URLs belong to a source.

A URL is in scope when it is on the source's scheme and host, under its path prefix, matched by the ``allow`` globs
(if any) and by no ``block`` glob. Globs are wcmatch patterns over the URL path (query excluded): ``*`` stays inside
one folder, ``**`` crosses folders (zero or more); a pattern that starts with ``/`` is matched against the absolute
path, any other against the path relative to the prefix; ``!pattern`` in ``allow`` excludes. A folder URL
(``guide/``) is tested as ``guide`` and ``guide/``. The prefix's own page (``./``) is always in scope: patterns
select the pages below it. Why wcmatch: docs/explanation/choices.md; the seed's case: docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from wcmatch import glob

from docscraper.urls import normalize_url, scope_prefix

__all__ = ["Refusal", "Scope"]

logger = logging.getLogger(__name__)

_FLAGS = glob.GLOBSTAR | glob.NEGATE | glob.DOTGLOB | glob.NEGATEALL
_BLOCK_FLAGS = glob.GLOBSTAR | glob.DOTGLOB


@dataclass(frozen=True)
class Refusal:
    """Why a URL was not crawled: ``reason`` is a stats key (``outOfScope``, ``depth``...), ``detail``
    a short human explanation (the host, the pattern)."""

    reason: str
    detail: str


@dataclass(frozen=True)
class Scope:
    prefix: str
    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None

    @classmethod
    def for_source(
        cls,
        url: str,
        *,
        allow: tuple[str, ...] = (),
        block: tuple[str, ...] = (),
        max_depth: int | None = None,
        max_pages: int | None = None,
    ) -> Scope:
        return cls(scope_prefix(url), tuple(allow), tuple(block), max_depth, max_pages)

    @property
    def _prefix_parts(self) -> tuple[str, str, str]:
        parts = urlsplit(self.prefix)
        return parts.scheme, parts.netloc, parts.path

    def relative_path(self, url: str) -> str | None:
        """The path of *url* relative to the prefix (query kept, fragment dropped), or None when the
        URL is not under the prefix. The prefix itself is ``./``."""
        try:
            norm = normalize_url(url)
        except ValueError:
            return None
        parts = urlsplit(norm)
        scheme, netloc, prefix_path = self._prefix_parts
        if (parts.scheme, parts.netloc) != (scheme, netloc):
            return None
        path = parts.path
        if path == prefix_path or path + "/" == prefix_path:
            rel = "./"
        elif path.startswith(prefix_path):
            rel = path[len(prefix_path):]
        else:
            return None
        return f"{rel}?{parts.query}" if parts.query else rel

    def raw_key(self, url: str) -> str:
        """The report key of a URL *as written* (fragment dropped): duplicates are recorded under the
        variant that was refused (``guide/x.html?utm_source=a``), not under the page they duplicate."""
        url = url.split("#", 1)[0]
        parts = urlsplit(url)
        scheme, netloc, prefix_path = self._prefix_parts
        try:
            norm = urlsplit(normalize_url(url))
        except ValueError:
            return url
        if (norm.scheme, norm.netloc) == (scheme, netloc) and parts.path.startswith(prefix_path):
            rel = parts.path[len(prefix_path):] or "./"
            return f"{rel}?{parts.query}" if parts.query else rel
        return url

    def key(self, url: str) -> str:
        """The stats report's key for *url*: its relative path when in the prefix, else the full URL."""
        rel = self.relative_path(url)
        if rel is not None:
            return rel
        try:
            return normalize_url(url)
        except ValueError:
            return url

    def _pattern_paths(self, url: str) -> tuple[list[str], list[str]]:
        """Candidate strings for relative and absolute patterns."""
        raw_path = unquote(urlsplit(url).path) or "/"
        norm_path = unquote(urlsplit(normalize_url(url)).path) or "/"
        _, _, prefix_path = self._prefix_parts
        absolute = [norm_path]
        if raw_path.endswith("/") and norm_path != "/":
            absolute.append(norm_path + "/")
        relative = []
        for candidate in absolute:
            if candidate.startswith(prefix_path):
                relative.append(candidate[len(prefix_path):])
        return relative, absolute

    def _matches(self, url: str, patterns: tuple[str, ...], flags: int) -> str | None:
        """The first pattern group that matches, as a string for messages; None when none matches."""
        relative, absolute = self._pattern_paths(url)
        rel_patterns = [p for p in patterns if not p.lstrip("!").startswith("/")]
        abs_patterns = [p for p in patterns if p.lstrip("!").startswith("/")]
        if rel_patterns and any(glob.globmatch(c, rel_patterns, flags=flags) for c in relative if c):
            return ",".join(rel_patterns)
        if abs_patterns and any(glob.globmatch(c, abs_patterns, flags=flags) for c in absolute):
            return ",".join(abs_patterns)
        return None

    def check(self, url: str) -> Refusal | None:
        """None when *url* is in scope, else the reason it is not (host, prefix or pattern)."""
        try:
            norm = normalize_url(url)
        except ValueError as exc:
            return Refusal("outOfScope", f"malformed URL: {exc}")
        parts = urlsplit(norm)
        scheme, netloc, prefix_path = self._prefix_parts
        if parts.scheme not in ("http", "https", "file"):
            return Refusal("outOfScope", f"scheme {parts.scheme or '(none)'}")
        if (parts.scheme, parts.netloc) != (scheme, netloc):
            if parts.netloc == netloc:
                return Refusal("outOfScope", f"scheme {parts.scheme} differs from {scheme}")
            return Refusal("outOfScope", f"host {parts.hostname or parts.netloc}")
        rel = self.relative_path(norm)
        if rel is None:
            return Refusal("outOfScope", f"outside path prefix {prefix_path}")
        if rel == "./":
            return None  # the prefix itself: patterns select pages below it
        if self.block:
            for pattern in self.block:
                if self._matches(url, (pattern,), _BLOCK_FLAGS):
                    return Refusal("outOfScope", f"blocked by pattern {pattern}")
        if self.allow:
            negations = [p for p in self.allow if p.startswith("!")]
            for pattern in negations:
                if self._matches(url, (pattern[1:],), _BLOCK_FLAGS):
                    return Refusal("outOfScope", f"blocked by pattern {pattern}")
            positives = tuple(p for p in self.allow if not p.startswith("!"))
            if positives and not self._matches(url, positives, _FLAGS):
                return Refusal("outOfScope", f"not matched by allow {','.join(positives)}")
        return None

    def check_depth(self, depth: int) -> Refusal | None:
        if self.max_depth is not None and depth > self.max_depth:
            return Refusal("depth", f"depth {depth} > max_depth {self.max_depth}")
        return None

    def as_dict(self) -> dict[str, object]:
        return {
            "prefix": self.prefix,
            "allow": list(self.allow),
            "block": list(self.block),
            "max_depth": self.max_depth,
            "max_pages": self.max_pages,
        }

    def narrower_than(self, stored: Scope) -> bool:
        """True when this run's scope could leave out pages the stored scope covers, so that pages
        not reached must not be taken for removed ones (DESIGN rule 3)."""
        if self.prefix != stored.prefix:
            return True
        if set(self.block) - set(stored.block):
            return True
        if self.allow and set(self.allow) != set(stored.allow):
            return True
        return bool(self.max_depth is not None and (stored.max_depth is None or self.max_depth < stored.max_depth))
