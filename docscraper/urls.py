"""URL normalization and stable page ids.

Every component that compares, stores or reports URLs goes through :func:`normalize_url`, so that
``/page/``, ``/page#frag`` and ``/page?utm_source=x`` are one page everywhere: in the dupefilter, the
state table, Chroma metadata and the stats report.

The rules (DESIGN, "Stable page id"): lowercase scheme and host, default port dropped, no fragment,
query parameters sorted with tracking parameters removed, no trailing slash except for the root path.
Percent-encoding is made canonical by w3lib's ``canonicalize_url``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import posixpath
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

__all__ = [
    "TRACKING_PARAMS",
    "is_http_url",
    "normalize_url",
    "page_id",
    "scope_prefix",
    "strip_fragment",
]

logger = logging.getLogger(__name__)

#: Query parameters that never change a page's content. ``utm_*`` is matched as a prefix.
TRACKING_PARAMS = frozenset(
    {"gclid", "fbclid", "msclkid", "dclid", "yclid", "mc_cid", "mc_eid", "_ga", "_gl", "ref_src"}
)

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS


def is_http_url(url: str) -> bool:
    """True for an absolute ``http``/``https`` URL with a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


@functools.lru_cache(maxsize=32_768)
def normalize_url(url: str) -> str:
    """Return the canonical form of *url* used as the identity of a page.

    Raises ``ValueError`` for a URL that cannot be parsed (for example a bad port). Cached: a page's
    navigation links repeat on every page, and each link is judged, keyed and fingerprinted.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "file":
        path = posixpath.normpath(parts.path) if parts.path else "/"
        return urlunsplit(("file", "", path, "", ""))
    host = (parts.hostname or "").lower()
    port = parts.port  # raises ValueError on a malformed port
    netloc = host if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):  # IPv6 literal
        netloc = f"[{host}]" if port is None or _DEFAULT_PORTS.get(scheme) == port else f"[{host}]:{port}"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _is_tracking(k)]
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))
    canonical = canonicalize_url(rebuilt, keep_fragments=False)
    cparts = urlsplit(canonical)
    path = cparts.path or "/"
    if path != "/" and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return urlunsplit((cparts.scheme, cparts.netloc, path, cparts.query, ""))


@functools.lru_cache(maxsize=32_768)
def page_id(url: str) -> str:
    """Stable page id: ``url_`` + 16 lowercase base32 characters of SHA-256 of the normalized URL."""
    digest = hashlib.sha256(normalize_url(url).encode("utf-8")).digest()
    return "url_" + base64.b32encode(digest).decode("ascii").lower()[:16]


def scope_prefix(url: str) -> str:
    """The URL prefix a source covers by default: its scheme, host and folder.

    ``https://h/docs/`` and ``https://h/docs`` give ``https://h/docs/``; ``https://h/docs/index.html``
    gives ``https://h/docs/``. A last segment with a dot is taken as a file, anything else as a folder.
    """
    parts = urlsplit(url.strip())
    path = parts.path or "/"
    if not path.endswith("/"):
        last = path.rsplit("/", 1)[-1]
        path = path.rsplit("/", 1)[0] + "/" if "." in last else path + "/"
    scheme = parts.scheme.lower()
    if scheme == "file":
        return urlunsplit(("file", "", path, "", ""))
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return urlunsplit((scheme, netloc, path, "", ""))
