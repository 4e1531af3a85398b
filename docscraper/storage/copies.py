"""Chunks of a single-page edition of a site that copy the pages it gathers (search leaves them out).

:func:`copy_chunks` marks them from the chunk texts alone. A page is an *edition* when it contains at least
:data:`MIN_GATHERED` smaller pages of its source (at least :data:`CONTAINED` of each one's prose sentences of
:data:`MIN_SENTENCE` characters or more, outside code) and more than half of its own sentences are theirs. An
edition's chunk is a copy when more than half of its sentences are those of one page it contains; its own sections
stay. Sentences on more than :data:`MAX_HOLDERS` pages are boilerplate and compared with nothing; sources never copy
each other. Why, with examples: docs/explanation/vector-index.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docscraper.content.markdown import fenced_lines

__all__ = ["MIN_SENTENCE", "copy_chunks", "page_of"]

#: Sentences shorter than this are not compared ("Returns:", "Example", "New in version 3.11.").
MIN_SENTENCE = 40
#: An edition contains at least this many smaller pages (rustdoc's ``Vec`` contains two: ``IoSlice`` and
#: ``IoSliceMut`` show the same slice methods it does) ...
MIN_GATHERED = 3
#: ... each of whose sentences at least this share is on the edition ...
CONTAINED = 0.8
#: ... and a contained page has at least this many sentences.
MIN_PAGE_SENTENCES = 3
#: A sentence on more pages than this (a footer, "Methods inherited from class Object") is compared with nothing.
MAX_HOLDERS = 20

# a sentence ends at . ! ? : ; before white space, or at a line's end
_PIECE_RE = re.compile(r"(?<=[.!?:;])[ \t]+|\n")
_MARKUP_RE = re.compile(r"[`*_#>|]+")


def page_of(chunk_id: str) -> str:
    """The page part of a chunk id (``[s<source>-]<page>-<content hash>-<index>``, as
    :func:`docscraper.storage.vectors.chunk_id` makes it)."""
    return chunk_id.rsplit("-", 2)[0]


def _sentences(document: str) -> list[int]:
    """The prose sentences of a chunk's Markdown, normalised (markup, case and spacing), as hashes (compared
    within one process only)."""
    lines = document.splitlines()
    prose = [line for line, fenced in zip(lines, fenced_lines(lines), strict=True) if not fenced]
    found: list[int] = []
    for piece in _PIECE_RE.split(_MARKUP_RE.sub(" ", "\n".join(prose)).casefold()):
        text = " ".join(piece.split())
        if len(text) >= MIN_SENTENCE:
            found.append(hash(text))
    return found


def copy_chunks(ids: Sequence[str], sources: Sequence[str], documents: Sequence[str]) -> list[bool]:
    """For each chunk (aligned *ids*, *sources*, *documents*): whether it is an edition's copy of a page the
    edition contains (see the module's docstring)."""
    pages = [(str(source), page_of(cid)) for cid, source in zip(ids, sources, strict=True)]
    chunk_sentences = [_sentences(document) for document in documents]
    size: dict[tuple[str, str], int] = {}
    sentences: dict[tuple[str, str], set[int]] = {}
    for key, document, found in zip(pages, documents, chunk_sentences, strict=True):
        size[key] = size.get(key, 0) + len(document)
        sentences.setdefault(key, set()).update(found)
    holders: dict[tuple[str, int], list[str]] = {}
    for (source, page), distinct in sentences.items():
        for digest in distinct:
            holders.setdefault((source, digest), []).append(page)
    # each edition: the pages it contains
    gathered: dict[tuple[str, str], set[str]] = {}
    for (source, page), distinct in sentences.items():
        shared: dict[str, int] = {}
        for digest in distinct:
            held = holders[(source, digest)]
            if 2 <= len(held) <= MAX_HOLDERS:
                for other in held:
                    if other != page:
                        shared[other] = shared.get(other, 0) + 1
        contained = {other for other, count in shared.items()
                     if size[(source, other)] < size[(source, page)]
                     and len(sentences[(source, other)]) >= MIN_PAGE_SENTENCES
                     and count >= CONTAINED * len(sentences[(source, other)])}
        if len(contained) < MIN_GATHERED:
            continue
        theirs = sum(1 for digest in distinct if not contained.isdisjoint(holders[(source, digest)]))
        if theirs > 0.5 * len(distinct):
            gathered[(source, page)] = contained
    marks: list[bool] = []
    for (source, page), found in zip(pages, chunk_sentences, strict=True):
        edition = gathered.get((source, page))
        marks.append(edition is not None and bool(found) and sum(
            1 for digest in found if not edition.isdisjoint(holders[(source, digest)])) > 0.5 * len(found))
    return marks
