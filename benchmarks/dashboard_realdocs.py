"""`scrapy serve` on real documentation, driven in headless Chromium as a user would drive it.

Serves a folder of HTML documentation on loopback (for example Debian's python3.11-doc, unpacked), starts
``scrapy serve --tick 5`` on a fresh data directory, logs in with the printed address, adds the site from the
dashboard's form (after a probe) with a one-minute schedule, starts the first crawl, lets the server start
``--rounds`` scheduled recrawls by itself, kills the server with SIGKILL in the middle of one and starts it again,
then reads the history (table and chart), a run's report and a few searches. Prints what it saw, the runs with their
durations, and where the screenshots are.

    .venv/bin/python benchmarks/dashboard_realdocs.py /tmp/realdocs/u9/usr/share/doc/python3.11/html \\
        --start library/ --max-pages 150 --rounds 2 --question "How do I read a JSON document from a file?"
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def serve_folder(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def start_server(data: Path, log: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    started = log.read_text().count("dashboard at ") if log.exists() else 0
    env = {**os.environ, "DOCSCRAPER_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    env.pop("DOCSCRAPER_SERVER_TOKEN", None)
    with log.open("a") as out:
        process = subprocess.Popen([sys.executable, "-m", "docscraper.ops.server", "--port", "0", "--tick", "5"],
                                   cwd=ROOT, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        text = log.read_text()
        base = re.findall(r"dashboard at (http://\S+:\d+)/ ", text)
        token = re.findall(r"login\?token=(\S+)", text)
        if len(base) > started and len(token) == len(base) and process.poll() is None:
            return process, base[-1], token[-1]
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start:\n{text[-3000:]}")
        time.sleep(0.2)


def api(base: str, token: str, path: str) -> dict:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def wait_finished(base: str, token: str, runs_wanted: int, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        history = api(base, token, "/api/sources/docs")["history"]
        if len(history) >= runs_wanted and all(run["finished_at"] for run in history):
            return history
        time.sleep(2)
    raise SystemExit(f"no {runs_wanted} finished runs in {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--start", default="", help="the start page's path under the folder (library/)")
    parser.add_argument("--max-pages", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2, help="scheduled recrawls to wait for")
    parser.add_argument("--question", action="append", default=[])
    parser.add_argument("--out", type=Path, default=None, help="where to keep the data and screenshots")
    opts = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    out = opts.out or Path(tempfile.mkdtemp(prefix="dashboard-realdocs-"))
    shots = out / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; output in {out}")
    site, site_url = serve_folder(opts.folder)
    data, log = out / "data", out / "server.log"
    process, base, token = start_server(data, log)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/login?token={token}")
            form = page.locator("#add-source")
            form.locator("input[name=name]").fill("docs")
            form.locator("input[name=url]").fill(site_url + opts.start)
            form.locator("input[name=max_pages]").fill(str(opts.max_pages))
            form.locator("input[name=schedule]").fill("1m")
            form.get_by_role("button", name="Probe").click()
            print("probe:", " | ".join(page.locator("#probe dd").all_inner_texts()))
            form.get_by_role("button", name="Add source").click()
            expect(page.locator(".notice")).to_contain_text("Source added")
            page.get_by_role("button", name="Recrawl", exact=True).click()
            started = time.monotonic()
            history = wait_finished(base, token, 1, 1800)
            print(f"first crawl: {history[0]['result']}, {history[0]['stats'].get('success.new', 0)} new, "
                  f"{history[0]['duration_s']:.0f} s ({time.monotonic() - started:.0f} s from the click)")
            # the scheduler's rounds; the server is killed during the last one and started again
            for round_ in range(1, opts.rounds + 1):
                if round_ == opts.rounds:
                    deadline = time.monotonic() + 300
                    while not any(r["state"] == "running" for r in api(base, token, "/api/status")["runs"]):
                        if time.monotonic() > deadline:
                            raise SystemExit("no scheduled run started")
                        time.sleep(1)
                    process.send_signal(signal.SIGKILL)
                    process.wait()
                    print(f"round {round_}: server killed mid-crawl; starting it again")
                    process, base, token = start_server(data, log)
                    page.goto(f"{base}/login?token={token}")
                history = wait_finished(base, token, round_ + 1, 900)
            rounds = api(base, token, "/api/status")
            running = [r for r in rounds["runs"] if r["state"] == "running"]
            print(f"runs: {len(history)} (wanted {opts.rounds + 1}); running now: {len(running)}")
            for run in reversed(history):
                stats = run["stats"]
                print(f"  {run['started_at']} {'due' if run['due'] else 'full' if run['full'] else 'incremental':11} "
                      f"{run['result']:8} new {stats.get('success.new', 0):4} changed {stats.get('success.changed', 0):3} "
                      f"unchanged {stats.get('success.unchanged', 0):4} failed {stats.get('failed', 0):3} "
                      f"{run['duration_s']:6.1f} s  embeddings {run['embeddings_computed']}")
            page.goto(f"{base}/sources/docs")
            page.screenshot(path=shots / "source.png", full_page=True)
            page.locator("#chart-pages img").screenshot(path=shots / "chart.png")
            page.locator("#runs tbody tr").last.get_by_role("link").click()
            print("first run's report:", page.locator("select[name=reason]").inner_text().replace("\n", ", "))
            page.screenshot(path=shots / "run.png", full_page=True)
            for number, question in enumerate(opts.question, 1):
                page.goto(f"{base}/search?q={urllib.request.quote(question)}")
                titles = page.locator("#results li.result h3").all_inner_texts()[:3]
                headings = page.locator("#results li.result .muted").all_inner_texts()[:3]
                print(f"Q: {question}")
                for title, heading in zip(titles, headings, strict=False):
                    print(f"   {title}  [{heading}]")
                page.screenshot(path=shots / f"search-{number}.png", full_page=True)
            browser.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        process.wait(timeout=30)
        site.shutdown()
    print(f"screenshots: {shots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
