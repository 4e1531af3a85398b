"""Secrets never leave memory (DESIGN rule 9): what counts as one, and how text is cleaned of them.

A secret is a credential in a URL (``https://user:password@host/``, or a query parameter named like a secret) or the
value of a setting whose name says it is secret (a ``_``-separated part such as ``PASSWORD``, ``TOKEN``, ``SECRET``,
``KEY``: :func:`is_secret_name`) or that is a webhook URL. :class:`Redactor` replaces both with ``***`` in any text;
:func:`redact_logs` puts one on every handler of the root logger, so nothing logged through :mod:`logging` carries a
secret; :func:`redact_data` cleans a JSON-ready value. :func:`check_no_credentials` refuses a URL that carries
credentials where a source or an ``llms_txt`` is given. Where secrets come from: docs/explanation/security.md.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "MASK",
    "Redactor",
    "check_no_credentials",
    "has_credentials",
    "is_secret_name",
    "redact_data",
    "redact_logs",
    "redact_text",
    "redact_url",
    "secret_values",
]

#: What a secret is replaced with.
MASK = "***"

_SECRET_PARTS = frozenset({
    "PASS", "PASSWD", "PASSWORD", "PASSPHRASE", "TOKEN", "TOKENS", "SECRET", "SECRETS", "KEY", "KEYS", "APIKEY",
    "CREDENTIAL", "CREDENTIALS", "AUTHORIZATION", "COOKIE", "COOKIES", "SESSION", "PRIVATE", "SIGNATURE",
})
# Query parameters whose value is a secret (matched on the lowercase name, without separators).
_SECRET_PARAMS = re.compile(
    r"(?i)(?<=[?&;])((?:access[_-]?|api[_-]?|auth[_-]?|refresh[_-]?|id[_-]?)?(?:token|key|secret|password|passwd|pwd"
    r"|sig|signature|credential|credentials|session|apikey|code))=([^&#\s\"'<>]+)"
)
# userinfo of any URL-looking text: scheme://user[:password]@
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@\"'<>]+)@")
# A secret value shorter than this is not searched for in text: "1" or "on" would mask everything.
_MIN_SECRET = 4


def is_secret_name(name: str) -> bool:
    """Whether a setting or variable called *name* holds a secret: a ``_``-separated part of it says so
    (``HTTPAUTH_PASS``, ``DOCSCRAPER_SERVER_TOKEN``; not ``DOCSCRAPER_SEARCH_KEYWORD_WEIGHT``), or it is a
    webhook URL."""
    parts = set(re.split(r"[_\W]+", str(name).upper()))
    return bool(parts & _SECRET_PARTS) or ("WEBHOOK" in parts and "URL" in parts)


def has_credentials(url: str) -> bool:
    """Whether *url* carries a user name or password (``scheme://user:password@host``)."""
    try:
        parts = urlsplit(str(url).strip())
    except ValueError:
        return "@" in str(url).split("/", 3)[2] if str(url).count("/") >= 2 else False
    return parts.username is not None or parts.password is not None


def check_no_credentials(url: str, what: str = "URL") -> None:
    """Refuse a *url* that carries credentials, with a message that does not repeat them
    (:class:`ValueError`)."""
    if has_credentials(url):
        raise ValueError(
            f"{what} {redact_url(url)!r} carries credentials (user:password@); docscraper never stores "
            "secrets: remove them from the URL"
        )


def redact_url(url: str) -> str:
    """*url* with its user information and secret query values replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", str(url))
    return _SECRET_PARAMS.sub(lambda m: f"{m.group(1)}={MASK}", text)


def _url_secrets(value: str) -> set[str]:
    """The secret part of a URL-valued setting: its password (a user name is masked with it wherever the URL
    appears, but is no secret to look for alone: it is often a common word)."""
    try:
        password = urlsplit(value).password
    except ValueError:
        return set()
    return {password} if password and len(password) >= _MIN_SECRET else set()


def secret_values(items: Iterable[tuple[str, Any]]) -> set[str]:
    """The secrets among ``(name, value)`` pairs: the values of secret-named ones (for a webhook URL,
    the whole URL and its path), and the credentials of URL values."""
    found: set[str] = set()
    for name, value in items:
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip()
        if "://" in text:
            found |= _url_secrets(text)
        if is_secret_name(name) and len(text) >= _MIN_SECRET:
            found.add(text)
            if "://" in text:
                try:
                    parts = urlsplit(text)
                except ValueError:
                    continue
                tail = parts.path.strip("/")
                if len(tail) >= _MIN_SECRET:
                    found.add(tail)
                if len(parts.query) >= _MIN_SECRET:
                    found.add(parts.query)
    return found


class Redactor:
    """Replaces known secret values, and credentials in any URL, with ``***`` (see the module docstring)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self.add(values)

    def add(self, values: Iterable[str]) -> None:
        """Also redact *values* from now on."""
        new = {v for v in values if isinstance(v, str) and len(v) >= _MIN_SECRET}
        with self._lock:
            merged = tuple(sorted(set(self._values) | new, key=len, reverse=True))
            if merged == self._values:
                return
            self._values = merged
            self._pattern = re.compile("|".join(re.escape(v) for v in merged)) if merged else None

    @classmethod
    def from_settings(cls, settings: Any, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor of the secrets in Scrapy *settings* (any mapping of names to values) and in the
        environment (*environ*, default ``os.environ``: the values of secret-named variables)."""
        pairs: list[tuple[str, Any]] = []
        for name in settings:
            try:
                pairs.append((str(name), settings[name]))
            except (KeyError, TypeError):
                continue
        pairs.extend((environ if environ is not None else os.environ).items())
        return cls(secret_values(pairs))

    @property
    def values(self) -> tuple[str, ...]:
        """The secret values it replaces, longest first."""
        return self._values

    def redact(self, text: str) -> str:
        if not text:
            return text
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(MASK, text)
        if "@" in text or "=" in text:
            text = redact_url(text)
        return text


_DEFAULT = Redactor()


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """*text* cleaned by *redactor* (default: the process's, fed by :func:`redact_logs`)."""
    return (redactor or _DEFAULT).redact(text)


def redact_data(value: Any, redactor: Redactor | None = None) -> Any:
    """A JSON-ready *value* with every string in it cleaned (keys too)."""
    if isinstance(value, str):
        return redact_text(value, redactor)
    if isinstance(value, Mapping):
        return {redact_text(str(k), redactor) if isinstance(k, str) else k: redact_data(v, redactor)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v, redactor) for v in value]
    return value


class _RedactingFilter(logging.Filter):
    """Cleans each record before its handler formats it: the message with its arguments, and the
    traceback text."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__("docscraper.secrets")
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it to the handler
            return True
        cleaned = self.redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.redactor.redact(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = self.redactor.redact(record.stack_info)
        return True


_FILTER = _RedactingFilter(_DEFAULT)


def redact_logs(settings: Any = None, *, logger: logging.Logger | None = None) -> Redactor:
    """Clean every record the handlers of *logger* (default: the root logger) emit of the secrets in
    *settings* and the environment, and of credentials in URLs. Call it again after handlers change or
    more secrets are known: it is idempotent. Returns the process's redactor."""
    _DEFAULT.add(Redactor.from_settings(settings if settings is not None else {}).values)
    for handler in (logger or logging.getLogger()).handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
    return _DEFAULT
