"""Pages served as Markdown or plain text (``.md``, ``llms.txt``): front matter, title, images."""

from __future__ import annotations

import functools
import logging
import re

from docscraper.content.extraction.links import safe_url
from docscraper.content.extraction.normalize import normalize_markdown
from docscraper.content.extraction.parsing import sanitize_text
from docscraper.content.extraction.result import EMPTY, Extracted
from docscraper.content.images import markdown_images
from docscraper.content.markdown import fenced_lines

__all__ = ["extract_markdown"]

logger = logging.getLogger(__name__)

_ATX_H1_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FRONT_MATTER_RE = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?)\n(?:---|\.\.\.|\+\+\+)[ \t]*(?:\n|\Z)", re.S)
_FRONT_MATTER_FIELD_RE = re.compile(r"^(title|description)[ \t]*[:=][ \t]*(.*?)[ \t]*$", re.M | re.I)


def extract_markdown(text: str, url: str) -> Extracted:
    """Extract a page served as Markdown or plain text.

    YAML (``---``) or TOML (``+++``) front matter is removed. The title is the first level-1 ATX
    heading outside code fences, else the front matter ``title``, else ``""``; ``description`` comes
    from the front matter. Never raises.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="replace")
        text = sanitize_text(str(text)).lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        fields: dict[str, str] = {}
        match = _FRONT_MATTER_RE.match(text)
        if match:
            for key, value in _FRONT_MATTER_FIELD_RE.findall(match.group(2)):
                fields.setdefault(key.lower(), _unquote(value))
            text = text[match.end() :]
        markdown = normalize_markdown(text)
        title = _first_atx_h1(markdown) or fields.get("title", "")
        return Extracted(
            title=title,
            markdown=markdown,
            canonical_url=None,
            language=None,
            description=fields.get("description") or None,
            has_scripts_only=False,
            images=markdown_images(markdown, functools.partial(safe_url, url)),
        )
    except Exception:  # bad input must never stop a crawl (DESIGN, rule 7)
        logger.warning("Markdown extraction failed for %s", url, exc_info=True)
        return EMPTY


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value.strip()


def _first_atx_h1(markdown: str) -> str:
    lines = markdown.split("\n")
    for line, fenced in zip(lines, fenced_lines(lines), strict=True):
        if fenced:
            continue
        match = _ATX_H1_RE.match(line)
        if match:
            return match.group(1).strip()
    return ""
