"""Compare the Markdown of two extraction implementations page by page: what each keeps, and how they differ.

Usage::

    .venv/bin/python benchmarks/extraction_fidelity.py --baseline OLD.py [--show N] [--diffs DIR]

``OLD.py`` is an older copy of the extraction module (for the change that added this script,
``git show db37002:docscraper/extraction.py``, saved outside the repository with its
``from docscraper.images import`` pointing at a copy of that commit's ``docscraper/images.py``, since
the old module hands Beautiful Soup tags to it). The current implementation is
:func:`docscraper.content.extraction.extract_html`.

Pages: those of ``benchmarks/extraction_speed.py`` (the test site, ``tests/extraction_fixtures``, a sample
of Python's Sphinx docs and every HTML manual under ``/usr/share/doc/*/html``: with the Debian packages
``postgresql-doc-15`` (DocBook), ``python-git-doc`` (Sphinx, Read the Docs theme), ``python-typer-doc``
(MkDocs, readthedocs theme) and ``mkdocs-doc`` (MkDocs, its own theme) installed, these are the
generators beyond the project's own corpus).

Per group, for the old and the new Markdown: fenced code blocks, those with a language, tables (pipe
table delimiter rows), table rows, headings, list items, words (outside code), and the chrome markers
found (navigation and footer strings of these generators; lower is better). Then: pages whose Markdown
is byte-identical, pages that differ only in white space outside code blocks (soft line breaks), code
blocks whose text or language changed, headings whose text changed. ``<pre>`` counts the ``<pre>``
elements of the main content as lxml finds them, independently of either implementation, by each
generator's main-content container. ``--diffs DIR`` writes both Markdown files of every page that differs
in more than white space, for reading side by side.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from extraction_speed import load_implementation, sample_pages  # noqa: E402

from docscraper.content.extraction import extract_html  # noqa: E402
from docscraper.content.markdown import closes_fence, fence_open  # noqa: E402

#: Strings of site chrome of the generators in the sample (navigation, footers, buttons).
CHROME_MARKERS = (
    "Edit on GitHub", "View page source", "Built with Sphinx", "Read the Docs", "Previous topic",
    "Next topic", "This Page", "Show Source", "Quick search", "Navigation", "Table of Contents",
    "Search docs", "Built with MkDocs", "Submit correction", "Prev | Up | Next", "Copyright ©",
    "Theme by", "Skip to content", "¶",
)  # fmt: skip

#: Main-content containers by generator, for counting ``<pre>`` independently of the extractor.
MAIN_XPATH = (
    "//*[@itemprop='articleBody'] | //div[contains(concat(' ', @class, ' '), ' body ')]"
    " | //div[@role='main'] | //div[contains(concat(' ', @class, ' '), ' chapter ')]"
    " | //div[contains(concat(' ', @class, ' '), ' sect1 ')] | //div[contains(concat(' ', @class, ' '), ' refentry ')]"
    " | //div[contains(concat(' ', @class, ' '), ' appendix ')] | //div[contains(concat(' ', @class, ' '), ' preface ')]"
    " | //div[contains(concat(' ', @class, ' '), ' part ')] | //div[contains(concat(' ', @class, ' '), ' book ')]"
    " | //div[contains(concat(' ', @class, ' '), ' sect2 ')] | //div[contains(concat(' ', @class, ' '), ' reference ')]"
)

_HEADING_RE = re.compile(r"^#{1,6} ")
_LIST_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")
_DELIMITER_RE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")
_WORD_RE = re.compile(r"\w+")


@dataclass
class Shape:
    """What one Markdown page holds."""

    code: list[tuple[str, str]] = field(default_factory=list)  # (language, text)
    tables: int = 0
    rows: int = 0
    headings: list[str] = field(default_factory=list)
    items: int = 0
    words: collections.Counter[str] = field(default_factory=collections.Counter)
    prose: str = ""
    chrome: int = 0


def shape(markdown: str) -> Shape:
    out = Shape()
    fence: str | None = None
    lang = ""
    indent = 0  # of the opening fence: a block inside a list item is indented with it
    code: list[str] = []
    prose: list[str] = []
    in_table = False
    for line in markdown.split("\n"):
        if fence is not None:
            if closes_fence(line, fence):
                out.code.append((lang, "\n".join(code)))
                fence, code = None, []
            else:
                code.append(line[indent:] if line[:indent].isspace() else line.lstrip())
            continue
        fence = fence_open(line)
        if fence is not None:
            indent = len(line) - len(line.lstrip())
            lang = line.strip()[len(fence) :].strip()
            in_table = False
            continue
        prose.append(line)
        stripped = line.strip()
        if _DELIMITER_RE.match(stripped):
            out.tables += 1
            in_table = True
        elif in_table and stripped.startswith("|"):
            out.rows += 1
        else:
            in_table = False
        if _HEADING_RE.match(line):
            out.headings.append(line)
        elif _LIST_RE.match(line):
            out.items += 1
    out.prose = "\n".join(prose)
    out.words = collections.Counter(_WORD_RE.findall(out.prose))
    out.chrome = sum(out.prose.count(marker) for marker in CHROME_MARKERS)
    return out


def main_pres(html: bytes) -> int:
    """``<pre>`` elements inside the page's main content container(s), outermost containers only."""
    try:
        root = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return 0
    found = root.xpath(MAIN_XPATH)
    found_set = set(found)
    outer = [el for el in found if not any(a in found_set for a in el.iterancestors())]
    return sum(1 for el in outer for pre in el.iter("pre") if next(pre.iterancestors("pre"), None) is None)


@dataclass
class Totals:
    pages: int = 0
    pres: int = 0
    identical: int = 0
    whitespace_only: int = 0
    counts: dict[str, list[int]] = field(default_factory=lambda: collections.defaultdict(lambda: [0, 0]))
    code_changed: int = 0
    lang_changed: int = 0
    headings_changed: int = 0
    words_lost: int = 0
    words_total: int = 0


def _squash(text: str) -> str:
    return " ".join(text.split())


def compare(old: Callable[..., Any], pages: list[tuple[str, Path]], diffs: Path | None) -> dict[str, Totals]:
    totals: dict[str, Totals] = collections.defaultdict(Totals)
    for group, path in pages:
        data = path.read_bytes()
        url = path.resolve().as_uri()
        before, after = old(data, url).markdown, extract_html(data, url).markdown
        for name in (group, "all"):
            t = totals[name]
            t.pages += 1
            t.pres += main_pres(data)
            a, b = shape(before), shape(after)
            for key, va, vb in (
                ("code", len(a.code), len(b.code)),
                ("code+lang", sum(1 for lang, _ in a.code if lang), sum(1 for lang, _ in b.code if lang)),
                ("tables", a.tables, b.tables),
                ("rows", a.rows, b.rows),
                ("headings", len(a.headings), len(b.headings)),
                ("items", a.items, b.items),
                ("chrome", a.chrome, b.chrome),
            ):
                t.counts[key][0] += va
                t.counts[key][1] += vb
            t.identical += before == after
            same_code = a.code == b.code
            t.whitespace_only += before != after and same_code and _squash(a.prose) == _squash(b.prose)
            t.code_changed += sum(1 for x, y in zip(a.code, b.code, strict=False) if x[1] != y[1])
            t.code_changed += abs(len(a.code) - len(b.code))
            t.lang_changed += sum(1 for x, y in zip(a.code, b.code, strict=False) if x[0] != y[0])
            t.headings_changed += sum(1 for x, y in zip(a.headings, b.headings, strict=False) if x != y)
            t.headings_changed += abs(len(a.headings) - len(b.headings))
            t.words_lost += sum((a.words - b.words).values())
            t.words_total += sum(a.words.values())
        if diffs is not None and before != after and not (a.code == b.code and _squash(a.prose) == _squash(b.prose)):
            stem = f"{group}--{path.name}"
            (diffs / f"{stem}.old.md").write_text(before)
            (diffs / f"{stem}.new.md").write_text(after)
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="an older copy of the extraction module")
    parser.add_argument("--diffs", type=Path, help="write both Markdown files of pages that differ to this directory")
    args = parser.parse_args()
    if args.diffs:
        args.diffs.mkdir(parents=True, exist_ok=True)
    old = load_implementation(args.baseline, "extraction_baseline")
    totals = compare(old, sample_pages(), args.diffs)
    print(f"load average before printing: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    keys = ["code", "code+lang", "tables", "rows", "headings", "items", "chrome"]
    header = f"{'group':<18} {'pages':>5} {'<pre>':>6} " + " ".join(f"{k + ' old/new':>19}" for k in keys)
    print(header)
    for group, t in totals.items():
        cells = " ".join(f"{t.counts[k][0]:>9}/{t.counts[k][1]:<9}" for k in keys)
        print(f"{group:<18} {t.pages:>5} {t.pres:>6} {cells}")
    print()
    print(f"{'group':<18} {'identical':>9} {'ws-only':>8} {'code changed':>12} {'lang changed':>12}"
          f" {'headings changed':>16} {'words lost':>14}")  # fmt: skip
    for group, t in totals.items():
        lost = f"{t.words_lost}/{t.words_total}"
        print(f"{group:<18} {t.identical:>9} {t.whitespace_only:>8} {t.code_changed:>12} {t.lang_changed:>12}"
              f" {t.headings_changed:>16} {lost:>14}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
