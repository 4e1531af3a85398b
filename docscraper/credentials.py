"""Credentials of a private source: named where they are kept, read when a run opens, sent only to its origin.

A source (or one run) stores references, never values (DESIGN rule 9): ``env:NAME`` (or a bare ``NAME``) or
``file:NAME`` (a file in ``DOCSCRAPER_SECRETS_DIR``), one per kind (:class:`CredentialRefs`): ``headers``,
``basic`` (``user:password``), ``cookies`` (Netscape ``cookies.txt``, or ``name=value; ...``).
:func:`load_credentials` reads them into :class:`Credentials`, bound to the source's origin:
:meth:`Credentials.headers_for` gives that origin's URLs their headers and others none, :meth:`Credentials.managed`
names the headers to take off elsewhere, :meth:`Credentials.secrets` the values to redact. A missing, malformed or
readable-by-others reference is a :class:`CredentialError` naming the reference, never the value. Why:
docs/explanation/security.md.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "CREDENTIAL_KINDS",
    "CredentialError",
    "CredentialRefs",
    "Credentials",
    "load_credentials",
    "origin_of",
    "parse_reference",
]

#: The kinds of credential a source may name, in the order they are applied.
CREDENTIAL_KINDS = ("headers", "basic", "cookies")

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# headers a credential may not set: the transport's own, or Scrapy's
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "cookie"})


class CredentialError(ValueError):
    """A reference that is malformed, or whose value is missing or malformed; the message never holds a value."""


def parse_reference(text: str, what: str = "credential") -> str:
    """The canonical form (``env:NAME`` or ``file:NAME``) of a reference as a user wrote it."""
    raw = str(text or "").strip()
    kind, sep, name = raw.partition(":")
    if not sep:
        kind, name = "env", raw
    kind = kind.strip().lower()
    name = name.strip()
    if kind == "env" and _ENV_NAME.match(name):
        return f"env:{name}"
    if kind == "file" and _FILE_NAME.match(name):
        return f"file:{name}"
    # the text is not repeated: a user who pasted the secret itself must not find it in a log
    raise CredentialError(
        f"{what} is not a reference: write env:NAME (an environment variable) or file:NAME (a file in "
        "DOCSCRAPER_SECRETS_DIR; a name, not a path); docscraper stores where a secret is kept, never the secret")


@dataclass(frozen=True)
class CredentialRefs:
    """Where a source's credentials are kept: one reference per kind, or None."""

    headers: str | None = None
    basic: str | None = None
    cookies: str | None = None

    @classmethod
    def parse(cls, values: Mapping[str, object | None]) -> CredentialRefs:
        """From ``{kind: reference}`` (unknown kinds are an error; empty values are no credential)."""
        unknown = sorted(set(values) - set(CREDENTIAL_KINDS))
        if unknown:
            raise CredentialError(f"unknown credential kind(s) {', '.join(unknown)}; "
                                  f"one of {', '.join(CREDENTIAL_KINDS)}")
        refs = {kind: parse_reference(str(value), f"{kind} credential")
                for kind, value in values.items() if value not in (None, "")}
        return cls(**refs)

    def __bool__(self) -> bool:
        return any(self.as_dict().values())

    def as_dict(self) -> dict[str, str]:
        """The set references, by kind (what a source stores)."""
        return {kind: ref for kind in CREDENTIAL_KINDS if (ref := getattr(self, kind)) is not None}

    def merged(self, override: CredentialRefs) -> CredentialRefs:
        """These references with *override*'s set ones in their place."""
        return CredentialRefs(**{**self.as_dict(), **override.as_dict()})

    def describe(self) -> str:
        return ", ".join(f"{kind} from {ref}" for kind, ref in self.as_dict().items()) or "none"


def origin_of(url: str) -> tuple[str, str, int]:
    """A URL's origin: lowercase scheme and host, and its port (the scheme's default when none is written)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    return scheme, (parts.hostname or "").lower(), port


@dataclass(frozen=True)
class _Cookie:
    host: str
    subdomains: bool
    path: str
    secure: bool
    expires: int
    name: str
    value: str

    def matches(self, scheme: str, host: str, path: str, now: float) -> bool:
        if self.expires and self.expires < now:
            return False
        if self.secure and scheme != "https":
            return False
        if host != self.host and not (self.subdomains and host.endswith("." + self.host)):
            return False
        cookie_path = self.path or "/"
        return path == cookie_path or path.startswith(cookie_path.rstrip("/") + "/") or cookie_path == "/"


@dataclass(frozen=True)
class Credentials:
    """A source's credential values, for its origin only (see the module docstring)."""

    origin: tuple[str, str, int]
    refs: CredentialRefs
    fixed: tuple[tuple[str, str], ...] = ()
    cookies: tuple[_Cookie, ...] = field(default=(), repr=False)
    # (user, password) of basic auth (also in *fixed* as its Authorization header), for a browser to answer with
    basic: tuple[str, str] | None = field(default=None, repr=False)

    def __repr__(self) -> str:  # never the values
        return f"Credentials(origin={self.origin!r}, {self.refs.describe()})"

    def applies_to(self, url: str) -> bool:
        """Whether *url* is on the source's origin (scheme, host and port), the only one that gets them."""
        try:
            return origin_of(url) == self.origin
        except ValueError:
            return False

    def headers_for(self, url: str) -> dict[str, str]:
        """The headers a request to *url* carries: the credentials on the source's origin, nothing elsewhere.
        ``Cookie`` holds the cookies that match the URL's path (none: no ``Cookie``)."""
        if not self.applies_to(url):
            return {}
        headers = dict(self.fixed)
        parts = urlsplit(url)
        now = time.time()
        jar = [f"{c.name}={c.value}" for c in self.cookies
               if c.matches(self.origin[0], self.origin[1], parts.path or "/", now)]
        if jar:
            headers["Cookie"] = "; ".join(jar)
        return headers

    def managed(self) -> tuple[str, ...]:
        """The header names these credentials set (``Cookie`` included when there are cookies)."""
        names = [name for name, _ in self.fixed]
        if self.cookies:
            names.append("Cookie")
        return tuple(names)

    @property
    def header_only(self) -> tuple[str, ...]:
        """The names of the headers that are neither basic auth nor cookies (a bearer token, an API key)."""
        basic = "authorization" if self.basic is not None else None
        return tuple(name for name, _ in self.fixed if name.lower() != basic)

    def browser_credentials(self) -> dict[str, str] | None:
        """Basic auth as Playwright's ``http_credentials`` context option: Chromium answers a 401 challenge of
        the source's origin with it, and no other origin's."""
        if self.basic is None:
            return None
        scheme, host, port = self.origin
        return {"username": self.basic[0], "password": self.basic[1], "origin": f"{scheme}://{host}:{port}"}

    def cookie_names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.cookies)

    def secrets(self) -> set[str]:
        """The values to redact wherever text leaves the process (header values, their tokens, cookie values)."""
        found: set[str] = set()
        for _, value in self.fixed:
            found.add(value)
            found.update(part for part in value.split() if len(part) >= 8)
        for cookie in self.cookies:
            found.add(cookie.value)
        if self.basic is not None:
            found.add(self.basic[1])
        return {v for v in found if len(v) >= 4}


def _secrets_dir(secrets_dir: str | os.PathLike[str] | None) -> Path:
    if secrets_dir:
        return Path(secrets_dir).expanduser()
    return Path("~/.config/docscraper/secrets").expanduser()


def _read(ref: str, environ: Mapping[str, str], secrets_dir: Path) -> str:
    kind, _, name = ref.partition(":")
    if kind == "env":
        value = environ.get(name)
        if value is None or not value.strip():
            raise CredentialError(f"credential {ref}: the environment variable {name} is not set (or empty) in "
                                  "this process; set it where the crawl runs (Scrapyd's environment for a job)")
        return value
    path = secrets_dir / name
    try:
        info = path.stat()
    except OSError:
        raise CredentialError(f"credential {ref}: no file {name} in the secrets folder {secrets_dir} "
                              "(DOCSCRAPER_SECRETS_DIR)") from None
    if not stat.S_ISREG(info.st_mode):
        raise CredentialError(f"credential {ref}: {path} is not a file")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialError(f"credential {ref}: {path} may be read by other users; "
                              f"make it private: chmod 600 {path}")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialError(f"credential {ref}: cannot read {path} ({exc.__class__.__name__})") from None


def _header_lines(ref: str, text: str) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not _HEADER_NAME.match(name) or not value:
            raise CredentialError(f"credential {ref}: line {number} is not 'Name: value'")
        if name.lower() in _RESERVED_HEADERS:
            raise CredentialError(f"credential {ref}: line {number} sets {name}, which a credential may not set "
                                  "(cookies have their own kind: cookies)")
        if any(ord(ch) < 32 and ch != "\t" for ch in value):
            raise CredentialError(f"credential {ref}: line {number} has a control character in its value")
        headers.append((name, value))
    if not headers:
        raise CredentialError(f"credential {ref}: no 'Name: value' line")
    return headers


def _basic(ref: str, text: str) -> tuple[str, str]:
    value = text.strip()
    user, sep, password = value.partition(":")
    if not sep or not user or "\n" in value:
        raise CredentialError(f"credential {ref}: basic auth is one line 'user:password'")
    return user, password


def _cookies(ref: str, text: str, host: str) -> list[_Cookie]:
    lines = [line for line in text.splitlines() if line.strip()]
    netscape = any("\t" in line for line in lines) or any(line.startswith("# Netscape") for line in lines)
    cookies: list[_Cookie] = []
    if not netscape:
        for number, pair in enumerate(re.split(r";\s*|\n", text.strip()), 1):
            name, sep, value = pair.strip().partition("=")
            if not sep or not name.strip():
                raise CredentialError(f"credential {ref}: cookie {number} is not name=value (or give a Netscape "
                                      "cookies.txt)")
            cookies.append(_Cookie(host, False, "/", False, 0, name.strip(), value.strip()))
        return cookies
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r\n")
        if line.startswith("#HttpOnly_"):
            line = line[len("#HttpOnly_"):]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise CredentialError(f"credential {ref}: line {number} of the cookies.txt does not have 7 "
                                  "tab-separated fields")
        domain, subdomains, path, secure, expires, name, value = fields
        try:
            expiry = int(expires or 0)
        except ValueError:
            raise CredentialError(f"credential {ref}: line {number} has an expiry that is not a number") from None
        cookies.append(_Cookie(domain.strip().lstrip(".").lower(), subdomains.upper() == "TRUE" or
                               domain.startswith("."), path or "/", secure.upper() == "TRUE", expiry, name, value))
    if not cookies:
        raise CredentialError(f"credential {ref}: the cookies.txt holds no cookie")
    return cookies


def load_credentials(refs: CredentialRefs, source_url: str, *, environ: Mapping[str, str] | None = None,
                     secrets_dir: str | os.PathLike[str] | None = None) -> Credentials | None:
    """The values *refs* name, for the origin of *source_url*; None when *refs* names nothing.
    Raises :class:`CredentialError` (see the module docstring)."""
    if not refs:
        return None
    scheme, host, port = origin_of(source_url)
    if scheme not in ("http", "https"):
        raise CredentialError("credentials apply to http(s) sources only")
    env = os.environ if environ is None else environ
    folder = _secrets_dir(secrets_dir)
    fixed: list[tuple[str, str]] = []
    cookies: list[_Cookie] = []
    basic: tuple[str, str] | None = None
    if refs.headers:
        fixed.extend(_header_lines(refs.headers, _read(refs.headers, env, folder)))
    if refs.basic:
        if any(name.lower() == "authorization" for name, _ in fixed):
            raise CredentialError(f"credentials {refs.headers} and {refs.basic} both set Authorization; keep one")
        basic = _basic(refs.basic, _read(refs.basic, env, folder))
        token = base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode("ascii")
        fixed.append(("Authorization", f"Basic {token}"))
    if refs.cookies:
        cookies = _cookies(refs.cookies, _read(refs.cookies, env, folder), host)
        if not any(c.host == host or (c.subdomains and host.endswith("." + c.host)) for c in cookies):
            raise CredentialError(f"credential {refs.cookies}: no cookie in it is for {host}")
    names = [name.lower() for name, _ in fixed]
    if len(names) != len(set(names)):
        raise CredentialError(f"credential {refs.headers}: a header is set twice")
    return Credentials((scheme, host, port), refs, tuple(fixed), tuple(cookies), basic)
