"""A crawl of real PDF manuals with the index on: conversion speed and the crawl's peak memory with the model loaded.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/document_crawl.py [PDF ...] [--no-index]

Without arguments it takes the Debian manuals ``benchmarks/pdf_libraries.py`` names. The PDFs are copied into a
fresh folder beside an ``index.html`` that links them, and the folder is crawled as a local source
(``scrapy crawl docs -a source=file:///...``) into a fresh data directory, exactly as a user would: the
documents are converted in the crawl's worker processes, chunked, embedded with the bundled model (the first
crawl of a data directory exports it for ONNX in a child process) and written to Chroma.

Printed: the crawl's wall time; the PDF pages converted and chunks written; the peak RSS of the crawl's main
process and of its whole process tree (workers and the export child included), sampled every 0.5 s from
``/proc`` (the issue's bound: 1.5 GiB with the model loaded); the load average before and after. Measure on a
quiet machine.

Figures, their date and machine, and the choice they led to: ``benchmarks/DOCUMENTS.md``.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from pdf_libraries import DEBIAN_PDFS  # noqa: E402
from scale_benchmark import Sampler  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="*")
    parser.add_argument("--no-index", action="store_true", help="convert and hash only (no model, no Chroma)")
    parser.add_argument("--keep", action="store_true", help="keep the folder and the data directory (printed) to "
                                                            "search and read afterwards")
    args = parser.parse_args()
    pdfs = [Path(p) for p in (args.pdfs or [p for p in DEBIAN_PDFS if Path(p).is_file()])]
    if not pdfs:
        parser.error("no PDF given and none of Debian's documentation PDFs is installed")
    work = Path(tempfile.mkdtemp(prefix="docscraper-documents-"))
    try:
        site = work / "site"
        site.mkdir()
        for pdf in pdfs:
            shutil.copy(pdf, site / pdf.name)
        links = "".join(f'<li><a href="{html.escape(p.name)}">{html.escape(p.name)}</a></li>' for p in pdfs)
        (site / "index.html").write_text(f"<html><head><title>Manuals</title></head><body><main><h1>Manuals</h1>"
                                         f"<p>The manuals as PDF files.</p><ul>{links}</ul></main></body></html>")
        data = work / "data"
        command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={site.as_uri()}/",
                   "-s", f"DOCSCRAPER_DATA_DIR={data}", "-s", f"DOCSCRAPER_INDEX_ENABLED={0 if args.no_index else 1}",
                   "-s", "LOG_LEVEL=INFO"]
        print(f"{len(pdfs)} PDF(s), {sum(p.stat().st_size for p in pdfs) / 2**20:.1f} MiB: "
              f"{', '.join(p.name for p in pdfs)}")
        print(f"load average before {os.getloadavg()[0]:.2f}", flush=True)
        log = work / "crawl.log"
        start = time.perf_counter()
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                       env=dict(os.environ, HF_HUB_OFFLINE="1"))
            sampler = Sampler(process.pid)
            sampler.start()
            returncode = process.wait()
            sampler.stop.set()
            sampler.join()
        wall = time.perf_counter() - start
        if returncode:
            print(f"the crawl failed ({returncode}):\n{log.read_text()[-3000:]}")
            return 1
        reports = sorted(data.glob("runs/*/crawl-metadata.json"))
        report = json.loads(reports[-1].read_text())
        scrapy = report.get("scrapy", {})
        pages = next((v for k, v in scrapy.items() if k.endswith("document_pages")), None)
        items = report["items"]
        indexed = sorted(k for k, e in items.items() if e["status"] == "success" and k.endswith(".pdf"))
        refused = {k: e["statusReason"] for k, e in items.items() if k.endswith(".pdf") and e["status"] != "success"}
        counters = report.get("counters", {})
        main_peak = max((s[1] for s in sampler.samples), default=0.0)
        tree_peak = max((s[2] for s in sampler.samples), default=0.0)
        print(f"crawl: {wall:.1f} s wall, result {report['result']}; PDFs indexed {len(indexed)}"
              + (f", refused {refused}" if refused else ""))
        print(f"PDF pages converted: {pages if pages is not None else 'n/a'}"
              + (f" ({pages / wall:.1f} pages/s of the crawl's wall time)" if pages else "")
              + f"; chunks written: {counters.get('chunks_added', 0)}")
        print(f"peak RSS: main process {main_peak:.0f} MiB, process tree {tree_peak:.0f} MiB")
        print(f"load average after {os.getloadavg()[0]:.2f}")
        return 0
    finally:
        if args.keep:
            print(f"kept: {work} (scrapy search ... with DOCSCRAPER_DATA_DIR={work / 'data'})")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
