"""Extraction fidelity per documentation generator: what each page's HTML holds against the Markdown
:func:`docscraper.content.extraction.extract_html` makes of it.

Usage::

    .venv/bin/python benchmarks/generator_fidelity.py [--max-pages 40] [--worst 3] [--dump DIR]
    .venv/bin/python benchmarks/generator_fidelity.py --generator sphinx=/usr/share/doc/python3-doc/html:library/*.html
    .venv/bin/python benchmarks/generator_fidelity.py --generator node   # one built-in generator only

Without ``--generator`` every built-in generator whose folder exists on this machine is measured
(:data:`GENERATORS` names each folder: Debian documentation packages unpacked with ``apt-get download PKG
&& dpkg-deb -x PKG.deb root``: ``python3.11-doc``, ``python-typer-doc``, ``mkdocs-doc``,
``postgresql-doc-15``, ``rust-doc``, ``libcommons-lang3-java-doc``, ``libsdl2-doc``, ``m4-doc``,
``nodejs-doc``, ``git-doc``). ``--generator NAME=FOLDER[:GLOB]`` (repeatable) measures the pages under
``FOLDER`` that match ``GLOB`` (comma-separated globs relative to ``FOLDER``, default ``**/*.html``); a
built-in ``NAME`` brings its container and skip rules, another name gets generic containers (``main``,
``article``, ``[role=main]``, ``body``). ``NAME`` alone measures that built-in generator. Per generator
the matching files are sorted, those without the generator's main-content container (redirect stubs,
pages of another generator) are left out, and ``--max-pages`` of the rest are taken evenly spaced over
the sorted list. Never measured: mdBook's ``print.html`` (the whole book again) and the Rust book's old
edition folders (pages saying a chapter moved), javadoc's ``class-use/``, Doxygen's ``*_source.html``
(source listings), Node's ``all.html`` (every other page again).

The HTML side is read with lxml alone (``lxml.html``), independently of the extractor: the main content
is the generator's own container, found by XPath (the first expression with a match; outermost
elements; the elements of ``drop`` removed first). Extraction's own choice (``find_main``) is not part
of the package's public API and runs after chrome removal, so it is not reused. Containers:

* Sphinx (Python 3.11): ``div[@role=main]``, else ``div.body``;
* MkDocs (readthedocs theme, Typer; MkDocs' own theme, MkDocs): ``div[@role=main]``, else ``article``;
* DocBook (PostgreSQL 15): ``body`` minus ``div.navheader`` and ``div.navfooter``;
* mdBook (Rust book, reference, nomicon, ...): ``main``;
* rustdoc (Rust std): ``section#main-content``;
* javadoc (Commons Lang 3): ``main``, else ``div.contentContainer``;
* Doxygen (SDL 2): ``div.contents``;
* Texinfo (GNU M4): ``body`` minus ``div.header`` and ``div.nav-panel``;
* Node.js doc tool: ``div#apicontent``;
* asciidoc (Git's man pages): ``div#header`` and ``div#content``.

Counted in the main content (HTML) and in the page's Markdown (outside fenced code unless said):

* headings: ``h1``-``h6`` / ATX ``#`` lines, also after list markers and ``>`` (javadoc's
  ``- ## Field Summary``);
* code: ``<pre>`` not inside another ``<pre>`` (plus Doxygen's ``div.fragment``, its code block without
  ``<pre>``) / fenced blocks;
* code+lang: those with a ``language-*``, ``lang-*``, ``highlight-*``, ``hljs-*`` or ``brush:`` class or a
  ``data-lang`` attribute on the block, a ``<pre>`` or ``<code>`` inside it or an ancestor up to three
  levels, or a bare language class on the block or inside it (rustdoc's ``pre.rust``) / fences with an
  info string;
* tables: ``<table>`` with two rows of cells or more (a table of one cell or one row is layout), no
  table inside and no ``role=presentation`` / pipe tables (delimiter rows);
* items: ``<li>`` / list item lines (``-``, ``*``, ``+``, ``1.``, ``1)``; also in block quotes);
* sup/sub: ``<sup>`` and ``<sub>`` / ``<sup>``, ``<sub>``, ``^x^`` and ``~x~`` outside code spans;
* first paragraph: whether the text of the main content's first ``<p>`` of 40 characters or more (white
  space normalised) is in the Markdown; both sides are compared as their letters and digits only, with
  link destinations and the inline HTML tags the converter writes (``<sup>``, ``<sub>``, ...) taken
  out of the Markdown first, so that escapes, emphasis and link targets do not count as losses.

Per generator: pages, then ``HTML/Markdown`` per feature and the first-paragraph hit rate. Then the
worst pages (``--worst`` per generator): a page's loss is the largest relative loss of one feature
(``(HTML - Markdown) / HTML``, a missed first paragraph counting 1.0), ties broken by the items lost.
``--dump DIR`` writes the Markdown of those pages beside a copy of their main content's HTML. The load
average is printed at the start and the end. Results and what they mean: ``benchmarks/EXTRACTION.md``.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import lxml.html
from lxml import etree
from lxml.html import HtmlElement

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from extraction_fidelity import shape  # noqa: E402

from docscraper.content.extraction import extract_html  # noqa: E402

QSETS = Path("/tmp/qsets")
RUST_DOC = QSETS / "rustdoc/root/usr/share/doc/rust-doc/html"


def _cls(name: str) -> str:
    """XPath predicate: the element's class list holds ``name``."""
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


@dataclass(frozen=True)
class Generator:
    """Where a generator's pages are and how to find their main content."""

    name: str
    folder: Path
    globs: tuple[str, ...] = ("**/*.html",)
    #: XPath expressions tried in turn; the first that matches gives the main content (outermost elements).
    containers: tuple[str, ...] = ("//main", "//article", "//*[@role='main']", "//body")
    #: XPath expressions (relative to the document) of chrome inside the container, removed before counting.
    drop: tuple[str, ...] = ()
    #: fnmatch patterns of paths (relative to ``folder``) never measured.
    skip: tuple[str, ...] = ()
    #: XPath (relative to the container) of code blocks that are not ``<pre>``.
    extra_code: str | None = None


GENERATORS = (
    Generator(
        "sphinx",
        Path("/tmp/realdocs/u9/usr/share/doc/python3.11/html"),
        ("library/*.html", "tutorial/*.html"),
        ("//div[@role='main']", f"//div[{_cls('body')}]"),
    ),
    Generator(
        "mkdocs-readthedocs",
        QSETS / "typer/root/usr/share/doc/python-typer-doc/html",
        containers=("//div[@role='main']", "//article"),
        skip=("search.html", "404.html"),
    ),
    Generator(
        "mkdocs",
        QSETS / "mkdocs/root/usr/share/doc/mkdocs/html",
        containers=("//div[@role='main']", "//article"),
        skip=("search.html", "404.html"),
    ),
    Generator(
        "docbook",
        QSETS / "pg/root/usr/share/doc/postgresql-doc-15/html",
        ("*.html",),
        ("//body",),
        drop=(f"//div[{_cls('navheader')}]", f"//div[{_cls('navfooter')}]"),
    ),
    Generator(
        "mdbook",
        RUST_DOC,
        # The book's own chapters only: its 2018-edition/, first-edition/ and second-edition/ folders are
        # pages saying the chapter has moved.
        (
            "book/*.html",
            *(
                f"{book}/**/*.html"
                for book in (
                    "reference",
                    "nomicon",
                    "rustc",
                    "edition-guide",
                    "rust-by-example",
                    "embedded-book",
                    "rustdoc",
                    "cargo",
                )
            ),
        ),
        ("//main",),
        skip=("*/print.html", "*/toc.html"),
    ),
    Generator(
        "rustdoc",
        RUST_DOC / "std",
        ("**/struct.*.html", "**/fn.*.html", "**/index.html"),
        ("//section[@id='main-content']",),
    ),
    Generator(
        "javadoc",
        QSETS / "javadoc/root/usr/share/doc/libcommons-lang3-java/api/org/apache/commons/lang3",
        containers=("//main", f"//div[{_cls('contentContainer')}]"),
        skip=("class-use/*", "*/class-use/*"),
    ),
    Generator(
        "doxygen",
        QSETS / "doxygen/root/usr/share/doc/libsdl2-doc/html",
        containers=(f"//div[{_cls('contents')}]",),
        skip=("*_source.html",),
        extra_code=f".//div[{_cls('fragment')}]",
    ),
    Generator(
        "texinfo",
        QSETS / "texinfo/m4root/usr/share/doc/m4",
        ("*.html",),
        ("//body",),
        drop=(f"//div[{_cls('header')}]", f"//div[{_cls('nav-panel')}]"),
    ),
    Generator(
        "node",
        QSETS / "node/root/usr/share/doc/nodejs/api",
        ("*.html",),
        ("//div[@id='apicontent']",),
        skip=("all.html",),
    ),
    Generator(
        "asciidoc",
        QSETS / "gitdoc/root/usr/share/doc/git-doc",
        containers=("//div[@id='header'] | //div[@id='content']",),
    ),
)
_BY_NAME = {g.name: g for g in GENERATORS}

FEATURES = ("headings", "code", "code+lang", "tables", "items", "sup/sub")
FIRST_PARAGRAPH_MIN = 40

_LANG_CLASS_RE = re.compile(r"^(?:language|lang|highlight|hljs|brush)[-:]\S+$", re.I)
#: Class tokens that name a language on their own (rustdoc's ``<pre class="rust">``).
_BARE_LANGUAGES = frozenset(
    {"rust", "python", "javascript", "js", "bash", "sh", "shell", "console", "json", "c", "cpp", "java", "sql", "text"}
)
_HEADINGS = etree.XPath(".//h1 | .//h2 | .//h3 | .//h4 | .//h5 | .//h6")
_TABLE_ROWS = etree.XPath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
_ROW_CELLS = etree.XPath("./td | ./th")
#: ATX headings, also inside list items and block quotes (javadoc's ``- ## Field Summary``).
_MD_HEADING_RE = re.compile(r"^[ \t]*(?:(?:>|[-*+]|\d{1,9}[.)])[ \t]+)*#{1,6}(?:[ \t]|$)")
_MD_ITEM_RE = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_CODE_SPAN_RE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
_SUP_SUB_RE = re.compile(r"<su[bp]>|(?<![\^\w])\^[^\s^]+\^(?!\^)|(?<![~\w])~[^\s~]+~(?!~)")
_LINK_DESTINATION_RE = re.compile(r"\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto|file):[^<>\s]+)>")
#: The inline HTML the converter writes; other ``<...>`` is text (``Vec<T>``, ``<user@host>`` in code).
_TAG_RE = re.compile(r"</?(?:sup|sub|br|kbd|mark|ins|del|u|s|small|span|abbr)\b[^<>]*>", re.I)
_NOT_ALNUM_RE = re.compile(r"[\W_]+")


def _letters(text: str) -> str:
    return _NOT_ALNUM_RE.sub("", text)


def _outermost(elements: Sequence[HtmlElement]) -> list[HtmlElement]:
    found = set(elements)
    return [el for el in elements if not any(a in found for a in el.iterancestors())]


def main_content(generator: Generator, data: bytes) -> list[HtmlElement]:
    """The main-content elements of a page by the generator's containers; ``[]`` when none is found."""
    try:
        root = lxml.html.document_fromstring(data)
    except (ValueError, etree.ParserError):
        return []
    for expression in generator.drop:
        for el in root.xpath(expression):
            if el.getparent() is not None:
                el.drop_tree()
    for expression in generator.containers:
        found = root.xpath(expression)
        if found:
            return _outermost(found)
    return []


def _has_language(pre: HtmlElement, containers: Iterable[HtmlElement]) -> bool:
    stop = set(containers)
    ancestors: list[HtmlElement] = []
    for ancestor in pre.iterancestors():
        if ancestor in stop or len(ancestors) == 3:
            break
        ancestors.append(ancestor)
    # Descendants too: mdBook nests its highlighted block in a bare one (``<pre><pre class="playground">
    # <code class="language-rust">``).
    inner = list(pre.iter("pre", "code"))
    for el in [*inner, *ancestors]:
        if el.get("data-lang") or el.get("data-language"):
            return True
        tokens = (el.get("class") or "").split()
        if any(_LANG_CLASS_RE.match(t) for t in tokens):
            return True
        if el in inner and any(t.lower() in _BARE_LANGUAGES for t in tokens):
            return True
    return False


def _is_data_table(table: HtmlElement) -> bool:
    if (table.get("role") or "").lower() in ("presentation", "none"):
        return False
    if next(table.iterdescendants("table"), None) is not None:
        return False
    return sum(1 for row in _TABLE_ROWS(table) if _ROW_CELLS(row)) >= 2


def html_counts(generator: Generator, containers: list[HtmlElement]) -> tuple[dict[str, int], str | None]:
    """Feature counts of the main content, and the text of its first paragraph (``None`` when it has none)."""
    counts = dict.fromkeys(FEATURES, 0)
    first: str | None = None
    for container in containers:
        counts["headings"] += len(_HEADINGS(container))
        blocks = [pre for pre in container.iter("pre") if next(pre.iterancestors("pre"), None) is None]
        if generator.extra_code:
            blocks += [
                el for el in container.xpath(generator.extra_code) if next(el.iterancestors("pre"), None) is None
            ]
        counts["code"] += len(blocks)
        counts["code+lang"] += sum(1 for block in blocks if _has_language(block, containers))
        counts["tables"] += sum(1 for table in container.iter("table") if _is_data_table(table))
        counts["items"] += sum(1 for _ in container.iter("li"))
        counts["sup/sub"] += sum(1 for _ in container.iter("sup", "sub"))
        if first is None:
            for paragraph in container.iter("p"):
                text = " ".join(paragraph.text_content().split())
                if len(text) >= FIRST_PARAGRAPH_MIN:
                    first = text
                    break
    return counts, first


def markdown_counts(markdown: str) -> tuple[dict[str, int], str]:
    """Feature counts of the Markdown, and its text as letters and digits (for the first paragraph)."""
    s = shape(markdown)
    lines = s.prose.split("\n")
    counts = {
        "headings": sum(1 for line in lines if _MD_HEADING_RE.match(line)),
        "code": len(s.code),
        "code+lang": sum(1 for lang, _ in s.code if lang),
        "tables": s.tables,
        "items": sum(1 for line in lines if _MD_ITEM_RE.match(line)),
        "sup/sub": len(_SUP_SUB_RE.findall(_CODE_SPAN_RE.sub("", s.prose))),
    }
    text = _LINK_DESTINATION_RE.sub("]", markdown)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _TAG_RE.sub("", text)
    return counts, _letters(text)


@dataclass
class Page:
    path: Path
    html: dict[str, int]
    markdown: dict[str, int]
    first_paragraph: bool | None  # None: the main content has no paragraph long enough

    def loss(self) -> tuple[float, int, str]:
        """(largest relative loss of a feature, items lost in all, that feature)."""
        worst, which, lost = 0.0, "", 0
        for key in FEATURES:
            h, m = self.html[key], self.markdown[key]
            if h > m:
                lost += h - m
                if (h - m) / h > worst:
                    worst, which = (h - m) / h, key
        if self.first_paragraph is False:
            lost += 1
            if worst < 1.0:
                worst, which = 1.0, "first paragraph"
        return worst, lost, which


@dataclass
class Result:
    generator: Generator
    candidates: int = 0
    with_container: int = 0
    pages: list[Page] = field(default_factory=list)


def list_pages(generator: Generator) -> list[Path]:
    """The files of the generator that match its globs and not its skip patterns, sorted."""
    files: set[Path] = set()
    for pattern in generator.globs:
        files.update(p for p in generator.folder.glob(pattern) if p.is_file())
    rel = {p: p.relative_to(generator.folder).as_posix() for p in files}
    return sorted(p for p in files if not any(fnmatch.fnmatch(rel[p], s) for s in generator.skip))


def measure(generator: Generator, max_pages: int) -> Result:
    result = Result(generator)
    files = list_pages(generator)
    result.candidates = len(files)
    # Parsed once to find the pages that have the container, then once more for those sampled: lxml
    # parses a page in well under a millisecond, and keeping no tree keeps memory flat.
    qualified = [p for p in files if main_content(generator, p.read_bytes())]
    result.with_container = len(qualified)
    count = min(max_pages, len(qualified))
    sample = [qualified[i * len(qualified) // count] for i in range(count)]
    for path in sample:
        data = path.read_bytes()
        html, first = html_counts(generator, main_content(generator, data))
        markdown, letters = markdown_counts(extract_html(data, path.resolve().as_uri()).markdown)
        hit = None if first is None else _letters(first) in letters
        result.pages.append(Page(path, html, markdown, hit))
    return result


def parse_generator(spec: str) -> Generator:
    """``NAME=FOLDER[:GLOB]`` or a built-in ``NAME``."""
    name, sep, rest = spec.partition("=")
    if not sep:
        if name not in _BY_NAME:
            raise argparse.ArgumentTypeError(f"unknown generator {name!r} (built in: {', '.join(_BY_NAME)})")
        return _BY_NAME[name]
    folder, globs = rest, ""
    if ":" in rest and not Path(rest).is_dir():
        folder, _, globs = rest.rpartition(":")
    base = _BY_NAME.get(name, Generator(name, Path(folder)))
    generator = replace(base, folder=Path(folder))
    if globs:
        generator = replace(generator, globs=tuple(g for g in globs.split(",") if g))
    if not generator.folder.is_dir():
        raise argparse.ArgumentTypeError(f"{folder} is not a directory")
    return generator


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table with aligned columns (readable in a terminal, pasteable into Markdown)."""
    rows = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _summary_row(name: str, pages: list[Page], found: str) -> list[str]:
    cells = [f"{sum(p.html[k] for p in pages)}/{sum(p.markdown[k] for p in pages)}" for k in FEATURES]
    asked = [p.first_paragraph for p in pages if p.first_paragraph is not None]
    return [name, found, *cells, f"{sum(asked)}/{len(asked)}"]


def report(results: list[Result], worst: int, dump: Path | None) -> None:
    for r in results:
        print(
            f"{r.generator.name}: {r.candidates} files, {r.with_container} with the container, in {r.generator.folder}"
        )
    rows = [_summary_row(r.generator.name, r.pages, f"{len(r.pages)} of {r.with_container}") for r in results]
    every = [p for r in results for p in r.pages]
    rows.append(_summary_row("all", every, str(len(every))))
    print()
    print(_table(["generator", "pages", *(f"{k} HTML/MD" for k in FEATURES), "1st paragraph"], rows))

    print(f"\nWorst pages (largest relative loss of one feature; up to {worst} per generator)\n")
    worst_rows = []
    for r in results:
        scored = sorted(((page.loss(), page) for page in r.pages), key=lambda x: (-x[0][0], -x[0][1], str(x[1].path)))
        for (score, _, which), page in scored[:worst]:
            if score == 0:
                break
            counts = " ".join(
                f"{k} {page.html[k]}/{page.markdown[k]}" for k in FEATURES if page.html[k] or page.markdown[k]
            )
            if page.first_paragraph is not None:
                counts += f" 1st-p {'yes' if page.first_paragraph else 'NO'}"
            rel = page.path.relative_to(r.generator.folder).as_posix()
            worst_rows.append([r.generator.name, rel, f"{score:.2f}", which, counts])
            if dump is not None:
                _dump(dump, r.generator, page)
    print(
        _table(["generator", "page", "loss", "feature", "HTML/MD"], worst_rows)
        if worst_rows
        else "(none lost anything)"
    )


def _dump(directory: Path, generator: Generator, page: Page) -> None:
    data = page.path.read_bytes()
    stem = f"{generator.name}--{page.path.relative_to(generator.folder).as_posix().replace('/', '--')}"
    (directory / f"{stem}.md").write_text(extract_html(data, page.path.resolve().as_uri()).markdown)
    html = "\n".join(lxml.html.tostring(el, encoding="unicode") for el in main_content(generator, data))
    (directory / f"{stem}.main.html").write_text(html)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--generator",
        action="append",
        type=parse_generator,
        metavar="NAME=FOLDER[:GLOB]",
        help="measure these pages instead of the built-in list (repeatable; NAME alone: one built-in generator)",
    )
    parser.add_argument("--max-pages", type=int, default=40, help="pages per generator, evenly spaced (default 40)")
    parser.add_argument("--worst", type=int, default=3, help="worst pages listed per generator (default 3)")
    parser.add_argument("--dump", type=Path, help="write the Markdown and main-content HTML of the worst pages here")
    args = parser.parse_args()
    if args.max_pages < 1:
        parser.error("--max-pages must be at least 1")
    generators = args.generator or [g for g in GENERATORS if g.folder.is_dir()]
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)

    python = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd() + os.sep) else sys.executable
    print("command: " + shlex.join([python, *sys.argv]))
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for generator in GENERATORS:
        if generator not in generators and not args.generator:
            print(f"skipped {generator.name}: {generator.folder} not found")
    results = [measure(g, args.max_pages) for g in generators]
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    report(results, args.worst, args.dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
