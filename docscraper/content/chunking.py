"""Heading-aware chunking of a page's Markdown for the embedding model.

:class:`Chunker` turns one page's normalized Markdown (as :mod:`docscraper.content.extraction` writes it) into
:class:`Chunk` objects whose ``embed_text``, ``f"{title}\\n{heading}\\n\\n{text}"`` (empty parts left out), fits the
model's maximum sequence length (DESIGN rule 5), measured with the model's own tokenizer (a :class:`TokenCounter`):
nothing is dropped or truncated, and a code fence or table is cut only when it alone is too large (its parts labelled
``part = "i/n"``). :class:`ChunkingConfig`: ``max_tokens`` is the model's ``max_seq_length``, not a setting; chunks
aim at ``target_tokens`` (``DOCSCRAPER_CHUNK_TARGET_TOKENS``, 200), sections under ``min_tokens``
(``DOCSCRAPER_CHUNK_MIN_TOKENS``, 48) are merged, and a split section's chunks overlap by up to ``overlap_tokens``
(``DOCSCRAPER_CHUNK_OVERLAP_TOKENS``, 32). Empty Markdown, or a page that is only its title heading, gives no chunks.
The output is deterministic, so unchanged chunks keep their vectors. Step by step: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from docscraper.content.documents.base import PAGE_MARKER_RE
from docscraper.content.markdown import closes_fence, fence_open

__all__ = ["Chunk", "Chunker", "ChunkingConfig", "TokenCounter", "hf_token_counter"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Chunk:
    """One piece of a page, ready to embed.

    ``text`` is the chunk's Markdown body; ``embed_text`` is what gets embedded (context prefix + text)
    and ``token_count`` its length in tokens including the model's special tokens. ``part`` is ``"i/n"``
    when the chunk holds part *i* of a block that had to be split into *n* parts. ``page`` and ``page_end``
    are the pages (1-based) of a paged document its text comes from, read from the page markers
    (``<!-- page N -->``) of ``chunk(..., paged=True)``.
    """

    index: int
    text: str
    heading: str
    embed_text: str
    chunk_hash: str
    token_count: int
    part: str | None = None
    #: the first and last page of a paged document (a PDF) its text comes from; None for web pages
    page: int | None = None
    page_end: int | None = None


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk sizes in tokens (special tokens included). See the module docstring for their roles."""

    max_tokens: int
    target_tokens: int = 200
    overlap_tokens: int = 32
    min_tokens: int = 48

    def __post_init__(self) -> None:
        for name in ("max_tokens", "target_tokens", "overlap_tokens", "min_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"chunking {name} must be a whole number, got {value!r}")
        if self.max_tokens <= 16:
            raise ValueError(f"chunking max_tokens must be more than 16, got {self.max_tokens}")
        if not 0 < self.target_tokens <= self.max_tokens:
            raise ValueError(
                f"chunking target_tokens must be between 1 and max_tokens ({self.max_tokens}), "
                f"got {self.target_tokens}"
            )
        if not 0 <= self.overlap_tokens < self.target_tokens:
            raise ValueError(
                f"chunking overlap_tokens must be 0 or more and less than target_tokens ({self.target_tokens}), "
                f"got {self.overlap_tokens}"
            )
        if not 0 <= self.min_tokens <= self.target_tokens:
            raise ValueError(
                f"chunking min_tokens must be between 0 and target_tokens ({self.target_tokens}), "
                f"got {self.min_tokens}"
            )


class TokenCounter(Protocol):
    """Counts tokens of many texts at once, the model's special tokens included."""

    def __call__(self, texts: list[str]) -> list[int]: ...


def hf_token_counter(tokenizer: Any) -> TokenCounter:
    """Wrap a Hugging Face tokenizer as a :class:`TokenCounter`.

    Counts ``len(input_ids)`` with special tokens, without truncation or padding, in one batched call.
    ``verbose=False`` keeps the tokenizer from warning about texts longer than the model maximum:
    measuring those is the point.
    """

    def count(texts: list[str]) -> list[int]:
        if not texts:
            return []
        encoded = tokenizer(
            list(texts),
            add_special_tokens=True,
            truncation=False,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        return [len(ids) for ids in encoded["input_ids"]]

    return count


# --------------------------------------------------------------------------------------------------
# Block splitting
# --------------------------------------------------------------------------------------------------

_HEADING = "heading"
_PARAGRAPH = "paragraph"
_ITEM = "item"
_CODE = "code"
_TABLE = "table"
_OVERLAP = "overlap"

_PATH_SEPARATOR = " > "
_ELLIPSIS = "…"

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_LIST_ITEM_RE = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TABLE_DELIMITER_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
# A sentence ends at . ! ? … (plus closing quotes, brackets or emphasis) followed by whitespace and not
# by a lowercase letter (so "e.g. foo" and "1. item" mostly stay whole), or at a CJK full stop.
_SENTENCE_END_RE = re.compile(r"[.!?…][\"'”’)\]*_`]*\s+(?![a-z])|[。！？]\s*")
_WORD_RE = re.compile(r"\S+\s*")
_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPACE_RE = re.compile(r"\s+")
_WORD_CHAR_RE = re.compile(r"\w")


@dataclass
class _Block:
    id: int
    kind: str
    lines: list[str]
    group: int = -1  # list items of one list share a group: joined by one newline, not a blank line
    level: int = 0  # headings only
    title: str = ""  # headings only: the text that goes into the heading path
    page: int = 0  # the page of a paged document it is on (0: not paged)


def _indent(text: str) -> int:
    return len(text.expandtabs(4))


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and "|" in lines[i]
        and "|" in lines[i + 1]
        and _TABLE_DELIMITER_RE.match(lines[i + 1]) is not None
    )


def _heading_title(text: str) -> str:
    text = _LINK_RE.sub(r"\1", text)
    text = text.replace("`", "").replace("**", "")
    text = _ESCAPE_RE.sub(r"\1", text)
    return _SPACE_RE.sub(" ", text).strip()


def _same_title(heading: str, title: str) -> bool:
    return bool(title) and _heading_title(heading).casefold() == _SPACE_RE.sub(" ", title).strip().casefold()


def _split_blocks(markdown: str, paged: bool = False) -> list[_Block]:
    """Cut Markdown into blocks in document order (headings included as blocks). With *paged*, a page marker
    line (``<!-- page N -->``) is no block: it sets the ``page`` of the blocks after it."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[_Block] = []
    text: list[str] = []  # the pending paragraph or list
    counter = 0

    def new_id() -> int:
        nonlocal counter
        counter += 1
        return counter - 1

    def flush_text() -> None:
        if not text:
            return
        first = _LIST_ITEM_RE.match(text[0])
        if first is None:
            blocks.append(_Block(new_id(), _PARAGRAPH, list(text)))
        else:
            group = new_id()
            base = _indent(first.group(1))
            item: list[str] = []
            for line in text:
                marker = _LIST_ITEM_RE.match(line)
                if item and marker is not None and _indent(marker.group(1)) <= base:
                    blocks.append(_Block(new_id(), _ITEM, item, group=group))
                    item = []
                item.append(line)
            blocks.append(_Block(new_id(), _ITEM, item, group=group))
        text.clear()

    page = 0
    paged_up_to = 0  # blocks before this index have their page

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush_text()
            i += 1
            continue
        marker = PAGE_MARKER_RE.match(line.strip()) if paged else None
        if marker is not None:
            flush_text()
            for block in blocks[paged_up_to:]:
                block.page = page
            paged_up_to = len(blocks)
            page = int(marker.group(1))
            i += 1
            continue
        fence = fence_open(line)
        if fence is not None:
            flush_text()
            code = [line]
            i += 1
            while i < len(lines) and not closes_fence(lines[i], fence):
                code.append(lines[i])
                i += 1
            if i < len(lines):
                code.append(lines[i])
                i += 1
            else:
                # Unclosed: CommonMark runs it to the end; close it so every chunk is valid Markdown.
                while len(code) > 1 and not code[-1].strip():
                    code.pop()
                code.append(line[: len(line) - len(line.lstrip())] + fence)
            blocks.append(_Block(new_id(), _CODE, code))
            continue
        heading = _ATX_RE.match(line)
        if heading is not None:
            flush_text()
            level = len(heading.group(1))
            blocks.append(
                _Block(new_id(), _HEADING, [_drop_link_targets(line)], level=level,
                       title=_heading_title(heading.group(2) or ""))
            )
            i += 1
            continue
        if _is_table_start(lines, i):
            flush_text()
            rows = [_drop_link_targets(line), lines[i + 1]]
            i += 2
            while (
                i < len(lines)
                and lines[i].strip()
                and "|" in lines[i]
                and fence_open(lines[i]) is None
                and _ATX_RE.match(lines[i]) is None
            ):
                rows.append(_drop_link_targets(lines[i]))
                i += 1
            blocks.append(_Block(new_id(), _TABLE, rows))
            continue
        marker = _LIST_ITEM_RE.match(line)
        if text and marker is not None and _indent(marker.group(1)) <= 3 and _LIST_ITEM_RE.match(text[0]) is None:
            flush_text()  # a list interrupting a paragraph
        text.append(_drop_link_targets(line))
        i += 1
    flush_text()
    for block in blocks[paged_up_to:]:
        block.page = page
    return blocks


def _link_destination_end(line: str, start: int) -> int | None:
    """Index of the ``)`` closing a link destination (and optional title) opened just before ``start``."""
    n = len(line)
    i = start
    if i < n and line[i] == "<":  # <destination with spaces>
        close = line.find(">", i + 1)
        if close == -1:
            return None
        i = close + 1
    depth = 1
    quote = ""
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'" and line[i - 1].isspace():
            quote = c  # a link title
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _drop_link_targets(line: str) -> str:
    """``line`` with inline links and images reduced to their text: ``[text](url "t")`` -> ``text``.

    Link targets are not what a question matches, they took about a tenth of the embedded tokens of a
    typical documentation page, and absolute URLs made a chunk's vector depend on the host it was
    crawled from. Code spans are left as they are; autolinks (``<https://...>``) keep their URL, which
    is their text.
    """
    if "](" not in line:
        return line
    out: list[str] = []
    opened: list[tuple[int, bool]] = []  # (position in out, is an image) of each unmatched "["
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n:
            out.append(line[i : i + 2])
            i += 2
        elif c == "`":
            j = i
            while j < n and line[j] == "`":
                j += 1
            ticks = line[i:j]
            k = line.find(ticks, j)
            while k != -1 and k + len(ticks) < n and line[k + len(ticks)] == "`":
                k = line.find(ticks, k + len(ticks) + 1)
            end = j if k == -1 else k + len(ticks)
            out.append(line[i:end])
            i = end
        elif c == "[":
            is_image = bool(out) and out[-1] == "!"
            opened.append((len(out), is_image))
            out.append(c)
            i += 1
        elif c == "]" and opened and i + 1 < n and line[i + 1] == "(":
            start, is_image = opened.pop()
            close = _link_destination_end(line, i + 2)
            if close is None:
                out.append(c)
                i += 1
                continue
            text = "".join(out[start + 1 :])
            del out[start:]
            if is_image:
                out.pop()  # the "!"
            out.append(text)
            i = close + 1
        else:
            if c == "]" and opened:
                opened.pop()
            out.append(c)
            i += 1
    return "".join(out)


def _sentences(text: str) -> list[str]:
    """Split ``text`` into sentences that concatenate back to ``text`` (each keeps its trailing space)."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        end = match.end()
        if end >= len(text):
            break
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    return out


@dataclass
class _Section:
    path: tuple[str, ...]
    blocks: list[_Block] = field(default_factory=list)
    tokens: int = 0


def _sections(blocks: list[_Block], title: str) -> list[_Section]:
    sections = [_Section(())]
    stack: list[tuple[int, str | None]] = []  # (level, title or None when not part of the path)
    first_heading = True
    for block in blocks:
        if block.kind != _HEADING:
            sections[-1].blocks.append(block)
            continue
        is_title = first_heading and _same_title(block.title, title)
        first_heading = False
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, None if is_title or not block.title else block.title))
        section = _Section(tuple(name for _, name in stack if name is not None))
        if not is_title:
            section.blocks.append(block)
        sections.append(section)
    return [section for section in sections if section.blocks]


def _common_path(paths: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    paths = list(paths)
    common = paths[0]
    for path in paths[1:]:
        size = 0
        while size < min(len(common), len(path)) and common[size] == path[size]:
            size += 1
        common = common[:size]
    return common


def _group_path(group: list[_Section]) -> tuple[str, ...]:
    """The heading path of merged sections: the path they share; else, when only one of them has content
    beside its heading (Doxygen's empty "Field Documentation" heading before its first member's section),
    that one's path."""
    common = _common_path(s.path for s in group)
    if common:
        return common
    filled = [s for s in group if any(b.kind != _HEADING for b in s.blocks)]
    return filled[0].path if len(filled) == 1 else common


def _starts_with(path: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return path[: len(prefix)] == prefix


# --------------------------------------------------------------------------------------------------
# Pieces: what chunks are built from
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    sep: str  # joins it to the previous unit of a piece: "\n" between lines, "" for sentences and fragments
    whole: bool  # a whole sentence or line; overlap repeats only whole units


@dataclass
class _Piece:
    kind: str
    block: int  # the block it comes from (for overlap: the block it repeats)
    group: int  # list group; consecutive items of one group are joined by a single newline
    units: list[_Unit]
    head: list[_Unit] = field(default_factory=list)  # opening fence, or table header + delimiter
    tail: list[_Unit] = field(default_factory=list)  # closing fence
    split: bool = False  # one of several parts of its block

    @cached_property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.head) + sum(u.tokens for u in self.units) + sum(u.tokens for u in self.tail)

    @cached_property
    def text(self) -> str:
        body = "".join(u.text if k == 0 else u.sep + u.text for k, u in enumerate(self.units)).rstrip()
        if not self.head and not self.tail:
            return body
        return "\n".join([*(u.text for u in self.head), *([body] if self.units else []), *(u.text for u in self.tail)])


def _render(pieces: Sequence[_Piece]) -> str:
    out: list[str] = []
    for k, piece in enumerate(pieces):
        if k:
            previous = pieces[k - 1]
            if previous.group >= 0 and previous.group == piece.group:
                out.append("\n")  # items of one list stay a tight list
            elif previous.kind == _OVERLAP and previous.block == piece.block and piece.kind == _PARAGRAPH:
                out.append(" ")  # the repeated sentences and the rest of their paragraph
            else:
                out.append("\n\n")
        out.append(piece.text)
    return "".join(out)


@dataclass
class _Draft:
    heading: str
    prefix: str
    pieces: list[_Piece]

    @cached_property
    def text(self) -> str:
        return _render(self.pieces)

    @cached_property
    def embed_text(self) -> str:
        return f"{self.prefix}\n\n{self.text}" if self.prefix else self.text


# --------------------------------------------------------------------------------------------------
# The chunker
# --------------------------------------------------------------------------------------------------

_MAX_VERIFY_ROUNDS = 64


class Chunker:
    """Split page Markdown into :class:`Chunk` objects that fit the embedding model.

    ``count_tokens`` measures texts with the model's tokenizer (see :func:`hf_token_counter`). The
    chunker keeps no per-page state: one instance serves every page, from several threads too when the
    counter is thread-safe.
    """

    def __init__(self, count_tokens: TokenCounter, config: ChunkingConfig) -> None:
        self._counter = count_tokens
        self._config = config
        self._special: int | None = None  # tokens the counter adds to every text ([CLS] and [SEP])

    @property
    def config(self) -> ChunkingConfig:
        return self._config

    def chunk(self, markdown: str, *, title: str, paged: bool = False) -> list[Chunk]:
        """Return the chunks of one page, in document order; ``[]`` when there is nothing to embed.

        Whitespace in ``title`` is collapsed before it goes into ``embed_text``. *paged*: the Markdown of a paged
        document, whose page markers give each chunk its ``page`` and ``page_end``.
        """
        title = _SPACE_RE.sub(" ", title or "").strip()
        if not markdown or not markdown.strip():
            return []
        blocks = _split_blocks(markdown, paged)
        sections = _sections(blocks, title)
        if not sections:
            return []
        if self._special is None:
            self._special = self._counter([""])[0]
        pages = {block.id: block.page for block in blocks} if paged else None
        return _Run(self._counter, self._config, self._special).chunk(sections, title, pages)


class _Run:
    """The chunking of one page, with a cache of the token counts it has asked for."""

    def __init__(self, counter: TokenCounter, config: ChunkingConfig, special: int) -> None:
        self._counter = counter
        self._config = config
        self._special = special
        self._cache: dict[str, int] = {}

    # -- counting ------------------------------------------------------------------------------------

    def _count(self, texts: Iterable[str]) -> None:
        """Count every text not counted yet, in one call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            counts = self._counter(missing)
            if len(counts) != len(missing):
                raise ValueError(f"token counter returned {len(counts)} counts for {len(missing)} texts")
            self._cache.update(zip(missing, counts, strict=True))

    def _full(self, text: str) -> int:
        """Tokens of ``text`` with the special tokens (counted on demand)."""
        if text not in self._cache:
            self._count([text])
        return self._cache[text]

    def _content(self, text: str) -> int:
        """Tokens of ``text`` without the special tokens; additive across whitespace-joined texts."""
        return max(0, self._full(text) - self._special)

    def chunk(self, sections: list[_Section], title: str, pages: dict[int, int] | None = None) -> list[Chunk]:
        # One batched call for every unit of every block and every context prefix that can occur.
        wanted: list[str] = []
        for section in sections:
            for k in range(len(section.path) + 1):
                wanted.append(self._raw_prefix(title, section.path[:k]))
            for block in section.blocks:
                wanted.extend(_unit_texts(block))
        self._count(wanted)

        pieces: dict[int, _Piece] = {}
        for section in sections:
            for block in section.blocks:
                piece = self._whole_piece(block)
                pieces[block.id] = piece
                section.tokens += piece.tokens

        drafts: list[_Draft] = []
        for group in self._merge(sections, title):
            path = _group_path(group)
            heading = _PATH_SEPARATOR.join(path)
            prefix = self._prefix(title, path)
            prefix_tokens = self._full(prefix)
            if len(group) > 1:
                drafts.append(_Draft(heading, prefix, [pieces[b.id] for s in group for b in s.blocks]))
                continue
            budget_max = self._config.max_tokens - prefix_tokens
            # A long prefix must not squeeze the content to nothing when the target is small.
            target = self._config.target_tokens
            budget_target = min(budget_max, max(target - prefix_tokens, target // 2, 1))
            budget_min = self._config.min_tokens - prefix_tokens
            for chunk_pieces in self._pack(group[0], pieces, budget_target, budget_max, budget_min):
                drafts.append(_Draft(heading, prefix, chunk_pieces))
        counts = self._verify(drafts)
        return self._finish(drafts, counts, pages)

    # -- prefixes ------------------------------------------------------------------------------------

    @staticmethod
    def _raw_prefix(title: str, path: tuple[str, ...]) -> str:
        return "\n".join(part for part in (title, _PATH_SEPARATOR.join(path)) if part)

    def _prefix(self, title: str, path: tuple[str, ...]) -> str:
        """The context prefix, shortened when it alone would take more than a quarter of the limit."""
        prefix = self._raw_prefix(title, path)
        cap = self._config.max_tokens // 4
        if self._full(prefix) <= cap:
            return prefix
        if self._full(title) > cap // 2:
            title = self._truncate(title, cap // 2)
        parts = list(path)
        heading = _PATH_SEPARATOR.join(parts)
        while len(parts) > 1 and self._full(self._raw_prefix(title, (heading,))) > cap:
            parts = parts[1:]
            heading = _PATH_SEPARATOR.join([_ELLIPSIS, *parts])
        shortened = self._raw_prefix(title, (heading,) if heading else ())
        if self._full(shortened) > cap:
            shortened = self._truncate(shortened, cap)
        logger.debug("Context prefix shortened for the embedding: %r", shortened)
        return shortened

    def _truncate(self, text: str, limit: int) -> str:
        """The longest start of ``text`` that, with an ellipsis, has at most ``limit`` tokens."""
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if self._full(text[:middle].rstrip() + _ELLIPSIS) <= limit:
                low = middle
            else:
                high = middle - 1
        return text[:low].rstrip() + _ELLIPSIS if low else ""

    # -- merging -------------------------------------------------------------------------------------

    def _estimate(self, group: list[_Section], title: str) -> int:
        path = _group_path(group)
        return self._full(self._prefix(title, path)) + sum(s.tokens for s in group)

    def _merge(self, sections: list[_Section], title: str) -> list[list[_Section]]:
        """Group tiny sections with their neighbours in the same parent (module docstring, step 4)."""
        minimum, target = self._config.min_tokens, self._config.target_tokens
        groups: list[list[_Section]] = []
        i = 0
        while i < len(sections):
            group = [sections[i]]
            scope = sections[i].path[:-1]
            i += 1
            while (
                i < len(sections)
                and self._estimate(group, title) < minimum
                and _starts_with(sections[i].path, scope)
                and self._estimate([*group, sections[i]], title) <= target
            ):
                group.append(sections[i])
                i += 1
            if (
                groups
                and self._estimate(group, title) < minimum
                and _starts_with(group[0].path, groups[-1][0].path[:-1])
                and self._estimate([*groups[-1], *group], title) <= target
            ):
                groups[-1].extend(group)
            else:
                groups.append(group)
        return groups

    # -- pieces --------------------------------------------------------------------------------------

    def _line_units(self, lines: Iterable[str]) -> list[_Unit]:
        return [_Unit(line, self._content(line), "\n", True) for line in lines]

    def _whole_piece(self, block: _Block) -> _Piece:
        if block.kind == _PARAGRAPH:
            units = [_Unit(s, self._content(s), "", True) for s in _sentences("\n".join(block.lines))]
            return _Piece(block.kind, block.id, block.group, units)
        if block.kind == _CODE:
            lines = self._line_units(block.lines)
            return _Piece(block.kind, block.id, block.group, lines[1:-1], head=lines[:1], tail=lines[-1:])
        return _Piece(block.kind, block.id, block.group, self._line_units(block.lines))

    def _split_block(self, piece: _Piece, first_budget: int, budget: int) -> list[_Piece]:
        """Split one oversized block into parts that fit (module docstring, step 6)."""
        head, units, tail = piece.head, piece.units, piece.tail
        if piece.kind == _TABLE and len(units) > 2:
            head, units = units[:2], units[2:]
        overhead = sum(u.tokens for u in head) + sum(u.tokens for u in tail)
        if overhead > min(first_budget, budget) // 2:
            # A giant fence or header cannot be repeated; pack its lines like any other (last resort).
            head, units, tail, overhead = [], [*head, *units, *tail], [], 0
        first_limit, limit = max(1, first_budget - overhead), max(1, budget - overhead)
        units = self._fit_units(units, min(first_limit, limit))
        parts = _pack_units(units, first_limit, limit)
        split = len(parts) > 1
        return [_Piece(piece.kind, piece.block, piece.group, part, head, tail, split) for part in parts]

    def _fit_units(self, units: list[_Unit], limit: int) -> list[_Unit]:
        """Cut every unit larger than ``limit`` into fragments (at whitespace, else characters)."""
        large = [u.text for u in units if u.tokens > limit]
        if not large:
            return units
        self._count(word for text in large for word in _words(text))
        out: list[_Unit] = []
        for unit in units:
            if unit.tokens <= limit:
                out.append(unit)
                continue
            for k, (text, tokens) in enumerate(self._fragments(unit.text, limit)):
                out.append(_Unit(text, tokens, unit.sep if k == 0 else "", False))
        return out

    def _fragments(self, text: str, limit: int) -> list[tuple[str, int]]:
        """Cut ``text`` into fragments of at most ``limit`` tokens (estimated) that concatenate to it."""
        segments: list[tuple[str, int]] = []
        for word in _words(text):
            tokens = self._content(word)
            if tokens <= limit:
                segments.append((word, tokens))
            else:
                segments.extend(self._characters(word, limit))
        fragments: list[tuple[str, int]] = []
        current, current_tokens = "", 0
        for word, tokens in segments:
            if current and current_tokens + tokens > limit:
                fragments.append((current, current_tokens))
                current, current_tokens = "", 0
            current += word
            current_tokens += tokens
        if current:
            fragments.append((current, current_tokens))
        return fragments

    def _characters(self, word: str, limit: int) -> list[tuple[str, int]]:
        """Cut one over-long word into runs of characters of at most ``limit`` tokens each."""
        segments = [word]
        changed = True
        # Split proportionally to the excess, count all runs in one call per round, re-split the long ones.
        while changed:
            self._count(segments)
            changed = False
            next_round: list[str] = []
            for text in segments:
                tokens = self._content(text)
                if tokens <= limit or len(text) == 1:
                    next_round.append(text)
                    continue
                size = max(1, min(len(text) // 2, len(text) * limit // max(tokens, 1)))
                next_round.extend(text[k : k + size] for k in range(0, len(text), size))
                changed = True
            segments = next_round
        return [(text, self._content(text)) for text in segments]

    def _overlap(self, previous: list[_Piece]) -> _Piece | None:
        """Trailing whole sentences or items of ``previous`` to repeat (module docstring, step 7)."""
        limit = self._config.overlap_tokens
        body = [p for p in previous if p.kind != _OVERLAP]
        if not limit or not body:
            return None
        last = body[-1]
        taken: list[_Unit] = []
        if last.kind == _ITEM and not last.split:
            items: list[_Piece] = []
            total = 0
            for piece in reversed(body):
                if piece.kind != _ITEM or piece.group != last.group or piece.split or total + piece.tokens > limit:
                    break
                items.append(piece)
                total += piece.tokens
            if len(items) == len(body):
                items.pop()
            taken = [u for piece in reversed(items) for u in piece.units]
        if not taken and last.kind in (_ITEM, _PARAGRAPH):
            total = 0
            for unit in reversed(last.units):
                if not unit.whole or total + unit.tokens > limit:
                    break
                taken.append(unit)
                total += unit.tokens
            if len(body) == 1 and len(taken) == len(last.units):
                taken.pop()
            taken.reverse()
        if not taken or not any(_WORD_CHAR_RE.search(u.text) for u in taken):
            return None  # nothing, or only a rule or punctuation: not worth repeating
        group = last.group if last.kind == _ITEM else -1
        return _Piece(_OVERLAP, last.block, group, taken)

    # -- packing -------------------------------------------------------------------------------------

    def _pack(
        self, section: _Section, pieces: dict[int, _Piece], budget_target: int, budget_max: int, budget_min: int
    ) -> list[list[_Piece]]:
        """Pack one section's blocks into chunks (module docstring, steps 5 to 7)."""
        if section.tokens <= budget_target:
            return [[pieces[b.id] for b in section.blocks]]
        overlap_reserve = self._config.overlap_tokens
        rest = section.tokens
        drafts: list[list[_Piece]] = []
        current: list[_Piece] = []
        for block in section.blocks:
            piece = pieces[block.id]
            size = piece.tokens
            body = [p for p in current if p.kind != _OVERLAP]
            used = sum(p.tokens for p in current)
            aim = _aim(used + rest, max(1, budget_target))
            rest -= size
            headings_only = bool(body) and all(p.kind == _HEADING for p in body)
            if not body:
                if used + size <= budget_max:
                    current.append(piece)
                    continue
                if size <= budget_max:
                    current = [piece]
                    continue
            elif (used + size <= budget_target and (used + size <= aim or used * 2 < aim)) or (
                headings_only and used + size <= budget_max
            ):
                # Within the target (and the even share unless the chunk is still small), or a heading
                # that must stay with its first block.
                current.append(piece)
                continue
            elif size <= budget_max and not headings_only:
                drafts.append(current)
                overlap = self._overlap(current)
                current = [overlap] if overlap is not None and overlap.tokens + size <= budget_max else []
                current.append(piece)
                continue
            # The block alone does not fit: split it. Small blocks before it lead its first part.
            if body and used <= budget_target // 2 and not any(p.split for p in current):
                lead = current
            elif body:
                drafts.append(current)
                overlap = self._overlap(current)
                lead = [overlap] if overlap is not None else []
            else:
                lead = current
            reserve = overlap_reserve if piece.kind in (_PARAGRAPH, _ITEM) else 0
            lead_tokens = sum(p.tokens for p in lead)
            parts = self._split_block(piece, budget_target - lead_tokens, budget_target - reserve)
            current = [*lead, parts[0]]
            for part in parts[1:]:
                drafts.append(current)
                overlap = self._overlap(current) if reserve else None
                current = [overlap, part] if overlap is not None else [part]
        if current:
            drafts.append(current)
        if len(drafts) > 1:
            # A crumb of whole blocks left at the end (a "New in version 3.11." line) joins the chunk before
            # it when that stays within the hard limit; its overlap is then pointless. (Parts of a split
            # block are already balanced.)
            last = [p for p in drafts[-1] if p.kind != _OVERLAP]
            size = sum(p.tokens for p in last)
            fits = sum(p.tokens for p in drafts[-2]) + size <= budget_max
            if size < budget_min and fits and not any(p.split for p in last):
                drafts[-2:] = [[*drafts[-2], *last]]
        return drafts

    # -- verification --------------------------------------------------------------------------------

    def _verify(self, drafts: list[_Draft]) -> list[int]:
        """Measure every chunk; split the ones over the limit until all fit (module docstring, step 8)."""
        limit = self._config.max_tokens
        counts: list[int | None] = [None] * len(drafts)
        for _ in range(_MAX_VERIFY_ROUNDS):
            todo = [k for k, c in enumerate(counts) if c is None]
            if not todo:
                break
            measured = self._counter([drafts[k].embed_text for k in todo])
            for k, count in zip(todo, measured, strict=True):
                counts[k] = count
            over = [k for k in todo if (counts[k] or 0) > limit]
            if not over:
                break
            for k in reversed(over):
                replacement = self._shrink(drafts[k], counts[k] or 0)
                if replacement is None:
                    logger.error("Chunk %d cannot be split below %d tokens; kept at %s", k, limit, counts[k])
                    continue
                logger.debug("Chunk of %s tokens over the limit of %d split in two", counts[k], limit)
                drafts[k : k + 1] = replacement
                counts[k : k + 1] = [None] * len(replacement)
        else:
            logger.error("Chunk verification did not converge in %d rounds", _MAX_VERIFY_ROUNDS)
        return [c if c is not None else self._full(d.embed_text) for c, d in zip(counts, drafts, strict=True)]

    def _shrink(self, draft: _Draft, measured: int) -> list[_Draft] | None:
        pieces = draft.pieces
        if len(pieces) > 1 and pieces[0].kind == _OVERLAP:
            return [_Draft(draft.heading, draft.prefix, pieces[1:])]
        if len(pieces) > 1 and not all(p.kind == _HEADING for p in pieces[:-1]):
            total = sum(p.tokens for p in pieces)
            cut, running = 1, pieces[0].tokens
            while cut < len(pieces) - 1 and running + pieces[cut].tokens <= total // 2:
                running += pieces[cut].tokens
                cut += 1
            return [_Draft(draft.heading, draft.prefix, pieces[:cut]), _Draft(draft.heading, draft.prefix, pieces[cut:])]
        halves = self._halve(pieces[-1], measured - self._config.max_tokens)
        if halves is None:
            if len(pieces) > 1:
                return [_Draft(draft.heading, draft.prefix, pieces[:-1]), _Draft(draft.heading, draft.prefix, pieces[-1:])]
            return None
        first, second = halves
        return [_Draft(draft.heading, draft.prefix, [*pieces[:-1], first]), _Draft(draft.heading, draft.prefix, [second])]

    def _halve(self, piece: _Piece, excess: int) -> tuple[_Piece, _Piece] | None:
        units = piece.units
        head, tail = piece.head, piece.tail
        if piece.kind == _TABLE and not head and len(units) > 3:
            head, units = units[:2], units[2:]  # both halves repeat the header
        if len(units) < 2:
            size = units[0].tokens if units else 0
            if units and len(units[0].text) > 1:
                units = self._fit_units(units, max(1, min(size // 2, size - excess)))
                if len(units) < 2:
                    text = piece.units[0].text
                    middle = len(text) // 2
                    units = [
                        _Unit(text[:middle], self._content(text[:middle]), piece.units[0].sep, False),
                        _Unit(text[middle:], self._content(text[middle:]), "", False),
                    ]
            elif head or tail:
                units, head, tail = [*head, *units, *tail], [], []
            if len(units) < 2:
                return None
        total = sum(u.tokens for u in units)
        cut, running = 1, units[0].tokens
        while cut < len(units) - 1 and running + units[cut].tokens <= total // 2:
            running += units[cut].tokens
            cut += 1
        return (
            _Piece(piece.kind, piece.block, piece.group, units[:cut], head, tail, True),
            _Piece(piece.kind, piece.block, piece.group, units[cut:], head, tail, True),
        )

    # -- output --------------------------------------------------------------------------------------

    def _finish(self, drafts: list[_Draft], counts: list[int], pages: dict[int, int] | None = None) -> list[Chunk]:
        owner: list[int | None] = []  # the split block each chunk holds a part of
        chunks_of: dict[int, list[int]] = {}
        for k, draft in enumerate(drafts):
            block = next((p.block for p in draft.pieces if p.split), None)
            owner.append(block)
            if block is not None:
                chunks_of.setdefault(block, []).append(k)
        chunks: list[Chunk] = []
        for k, (draft, count) in enumerate(zip(drafts, counts, strict=True)):
            part = None
            block = owner[k]
            if block is not None and len(chunks_of[block]) > 1:
                part = f"{chunks_of[block].index(k) + 1}/{len(chunks_of[block])}"
            embed_text = draft.embed_text
            first = last = None
            if pages is not None:
                # the pages of its own text: the overlap repeated from the chunk before does not count
                numbers = [pages[p.block] for p in draft.pieces if p.kind != _OVERLAP and pages.get(p.block)] or \
                          [pages[p.block] for p in draft.pieces if pages.get(p.block)]
                first, last = (min(numbers), max(numbers)) if numbers else (None, None)
            chunks.append(
                Chunk(
                    index=k,
                    text=draft.text,
                    heading=draft.heading,
                    embed_text=embed_text,
                    chunk_hash=hashlib.sha256(embed_text.encode("utf-8")).hexdigest(),
                    token_count=count,
                    part=part,
                    page=first,
                    page_end=last,
                )
            )
        return chunks


def _words(text: str) -> list[str]:
    """``text`` cut after each run of whitespace; leading whitespace stays with the first word."""
    stripped = text.lstrip()
    words = _WORD_RE.findall(stripped)
    if not words:
        return [text]
    words[0] = text[: len(text) - len(stripped)] + words[0]
    return words


def _unit_texts(block: _Block) -> list[str]:
    if block.kind == _PARAGRAPH:
        return _sentences("\n".join(block.lines))
    return block.lines


def _pack_units(units: list[_Unit], first_limit: int, limit: int) -> list[list[_Unit]]:
    """Greedy packing of units into parts of at most ``first_limit`` (first part) / ``limit`` tokens.

    Parts aim at an even share of what is left, so the last part is not a crumb.
    """
    rest = sum(u.tokens for u in units)
    parts: list[list[_Unit]] = []
    current: list[_Unit] = []
    used = 0
    for unit in units:
        cap = max(1, first_limit if not parts else limit)
        aim = _aim(used + rest, cap)
        if current and (used + unit.tokens > cap or (used + unit.tokens > aim and used * 2 >= aim)):
            parts.append(current)
            current, used = [], 0
        current.append(unit)
        used += unit.tokens
        rest -= unit.tokens
    if current or not parts:
        parts.append(current)
    return parts


def _aim(remaining: int, cap: int) -> int:
    """The even share of ``remaining`` tokens over the fewest parts of at most ``cap`` tokens."""
    return math.ceil(remaining / max(1, math.ceil(remaining / cap))) if remaining > 0 else cap
