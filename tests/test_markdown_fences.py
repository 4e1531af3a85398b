"""The one code-fence scanner (docscraper.content.markdown) that extraction, chunking, discovery and images share."""

from __future__ import annotations

import pytest

from docscraper.content.markdown import closes_fence, fence_marker, fence_open, fenced_lines


@pytest.mark.parametrize(
    ("line", "fence"),
    [
        ("```", "```"),
        ("```python", "```"),
        ("  ~~~~ text", "~~~~"),
        ("\t````", "````"),
        ("``` a `span` ```", None),  # backticks in the info string: an inline code span
        ("~~~ a ~ b", "~~~"),  # tildes may appear in a tilde fence's info string
        ("``", None),
        ("text ```", None),
    ],
)
def test_fence_open(line: str, fence: str | None) -> None:
    assert fence_open(line) == fence


def test_fence_marker_ignores_the_info_string() -> None:
    assert fence_marker("``` a `span` ```") == "```"
    assert fence_marker("text") is None


@pytest.mark.parametrize(
    ("line", "fence", "closes"),
    [
        ("```", "```", True),
        ("  ````  ", "```", True),
        ("``", "```", False),
        ("~~~", "```", False),
        ("``` x", "```", False),
        ("````", "````", True),
        ("```", "````", False),
    ],
)
def test_closes_fence(line: str, fence: str, closes: bool) -> None:
    assert closes_fence(line, fence) is closes


def test_fenced_lines() -> None:
    lines = ["a", "```py", "# not a heading", "```", "b", "~~~", "unclosed", "runs to the end"]
    assert fenced_lines(lines) == [False, True, True, True, False, True, True, True]
