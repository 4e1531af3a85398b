"""Fenced code blocks in Markdown: the one scanner that extraction, chunking, discovery and images share.

A fence opens on a line that starts (after spaces or tabs, any amount, so that fences nested in list
items count) with three or more backticks or tildes; a backtick fence whose info string holds a
backtick is an inline code span, not a fence. It closes on a line holding only a run of the same
character at least as long (surrounding white space aside). An unclosed fence runs to the end of the
text, as in CommonMark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["closes_fence", "fence_marker", "fence_open", "fenced_lines"]

_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def fence_marker(line: str) -> str | None:
    """The run of backticks or tildes that starts ``line``, whatever follows it; ``None`` when none."""
    match = _FENCE_RE.match(line)
    return match.group(1) if match else None


def fence_open(line: str) -> str | None:
    """The fence ``line`` opens (its backticks or tildes), or ``None`` when it opens none."""
    match = _FENCE_RE.match(line)
    if not match:
        return None
    fence = match.group(1)
    if fence[0] == "`" and "`" in line[match.end() :]:
        return None  # an inline code span, not a fence
    return fence


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code block that ``fence`` opened."""
    stripped = line.strip()
    return stripped.startswith(fence) and not stripped.strip(fence[0])


def fenced_lines(lines: Iterable[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (its fence lines included)."""
    inside: list[bool] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            inside.append(True)
            if closes_fence(line, fence):
                fence = None
            continue
        fence = fence_open(line)
        inside.append(fence is not None)
    return inside
