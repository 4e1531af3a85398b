"""Does extraction run in parallel in threads, or only in processes? (``benchmarks/EXTRACTION.md``, section 6)

Usage::

    .venv/bin/python benchmarks/extraction_parallel.py [--root /usr/share/doc/postgresql-doc-15/html]
                                                       [--pages 600]

Extracts the same pages (``extract_html``, read once into memory) in this thread, then with 1 and 2
threads (``ThreadPoolExecutor``), then with 1 and 2 worker processes (``ProcessPoolExecutor``, ``spawn``,
each warmed up before the clock starts) and prints the wall time of each and the 1-minute load average.
Extraction is Python over lxml and html-to-markdown and holds the GIL, so threads should not be faster
than one thread; processes should be, by up to the number of idle cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docscraper.content.extraction import extract_html

Page = tuple[bytes, str]


def extract(page: Page) -> int:
    return len(extract_html(page[0], page[1]).markdown)


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/usr/share/doc/postgresql-doc-15/html"))
    parser.add_argument("--pages", type=int, default=600)
    args = parser.parse_args(argv)
    files = sorted(args.root.rglob("*.html"))[: args.pages]
    if not files:
        parser.error(f"no HTML pages under {args.root}")
    pages = [(f.read_bytes(), f.as_uri()) for f in files]
    print(f"{len(pages)} pages of {args.root}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    inline = timed(lambda: [extract(p) for p in pages])
    print(f"{'this thread':<14}{inline:8.2f} s   1.00x")

    def pool(label: str, executor: Executor, workers: int) -> None:
        with executor:
            list(executor.map(len, ["warm"] * workers * 4))  # start every worker before the clock
            seconds = timed(lambda: list(executor.map(extract, pages, chunksize=4)))
        print(f"{label:<14}{seconds:8.2f} s   {inline / seconds:.2f}x")

    for n in (1, 2):
        pool(f"{n} thread(s)", ThreadPoolExecutor(n), n)
    for n in (1, 2):
        pool(f"{n} process(es)", ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")), n)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
