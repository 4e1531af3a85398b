"""Discovery parsing: llms.txt, llms-full.txt, sitemaps and robots.txt, with no network and no engine.

The ``docs`` spider fetches these files and hands their bodies to the pure functions here, which never raise on
content (DESIGN rule 7): a broken file gives fewer links and a ``problem`` string. llms.txt gives its links (Markdown,
reference, HTML and bare URLs; not those in code, comments or images); llms-full.txt is split into one section per
page; sitemaps (``urlset``, ``sitemapindex``, gzip or not, plain text) are parsed by Scrapy's
:class:`~scrapy.utils.sitemap.Sitemap` with entities never expanded, at most ``max_bytes`` decompressed and
``max_urls`` entries (an XML parse error: ``kind="invalid"``, no entries); robots.txt gives its ``Sitemap:`` lines.
Every URL returned is absolute, without its fragment, otherwise as written; only ``http``, ``https`` and ``file``
URLs are kept. The formats in full: docs/explanation/flow.md.
"""

from __future__ import annotations

import logging
import re
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

import lxml.etree
from protego import Protego
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap
from w3lib.html import remove_tags, replace_entities

from docscraper.content.markdown import fence_marker, fenced_lines
from docscraper.urls import scope_prefix, strip_fragment

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = [
    "DEFAULT_SITEMAP_MAX_BYTES",
    "DEFAULT_SITEMAP_MAX_URLS",
    "UNIFORM_LASTMOD_MIN",
    "DiscoveredLink",
    "LlmsFullSection",
    "LlmsFullSplit",
    "SitemapDoc",
    "SitemapEntry",
    "SitemapWalk",
    "html_counterparts",
    "is_markdown_url",
    "is_plain_text_file",
    "llms_candidates",
    "markdown_twin_of",
    "parse_llms_txt",
    "parse_sitemap",
    "sitemaps_from_robots",
    "split_llms_full",
]

logger = logging.getLogger(__name__)

#: The sitemaps.org limits: 50,000 URLs and 50 MiB (uncompressed) per sitemap file.
DEFAULT_SITEMAP_MAX_URLS = 50_000
DEFAULT_SITEMAP_MAX_BYTES = 50 * 1024 * 1024

_KEPT_SCHEMES = frozenset({"http", "https", "file"})
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx", ".txt")

# --- data -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiscoveredLink:
    """A link found in an llms.txt: absolute URL without fragment, and its link text (None if bare)."""

    url: str
    title: str | None


@dataclass(frozen=True)
class LlmsFullSection:
    """One page's worth of an llms-full.txt.

    ``mapped_by`` says how ``url`` was found: ``"source-line"``, ``"front-matter"``, ``"title"``, or
    ``None`` when the section could not be mapped (and ``url`` is ``None``).
    """

    title: str
    markdown: str
    url: str | None
    mapped_by: str | None


@dataclass(frozen=True)
class LlmsFullSplit:
    """The sections of an llms-full.txt; ``problem`` is None only when every section mapped to a URL."""

    sections: list[LlmsFullSection]
    problem: str | None


@dataclass(frozen=True)
class SitemapEntry:
    url: str
    lastmod: str | None


@dataclass(frozen=True)
class SitemapDoc:
    """A parsed sitemap: ``kind`` is ``"urlset"``, ``"sitemapindex"`` or ``"invalid"``.

    ``entries`` are page URLs for a urlset and child sitemap URLs for an index (empty when invalid);
    ``problem`` says why the document is invalid or was truncated.
    """

    kind: str
    entries: list[SitemapEntry]
    problem: str | None


# --- shared helpers ---------------------------------------------------------------------------------

_UNSAFE_CHARS_RE = re.compile(r"[\s\x00-\x1f\x7f]")


def _resolve(raw: str, base_url: str) -> str | None:
    """*raw* made absolute against *base_url*, fragment stripped; None when not a usable URL.

    Usable means: no whitespace or control characters, a parseable port, an http/https URL with a host
    or a file URL with a path.
    """
    candidate = raw.strip()
    if not candidate or _UNSAFE_CHARS_RE.search(candidate):
        return None
    try:
        absolute = urljoin(base_url, candidate)
        parts = urlsplit(absolute)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _KEPT_SCHEMES:
        return None
    if scheme == "file" and not parts.path:
        return None
    if scheme != "file" and not parts.hostname:
        return None
    return strip_fragment(absolute)


def _split_lines(text: str) -> list[str]:
    """Lines of *text* without their endings; ``\\r\\n`` and ``\\r`` count as line ends."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _without_comments(text: str) -> str:
    """*text* with closed HTML comments removed; an unclosed ``<!--`` is left as literal text."""
    pieces: list[str] = []
    pos = 0
    while (start := text.find("<!--", pos)) != -1:
        end = text.find("-->", start + 4)
        if end == -1:
            break
        pieces.append(text[pos:start])
        pieces.append(" ")
        pos = end + 3
    pieces.append(text[pos:])
    return "".join(pieces)


_IMAGE_IN_TEXT_RE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)")
_BACKSLASH_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _clean_text(text: str) -> str | None:
    """Link text as a plain title: images become their alt text, code and bold markers go."""
    text = _IMAGE_IN_TEXT_RE.sub(r"\1", text)
    text = text.replace("`", "").replace("**", "").replace("__", "")
    text = _BACKSLASH_ESCAPE_RE.sub(r"\1", text)
    text = " ".join(replace_entities(text).split())
    return text or None


def _title_key(title: str) -> str:
    """Key for comparing titles: Markdown markers dropped, whitespace collapsed, case folded."""
    return " ".join((_clean_text(title) or "").casefold().split())


# --- llms.txt ---------------------------------------------------------------------------------------

# Link text: anything but brackets, a backslash escape, or one level of nested brackets.
_TEXT = r"(?:[^\[\]\\\n]|\\.|\[[^\[\]\n]*\])*"
# Destination: <...> or a run without spaces in which parentheses are balanced (one level).
_DEST = r"(?:<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
_LINK_TITLE = r"""(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\))"""

_REF_DEF = rf"""^[ ]{{0,3}}\[(?P<dlabel>[^\[\]\n]+)\]:[ \t]*\n?[ \t]*(?P<ddest><[^<>\n]*>|\S+)
    (?:[ \t]+{_LINK_TITLE})?[ \t]*$"""
_REF_DEF_RE = re.compile(_REF_DEF, re.MULTILINE | re.VERBOSE)

_LLMS_TOKEN_RE = re.compile(
    rf"""
      (?P<refdef>{_REF_DEF})
    | (?P<code>``[^\n]+?``|`[^`\n]+`)
    | (?P<img>!)?\[(?P<text>{_TEXT})\]\(\s*(?P<dest>{_DEST})(?:\s+{_LINK_TITLE})?\s*\)
    | (?P<rimg>!)?\[(?P<rtext>{_TEXT})\]\[(?P<label>[^\[\]\n]*)\]
    | \[(?P<stext>{_TEXT})\]
    | <a\b[^>]*?\bhref[ \t\n]*=[ \t\n]*(?:"(?P<href_dq>[^"]*)"|'(?P<href_sq>[^']*)'|(?P<href>[^\s"'>]+))
        [^>]*>(?P<atext>(?s:.){{0,2000}}?)</a[ \t\n]*>
    | <(?P<auto>[A-Za-z][A-Za-z0-9+.-]{{1,31}}:[^<>\s]*)>
    | (?<![\w/"'=<])(?<!\]\()(?P<bare>https?://[^\s<>"'`\[\]{{}}|\\^]+)
    """,
    re.MULTILINE | re.VERBOSE | re.IGNORECASE,
)

_BARE_TRAILING = ".,;:!?*_~'\""


def _label_key(label: str) -> str:
    return " ".join(label.casefold().split())


def _unbracket(dest: str) -> str:
    return dest[1:-1] if dest.startswith("<") and dest.endswith(">") else dest


def _trim_bare(url: str) -> str:
    """Strip the punctuation that ends a sentence rather than the URL (GFM autolink rules)."""
    while url and (
        url[-1] in _BARE_TRAILING or (url[-1] == ")" and url.count(")") > url.count("("))
    ):
        url = url[:-1]
    return url


def _llms_searchable_text(text: str) -> str:
    lines = _split_lines(text)
    fenced = fenced_lines(lines)
    return _without_comments("\n".join("" if code else line for line, code in zip(lines, fenced, strict=False)))


def parse_llms_txt(text: str, base_url: str) -> list[DiscoveredLink]:
    """Links of an llms.txt in document order, de-duplicated by URL (the first occurrence wins).

    Relative URLs are resolved against *base_url* (the llms.txt's own URL); links that are malformed
    (unbalanced brackets, bad port, whitespace in the URL) or use another scheme (``mailto:``,
    ``javascript:`` ...) are skipped. Never raises.
    """
    searchable = _llms_searchable_text(text)
    definitions: dict[str, str] = {}
    for definition in _REF_DEF_RE.finditer(searchable):
        definitions.setdefault(_label_key(definition["dlabel"]), _unbracket(definition["ddest"]))

    # (url, title, label): a definition's own entry carries its label and is kept only if unused.
    found: list[tuple[str, str | None, str | None]] = []
    used_labels: set[str] = set()
    pos = 0
    while match := _LLMS_TOKEN_RE.search(searchable, pos):
        pos = match.end()
        raw, title, label = _llms_token(match, definitions, used_labels)
        if raw is None:
            if match["stext"] is not None:
                pos = match.start() + 1  # not a link after all: links may sit inside the brackets
            continue
        url = _resolve(raw, base_url)
        if url is not None:
            found.append((url, title, label))

    links: list[DiscoveredLink] = []
    seen: set[str] = set()
    for url, title, label in found:
        if (label is not None and label in used_labels) or url in seen:
            continue
        seen.add(url)
        links.append(DiscoveredLink(url=url, title=title))
    return links


def _llms_token(
    match: re.Match[str], definitions: Mapping[str, str], used_labels: set[str]
) -> tuple[str | None, str | None, str | None]:
    """(raw URL, title, definition label) of one token; raw is None when the token is no link."""
    if match["refdef"] is not None:
        return _unbracket(match["ddest"]), None, _label_key(match["dlabel"])
    if match["code"] is not None:
        return None, None, None
    if match["dest"] is not None:
        if match["img"]:
            return None, None, None
        dest = match["dest"]
        if dest.startswith("<"):
            dest = _unbracket(dest)
        elif not dest:
            return None, None, None
        return dest, _clean_text(match["text"]), None
    if match["rtext"] is not None:
        key = _label_key(match["label"] or match["rtext"])
        used_labels.add(key)
        if match["rimg"] or key not in definitions:
            return None, None, None
        return definitions[key], _clean_text(match["rtext"]), None
    if match["stext"] is not None:
        key = _label_key(match["stext"])
        if key not in definitions:
            return None, None, None
        used_labels.add(key)
        return definitions[key], _clean_text(match["stext"]), None
    if match["atext"] is not None:
        href = match["href_dq"] if match["href_dq"] is not None else match["href_sq"]
        href = replace_entities(href if href is not None else match["href"] or "")
        return href, _clean_text(remove_tags(match["atext"])), None
    if match["auto"] is not None:
        return match["auto"], None, None
    return _trim_bare(match["bare"]), None, None


# --- llms-full.txt ----------------------------------------------------------------------------------

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SOURCE_LINE_RE = re.compile(
    r"^[ \t]*(?:source(?:[ _-]?url)?|url)[ \t]*:[ \t]*(<[^<>\s]+>|[^\s<>]+)[ \t]*$", re.IGNORECASE
)
_URLISH_RE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|/|\./|\.\./)")
_SOURCE_LOOKAHEAD = 3  # non-blank lines after a heading searched for a Source:/URL: line

_SELF_MAPPED = frozenset({"source-line", "front-matter"})

_FRONT_MATTER_KEY_RE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:[ \t]*(.*)$")
_FRONT_MATTER_MAX_LINES = 40
_FRONT_MATTER_URL_KEYS = ("url", "source", "source_url", "sourceurl", "source-url")


@dataclass
class _Section:
    title: str
    lines: list[str]
    url: str | None = None
    mapped_by: str | None = None

    def freeze(self) -> LlmsFullSection:
        return LlmsFullSection(
            title=self.title,
            markdown="\n".join(self.lines).strip() + "\n",
            url=self.url,
            mapped_by=self.mapped_by,
        )


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, or None."""
    match = _ATX_RE.match(line)
    if match is None:
        return None
    text = (match[2] or "").strip()
    without_closing = text.rstrip("#")
    if not without_closing:
        text = ""
    elif without_closing[-1] in " \t":
        text = without_closing.rstrip()
    return len(match[1]), text


def _source_url(value: str, base_url: str) -> str | None:
    value = _unbracket(value.strip())
    return _resolve(value, base_url) if _URLISH_RE.match(value) else None


def _take_source_line(section: _Section, base_url: str) -> None:
    """Map *section* by a Source:/URL: line just under its heading, and remove that line."""
    non_blank = 0
    for index in range(1, len(section.lines)):
        line = section.lines[index]
        if not line.strip():
            continue
        if fence_marker(line) is not None or _heading(line):
            return
        non_blank += 1
        if non_blank > _SOURCE_LOOKAHEAD:
            return
        match = _SOURCE_LINE_RE.match(line)
        if match and (url := _source_url(match[1], base_url)):
            section.url, section.mapped_by = url, "source-line"
            del section.lines[index]
            return


def _map_by_title(section: _Section, titles: Mapping[str, str], base_url: str) -> None:
    if section.url is None and (target := titles.get(_title_key(section.title))):
        url = _resolve(target, base_url)
        if url is not None:
            section.url, section.mapped_by = url, "title"


def _front_matter_at(lines: list[str], fenced: list[bool], start: int) -> tuple[int, dict[str, str]] | None:
    """(index of the closing ``---``, keys) when *start* opens a front-matter block, else None."""
    if fenced[start] or lines[start].strip() != "---":
        return None
    meta: dict[str, str] = {}
    for index in range(start + 1, min(len(lines), start + 1 + _FRONT_MATTER_MAX_LINES)):
        line = lines[index]
        if fenced[index]:
            return None
        if line.strip() == "---":
            has_key = "title" in meta or any(key in meta for key in _FRONT_MATTER_URL_KEYS)
            return (index, meta) if has_key else None
        if not line.strip() or line[0] in " \t-#":  # YAML continuation, list item or comment
            continue
        match = _FRONT_MATTER_KEY_RE.match(line)
        if match is None:
            return None
        value = match[2].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        meta.setdefault(match[1].lower(), value)
    return None


def _front_matter_blocks(lines: list[str], fenced: list[bool]) -> list[tuple[int, int, dict[str, str]]]:
    blocks: list[tuple[int, int, dict[str, str]]] = []
    index = 0
    while index < len(lines):
        found = _front_matter_at(lines, fenced, index)
        if found is None:
            index += 1
            continue
        end, meta = found
        blocks.append((index, end, meta))
        index = end + 1
    starts_with_block = bool(blocks) and not any(line.strip() for line in lines[: blocks[0][0]])
    has_url = any(key in meta for _, _, meta in blocks for key in _FRONT_MATTER_URL_KEYS)
    return blocks if starts_with_block or has_url else []


def _sections_by_front_matter(
    lines: list[str],
    fenced: list[bool],
    blocks: list[tuple[int, int, dict[str, str]]],
    titles: Mapping[str, str],
    base_url: str,
) -> list[_Section]:
    sections: list[_Section] = []
    for number, (_, end, meta) in enumerate(blocks):
        stop = blocks[number + 1][0] if number + 1 < len(blocks) else len(lines)
        body = lines[end + 1 : stop]
        first_heading = next(
            (
                (offset, heading)
                for offset, line in enumerate(body)
                if not fenced[end + 1 + offset] and (heading := _heading(line))
            ),
            None,
        )
        title = meta.get("title") or (first_heading[1][1] if first_heading else "")
        section = _Section(title=title, lines=body)
        for key in _FRONT_MATTER_URL_KEYS:
            if meta.get(key) and (url := _source_url(meta[key], base_url)):
                section.url, section.mapped_by = url, "front-matter"
                break
        if section.url is None and first_heading is not None:
            # Search below the first heading only; lines above it stay as they are.
            offset = first_heading[0]
            tail = _Section(title=title, lines=body[offset:])
            _take_source_line(tail, base_url)
            section.lines = body[:offset] + tail.lines
            section.url, section.mapped_by = tail.url, tail.mapped_by
        _map_by_title(section, titles, base_url)
        sections.append(section)
    return sections


def _sections_by_heading(
    lines: list[str],
    fenced: list[bool],
    headings: list[tuple[int, int, str]],
    level: int,
    titles: Mapping[str, str],
    base_url: str,
) -> list[_Section]:
    starts = [(index, text) for index, lvl, text in headings if lvl == level]
    sections: list[_Section] = []
    for number, (start, text) in enumerate(starts):
        stop = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        section = _Section(title=text, lines=lines[start:stop])
        _take_source_line(section, base_url)
        _map_by_title(section, titles, base_url)
        sections.append(section)
    return sections


def _mapped_count(sections: Iterable[_Section]) -> int:
    return sum(section.url is not None for section in sections)


def split_llms_full(text: str, base_url: str, titles: Mapping[str, str] | None = None) -> LlmsFullSplit:
    """Split an llms-full.txt into per-page sections mapped to page URLs.

    *titles* maps page titles to URLs (the link titles of the site's llms.txt) for files whose sections
    carry no URL of their own. Section boundaries are front-matter blocks when the file has them, else
    H1 headings, else H2 when the file has at most one H1 (the project title) and H2 pages map at least
    as well. Preambles are left out (see the module docstring). Never raises.
    """
    lines = _split_lines(text)
    if not text.strip():
        return LlmsFullSplit(sections=[], problem="empty file")
    fenced = fenced_lines(lines)
    title_index = {_title_key(title): url for title, url in (titles or {}).items()}

    blocks = _front_matter_blocks(lines, fenced)
    if blocks:
        sections = _sections_by_front_matter(lines, fenced, blocks, title_index, base_url)
    else:
        headings = [
            (index, *heading)
            for index, line in enumerate(lines)
            if not fenced[index] and (heading := _heading(line)) and heading[0] <= 2
        ]
        h1_count = sum(level == 1 for _, level, _ in headings)
        sections = _sections_by_heading(lines, fenced, headings, 1, title_index, base_url)
        if h1_count <= 1 and any(level == 2 for _, level, _ in headings):
            by_h2 = _sections_by_heading(lines, fenced, headings, 2, title_index, base_url)
            if _mapped_count(by_h2) >= _mapped_count(sections):
                sections = by_h2

    # Where pages carry their own URL, a first section without one is the file's preamble.
    if sections and sections[0].url is None and any(s.mapped_by in _SELF_MAPPED for s in sections[1:]):
        logger.debug("llms-full preamble %r left out", sections[0].title)
        sections = sections[1:]

    unmapped = sum(section.url is None for section in sections)
    if not sections:
        problem: str | None = "no headings or front matter to split on"
    elif unmapped == len(sections):
        problem = "no section maps to a page URL"
    elif unmapped:
        problem = f"{unmapped} of {len(sections)} sections could not be mapped to a page URL"
    else:
        problem = None
    return LlmsFullSplit(sections=[section.freeze() for section in sections], problem=problem)


# --- sitemaps and robots.txt ------------------------------------------------------------------------


def _invalid(problem: str) -> SitemapDoc:
    return SitemapDoc(kind="invalid", entries=[], problem=problem)


def parse_sitemap(
    body: bytes,
    url: str,
    *,
    max_urls: int = DEFAULT_SITEMAP_MAX_URLS,
    max_bytes: int = DEFAULT_SITEMAP_MAX_BYTES,
) -> SitemapDoc:
    """Parse a sitemap or sitemap index fetched from *url*; gzip, XML or plain text. Never raises.

    The body may be at most *max_bytes* after decompression (0 for no cap); entries past *max_urls*
    are dropped and reported in ``problem``. Locations that are not usable URLs are skipped.
    """
    if body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=max_bytes)
        except ValueError:  # scrapy's decompression size check
            return _invalid(f"gzip body decompresses to more than {max_bytes} bytes")
        except (OSError, EOFError, struct.error, zlib.error) as exc:
            return _invalid(f"corrupt gzip body: {exc}")
    elif max_bytes and len(body) > max_bytes:
        return _invalid(f"body is larger than {max_bytes} bytes")

    if body.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return _parse_xml_sitemap(body, url, max_urls)
    return _parse_text_sitemap(body, url, max_urls)


def _truncation(max_urls: int) -> str:
    return f"more than {max_urls} entries; kept the first {max_urls}"


def _parse_xml_sitemap(body: bytes, url: str, max_urls: int) -> SitemapDoc:
    entries: list[SitemapEntry] = []
    truncated = False
    try:
        sitemap = Sitemap(body)
        kind = sitemap.type
        if kind not in ("urlset", "sitemapindex"):
            return _invalid(f"root element <{kind}> is neither <urlset> nor <sitemapindex>")
        for element in sitemap:
            loc = _resolve(element.get("loc", ""), url)
            if loc is None:
                logger.debug("Sitemap %s: unusable <loc> %r skipped", url, element.get("loc"))
                continue
            if len(entries) >= max_urls:
                truncated = True
                break
            entries.append(SitemapEntry(url=loc, lastmod=element.get("lastmod") or None))
        errors = [error for error in sitemap.xmliter.error_log if error.level >= lxml.etree.ErrorLevels.ERROR]
    except (lxml.etree.LxmlError, StopIteration, ValueError) as exc:
        return _invalid(f"broken XML: {str(exc) or 'no root element'}")
    if errors:
        first = errors[0]
        return _invalid(f"broken XML: {first.message.strip()} (line {first.line})")
    return SitemapDoc(kind=kind, entries=entries, problem=_truncation(max_urls) if truncated else None)


def _parse_text_sitemap(body: bytes, url: str, max_urls: int) -> SitemapDoc:
    entries: list[SitemapEntry] = []
    skipped = 0
    for line in body.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines():
        candidate = line.strip()
        if not candidate:
            continue
        # sitemaps.org requires full URLs here; resolving words as relative paths would invent pages.
        loc = _resolve(candidate, url) if _URLISH_RE.match(candidate) and "://" in candidate else None
        if loc is None:
            skipped += 1
            continue
        if len(entries) >= max_urls:
            return SitemapDoc(kind="urlset", entries=entries, problem=_truncation(max_urls))
        entries.append(SitemapEntry(url=loc, lastmod=None))
    if not entries:
        return _invalid("neither XML nor a plain-text list of URLs")
    if skipped:
        logger.debug("Text sitemap %s: %d lines that are not URLs skipped", url, skipped)
    return SitemapDoc(kind="urlset", entries=entries, problem=None)


def sitemaps_from_robots(robots_text: str, base_url: str) -> list[str]:
    """Sitemap URLs declared in a robots.txt, resolved against *base_url*, first occurrence kept."""
    urls: list[str] = []
    for raw in Protego.parse(robots_text).sitemaps:
        # Protego cuts a line at "#" (a comment), which can leave "<url" without its ">".
        url = _resolve(raw.strip().removeprefix("<").removesuffix(">"), base_url)
        if url is not None and url not in urls:
            urls.append(url)
    return urls


# --- where to look, and what a Markdown URL stands for ----------------------------------------------


def llms_candidates(source_url: str) -> list[tuple[str, str]]:
    """(kind, URL) pairs to probe: llms-full.txt then llms.txt, at the source's folder, then the host root.

    The host root is skipped when it is the folder, and for ``file://`` sources (the filesystem root is
    not the site's root). Returns [] for a URL that cannot be parsed.
    """
    try:
        prefix = scope_prefix(source_url)
    except ValueError:
        return []
    parts = urlsplit(prefix)
    if parts.scheme not in _KEPT_SCHEMES:
        return []
    folders = [prefix]
    root = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    if parts.scheme != "file" and root != prefix:
        folders.append(root)
    return [(kind, folder + f"{kind}.txt") for folder in folders for kind in ("llms-full", "llms")]


def _path(url: str) -> str | None:
    try:
        return urlsplit(url).path
    except ValueError:
        return None


def is_markdown_url(url: str) -> bool:
    """True when the URL's path ends in .md, .markdown, .mdx or .txt (any case)."""
    path = _path(url)
    return path is not None and path.lower().endswith(_MARKDOWN_SUFFIXES)


def markdown_twin_of(url: str) -> str | None:
    """The HTML page a ``page.html.md`` URL is the Markdown twin of (``page.html``), else None.

    Only the ``.html.md`` / ``.htm.md`` form names its page without doubt; ``intro.md`` could stand for
    ``intro``, ``intro/`` or ``intro.html``, so it keeps its own URL.
    """
    candidates = html_counterparts(url)
    path = _path(url) or ""
    if candidates and path.lower().endswith((".html.md", ".htm.md")):
        return candidates[-1] if path.lower().endswith(("/index.html.md", "/index.htm.md")) else candidates[0]
    return None


def html_counterparts(md_url: str) -> list[str]:
    """The HTML URLs a ``.md`` URL is the Markdown twin of (llmstxt.org: page URL + ``.md``).

    ``page.html.md`` -> ``page.html``; ``intro.md`` -> ``intro``, ``intro.html``; ``index.md`` and
    ``index.html.md`` -> ``index.html`` and the folder. Anything not ending in ``.md`` -> [].
    """
    try:
        parts = urlsplit(md_url)
    except ValueError:
        return []
    if not parts.path.lower().endswith(".md"):
        return []
    path = parts.path[: -len(".md")]
    folder, _, name = path.rpartition("/")
    if not name:
        return []

    def with_path(new_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, new_path, parts.query, ""))

    lowered = name.lower()
    if lowered in ("index.html", "index.htm", "index"):
        html_name = name if lowered != "index" else "index.html"
        return [with_path(f"{folder}/{html_name}"), with_path(f"{folder}/")]
    if lowered.endswith((".html", ".htm")):
        return [with_path(path)]
    return [with_path(path), with_path(path + ".html")]


def is_plain_text_file(content_type: str, body: bytes) -> bool:
    """Whether an answer for llms.txt (or llms-full.txt) is a text file, not an HTML page that a site serves
    for any path."""
    head = body[:256].lstrip().lower()
    return "html" not in content_type.lower() and not head.startswith((b"<!doctype", b"<html"))


#: A sitemap file with at least this many URLs, all with one ``<lastmod>``, says nothing of when pages changed.
UNIFORM_LASTMOD_MIN = 20


class SitemapWalk:
    """A site's sitemaps, breadth first, as a crawl and the ``sources add`` probe both read them.

    Starts from robots.txt's ``Sitemap:`` lines, then ``sitemap.xml`` at the scope's folder and (*site_root*)
    at the host's root; follows sitemap indexes to *max_depth* levels and reads at most *max_files* files,
    on the seed's host only. Fetching is the caller's: iterate for the next URL to fetch, and hand each parsed
    document back with :meth:`add` (a URL that could not be fetched is simply not added). What was read is in
    :attr:`files` (``{url, kind, entries}``), the page URLs in :attr:`pages` (their ``<lastmod>`` in
    :attr:`lastmods`), and what was left out and why in :attr:`problems`. A file of at least
    :data:`UNIFORM_LASTMOD_MIN` URLs that all carry the same ``<lastmod>`` (the date it was generated, not when
    each page changed) gives no lastmods; it is listed in :attr:`uniform_lastmod`."""

    def __init__(self, seed: str, prefix: str, robots_text: str, *, site_root: bool = True, max_files: int = 500,
                 max_depth: int = 3) -> None:
        self.queue: list[tuple[str, int]] = [(u, 0) for u in sitemaps_from_robots(robots_text, seed)]
        self.from_robots = bool(self.queue)
        roots = (urljoin(seed, "/sitemap.xml"),) if site_root else ()
        for fallback in (urljoin(prefix, "sitemap.xml"), *roots):
            if fallback not in (u for u, _ in self.queue):
                self.queue.append((fallback, 0))
        self.host = urlsplit(seed).netloc
        self.max_files = max_files
        self.max_depth = max_depth
        self.files: list[dict[str, object]] = []
        self.pages: list[str] = []
        self.lastmods: dict[str, str] = {}
        self.uniform_lastmod: list[str] = []
        self.problems: list[str] = []
        self._seen: set[str] = set()
        self._levels: dict[str, int] = {}

    def __iter__(self) -> Iterator[str]:
        while self.queue:
            url, level = self.queue.pop(0)
            if url in self._seen:
                continue
            self._seen.add(url)
            if len(self.files) >= self.max_files:
                self.problems.append(f"more than {self.max_files} sitemap files; the rest ignored")
                return
            if urlsplit(url).netloc != self.host:
                self.problems.append(f"{url}: sitemap on another host ignored")
                continue
            self._levels[url] = level
            yield url

    def add(self, url: str, doc: SitemapDoc) -> None:
        """The parsed sitemap fetched for *url* (one this walk yielded)."""
        self.files.append({"url": url, "kind": doc.kind, "entries": len(doc.entries)})
        if doc.problem:
            self.problems.append(f"{url}: {doc.problem}")
        if doc.kind == "sitemapindex":
            level = self._levels.get(url, 0)
            if level + 1 > self.max_depth:
                self.problems.append(f"{url}: nested deeper than {self.max_depth}; children ignored")
                return
            self.queue.extend((entry.url, level + 1) for entry in doc.entries if entry.url not in self._seen)
        elif doc.kind == "urlset":
            self.pages.extend(entry.url for entry in doc.entries)
            dates = {entry.lastmod for entry in doc.entries}
            if len(doc.entries) >= UNIFORM_LASTMOD_MIN and len(dates) == 1 and None not in dates:
                self.uniform_lastmod.append(url)
                return
            self.lastmods.update((entry.url, entry.lastmod) for entry in doc.entries if entry.lastmod)
