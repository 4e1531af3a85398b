"""Links made absolute: :func:`safe_url` for one address, :class:`LinkResolver` for a page's many."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

__all__ = ["LinkResolver", "safe_url"]


def _escape(url: str) -> str:
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def safe_url(base_url: str, href: str | None) -> str | None:
    """``href`` made absolute against ``base_url``; ``None`` for script links and garbage."""
    if not href:
        return None
    href = href.strip()
    lowered = href.lower().replace("\t", "").replace("\n", "")
    if not href or lowered.startswith(("javascript:", "vbscript:", "data:")):
        return None
    try:
        url = urljoin(base_url, href)
        urlsplit(url)
    except ValueError:
        return None
    return _escape(url)


class LinkResolver:
    """:func:`safe_url` against one base, remembered per page (a page's links repeat)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._urls: dict[str | None, str | None] = {}

    def __call__(self, href: str | None) -> str | None:
        if href not in self._urls:
            self._urls[href] = self._resolve(href)
        return self._urls[href]

    def _resolve(self, href: str | None) -> str | None:
        # Most links of a page point to a few pages, at different fragments; resolving is costly
        # (urljoin), so the part before the fragment is resolved once. urljoin(base, "p#f") is
        # urljoin(base, "p") + "#f" for any non-empty p and f, unless urlsplit would remove a tab or
        # a line break from the fragment; p must also come through safe_url's strip() unchanged.
        stripped = href.strip() if href else ""
        before, _, fragment = stripped.partition("#")
        if before and fragment and not before[-1].isspace() and not any(c in stripped for c in "\t\r\n"):
            resolved = self(before)
            if resolved is None:
                return None
            return resolved + "#" + _escape(fragment)
        return safe_url(self.base_url, href)
