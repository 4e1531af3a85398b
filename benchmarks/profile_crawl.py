"""Where a cold crawl's CPU goes: a sampling profile (py-spy) of the crawl and its worker processes, by stage.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/profile_crawl.py [--pages 300] [--rate 50] [--keep DIR]

The generated site of ``crawl_benchmark.py`` is served on loopback and crawled once, cold, with the index
on, under ``py-spy record --format raw --subprocesses`` (py-spy from Debian's ``py-spy`` package or pip;
it needs ptrace, as root or with ``kernel.yama.ptrace_scope=0``). Idle threads are not sampled, so each
sample is a thread running Python or native code (or waiting for the GIL inside it) for ``1 / rate`` s.
A sample whose innermost frame waits (a select, a lock, a queue: py-spy's idle detection misses some) is
counted as waiting; every other sample is put in the first stage whose marker its stack holds, in the
order of :data:`STAGES`
(the model's work before Chroma's, Chroma's before the reactor that called it), and the table prints each
stage's CPU seconds and share, with the crawl's wall time and the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: (stage, markers): a sample belongs to the first stage one of whose markers is in its stack. The chunker's
#: samples ("chunking: token counting" when its stack reaches the tokenizer, else "chunking: other") are
#: told apart first, by :func:`stage_of`: its token counts call the tokenizer that embedding uses too.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("model load (import, weights)", ("load_embedder (",)),
    ("ONNX export for questions", ("export_for_questions (",)),
    ("embedding: tokenization", ("SentenceTransformer.tokenize", "PreTrainedTokenizerFast", "tokenizers")),
    ("embedding: model forward", ("SentenceTransformer.encode", "torch/nn/")),
    ("extraction (HTML to Markdown, links)", ("docscraper/content/extraction", "page_parser.py", "html_to_markdown",
                                              "linkextractors")),
    ("Chroma writes and reads", ("chromadb/", "docscraper/storage/vectors.py")),
    ("state database (SQLAlchemy, SQLite)", ("sqlalchemy/", "docscraper/storage/state/")),
    ("imports at start-up", ("_find_and_load (",)),
    ("reactor: fetch, scheduling, pipelines", ("twisted/", "scrapy/", "asyncio/")),
]


#: Innermost frames of a thread that waits (py-spy's idle detection misses some of them).
WAITS = ("Condition.wait (", ".select (selectors.py", "Queue.get (", "Connection._recv (", "Event.wait (",
         "Thread.join (")


def stage_of(stack: str) -> str:
    if any(marker in stack.rsplit(";", 1)[-1] for marker in WAITS):
        return "waiting (select, locks, queues)"
    if "docscraper/content/chunking.py" in stack:
        return "chunking: token counting" if "tokenizers" in stack or "encode_batch" in stack else "chunking: other"
    for stage, markers in STAGES:
        if any(marker in stack for marker in markers):
            return stage
    return "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rate", type=int, default=50, help="samples per second and thread")
    parser.add_argument("--keep", type=Path, default=None, help="keep the site, data and raw profile here")
    args = parser.parse_args(argv)
    beside = Path(sys.executable).parent / "py-spy"  # pip installs it into the virtual environment
    pyspy = str(beside) if beside.is_file() else shutil.which("py-spy")
    if pyspy is None:
        raise SystemExit("py-spy is not installed (apt-get install py-spy, or pip install py-spy)")

    from benchmarks.crawl_benchmark import build_site
    from tests.mockserver import DocsServer

    tmp = Path(tempfile.mkdtemp(prefix="docscraper-profile-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    site, data, raw = tmp / "site", tmp / "data", tmp / "profile.txt"
    shutil.rmtree(data, ignore_errors=True)
    if not site.exists():
        build_site(site, args.pages)
    load_before = os.getloadavg()[0]
    with DocsServer(site).start() as server:
        env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        command = [pyspy, "record", "--format", "raw", "--rate", str(args.rate), "--subprocesses",
                   "--output", str(raw), "--", sys.executable, "-m", "scrapy", "crawl", "docs",
                   "-a", f"source={server.base_url}/docs/", "-s", "DOCSCRAPER_INDEX_ENABLED=1", "-s", "LOG_LEVEL=WARNING"]
        started = time.monotonic()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
    if proc.returncode != 0 or not raw.is_file():
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"the profiled crawl failed ({proc.returncode})")

    samples: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            samples[stage_of(stack)] += int(count)
    total = sum(samples.values())
    print(f"{os.cpu_count()} CPUs, load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{args.pages} pages, cold crawl {wall:.1f} s wall under py-spy at {args.rate} Hz")
    print(f"{'stage':44}{'CPU s':>9}{'share':>8}")
    for stage, count in samples.most_common():
        print(f"{stage:44}{count / args.rate:9.1f}{count / total:8.1%}")
    print(f"{'all sampled threads':44}{total / args.rate:9.1f}{1:8.0%}")
    if args.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"raw profile: {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
