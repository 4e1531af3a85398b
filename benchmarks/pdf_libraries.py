"""Measure the PDF libraries docscraper could convert documents with, side by side on real PDFs.

Usage::

    .venv/bin/python benchmarks/pdf_libraries.py [PDF ...] [--candidates pypdfium2,pypdf,pdfminer,pdfplumber]

Without arguments it takes the manuals of Debian's documentation packages that are on this machine (gnuplot-doc's
``gnuplot.pdf``, r-doc-pdf's ``R-exts.pdf``, asymptote-doc's ``asymptote.pdf``, libtasn1-doc's ``libtasn1.pdf``);
``apt-get download gnuplot-doc r-doc-pdf && dpkg-deb -x ...`` brings them without installing them. Only
pypdfium2 is a dependency of docscraper: install the other candidates beside it in a scratch environment
(``pip install pypdf pdfplumber``; pdfplumber brings pdfminer.six); a candidate that is not installed is
reported as such, never skipped silently.

Each candidate converts each PDF in a process of its own (so that each peak RSS is its own: ``os.wait4``'s
``ru_maxrss``), through its public API only: every page's text, and the outline (bookmarks) with the page each
entry points at. Printed per PDF and candidate:

* ``pages/s``: pages converted per second of wall time (the process's start-up and imports not included);
* ``peak MiB``: the process's peak resident memory, imports included;
* ``words F1``: the mean over pages of the F1 of the page's bag of words against ``pdftotext``'s (Poppler,
  Debian's ``poppler-utils``, the reference every PDF tool is compared with; absent, the column says ``n/a``);
* ``empty``: pages of which the candidate got no text while the reference got some (pages lost);
* ``outline`` / ``resolved``: outline entries read / those whose target page the candidate could tell;
* ``titles on page``: of the resolved entries, those whose title's words are on the page it points at (the
  outline becomes Markdown headings at those places).

The last candidate, ``docscraper``, is docscraper's own conversion (``docscraper.content.documents.pdf``, on
pypdfium2): its pages are the text between its page markers, its outline the Markdown headings it wrote, so
``outline`` counts the headings placed and ``titles on page`` those found on their page; its words F1 is lower
by the running headers, page numbers and dot leaders it drops on purpose.

The load average is printed before and after: measure on a quiet machine.

Figures, their date and machine, and the choice they led to: ``benchmarks/DOCUMENTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

DEBIAN_PDFS = (
    "/usr/share/doc/gnuplot/gnuplot.pdf",
    "/usr/share/R/doc/manual/R-exts.pdf",
    "/usr/share/doc/asymptote/asymptote.pdf",
    "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
)
CANDIDATES = ("pypdfium2", "pypdf", "pdfminer", "pdfplumber", "docscraper")
_WORD_RE = re.compile(r"\w+", re.UNICODE)


# -- one candidate, in its own process --------------------------------------------------------------------


def _pypdfium2(path: str) -> tuple[list[str], list[tuple[str, int | None]]]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path)
    try:
        texts = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        outline = [(item.get_title(), item.get_dest().get_index() if item.get_dest() else None)
                   for item in document.get_toc()]
        return texts, outline
    finally:
        document.close()


def _pypdf(path: str) -> tuple[list[str], list[tuple[str, int | None]]]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    texts = [page.extract_text() or "" for page in reader.pages]
    outline: list[tuple[str, int | None]] = []

    def walk(items: list) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item)
                continue
            try:
                number = reader.get_destination_page_number(item)
            except Exception:
                number = None
            outline.append((str(item.title), number if number is not None and number >= 0 else None))

    walk(reader.outline)
    return texts, outline


def _pdfminer_outline(path: str) -> list[tuple[str, int | None]]:
    from pdfminer.pdfdocument import PDFDocument, PDFNoOutlines
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    with open(path, "rb") as handle:
        document = PDFDocument(PDFParser(handle))
        ids = {page.pageid: index for index, page in enumerate(PDFPage.create_pages(document))}
        outline: list[tuple[str, int | None]] = []
        try:
            for _level, title, dest, action, _se in document.get_outlines():
                target = None
                try:
                    if dest is None and action is not None:
                        action = action.resolve() if hasattr(action, "resolve") else action
                        dest = action.get("D") if isinstance(action, dict) else None
                    if isinstance(dest, (str, bytes)):
                        dest = document.get_dest(dest)
                    dest = dest.resolve() if hasattr(dest, "resolve") else dest
                    if isinstance(dest, dict):
                        dest = dest.get("D")
                    if isinstance(dest, list) and dest:
                        target = ids.get(getattr(dest[0], "objid", None))
                except Exception:
                    target = None
                outline.append((str(title), target))
        except PDFNoOutlines:
            pass
    return outline


def _pdfminer(path: str) -> tuple[list[str], list[tuple[str, int | None]]]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    texts = ["".join(element.get_text() for element in layout if isinstance(element, LTTextContainer))
             for layout in extract_pages(path)]
    return texts, _pdfminer_outline(path)


def _pdfplumber(path: str) -> tuple[list[str], list[tuple[str, int | None]]]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        texts = []
        for page in pdf.pages:
            texts.append(page.extract_text() or "")
            page.close()
    # pdfplumber has no outline API of its own: it is built on pdfminer.six, which reads it
    return texts, _pdfminer_outline(path)


def _docscraper(path: str) -> tuple[list[str], list[tuple[str, int | None]]]:
    """docscraper's own conversion (pypdfium2 and what it adds: page markers, headings, running lines dropped)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from docscraper.content.documents.base import PAGE_MARKER_RE, DocumentLimits
    from docscraper.content.documents.pdf import pdf_to_markdown

    converted = pdf_to_markdown(Path(path).read_bytes(), Path(path).name, DocumentLimits())
    texts: list[str] = []
    for line in converted.markdown.split("\n"):
        if PAGE_MARKER_RE.match(line):
            texts.append("")
        elif texts:
            texts[-1] += line + "\n"
    # the outline's entries are headings: "# title" lines, on the page they point at
    outline = [(line.lstrip("#").strip(), page) for page, text in enumerate(texts)
               for line in text.splitlines() if line.startswith("#")]
    return texts, outline


def one(candidate: str, path: str) -> None:
    """In the child: convert, and print a JSON line (texts, outline, seconds)."""
    convert = {"pypdfium2": _pypdfium2, "pypdf": _pypdf, "pdfminer": _pdfminer, "pdfplumber": _pdfplumber,
               "docscraper": _docscraper}[candidate]
    start = time.perf_counter()
    texts, outline = convert(path)
    seconds = time.perf_counter() - start
    print(json.dumps({"texts": texts, "outline": outline, "seconds": seconds}))


# -- the comparison ---------------------------------------------------------------------------------------


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD_RE.findall(text))


def _f1(got: Counter[str], want: Counter[str]) -> float:
    if not want:
        return 1.0 if not got else 0.0
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def reference(path: str, pages: int) -> list[str] | None:
    tool = shutil.which("pdftotext")
    if tool is None:
        return None
    text = subprocess.run([tool, "-enc", "UTF-8", path, "-"], capture_output=True, check=False).stdout
    parts = text.decode("utf-8", "replace").split("\f")
    return (parts + [""] * pages)[:pages]


def run(candidate: str, path: str) -> tuple[dict | None, float, str]:
    """Convert *path* with *candidate* in a child process: its result, its peak RSS (MiB) and its error."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen([sys.executable, __file__, "--one", candidate, path],
                                   stdout=subprocess.PIPE, stderr=err)
        assert process.stdout is not None
        out = process.stdout.read()
        # reaped here, not by Popen: wait4 gives this child's own peak RSS
        _pid, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        peak = usage.ru_maxrss / 1024
        if process.returncode:
            err.seek(0)
            lines = err.read().decode("utf-8", "replace").strip().splitlines()
            return None, peak, lines[-1] if lines else f"exit {process.returncode}"
    return json.loads(out), peak, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="*")
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(*args.one)
        return 0
    pdfs = args.pdfs or [p for p in DEBIAN_PDFS if Path(p).is_file()]
    if not pdfs:
        parser.error("no PDF given and none of Debian's documentation PDFs is installed")
    print(f"python {sys.executable}; load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'pdf':<16} {'candidate':<11} {'pages':>5} {'pages/s':>8} {'peak MiB':>9} {'words F1':>9} {'empty':>6} "
          f"{'outline':>8} {'resolved':>9} {'titles on page':>15}")
    for path in pdfs:
        want: list[str] | None = None
        for candidate in args.candidates.split(","):
            peak_before = os.getloadavg()[0]
            result, peak, error = _measure(candidate, path)
            name = Path(path).name[:16]
            if result is None:
                print(f"{name:<16} {candidate:<11} {error}", flush=True)
                continue
            texts, outline, seconds = result["texts"], result["outline"], result["seconds"]
            if want is None:
                want = reference(path, len(texts))
            if want is not None:
                f1 = sum(_f1(_words(g), _words(w)) for g, w in zip(texts, want, strict=False)) / max(1, len(texts))
                empty = sum(1 for g, w in zip(texts, want, strict=False) if w.strip() and not g.strip())
                quality = f"{f1:>9.3f} {empty:>6}"
            else:
                quality = f"{'n/a':>9} {'n/a':>6}"
            resolved = [(title, page) for title, page in outline if page is not None and 0 <= page < len(texts)]
            on_page = sum(1 for title, page in resolved
                          if _words(title) and not (_words(title) - _words(texts[page])))
            print(f"{name:<16} {candidate:<11} {len(texts):>5} {len(texts) / seconds:>8.1f} {peak:>9.0f} {quality} "
                  f"{len(outline):>8} {len(resolved):>9} {on_page:>15}   (load {peak_before:.2f})", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


def _measure(candidate: str, path: str) -> tuple[dict | None, float, str]:
    try:
        return run(candidate, path)
    except Exception as exc:  # a candidate that cannot run says why
        return None, 0.0, f"{exc.__class__.__name__}: {exc}"


if __name__ == "__main__":
    raise SystemExit(main())
