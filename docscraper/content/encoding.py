"""Which encoding a fetched page's bytes are really in.

:func:`body_encoding` follows the order browsers use (byte-order mark, ``Content-Type`` charset, then ``<meta
charset>`` / ``<?xml encoding?>`` for HTML) and checks the declaration against the bytes: a declared UTF-8 whose
bytes are not, or a legacy declaration whose decoding is mostly replacement characters, is re-detected; a legacy
declaration over valid multi-byte UTF-8 is read as UTF-8; with no declaration, valid UTF-8 is UTF-8, else
charset_normalizer's guess (Windows-1252 when it is about as plausible). The result (:class:`BodyEncoding`) says why
a declaration was overridden (``redetected``); the spider logs it and counts ``docscraper/encoding/redetected``. A
correct UTF-8 declaration costs one strict decode. The thresholds, and why: docs/explanation/extraction.md.
"""

from __future__ import annotations

import codecs
import logging
from dataclasses import dataclass

from charset_normalizer import from_bytes
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

__all__ = ["BodyEncoding", "body_encoding", "decode_body", "detect_encoding"]

logger = logging.getLogger(__name__)

#: Bytes handed to charset_normalizer: enough for a confident guess, bounded cost on huge pages.
_DETECT_BYTES = 256 * 1024
#: Windows-1252 wins over a detector's first choice when its mess ratio is at most this much worse.
_CP1252_MARGIN = 0.15
#: Invalid sequences tolerated before a declaration is doubted: a few stray bytes are not a wrong charset.
_MAX_STRAY = 3


@dataclass(frozen=True)
class BodyEncoding:
    """How to decode a page: ``encoding`` (a Python codec name), what the page declared and where
    (``bom``, ``header``, ``meta``; ``None`` when nothing), and why the declaration was not used."""

    encoding: str
    declared: str | None = None
    source: str | None = None
    redetected: str | None = None


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a sample cut inside a multi-byte character is still UTF-8
        return exc.reason == "unexpected end of data" and exc.start >= len(body) - 3
    return True


def _damaged(text: str, replacements: int) -> bool:
    """Whether decoded text holds too many U+FFFD for the declaration to be believed."""
    if replacements <= 0:
        return False
    if replacements <= _MAX_STRAY and replacements * 100 <= len(text):
        return False
    # a mostly-UTF-8 page with a stray legacy paragraph keeps its UTF-8
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    return non_ascii - replacements < replacements


def detect_encoding(body: bytes) -> str:
    """The encoding of bytes that declare none (or declare a wrong one): UTF-8 when they are valid
    UTF-8, else charset_normalizer's guess with Windows-1252 preferred when about as plausible."""
    sample = body[:_DETECT_BYTES]
    if sample.isascii() or _is_utf8(sample):
        return "utf-8"
    matches = from_bytes(sample)
    best = matches.best()
    if best is None:
        return "cp1252"
    for match in matches:
        if match.chaos <= best.chaos + _CP1252_MARGIN and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return _codec(best.encoding)


def body_encoding(body: bytes, content_type: str | None = None, *, html: bool = True) -> BodyEncoding:
    """Decide how to decode *body*, served with *content_type*; for HTML the body's own declaration
    counts too. Never raises."""
    bom, _ = read_bom(body)
    if bom:
        return BodyEncoding(_codec(bom), _codec(bom), "bom")
    declared = http_content_type_encoding(content_type or "")
    source = "header"
    if declared is None and html:
        declared = html_body_declared_encoding(body)
        source = "meta"
    if declared is None:
        return BodyEncoding(detect_encoding(body))
    declared = _codec(declared)
    if declared == "utf-8":
        try:
            body.decode("utf-8")
            return BodyEncoding(declared, declared, source)
        except UnicodeDecodeError:
            pass
        text = body.decode("utf-8", "replace")
        bad = text.count("\ufffd") - body.count(b"\xef\xbf\xbd")
        if not _damaged(text, bad):
            return BodyEncoding(declared, declared, source)
        return BodyEncoding(detect_encoding(body), declared, source,
                            f"{bad} byte sequences are not valid in the declared {declared}")
    if declared.startswith(("utf-16", "utf-32")):
        return BodyEncoding(declared, declared, source)
    if not body.isascii() and _is_utf8(body):
        return BodyEncoding("utf-8", declared, source, f"declared {declared}, but the bytes are valid UTF-8")
    try:
        text = body.decode(declared, "replace")
    except LookupError:  # w3lib resolves names, but an odd codec may still be missing
        return BodyEncoding(detect_encoding(body), declared, source, f"no codec for the declared {declared}")
    bad = text.count("\ufffd")
    if _damaged(text, bad):
        detected = detect_encoding(body)
        if detected != declared:
            return BodyEncoding(detected, declared, source,
                                f"{bad} byte sequences are not valid in the declared {declared}")
    return BodyEncoding(declared, declared, source)


def decode_body(body: bytes, encoding: str) -> str:
    """*body* as text in *encoding*, without a byte-order mark; undecodable bytes become U+FFFD."""
    bom, mark = read_bom(body)
    if bom and mark:
        body = body[len(mark):]
        encoding = bom
    try:
        return body.decode(encoding, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")
