"""The Markdown mirror: ``-a save_dir=DIR`` / ``DOCSCRAPER_SAVE_DIR`` (docscraper.storage.mirror, pipelines.mirror)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import jsonschema
import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.crawl.report import load_schema
from docscraper.items import PageItem, PageMetadata
from docscraper.storage.mirror import MAX_SEGMENT_BYTES, Mirror, MirrorRefused, front_matter, mirror_path
from pipelines.change_detection import content_hash
from tests.conftest import Crawl, CrawlResult
from tests.localdocs import PAGES, age, make_docs, page
from tests.mockserver import DocsServer

MIRRORED = {
    "./": "index.md",
    "guide": "guide/index.md",
    "guide/routing.html": "guide/routing.md",
    "guide/filters.html": "guide/filters.md",
    "notes.md": "notes.md",
    "api/ref.html": "api/ref.md",
    "extra.txt": "extra.md",
}


def files_under(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


def identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def read_front_matter(path: Path) -> dict:
    yaml = pytest.importorskip("yaml")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    fields = yaml.safe_load(head)
    fields["_body"] = body
    return fields


def item(key: str, markdown: str = "# Title\n\nBody text.\n", *, pid: str = "url_aaaaaaaaaaaaaaaa",
         title: str = "Title", url: str | None = None) -> PageItem:
    return PageItem(
        url=url or f"https://docs.example.com/{key}",
        title=title,
        markdown=markdown,
        metadata=PageMetadata(page_id=pid, source="example", path=key, canonical_url=None, language=None,
                              description=None, finder="link", depth=1, http_status=200,
                              content_type="text/html", etag=None, last_modified=None,
                              fetched_at="2025-01-02T03:04:05Z"),
    )


# -- paths -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), [
    ("./", ("index.md",)),
    ("", ("index.md",)),
    ("guide", ("guide", "index.md")),
    ("guide/", ("guide", "index.md")),
    ("guide/x.html", ("guide", "x.md")),
    ("x.htm", ("x.md",)),
    ("x.xhtml", ("x.md",)),
    ("notes.md", ("notes.md",)),
    ("notes.markdown", ("notes.md",)),
    ("extra.txt", ("extra.md",)),
    ("v1.2", ("v1.2.md",)),
    ("caf%C3%A9.html", ("café.md",)),
    ("a%20b/c.html", ("a b", "c.md")),
])
def test_mirror_paths(key: str, expected: tuple[str, ...]) -> None:
    assert mirror_path(key) == expected


def test_query_strings_and_collisions_get_distinct_names() -> None:
    plain = mirror_path("page.html")
    with_query = mirror_path("page.html?tab=2")
    assert with_query != plain and with_query[-1].startswith("page~q") and with_query[-1].endswith(".md")
    assert mirror_path("page.html", tag="abc") == ("page~abc.md",)


@pytest.mark.parametrize("key", [
    "..%2F..%2Fetc/passwd.html",
    "%2e%2e/%2e%2e/x.html",
    "%2E%2E",
    "..",
    "guide/../../x.html",
    "a%5C..%5C..%5Cx.html",
    "a\\..\\..\\x.html",
    "%00x.html",
    "x%0A.html",
    "guide/%2F%2Fetc%2Fx.html",
    "https://evil.example/x.html",
    "/etc/passwd",
])
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(MirrorRefused):
        mirror_path(key)


def test_long_names_are_cut_with_a_hash() -> None:
    long_file = mirror_path("d/" + "x" * 500 + ".html")
    long_folder = mirror_path("é" * 300 + "/p.html")
    for parts in (long_file, long_folder):
        assert all(len(part.encode()) <= MAX_SEGMENT_BYTES for part in parts)
    assert long_file[-1].endswith(".md") and "~" in long_file[-1]
    assert mirror_path("d/" + "x" * 500 + "a.html") != mirror_path("d/" + "x" * 500 + "b.html")


def test_front_matter_is_yaml_whatever_the_title() -> None:
    yaml = pytest.importorskip("yaml")
    nasty = 'He said "no" \\ then\nleft: #1 \u2028 \x85 \U0001f600 --- '
    block = front_matter({"url": "https://e.com/a?b=c#d", "title": nasty, "fetched_at": None})
    assert block.startswith("---\n") and block.endswith("\n---\n")
    assert yaml.safe_load(block.strip("-\n")) == {"url": "https://e.com/a?b=c#d", "title": nasty, "fetched_at": None}


# -- the Mirror ------------------------------------------------------------------------------------------


def test_save_writes_once_and_rewrites_only_on_change(tmp_path: Path) -> None:
    mirror = Mirror(tmp_path / "m")
    page_item = item("guide/x.html", title='A "quoted" title')
    first = mirror.save(page_item, content_hash(page_item.markdown))
    assert (first.status, first.path) == ("written", "guide/x.md")
    target = tmp_path / "m" / "guide" / "x.md"
    fields = read_front_matter(target)
    assert fields["url"] == page_item.url and fields["title"] == 'A "quoted" title'
    assert fields["content_hash"] == content_hash(page_item.markdown)
    assert fields["fetched_at"] == "2025-01-02T03:04:05Z" and fields["page_id"] == "url_aaaaaaaaaaaaaaaa"
    assert fields["_body"].strip() == page_item.markdown.strip()
    before = identity(target)
    again = Mirror(tmp_path / "m")  # a later run
    assert again.save(page_item, content_hash(page_item.markdown)).status == "unchanged"
    assert identity(target) == before
    changed = item("guide/x.html", "# Title\n\nNew text.\n")
    assert again.save(changed, content_hash(changed.markdown)).status == "written"
    assert "New text." in target.read_text()
    assert not [p for p in (tmp_path / "m").rglob(".docscraper-*")]  # no temporary file left


def test_files_get_the_mode_the_umask_gives(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        mirror = Mirror(tmp_path / "m")
    finally:
        os.umask(previous)
    page_item = item("x.html")
    assert mirror.save(page_item, content_hash(page_item.markdown)).status == "written"
    assert stat.S_IMODE((tmp_path / "m" / "x.md").stat().st_mode) == 0o640  # not mkstemp's 0600


def test_two_pages_for_one_file_each_get_their_own(tmp_path: Path) -> None:
    mirror = Mirror(tmp_path / "m")
    html = item("a.html", "# A html\n", pid="url_aaaaaaaaaaaaaaaa")
    md = item("a.md", "# A md\n", pid="url_bbbbbbbbbbbbbbbb")
    assert mirror.save(html, content_hash(html.markdown)).path == "a.md"
    assert mirror.save(md, content_hash(md.markdown)).path == "a~bbbbbbbb.md"
    later = Mirror(tmp_path / "m")  # stable across runs, whichever comes first
    assert later.save(md, content_hash(md.markdown)).status == "unchanged"
    assert later.save(html, content_hash(html.markdown)).status == "unchanged"


def test_hostile_keys_write_nothing_outside(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "m"
    outside = tmp_path / "target"
    outside.mkdir()
    mirror = Mirror(root)
    (root / "planted").symlink_to(outside)  # a symlink inside the mirror folder must not be followed out
    (root / "planted-file.md").symlink_to(outside / "victim.md")
    keys = ["..%2F..%2Fetc/passwd.html", "%2e%2e/x.html", "a%5C..%5C..%5Cx.html", "%00x.html",
            "planted/x.html", "planted/deeper/y.html", "x" * 400 + ".html", "ok.html", "planted-file.md"]
    outcomes = {k: mirror.save(item(k, pid=f"url_{i:016d}"), "h" * 64) for i, k in enumerate(keys)}
    assert {k for k, o in outcomes.items() if o.status == "refused"} == set(keys[:6])
    assert outcomes["ok.html"].status == "written"
    assert outcomes["planted-file.md"].status == "written"  # the symlink itself is replaced, not followed
    assert not (root / "planted-file.md").is_symlink() and not (outside / "victim.md").exists()
    assert list(outside.iterdir()) == []
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert path.resolve().is_relative_to(root.resolve()), path
    report = mirror.report({})
    assert {r["key"] for r in report["refused"]} == set(keys[:6])


def test_save_dir_must_be_a_folder(tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        CrawlArgs.parse({"source": "https://docs.example.com/", "save_dir": str(a_file)})
    with pytest.raises(ConfigError, match="DOCSCRAPER_SAVE_DIR"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_SAVE_DIR": str(a_file)}))
    args = CrawlArgs.parse({"source": "https://docs.example.com/", "save_dir": str(tmp_path / "new")})
    assert args.save_dir == tmp_path / "new"


# -- whole crawls ----------------------------------------------------------------------------------------


def mirror_report(result: CrawlResult) -> dict:
    report = result.report
    jsonschema.validate(report, load_schema())
    mirror: dict = report["mirror"]
    return mirror


def test_mirror_of_a_local_folder(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    out = tmp_path / "mirror"
    first = crawl(docs.as_uri(), f"save_dir={out}")
    assert mirror_report(first)["written"] == len(PAGES)
    written = files_under(out)
    assert set(written) == set(MIRRORED.values())
    for key, rel in MIRRORED.items():
        fields = read_front_matter(out / rel)
        assert fields["url"].startswith(docs.as_uri())
        assert fields["content_hash"] and fields["fetched_at"] and fields["title"]
        assert first.report["items"][key]["pageId"] == fields["page_id"]
    assert "Routes match events" in (out / "guide" / "routing.md").read_text()
    before = {rel: identity(path) for rel, path in written.items()}

    second = crawl(docs.as_uri(), f"save_dir={out}")
    mirror = mirror_report(second)
    assert (mirror["written"], mirror["unchanged"]) == (0, len(PAGES))
    assert {rel: identity(path) for rel, path in files_under(out).items()} == before

    (docs / "guide" / "filters.html").write_text(page("Filters", "A filter expression may be 8192 characters."))
    third = crawl(docs.as_uri(), f"save_dir={out}")
    assert mirror_report(third)["written"] == 1
    after = {rel: identity(path) for rel, path in files_under(out).items()}
    assert {rel for rel in after if after[rel] != before[rel]} == {"guide/filters.md"}
    assert "8192" in (out / "guide" / "filters.md").read_text()

    # a removed page keeps its file, flagged in the report
    (docs / "guide" / "filters.html").unlink()
    (docs / "guide" / "index.html").write_text(page("Guide", "The guide covers routing.", {"Routing": "routing.html"}))
    fourth = crawl(docs.as_uri(), f"save_dir={out}")
    mirror = mirror_report(fourth)
    assert fourth.keys("success", "removed") == {"guide/filters.html"}
    assert mirror["removedKept"] == ["guide/filters.md"]
    assert (out / "guide" / "filters.md").exists()
    assert mirror["written"] == 1  # guide/index.md


def test_a_mirror_file_deleted_by_hand_is_restored_even_when_not_modified(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    age(docs)  # old files get ETags, so the second crawl is answered 304
    out = tmp_path / "mirror"
    crawl(docs.as_uri(), f"save_dir={out}")
    (out / "guide" / "routing.md").unlink()
    (out / "index.md").unlink()
    second = crawl(docs.as_uri(), f"save_dir={out}")
    mirror = mirror_report(second)
    assert mirror["written"] == 2 and mirror["unchanged"] == len(PAGES) - 2
    assert (out / "guide" / "routing.md").exists() and (out / "index.md").exists()
    assert second.report["counters"]["not_modified"] >= 3
    assert second.keys("success", "unchanged") == PAGES


def test_setting_and_argument(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    from_setting = tmp_path / "from-setting"
    from_arg = tmp_path / "from-arg"
    crawl(docs.as_uri(), settings={"DOCSCRAPER_SAVE_DIR": str(from_setting)})
    assert (from_setting / "index.md").exists()
    crawl(docs.as_uri(), f"save_dir={from_arg}", settings={"DOCSCRAPER_SAVE_DIR": str(tmp_path / "unused")})
    assert (from_arg / "index.md").exists() and not (tmp_path / "unused").exists()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    bad = crawl(docs.as_uri(), f"save_dir={a_file}", check=False)
    assert bad.returncode == 2 and "error:" in bad.stderr and "not a folder" in bad.stderr
    no_mirror = crawl(docs.as_uri())
    assert "mirror" not in no_mirror.report


def test_hostile_urls_write_nothing_outside_the_mirror(tmp_path: Path, crawl: Crawl) -> None:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    long_name = "L" * 300 + ".html"
    hostile_links = {
        "dotdot": "..%2F..%2F..%2Fescaped.html",
        "backslash": "b%5C..%5C..%5Cy.html",
        "raw-backslash": "c\\..\\..\\z.html",
        "long": long_name,
        "slashes": "deep/%2F%2Ftmp%2Fz.html",
    }
    (site / "docs" / "index.html").write_text(page("Home", "A hostile site.", hostile_links))
    sections = {
        "Passwd": "..%2F..%2Fetc/passwd.html",
        "Backslash": "a%5C..%5C..%5Cx.html",
        "Nul": "%00x.html",
        "Slashes": "guide/%2F%2Fetc%2Fx.html",
        "Long": "M" * 400 + ".html",
        "Fine": "fine.html",
    }
    (site / "docs" / "llms-full.txt").write_text("".join(
        f"# {title}\nSource: __BASE__/docs/{path}\n\nThe {title.lower()} section has some text in it.\n\n"
        for title, path in sections.items()))
    body = page("Hostile", "Served at a hostile path.")
    (site / "_routes.json").write_text(json.dumps({
        f"/docs/{long_name}": {"status": 200, "body": body, "headers": {"Content-Type": "text/html"}},
        "/docs/deep///tmp/z.html": {"status": 200, "body": body, "headers": {"Content-Type": "text/html"}},
    }))
    out = tmp_path / "out" / "a" / "b" / "mirror"
    before = set(tmp_path.rglob("*"))
    with DocsServer(site).start() as server:
        result = crawl(f"{server.base_url}/docs/", f"save_dir={out}")
    mirror = mirror_report(result)
    refused = {r["key"] for r in mirror["refused"]}
    assert {"..%2F..%2Fetc/passwd.html", "a%5C..%5C..%5Cx.html", "%00x.html", "guide/%2F%2Fetc%2Fx.html",
            "deep/%2F%2Ftmp%2Fz.html"} <= refused
    assert result.report["scrapy"]["docscraper/mirror/refused"] == len(refused)
    written = files_under(out)
    assert "fine.md" in written and "index.md" in written
    assert any(name.startswith("M" * 100) for name in written)  # cut, with a hash
    assert any(name.startswith("L" * 100) for name in written)
    for name in written:
        assert all(len(part.encode()) <= MAX_SEGMENT_BYTES for part in name.split("/"))
    data_dir, root = (tmp_path / "data").resolve(), out.resolve()
    for path in set(tmp_path.rglob("*")) - before:
        if path.is_file() or path.is_symlink():
            real = path.resolve()
            assert real.is_relative_to(root) or real.is_relative_to(data_dir), path
    assert not any(os.path.lexists(tmp_path / name) for name in ("etc", "escaped.html", "x.html", "y.html"))
