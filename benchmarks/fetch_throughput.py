"""Fetch throughput: docscraper with the index off against a bare Scrapy spider, on one real site, in one run.

Usage::

    .venv/bin/python benchmarks/fetch_throughput.py [--root /usr/share/doc/postgresql-doc-15/html]
                                                    [--url URL] [--rounds 2] [--keep]

The site is served by nginx on a free loopback port (``--root``, the PostgreSQL manual by default:
``apt-get install postgresql-doc-15 nginx``), or already served at ``--url``. Each round crawls it twice,
alternating which goes first, so that a machine busy with something else slows both alike:

* **bare**: a Scrapy spider of a dozen lines (``scrapy runspider``): fetch every page under the seed's
  folder, extract its links with ``LinkExtractor``, follow them. No items, no pipelines. What the framework
  costs.
* **docscraper**: ``scrapy crawl docs`` with ``DOCSCRAPER_INDEX_ENABLED=0``: discovery (robots.txt, llms.txt,
  sitemaps), scope, fetch, decoding, extraction to Markdown, hashing, the state table, the report. What a
  crawl costs before the model.

Both run with the same politeness settings (``CONCURRENT_REQUESTS=16``, ``CONCURRENT_REQUESTS_PER_DOMAIN=8``,
robots.txt obeyed, AutoThrottle off: on loopback it would only measure its own delays), each in a fresh data
directory. Pages/s is the pages fetched (text answers the bare spider parsed; pages docscraper reported) over the
time from Scrapy's ``Spider opened`` log line to its ``Closing spider`` line; the process wall time, start-up included, is printed beside it. The figure
the issue tracks is ``docscraper / bare`` (target >= 0.5). The 1-minute load average at the start and the
end is printed with the figures: measure on a quiet machine.

Extraction CPU per page, today's code against an older copy, is ``benchmarks/extraction_speed.py
--baseline OLD.py`` (see its docstring and ``benchmarks/EXTRACTION.md``); ``--extraction`` runs it over this
site's pages after the crawls and prints its summary here too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docscraper.config import default_parse_workers

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = Path("/usr/share/doc/postgresql-doc-15/html")

SAME_SETTINGS = {
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
    "AUTOTHROTTLE_ENABLED": "0",
    "ROBOTSTXT_OBEY": "1",
    "LOG_LEVEL": "INFO",
    # millisecond stamps, to time the crawl from its own log
    "LOG_FORMAT": "%(created).3f [%(name)s] %(levelname)s: %(message)s",
}

BARE_SPIDER = '''
import json

import scrapy
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor


class Bare(scrapy.Spider):
    name = "bare"

    def __init__(self, seed, out, **kwargs):
        super().__init__(**kwargs)
        self.out = out
        self.start_urls = [seed]
        prefix = seed.rsplit("/", 1)[0] + "/"
        self.links = LinkExtractor(allow=[prefix.replace(".", "[.]") + ".*"], unique=True)

    def parse(self, response):
        if not isinstance(response, TextResponse):
            return
        self.crawler.stats.inc_value("bare/pages")
        for link in self.links.extract_links(response):
            yield response.follow(link.url, callback=self.parse)

    def closed(self, reason):
        with open(self.out, "w") as f:
            json.dump({"pages": self.crawler.stats.get_value("bare/pages", 0), "reason": reason}, f)
'''


def load() -> str:
    one = os.getloadavg()[0]
    return f"{one:.2f}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def nginx(root: Path, work: Path) -> Iterator[str]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        raise SystemExit("nginx is not installed (apt-get install nginx), or pass --url of a served site")
    port = free_port()
    conf = work / "nginx.conf"
    conf.write_text(f"""worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
daemon off;
events {{ worker_connections 512; }}
http {{
  include /etc/nginx/mime.types;
  access_log off;
  server {{ listen 127.0.0.1:{port}; root {root}; etag on; }}
}}
""")
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(work)], stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.1):
                break
            time.sleep(0.05)
        else:
            raise SystemExit(f"nginx did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(10)


def span(log: str) -> float:
    """Seconds from Scrapy's ``Spider opened`` to its ``Closing spider`` (log lines stamped by LOG_FORMAT)."""
    opened = closing = None
    for line in log.splitlines():
        stamp, _, rest = line.partition(" ")
        if opened is None and "Spider opened" in rest:
            opened = float(stamp)
        elif "Closing spider (" in rest:
            closing = float(stamp)
    if opened is None or closing is None:
        raise SystemExit("the crawl's log has no 'Spider opened' / 'Closing spider' lines")
    return closing - opened


def run(label: str, command: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT) -> dict[str, Any]:
    start = time.monotonic()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    log.write_text(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{label} crawl failed (exit {proc.returncode}); log: {log}\n{proc.stderr[-2000:]}")
    return {"wall": wall, "elapsed": span(proc.stderr)}


def bare(url: str, work: Path, n: int) -> dict[str, Any]:
    spider = work / "bare_spider.py"
    spider.write_text(BARE_SPIDER)
    result = work / f"bare-{n}.json"
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"seed={url}", "-a", f"out={result}"]
    for name, value in SAME_SETTINGS.items():
        command += ["-s", f"{name}={value}"]
    # run outside the project folder: no scrapy.cfg, so none of docscraper's settings or pipelines
    out = run("bare", command, dict(os.environ), work / f"bare-{n}.log", cwd=work)
    pages = int(json.loads(result.read_text())["pages"])
    return {"pages": pages, "elapsed": out["elapsed"], "wall": out["wall"]}


def docscraper(url: str, work: Path, n: int, workers: str) -> dict[str, Any]:
    data = work / f"data-{n}-{workers}"
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={url}", "-a", "max_pages=100000",
               "-s", "DOCSCRAPER_INDEX_ENABLED=0", "-s", "DOCSCRAPER_PROGRESS_LINE=off",
               "-s", f"DOCSCRAPER_PARSE_WORKERS={workers}"]
    for name, value in SAME_SETTINGS.items():
        command += ["-s", f"{name}={value}"]
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data), HF_HUB_OFFLINE="1")
    out = run("docscraper", command, env, work / f"docscraper-{n}-{workers}.log")
    reports = sorted(data.glob("runs/*/crawl-metadata.json"))
    report = json.loads(reports[-1].read_text())
    stats = report["stats"]
    pages = sum(int(stats.get(f"success.{kind}", 0)) for kind in ("new", "changed", "unchanged"))
    return {"pages": pages, "elapsed": out["elapsed"], "wall": out["wall"],
            "status": report.get("result"), "failed": stats.get("failed", 0)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="folder to serve with nginx")
    parser.add_argument("--url", help="an already served site (no nginx)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="auto,0",
                        help="DOCSCRAPER_PARSE_WORKERS values to run docscraper with, comma-separated "
                             "(default auto,0: the default, and parsing on the reactor thread)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, data)")
    parser.add_argument("--extraction", metavar="OLD.py",
                        help="also run benchmarks/extraction_speed.py --baseline OLD.py after the crawls")
    args = parser.parse_args(argv)
    if args.url is None and not args.root.is_dir():
        parser.error(f"{args.root} is not a folder (apt-get install postgresql-doc-15, or pass --root/--url)")
    variants = [w.strip() for w in args.workers.split(",") if w.strip()]
    work = Path(tempfile.mkdtemp(prefix="docscraper-fetch-"))
    labels = ["bare"] + [f"docscraper w={w}" for w in variants]
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    load_start = load()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(nginx(args.root, work))
        if args.url is None:
            url += "index.html" if (args.root / "index.html").exists() else ""
        print(f"site: {url} (served from {args.root if args.url is None else 'elsewhere'})", flush=True)
        for n in range(args.rounds):
            order = labels[n % len(labels):] + labels[: n % len(labels)]  # rotate who goes first
            for label in order:
                print(f"round {n + 1}: {label} ...", flush=True)
                if label == "bare":
                    results[label].append(bare(url, work, n))
                else:
                    results[label].append(docscraper(url, work, n, label.split("=", 1)[1]))
    load_end = load()

    def rate(result: dict[str, Any]) -> float:
        return float(result["pages"]) / float(result["elapsed"])

    medians = {label: statistics.median(rate(r) for r in results[label]) for label in labels}
    print()
    print(f"machine: {os.cpu_count()} CPUs, load average {load_start} at start, {load_end} at end "
          f"({time.monotonic() - started:.0f} s in all); DOCSCRAPER_PARSE_WORKERS=auto is "
          f"{default_parse_workers()} here")
    print(f"{'crawl':<18}{'round':>6}{'pages':>8}{'elapsed s':>11}{'wall s':>9}{'pages/s':>10}")
    for label in labels:
        for n, result in enumerate(results[label]):
            print(f"{label:<18}{n + 1:>6}{result['pages']:>8}{result['elapsed']:>11.2f}{result['wall']:>9.2f}"
                  f"{rate(result):>10.1f}")
    print("\nmedian pages/s, and the ratio to the bare spider (target >= 0.5 with the default workers):")
    for label in labels:
        print(f"  {label:<18}{medians[label]:>8.1f}   {medians[label] / medians['bare']:.2f}")
    for label in labels[1:]:
        for result in results[label]:
            if result.get("status") != "success" or result.get("failed"):
                print(f"note: a {label} run was {result.get('status')} with {result.get('failed')} failed page(s)")
    if args.extraction:
        print("\nextraction CPU per page (benchmarks/extraction_speed.py --baseline):", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "extraction_speed.py"), "--baseline",
                        args.extraction], cwd=ROOT, check=False)
    if args.keep:
        print(f"work folder kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
