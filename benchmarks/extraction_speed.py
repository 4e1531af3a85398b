"""Time :func:`docscraper.content.extraction.extract_html` on real documentation pages, and guard its output.

Usage::

    .venv/bin/python benchmarks/extraction_speed.py                    # time the sample, print ms/page
    .venv/bin/python benchmarks/extraction_speed.py --save DIR         # ... and write every result to DIR
    .venv/bin/python benchmarks/extraction_speed.py --compare DIR      # ... and diff every result with DIR
    .venv/bin/python benchmarks/extraction_speed.py --baseline OLD.py  # ... and time an older copy of
                                                                       # the extraction module beside it
    .venv/bin/python benchmarks/extraction_speed.py --module OLD.py    # time only that older copy

Pages: every HTML file of the test site (``tests/site/docs``) and of ``tests/extraction_fixtures``, a
deterministic sample of 150 pages of Python's Sphinx documentation (``apt-get install python3-doc``;
sorted paths, evenly spaced), and every page of the other HTML manuals found under
``/usr/share/doc/*/html`` (libffi, libxslt, Valgrind, and with ``postgresql-doc-15``, ``python-git-doc``,
``python-typer-doc`` and ``mkdocs-doc`` installed the PostgreSQL manual, a Read the Docs theme and two
MkDocs sites). Pages missing on this machine are skipped.

Each page is read once, then extracted from its bytes with the URL ``file://PATH``; the time is the
process CPU time of the ``extract_html`` call alone. With ``--baseline`` both implementations run on
each page in turn (alternating which goes first), so that a busy machine slows both alike, and the
outputs of both are compared too. ``--save`` writes one JSON file per page (all fields
of :class:`~docscraper.content.extraction.Extracted`) so that an optimization can be checked to leave
the output byte-for-byte unchanged with ``--compare``. The 1-minute load average at the start and the
end of the run is printed beside every figure.

An older copy is a single module: for the Beautiful Soup and markdownify extractor this package
replaced, ``git show db37002:docscraper/extraction.py > /tmp/old/old_extraction.py``, plus
``git show db37002:docscraper/images.py > /tmp/old/old_images.py`` with the old module's
``from docscraper.images import`` changed to ``from old_images import`` (the old module hands Beautiful
Soup tags to it), run with ``PYTHONPATH=/tmp/old``. Results and what they mean: ``benchmarks/EXTRACTION.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docscraper.content.extraction import Extracted, extract_html  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3.11-doc/html")
PYTHON_SAMPLE = 150
SHARE_DOC = Path("/usr/share/doc")


def _html_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".html", ".htm") and p.is_file())


def sample_pages() -> list[tuple[str, Path]]:
    """(group, path) for every page of the sample, in a fixed order."""
    pages: list[tuple[str, Path]] = []
    for group, root in (("site", ROOT / "tests/site/docs"), ("fixtures", ROOT / "tests/extraction_fixtures")):
        pages.extend((group, p) for p in _html_files(root))
    python_root = PYTHON_DOCS.resolve()
    if python_root.is_dir():
        files = _html_files(python_root)
        count = min(PYTHON_SAMPLE, len(files))
        pages.extend(("python-docs", files[i * len(files) // count]) for i in range(count))
    seen = {python_root}
    for root in sorted(SHARE_DOC.glob("*/html")):
        resolved = root.resolve()
        if resolved in seen or not resolved.is_dir():
            continue
        seen.add(resolved)
        files = _html_files(resolved)
        pages.extend((resolved.parent.name, p) for p in files)
    return pages


def _key(path: Path) -> str:
    return hashlib.sha1(str(path).encode()).hexdigest()[:16] + "-" + path.name + ".json"


def load_implementation(path: Path, name: str) -> Callable[..., Extracted]:
    """``extract_html`` of a single-module copy of an extraction implementation at ``path``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    extract: Callable[..., Extracted] = module.extract_html
    return extract


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write every result to this directory")
    parser.add_argument("--compare", type=Path, help="compare every result with those saved in this directory")
    parser.add_argument("--baseline", type=Path, help="an older single-module copy of the extraction code to time beside")
    parser.add_argument("--module", type=Path, help="time this single-module copy of the extraction code instead")
    parser.add_argument("--repeat", type=int, default=1, help="time each page this many times (best is kept)")
    args = parser.parse_args()
    implementations = {"current": load_implementation(args.module, "extraction_module") if args.module else extract_html}
    if args.baseline:
        implementations["baseline"] = load_implementation(args.baseline, "extraction_baseline")

    pages = sample_pages()
    load_start = os.getloadavg()
    times: dict[str, dict[str, list[float]]] = {name: {} for name in implementations}
    differences: list[str] = []
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    for number, (group, path) in enumerate(pages):
        data = path.read_bytes()
        url = path.resolve().as_uri()
        results = {}
        order = list(implementations) if number % 2 == 0 else list(reversed(implementations))
        for name in order:
            best = float("inf")
            for _ in range(max(1, args.repeat)):
                start = time.process_time()
                results[name] = implementations[name](data, url)
                best = min(best, time.process_time() - start)
            times[name].setdefault(group, []).append(best)
        result = results["current"]
        if "baseline" in results and dataclasses.asdict(results["baseline"]) != dataclasses.asdict(result):
            differences.append(f"{path}: differs from the baseline")
        record = {"path": str(path), "url": url, **dataclasses.asdict(result)}
        if args.save:
            (args.save / _key(path)).write_text(json.dumps(record, ensure_ascii=False, indent=1))
        if args.compare:
            golden_file = args.compare / _key(path)
            if not golden_file.exists():
                differences.append(f"{path}: no saved result")
                continue
            golden = json.loads(golden_file.read_text())
            changed = [field for field in record if record[field] != golden.get(field)]
            if changed:
                differences.append(f"{path}: {', '.join(changed)}")

    load_end = os.getloadavg()
    # The 1-minute load average at the start and at the end of the timed run, beside every figure: the
    # times are CPU times, but a loaded machine still slows them (caches, frequency, hyper-threads).
    load = f"{load_start[0]:.2f}->{load_end[0]:.2f}"
    for name, by_group in times.items():
        all_times = [t for group_times in by_group.values() for t in group_times]
        print(f"\n{name}\n{'group':<18} {'pages':>5} {'median ms':>10} {'mean ms':>9} {'total s':>8} {'load 1m':>11}")
        for group, group_times in [*by_group.items(), ("all", all_times)]:
            print(
                f"{group:<18} {len(group_times):>5} {1000 * statistics.median(group_times):>10.1f}"
                f" {1000 * statistics.mean(group_times):>9.1f} {sum(group_times):>8.2f} {load:>11}"
            )
    if args.baseline:
        print(f"\n{'group':<18} {'speed-up (total)':>17} {'speed-up (median)':>18} {'load 1m':>11}")
        for group in [*times["current"], "all"]:
            if group == "all":
                old = [t for ts in times["baseline"].values() for t in ts]
                new = [t for ts in times["current"].values() for t in ts]
            else:
                old, new = times["baseline"][group], times["current"][group]
            print(
                f"{group:<18} {sum(old) / sum(new):>16.2f}x {statistics.median(old) / statistics.median(new):>17.2f}x"
                f" {load:>11}"
            )
    if args.compare:
        print(f"\ncompared {len(pages)} pages with {args.compare}: {len(differences)} differ")
        for line in differences:
            print("  " + line)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
