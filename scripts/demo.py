"""Offline demo: serve the bundled example documentation site on loopback and crawl it twice.

The first crawl indexes every page; the second finds nothing changed. The data goes to
``data/demo`` (or ``--data-dir``) so that it does not mix with real sources.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.mockserver import DocsServer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "demo"))
    parser.add_argument("--runs", type=int, default=2, help="how many crawls to run (default 2)")
    parser.add_argument("--port", type=int, default=8765, help="loopback port of the example site (default 8765)")
    options = parser.parse_args()
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=options.data_dir)
    # A fixed port keeps the source (named after host and port) the same from one demo to the next.
    with DocsServer(ROOT / "tests" / "site", port=options.port).start() as server:
        source = f"{server.base_url}/docs/"
        print(f"Serving the example site at {source}", flush=True)
        for number in range(1, options.runs + 1):
            print(f"\n=== crawl {number}: scrapy crawl docs -a source={source}", flush=True)
            code = subprocess.call(
                [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"source={source}", "-s", "LOG_LEVEL=INFO"],
                cwd=ROOT,
                env=env,
            )
            if code != 0:
                return code
            report_dir = Path(options.data_dir) / "runs"
            latest = sorted(report_dir.glob("*/crawl-metadata.json"), key=lambda p: p.stat().st_mtime)[-1]
            report = json.loads(latest.read_text())
            stats = report["stats"]
            print(
                f"result {report['result']}: new {stats['success.new']}, changed {stats['success.changed']}, "
                f"unchanged {stats['success.unchanged']}, removed {stats['success.removed']}, "
                f"skipped {stats['skipped']}, failed {stats['failed']}\nreport: {latest}"
            )
        question = "How long are dead letters kept?"
        print(f"\n=== scrapy search {question!r}", flush=True)
        return subprocess.call([sys.executable, "-m", "scrapy", "search", question, "-k", "3"], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
