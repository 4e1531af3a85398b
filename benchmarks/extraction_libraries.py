"""Time the building blocks extraction could be made of, through their public APIs, on the speed corpus.

Usage::

    .venv/bin/python benchmarks/extraction_libraries.py [--baseline OLD.py] [--limit N]

Pages: those of ``benchmarks/extraction_speed.py``, decoded and prepared once. Each line is the process
CPU time of one building block over every page (total seconds and mean ms/page), with the 1-minute load
average before and after it:

* ``bs4-lxml-parse``: ``BeautifulSoup(markup, "lxml")``, the public way to get the tree markdownify needs;
* ``lxml-parse``: ``lxml.html.document_fromstring(markup)``, the tree extraction now works on;
* ``markdownify-convert``: markdownify's public ``MarkdownConverter.convert_soup`` on the ``<body>`` of the
  Beautiful Soup tree (parse not included);
* ``html-to-markdown-convert``: ``html_to_markdown.convert`` on the whole page (its own parser included);
* ``extract_html``: the whole current extraction; with ``--baseline``, ``extract_html-baseline`` is the
  whole extraction of an older copy of the module (see ``extraction_fidelity.py`` for how to make one).

The conversions run on whole pages, chrome included, so they over-state what each costs inside
extraction (which converts the main content only) by the same factor for both converters.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import html_to_markdown
import lxml.html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from extraction_speed import load_implementation, sample_pages  # noqa: E402

from docscraper.content.extraction import extract_html  # noqa: E402
from docscraper.content.extraction.parsing import decode, prepare_markup  # noqa: E402


def _time(name: str, items: list[object], run: Callable[[object], object], prepare: Callable[[object], object] | None = None) -> None:
    """Time ``run`` on each item (on ``prepare(item)``, untimed, when given)."""
    gc.collect()  # what the previous block left is not collected on this one's time
    load_before = os.getloadavg()[0]
    total = 0.0
    for item in items:
        argument = prepare(item) if prepare is not None else item
        start = time.process_time()
        run(argument)
        total += time.process_time() - start
        del argument
    load_after = os.getloadavg()[0]
    print(f"{name:<26} {len(items):>6} {total:>9.2f} {1000 * total / len(items):>9.2f} "
          f"{load_before:>6.2f}->{load_after:<6.2f}", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="an older copy of the extraction module to time too")
    parser.add_argument("--limit", type=int, default=0, help="time only the first N pages")
    args = parser.parse_args()
    pages = sample_pages()
    if args.limit:
        pages = pages[: args.limit]
    raw = [(path.read_bytes(), path.resolve().as_uri()) for _, path in pages]
    markup = [prepare_markup(decode(data, None)) for data, _ in raw]

    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    print(f"{'building block':<26} {'pages':>6} {'total s':>9} {'ms/page':>9} {'load 1m':>14}")
    _time("bs4-lxml-parse", list(markup), lambda m: BeautifulSoup(str(m), "lxml"))
    _time("lxml-parse", list(markup), lambda m: lxml.html.document_fromstring(str(m)))
    converter = MarkdownConverter(heading_style="atx", bullets="-", escape_underscores=False)
    _time(
        "markdownify-convert",
        list(markup),
        lambda soup: converter.convert_soup(getattr(soup, "body", None) or soup),
        prepare=lambda m: BeautifulSoup(str(m), "lxml"),
    )
    options = html_to_markdown.ConversionOptions(extract_metadata=False)
    _time("html-to-markdown-convert", list(markup), lambda m: html_to_markdown.convert(str(m), options))
    _time("extract_html", list(raw), lambda page: extract_html(*page))  # type: ignore[misc]
    if args.baseline:
        old = load_implementation(args.baseline, "extraction_baseline")
        _time("extract_html-baseline", list(raw), lambda page: old(*page))  # type: ignore[misc]
    return 0


if __name__ == "__main__":
    sys.exit(main())
