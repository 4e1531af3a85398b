"""Markdown normalization: the canonical form of a page's Markdown, the bytes that are hashed."""

from __future__ import annotations

from docscraper.content.markdown import closes_fence, fence_open

__all__ = ["normalize_markdown"]


def normalize_markdown(md: str) -> str:
    """Return ``md`` in the canonical form that is hashed.

    Newlines become ``\\n``; trailing whitespace is stripped from every line; outside fenced code
    blocks runs of two or more blank lines become one (inside fences blank lines are code and are
    kept); leading and trailing blank lines are dropped; a non-empty result ends with exactly one
    ``\\n``. The empty string stays empty. The function is pure, so equal input gives equal bytes.
    """
    if not md:
        return ""
    lines = md.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    previous_blank = False
    for raw in lines:
        line = raw.rstrip()
        if fence is not None:
            out.append(line)
            if closes_fence(line, fence):
                fence = None
            previous_blank = False
            continue
        if not line:
            if previous_blank:
                continue
            previous_blank = True
            out.append(line)
            continue
        previous_blank = False
        fence = fence_open(line)
        out.append(line)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""
