"""One-shot search latency: ``scrapy search`` with the ONNX question model against the full model (torch).

Usage::

    .venv/bin/python benchmarks/search_latency.py --data-dir DIR [--questions FILE] [--runs 3]

``DIR`` is a data directory a crawl with the index on filled (the issue's target: about 15,000 chunks, for
example the PostgreSQL manual: ``scrapy crawl docs -a source=http://127.0.0.1:8082/index.html`` with nginx
serving ``/usr/share/doc/postgresql-doc-15/html``). The crawl made the question model's export at its end;
when the index was made before that existed, the first search below makes it.

It prints, with the 1-minute load average:

* the wall time of ``scrapy search QUESTION -k 5`` in a new process, run after run, with the export
  (``DOCSCRAPER_QUERY_ONNX`` on, the default) and without (``DOCSCRAPER_QUERY_ONNX=0``: torch and
  sentence-transformers are imported and the model loaded), alternating;
* the warm question: each question asked of one :class:`~docscraper.storage.search.Searcher` kept open
  (as the MCP server and the library's retrievers keep it) after a first question that loaded everything:
  median, 95th percentile and worst wall time per question (the issue's target: <= 100 ms at 15,000
  chunks), and how much of it the question's vector takes;
* whether every question of ``--questions`` (a JSON list of objects with a ``question``; by default the
  PostgreSQL set in ``benchmarks/``) gets the same pages in the same order both ways (in this process:
  one :class:`~docscraper.storage.search.Searcher` per model), and the least cosine similarity between the
  two question vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docscraper.config import DocscraperConfig  # noqa: E402
from docscraper.storage.backends import load_query_embedder  # noqa: E402
from docscraper.storage.embedding import SentenceTransformerEmbedder  # noqa: E402
from docscraper.storage.onnx_embedding import OnnxQueryEmbedder  # noqa: E402
from docscraper.storage.search import Searcher  # noqa: E402


def one_shot(data_dir: Path, question: str, onnx: bool) -> float:
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "scrapy", "search", question, "-k", "5",
               "-s", f"DOCSCRAPER_QUERY_ONNX={int(onnx)}"]
    start = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"scrapy search failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return seconds


def warm(config: DocscraperConfig, questions: list[str], rounds: int) -> None:
    """Per-question wall time of a warm Searcher (hybrid, one result per page, k=5, the configured
    question model), every question *rounds* times, and the question-vector part of it."""
    searcher = Searcher(config)
    embedder = searcher.embedder
    chunks = searcher.index.count()
    searcher.search(questions[0], k=5)  # opens the index, builds or loads the keyword index
    total: list[float] = []
    vector: list[float] = []
    for _ in range(rounds):
        for question in questions:
            start = time.perf_counter()
            embedder.embed([question])
            vector.append(time.perf_counter() - start)
            start = time.perf_counter()
            searcher.search(question, k=5)
            total.append(time.perf_counter() - start)
    total.sort()

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:6.1f} ms"

    print(f"warm question ({chunks} chunks, {len(total)} questions): median {ms(statistics.median(total))}, "
          f"p95 {ms(total[int(0.95 * (len(total) - 1))])}, worst {ms(total[-1])}; "
          f"question vector alone median {ms(statistics.median(vector))}   target <= 100 ms; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    searcher.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "postgresql_docs_questions.json")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    questions = [str(q["question"]) for q in json.loads(args.questions.read_text())]
    config = DocscraperConfig(data_dir=args.data_dir, state_url=f"sqlite:///{args.data_dir / 'state.db'}")
    fast = load_query_embedder(config)  # makes the export when the index predates it
    if not isinstance(fast, OnnxQueryEmbedder):
        fast.close()
        fast = load_query_embedder(config)
    assert isinstance(fast, OnnxQueryEmbedder), "no ONNX export could be made (see the log)"
    print(f"data dir {args.data_dir}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)

    times: dict[bool, list[float]] = {True: [], False: []}
    for run in range(args.runs):
        for onnx in (True, False) if run % 2 == 0 else (False, True):
            times[onnx].append(one_shot(args.data_dir, questions[run % len(questions)], onnx))
    for onnx, label in ((True, "ONNX question model"), (False, "full model (torch)")):
        runs = ", ".join(f"{t:.2f}" for t in times[onnx])
        print(f"scrapy search, {label:<20} median {statistics.median(times[onnx]):5.2f} s   ({runs})")

    warm(config, questions, args.runs)

    full = SentenceTransformerEmbedder()
    cosines = np.sum(full.embed(questions) * fast.embed(questions), axis=1)
    by_full = Searcher(config, embedder=full)
    by_fast = Searcher(config, embedder=fast)
    same = 0
    for question in questions:
        a = [r.url for r in by_full.search(question, k=5)]
        b = [r.url for r in by_fast.search(question, k=5)]
        same += a == b
        if a != b:
            print(f"  differs: {question!r}\n    full {a}\n    onnx {b}")
    print(f"same top-5 pages in the same order: {same} / {len(questions)}; least cosine of the question "
          f"vectors {float(cosines.min()):.6f}; load average at the end {os.getloadavg()[0]:.2f}")
    by_full.close()
    by_fast.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
