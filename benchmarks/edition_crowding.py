"""How often a single-page edition of a site (Node's ``api/all.html``, Sphinx's ``singlehtml``) takes the first
rank from the page it copies: search with the copy marks of :mod:`docscraper.storage.copies` and without.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/edition_crowding.py DATA_DIR --edition all.html [--questions 120]

``DATA_DIR`` is a data folder a crawl with the index on filled (``retrieval_eval.py --keep DIR``). The questions
are made from the index itself, so that no one writes them: the first sentence (40-200 characters, prose) of
every n-th chunk of the pages other than the edition, whose expected answer is that chunk's page. A question
made of a page's own sentence is easy; what is measured is only whether the edition, which holds the same
sentence, ranks above the page. Printed: the share of questions whose first result is the expected page, and
the share whose first result is the edition, with the copy marks (as search runs) and with none.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def first_sentence(document: str) -> str | None:
    """The first prose sentence of a chunk's Markdown of 40-200 characters, outside code and headings."""
    fenced = False
    for line in document.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.startswith(("#", "|", ">")) or not line.strip():
            continue
        for sentence in _SENTENCE_RE.split(line.strip()):
            if 40 <= len(sentence) <= 200:
                return sentence
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--edition", required=True, help="the edition's URL ends with this (all.html)")
    parser.add_argument("--questions", type=int, default=120)
    args = parser.parse_args(argv)

    from docscraper.config import DocscraperConfig
    from docscraper.storage.search import Searcher
    from docscraper.storage.vectors import ChromaIndex

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    config = DocscraperConfig(data_dir=args.data_dir, state_url="sqlite://")
    index = ChromaIndex(path=args.data_dir / "chroma")
    searcher = Searcher(config, index=index)
    ids, _, documents = index.documents()
    metadata = index.chunk_metadata()
    candidates = []
    for cid, document in zip(ids, documents, strict=True):
        url = str(metadata[cid].get("url", ""))
        sentence = first_sentence(document)
        if sentence and not url.endswith(args.edition):
            candidates.append((sentence, url))
    candidates.sort()
    step = max(1, len(candidates) // args.questions)
    questions = candidates[::step][:args.questions]
    lexical = searcher.keywords()
    marks = lexical.copies
    edition_chunks = sum(1 for cid in ids if str(metadata[cid].get("url", "")).endswith(args.edition))
    print(f"{len(ids)} chunks, {edition_chunks} of them the edition's, {len(marks)} marked as copies; "
          f"{len(questions)} questions")
    for label, copies in (("copy marks (as search runs)", marks), ("no copy marks", frozenset())):
        lexical.copies = copies
        right = edition = 0
        for text, url in questions:
            first = searcher.search(text, k=1)[0].url
            right += first == url
            edition += first.endswith(args.edition)
        print(f"{label:30} expected page first {right / len(questions):.3f}   edition first "
              f"{edition / len(questions):.3f}")
    lexical.copies = marks
    searcher.close()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
