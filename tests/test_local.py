"""Local folders: ``-a source=file:///path`` (docscraper.crawl.localfiles, the spider's file:// discovery)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import jsonschema
import pytest

from docscraper.config import ConfigError, CrawlArgs
from docscraper.crawl.localfiles import RACY_SECONDS, content_type_for, local_root, read_local
from docscraper.crawl.report import load_schema, summarize
from docscraper.crawl.target import source_name_for_url
from tests.conftest import Crawl, CrawlResult
from tests.localdocs import PAGES, age, make_docs, page
from tests.mockserver import DocsServer, copy_site

SECRET = "TOPSECRET-7f3a"


def valid(result: CrawlResult) -> dict:
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["stats"] == summarize(report["items"])
    return report


def state_pages(result: CrawlResult) -> dict[str, tuple]:
    db = sqlite3.connect(result.data_dir / "state.db")
    rows = db.execute("SELECT rel_path, status, content_hash FROM pages").fetchall()
    db.close()
    return {row[0]: row[1:] for row in rows}


# -- the file handler, without a crawl -----------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = make_docs(tmp_path / "docs")
    age(root)
    return root


def url(path: Path, suffix: str = "") -> str:
    return path.as_uri() + suffix


def test_content_types_by_extension() -> None:
    assert content_type_for("/a/x.html") == content_type_for("/a/x.HTM") == "text/html"
    assert content_type_for("/a/x.xhtml") == "application/xhtml+xml"
    for name in ("x.md", "x.markdown", "x.mdx"):
        assert content_type_for(name) == "text/markdown"
    assert content_type_for("llms.txt") == "text/plain"
    assert content_type_for("sitemap.xml") == "application/xml"
    assert content_type_for("README") == content_type_for("x.png") == "application/octet-stream"
    # documents (docscraper.content.documents) are typed so the spider converts them
    assert content_type_for("x.pdf") == "application/pdf" and content_type_for("x.IPYNB") == "application/x-ipynb+json"


def test_reads_a_file_with_type_and_validators(folder: Path) -> None:
    found = read_local(url(folder / "guide" / "routing.html"), str(folder))
    assert found.status == 200 and found.refusal is None
    assert b"Routes match events" in found.body
    assert found.headers["Content-Type"] == "text/html"
    assert found.headers["Last-Modified"].endswith("GMT")
    etag = found.headers["ETag"]
    again = read_local(url(folder / "guide" / "routing.html"), str(folder), if_none_match=etag)
    assert again.status == 304 and again.body == b""
    (folder / "guide" / "routing.html").write_text(page("Routing", "Changed."))
    changed = read_local(url(folder / "guide" / "routing.html"), str(folder), if_none_match=etag)
    # just written: no ETag at all (its mtime is too recent to be trusted), and the new body
    assert changed.status == 200 and b"Changed." in changed.body and "ETag" not in changed.headers
    assert RACY_SECONDS > 0


def test_folder_serves_its_index_under_a_slash_url(folder: Path) -> None:
    found = read_local(url(folder / "guide"), str(folder))
    assert found.status == 200 and b"<title>Guide</title>" in found.body
    assert found.url == url(folder / "guide") + "/"
    # index.html by its own name is the folder's page
    named = read_local(url(folder / "guide" / "index.html"), str(folder))
    assert named.canonical == url(folder / "guide") + "/"
    # a folder without an index file: a noindex listing of what a crawl reads in it, and of its folders
    (folder / "bare" / "deeper").mkdir(parents=True)
    for name in ("manual.pdf", "notes.md", "image.png", ".hidden.md", "a b.rst"):
        (folder / "bare" / name).write_bytes(b"x")
    listed = read_local(url(folder / "bare"), str(folder))
    assert listed.status == 200 and listed.url == url(folder / "bare") + "/" and "ETag" not in listed.headers
    assert b'<meta name="robots" content="noindex">' in listed.body
    assert re.findall(rb'href="([^"]+)"', listed.body) == [b"a%20b.rst", b"deeper/", b"manual.pdf", b"notes.md"]


def test_missing_file_is_a_404(folder: Path) -> None:
    found = read_local(url(folder / "gone.html"), str(folder))
    assert (found.status, found.detail) == (404, "file not found (404)")
    under_file = read_local(url(folder / "notes.md", "/x.html"), str(folder))
    assert under_file.status == 404


def test_paths_outside_the_folder_are_refused_unread(folder: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.html").write_text(page("Secret", SECRET))
    (folder / "escape.html").symlink_to(outside / "secret.html")
    (folder / "etc").symlink_to("/etc")
    (folder / "outdir").symlink_to(outside)
    (folder / "alias.html").symlink_to(folder / "guide" / "routing.html")  # inside: fine
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    root = str(folder)
    base = folder.as_uri()
    cases = {
        f"{base}/escape.html": "symlink escapes the source folder",
        f"{base}/etc/passwd": "symlink escapes the source folder",
        f"{base}/etc/": "symlink escapes the source folder",
        f"{base}/outdir/secret.html": "symlink escapes the source folder",
        f"{base}/../outside/secret.html": "outside the source folder",
        f"{base}/%2e%2e/outside/secret.html": "outside the source folder",
        f"{base}/guide%2F..%2F..%2Foutside/secret.html": "outside the source folder",
        "file:///etc/passwd": "outside the source folder",
        f"{base}/a%00b.html": "NUL in the file path",
        f"file://otherhost{folder}/index.html": "file URL on host otherhost",
    }
    for target, detail in cases.items():
        found = read_local(target, root)
        assert found.refusal is not None, target
        assert found.refusal.reason == "outOfScope" and found.refusal.detail == detail, (target, found.refusal)
        assert found.body == b""
    assert not any(p.startswith((str(outside), "/etc")) for p in opened), opened
    inside = read_local(f"{base}/alias.html", root)
    assert inside.status == 200 and b"Routes match events" in inside.body
    # no file:// source: nothing is read, unless the user named that very file (-a llms_txt=file://...)
    assert read_local(f"{base}/index.html", None).refusal is not None
    assert read_local(f"{base}/llms.txt", None, explicit=True).status == 200


def test_special_files_and_size_cap(folder: Path) -> None:
    os.mkfifo(folder / "pipe.html")
    found = read_local(url(folder / "pipe.html"), str(folder))  # must not block
    assert found.refusal is not None and found.refusal.detail == "not a regular file"
    big = read_local(url(folder / "guide" / "routing.html"), str(folder), maxsize=10)
    assert big.too_large is not None and big.body == b""


def test_file_source_argument_is_canonical(tmp_path: Path) -> None:
    docs = make_docs(tmp_path / "my docs.v2")
    args = CrawlArgs.parse({"source": f"file://{docs}/guide/.."})
    assert args.source == docs.as_uri() + "/"  # a folder, percent-encoded, with its final slash
    assert args.source.endswith("/my%20docs.v2/")
    assert local_root(args.source) == str(docs)
    assert source_name_for_url(args.source) == "local-my-docs.v2"
    assert CrawlArgs.parse({"source": (docs / "index.html").as_uri()}).source == (docs / "index.html").as_uri()
    for bad, message in [(f"file://{tmp_path}/nope", "no such folder"), ("file://host/x", "file:///absolute"),
                         ("file://relative", "file:///absolute")]:
        with pytest.raises(ConfigError, match=message):
            CrawlArgs.parse({"source": bad})
    with pytest.raises(ConfigError, match=r"render=js renders http\(s\) pages only"):
        CrawlArgs.parse({"source": docs.as_uri(), "render": "js"})
    assert CrawlArgs.parse({"source": docs.as_uri(), "render": "none"}).render == "none"


# -- whole crawls ----------------------------------------------------------------------------------------


def test_crawl_a_local_folder_then_edit_and_delete(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    source = docs.as_uri()
    first = crawl(source)
    report = valid(first)
    assert report["source"] == "local-docs"
    assert report["seedUrl"] == report["scopePrefix"] == source + "/"
    assert report["result"] == "success"
    assert first.keys("success", "new") == PAGES
    finders = {k: e["finder"] for k, e in report["items"].items() if e["status"] == "success"}
    assert finders == {"./": "link", "guide": "link", "guide/filters.html": "link", "guide/routing.html": "llms",
                       "notes.md": "llms", "extra.txt": "llms", "api/ref.html": "sitemap"}
    assert first.keys("skipped", "nonText") == {"image.png"}
    assert first.keys("skipped", "outOfScope") == {"https://example.com/"}
    assert report["discovery"]["llms"] == {"url": f"{source}/llms.txt", "links": 3}
    assert report["discovery"]["sitemap"]["files"] == [{"url": f"{source}/sitemap.xml", "kind": "urlset", "entries": 1}]
    # robots.txt does not apply to files: none was looked for
    assert "robots" not in report["discovery"]
    assert not any(k.startswith("docscraper/robots/") for k in report["scrapy"])
    assert all(not k.startswith(("file:", "/")) for k in first.keys("success"))

    # edit one page: exactly that page changed
    (docs / "guide" / "filters.html").write_text(page("Filters", "A filter expression may be 8192 characters."))
    second = crawl(source)
    valid(second)
    assert second.keys("success", "changed") == {"guide/filters.html"}
    assert second.keys("success", "unchanged") == PAGES - {"guide/filters.html"}

    # delete a file and the links to it: removed at the clean close
    (docs / "guide" / "filters.html").unlink()
    (docs / "guide" / "index.html").write_text(page("Guide", "The guide covers routing and filters in depth.",
                                                    {"Routing": "routing.html", "Home": "../"}))
    age(docs)
    third = crawl(source)
    report = valid(third)
    assert third.keys("success", "removed") == {"guide/filters.html"}
    assert third.keys("success", "changed") == {"guide"}
    assert state_pages(third)["guide/filters.html"][0] == "removed"
    assert report["result"] == "success"

    # all files are old now: unchanged pages come back 304 without being read
    fourth = crawl(source)
    report = valid(fourth)
    assert fourth.keys("success", "unchanged") == PAGES - {"guide/filters.html"}
    assert report["counters"]["not_modified"] >= 4


def test_deleted_file_still_linked_is_a_404_and_retired_after_gone_after(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    crawl(docs.as_uri())
    (docs / "guide" / "filters.html").unlink()
    settings = {"DOCSCRAPER_GONE_AFTER": "2"}
    second = crawl(docs.as_uri(), settings=settings)
    report = valid(second)
    entry = report["items"]["guide/filters.html"]
    assert (entry["status"], entry["statusReason"], entry["httpStatus"]) == ("failed", "httpError", 404)
    assert entry["detail"] == "file not found (404)"
    assert report["result"] == "partial" and second.keys("success", "removed") == set()
    third = crawl(docs.as_uri(), settings=settings)
    assert third.keys("success", "removed") == {"guide/filters.html"}


def test_scope_globs_depth_and_max_pages_are_relative_to_the_folder(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    blocked = crawl(docs.as_uri(), "block=guide/**")
    assert blocked.keys("success") == PAGES - {"guide", "guide/routing.html", "guide/filters.html"}
    assert {"guide", "guide/routing.html"} <= blocked.keys("skipped", "outOfScope")
    shallow = crawl(docs.as_uri(), "max_depth=0", settings={"DOCSCRAPER_DISCOVERY_LLMS": "0",
                                                            "DOCSCRAPER_DISCOVERY_SITEMAPS": "0"})
    assert shallow.keys("success") == {"./"}
    assert "notes.md" in shallow.keys("skipped", "depth")  # (guide/** stays blocked: the source's stored scope)
    few = crawl(docs.as_uri(), "max_pages=2")
    assert len(few.keys("success")) == 2 and few.report["frontierCut"]
    # DOWNLOAD_MAXSIZE applies to files too, before they are read
    capped = crawl(docs.as_uri(), "full=1", settings={"DOWNLOAD_MAXSIZE": "300"})  # no 304s
    assert "./" in capped.keys("skipped", "sizeLimit")
    assert "notes.md" in capped.keys("success")
    assert capped.report["scrapy"]["docscraper/local/refused/sizeLimit"] >= 1


def test_symlinks_out_of_the_folder_are_refused_and_never_read(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.html").write_text(page("Secret", SECRET))
    (outside / "more.html").write_text(page("More", SECRET))
    (docs / "secret.html").symlink_to(outside / "secret.html")
    (docs / "etc").symlink_to("/etc")
    (docs / "vault").symlink_to(outside)
    (docs / "alias.html").symlink_to(docs / "api" / "ref.html")
    (docs / "index.html").write_text(page("Relay docs", "Acme Relay receives webhooks.", {
        "Guide": "guide/", "Notes": "notes.md", "Secret": "secret.html", "Passwd": "etc/passwd",
        "Vault": "vault/more.html", "Alias": "alias.html", "Up": "../outside/secret.html",
        "Encoded": "%2e%2e/outside/secret.html"}))
    feed = tmp_path / "items.jsonl"
    result = crawl(docs.as_uri(), extra=["-O", str(feed)])
    report = valid(result)
    items = report["items"]
    for key in ("secret.html", "etc/passwd", "vault/more.html"):
        assert (items[key]["status"], items[key]["statusReason"]) == ("skipped", "outOfScope"), key
        assert items[key]["detail"] == "symlink escapes the source folder"
    assert items[f"{(tmp_path / 'outside' / 'secret.html').as_uri()}"]["statusReason"] == "outOfScope"
    # a symlink that stays inside is followed: it serves api/ref.html's content, so one of the two URLs is
    # the page and the other its alias (whichever was read first holds it)
    pair = {items["alias.html"]["statusReason"], items["api/ref.html"]["statusReason"]}
    assert pair == {"new", "duplicateContent"}, pair
    assert report["scrapy"]["docscraper/local/refused/outOfScope"] >= 3
    text = feed.read_text()
    assert SECRET not in text and "root:x:0" not in text
    assert "600 requests per minute" in text  # alias.html, read through its symlink
    assert not any(SECRET in str(row) for row in state_pages(result).values())


def test_fixture_site_copied_as_a_folder(tmp_path: Path, crawl: Crawl) -> None:
    """tests/site with __BASE__ replaced by the copy's file:// URL: llms.txt, llms-full.txt and the relative
    links work from files. (Root-absolute links such as ``/docs/faq.html`` lead out of the folder.)"""
    root = copy_site(tmp_path / "site")
    base = root.as_uri()
    for path in root.rglob("*"):
        if path.suffix in (".html", ".xml", ".txt", ".md"):
            path.write_text(path.read_text(encoding="utf-8").replace("__BASE__", base), encoding="utf-8")
    result = crawl(f"{base}/docs/")
    report = valid(result)
    assert report["discovery"]["llms-full"]["mapped"] == 4
    assert report["discovery"]["llms"]["links"] == 11
    assert result.stats["success.new"] >= 30
    assert report["items"]["guide/concepts.html"]["finder"] == "llms"
    assert "guide/concepts.html.md" not in report["items"]
    for key in result.keys("success"):
        assert not key.startswith(("file:", "/", "..")), key


def test_http_source_never_reads_files(tmp_path: Path, crawl: Crawl) -> None:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.html").write_text(page("Home", "A site that points at the crawler's own files.", {
        "passwd": "file:///etc/passwd", "hosts": "file:///etc/hosts", "redirect": "/docs/to-file.html",
        "page": "page.html"}))
    (root / "docs" / "page.html").write_text(page("Page", "A normal page."))
    (root / "docs" / "llms.txt").write_text("# Site\n\n## Docs\n\n- [passwd](file:///etc/passwd)\n- [Page](page.html)\n")
    (root / "docs" / "sitemap.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>file:///etc/hostname</loc></url></urlset>')
    (root / "_routes.json").write_text(json.dumps({"/docs/to-file.html": {"status": 302, "location": "file:///etc/passwd"}}))
    feed = tmp_path / "items.jsonl"
    with DocsServer(root).start() as server:
        result = crawl(f"{server.base_url}/docs/", extra=["-O", str(feed)], check=False)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    report = valid(result)
    assert result.keys("success") == {"./", "page.html"}
    assert not any(k.startswith("docscraper/local/") for k in report["scrapy"])
    assert "root:x:0" not in feed.read_text()


def test_missing_source_folder_is_a_usage_error(tmp_path: Path, crawl: Crawl) -> None:
    result = crawl(f"file://{tmp_path}/nowhere", check=False)
    assert result.returncode == 2
    assert "error:" in result.stderr and "no such folder" in result.stderr


def test_a_script_only_page_in_a_folder_gets_a_hint_that_fits_a_folder(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    (docs / "app.html").write_text('<html><body><div id="app"></div><script src="app.js"></script></body></html>')
    (docs / "index.html").write_text(page("Relay docs", "Acme Relay receives webhooks.", {"App": "app.html"}))
    refused = crawl(docs.as_uri(), "render=js", check=False)
    assert refused.returncode == 2 and "render=js renders http(s) pages only" in refused.stderr
    report = valid(crawl(docs.as_uri()))
    assert report["counters"]["needs_rendering"] == 1
    # -a render=js cannot help a file:// source (see above): the hint says what can
    assert report["items"]["app.html"]["hint"].endswith("serve the folder over HTTP and crawl its URL with -a render=js")


def test_source_by_name_after_the_first_crawl(tmp_path: Path, crawl: Crawl) -> None:
    docs = make_docs(tmp_path / "docs")
    crawl(docs.as_uri())
    shutil.copy(docs / "notes.md", docs / "notes-copy.md")
    again = crawl("local-docs")
    assert again.keys("success", "unchanged") == PAGES
