"""Two versions of a real documentation set, served on loopback behind basic auth and behind a bearer token,
registered as two versions of one library, crawled, searched by version, and searched for leaked secrets.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/private_versions.py OLD_HTML_DIR NEW_HTML_DIR \\
        --library python --old-version 3.11.2+deb12u8 --new-version 3.11.2+deb12u9 \\
        --allow 'tutorial/**,library/ssl.html' --question "..."

The two folders are the HTML of one documentation set in two releases (for example ``python3.11-doc`` from
Debian's ``bookworm`` and ``bookworm-security``: ``apt-get download python3.11-doc=3.11.2-6+deb12u8`` and
``=3.11.2-6+deb12u9``, then ``dpkg-deb -x``; the HTML is under ``usr/share/doc/python3.11/html``). The old
release is served requiring HTTP basic auth (given to docscraper as ``file:NAME`` in a private secrets folder),
the new one requiring ``Authorization: Bearer`` (given as ``env:NAME``); a third loopback origin records what it
receives, reached by a redirect from the old release (a ``_routes.json`` is written into OLD_HTML_DIR for the
run and removed after it; the redirect is followed: that crawl sets ``DOCSCRAPER_REDIRECT_SCOPE_ENABLED=0``).

Printed: each crawl's wall time, chunks written, embeddings computed and shared with the other version; the
question's first answer per version (``--library`` alone, then ``--version`` old); how many files of the data
directory, lines of the crawls' DEBUG logs and requests the third origin received hold any secret (all must
be 0); the load average before and after. Figures: ``benchmarks/VERSIONS.md``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.mockserver import DocsServer  # noqa: E402

PASSWORD = "bench-basic-password-5e1d"
TOKEN = "bench-bearer-token-8c2f"
SECRETS = (PASSWORD, TOKEN, base64.b64encode(f"reader:{PASSWORD}".encode()).decode())


def scrapy(args: list[str], env: dict[str, str], log: Path | None = None) -> tuple[int, str, str, float]:
    """Exit status, stdout, stderr and seconds of one ``scrapy`` command from the project root."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if log is not None:
        log.write_text(proc.stdout + proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started


def counters(data_dir: Path, source: str) -> dict[str, int]:
    report = json.loads((data_dir / "runs" / source / "crawl-metadata.json").read_text())
    return dict(report["counters"])


def leaks_in(folder: Path) -> int:
    found = 0
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            found += any(secret in text for secret in SECRETS)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--library", default="docs")
    parser.add_argument("--old-version", default="1.0")
    parser.add_argument("--new-version", default="2.0")
    parser.add_argument("--allow", default=None, help="comma-separated globs, as sources add --allow")
    parser.add_argument("--question", required=True)
    opts = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="docscraper-versions-"))
    secrets_dir = work / "secrets"
    secrets_dir.mkdir(mode=0o700)
    (secrets_dir / "old-basic").write_text(f"reader:{PASSWORD}\n")
    (secrets_dir / "old-basic").chmod(0o600)
    data_dir = work / "data"
    env = dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), DOCSCRAPER_SECRETS_DIR=str(secrets_dir),
               HF_HUB_OFFLINE="1", NEW_DOCS_HEADERS=f"Authorization: Bearer {TOKEN}", PYTHONWARNINGS="")
    other_root = work / "other"
    other_root.mkdir()
    (other_root / "landing.html").write_text("<html><head><title>Elsewhere</title></head><body><main><h1>Elsewhere"
                                              "</h1><p>Another origin.</p></main></body></html>")
    with DocsServer(other_root) as other, DocsServer(opts.old) as old, DocsServer(opts.new) as new:
        old.require("Authorization", f"Basic {SECRETS[2]}")
        new.require("Authorization", f"Bearer {TOKEN}")
        routes = opts.old / "_routes.json"
        routes.write_text(json.dumps({"/moved-away.html": {"status": 302, "location": other.url("/landing.html")}}))
        def name(version: str) -> str:
            return f"{opts.library}-" + "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in version.lower())

        names = {"old": name(opts.old_version), "new": name(opts.new_version)}
        scope = ["--allow", opts.allow] if opts.allow else []
        for which, server, version, auth in (("old", old, opts.old_version, ["--auth-basic", "file:old-basic"]),
                                             ("new", new, opts.new_version, ["--auth-headers", "env:NEW_DOCS_HEADERS"])):
            code, _, err, _ = scrapy(["sources", "add", names[which], f"{server.base_url}/", "--library",
                                      opts.library, "--version", version, *auth, *scope], env)
            if code != 0:
                print(err[-2000:])
                return 1
        logs = []
        for which in ("old", "new"):
            log = work / f"crawl-{which}.log"
            logs.append(log)
            code, _, _, seconds = scrapy(["crawl", "docs", "-a", f"source={names[which]}", "-s", "LOG_LEVEL=DEBUG"],
                                         env, log)
            c = counters(data_dir, names[which])
            print(f"{which} ({names[which]}): exit {code}, {seconds:.1f} s, chunks {c.get('chunks_added', 0)}, "
                  f"embeddings computed {c.get('embeddings_computed', 0)}, shared {c.get('embeddings_shared', 0)}")
        # a page of the old release that redirects to the third origin, crawled with the credentials and the
        # redirect scope off, so that the hop is fetched
        log = work / "redirect.log"
        logs.append(log)
        scrapy(["crawl", "docs", "-a", f"source={old.base_url}/moved-away.html", "-a", "auth_basic=file:old-basic",
                "-s", "DOCSCRAPER_REDIRECT_SCOPE_ENABLED=0", "-s", "LOG_LEVEL=DEBUG"], env, log)
        routes.unlink()
        for args in (["--library", opts.library], ["--library", opts.library, "--version", opts.old_version]):
            code, out, err, _ = scrapy(["search", opts.question, "-k", "1", "--json", *args], env)
            first = (json.loads(out) or [None])[0] if code == 0 else None
            where = f"{first['version']} {first['url']} {first['heading']!r}" if first else err[-300:]
            print(f"search {' '.join(args)}: {where}")
        print(f"third origin: {len(other.requests)} request(s), "
              f"{sum(any(s in json.dumps(h) for s in SECRETS) for _, _, h in other.requests)} holding a secret")
        print(f"data directory files holding a secret: {leaks_in(data_dir)}")
        print(f"log files holding a secret: {sum(any(s in p.read_text() for s in SECRETS) for p in logs)}")
    print(f"load average after: {os.getloadavg()}")
    print(f"work folder: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
