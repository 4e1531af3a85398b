"""The source registry (docscraper.ops.sources, ``scrapy sources``), crawls by name, ``scrapy recrawl`` and
``scrapy reindex``: real SQLite and Chroma in tmp_path, the fixture site on loopback, commands in a
subprocess from the project root."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from docscraper.config import DocscraperConfig
from docscraper.ops.sources import (
    SourceArgumentError,
    SourceError,
    add_source,
    get_source_info,
    list_sources,
    remove_source,
    request_reindex,
)
from docscraper.storage.state import PageWrite, RunRecord, SqlStateStore, utcnow
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, chunk_id
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer

ALLOWED_PAGES = 35
ARCHIVE_PAGES = 4


def config_for(data_dir: Path) -> DocscraperConfig:
    return DocscraperConfig(data_dir=data_dir, state_url=f"sqlite:///{data_dir / 'state.db'}")


def page(rel: str, base: str = "https://h/docs/", *, forced: bool = False) -> PageWrite:
    """A committed page as the crawl stores it: a folder page's URL ends in /, its relative path not."""
    url = base + ("" if rel == "./" else rel)
    stored_rel = rel if rel == "./" else rel.rstrip("/")
    pid = "url_" + stored_rel.replace("/", "_").replace(".", "_")
    return PageWrite(pid, url, None, stored_rel, f"hash-{rel}", None, None, 200, rel, "link", 1, "text/html",
                     utcnow(), "r1", chunk_count=2, forced=forced)


def chunks(source: str, page_id: str, n: int, seed: int = 1) -> list[ChunkRecord]:
    vectors = np.random.default_rng(seed).random((n, 384), dtype=np.float32)
    return [ChunkRecord(chunk_id(page_id, "abcdef0123456789", i), f"text {i}", vectors[i],
                        {"source": source, "page_id": page_id, "chunk_hash": f"{page_id}-{i}", "chunk_index": i})
            for i in range(n)]


def sources_json(command: Crawl) -> list[dict]:
    result: list[dict] = json.loads(command("sources", "list", "--json").stdout)
    return result


def error_line(result: CrawlResult) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def db_rows(data_dir: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(data_dir / "state.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


# -- the Python API --------------------------------------------------------------------------------------


def test_reindex_marks_pages_by_url_path_or_glob(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    store = SqlStateStore(config.state_url)
    src = store.ensure_source("docs", "https://h/docs", {"prefix": "https://h/docs/"}, registered=True)
    for rel in ("./", "guide/", "guide/a.html", "guide/deep/b.html", "faq.html", "archive/v1/x.html"):
        store.commit_page(src.id, page(rel))
    store.close()

    def marks(pattern: str) -> list[str]:
        urls = request_reindex(config, "docs", pattern)
        store = SqlStateStore(config.state_url)
        pages = store.load_pages(src.id)
        marked = sorted(p.url for p in pages.values() if p.reindex_requested)
        # clear the marks: committing a forced page does
        for p in pages.values():
            if p.reindex_requested:
                store.commit_page(src.id, page(p.url.removeprefix("https://h/docs/") or "./", forced=True))
        assert not any(p.reindex_requested for p in store.load_pages(src.id).values())
        store.close()
        assert marked == urls
        return [u.removeprefix("https://h/docs/") for u in urls]

    assert marks("faq.html") == ["faq.html"]
    assert marks("guide/**") == ["guide/", "guide/a.html", "guide/deep/b.html"]
    assert marks("guide/*") == ["guide/a.html"]
    assert marks("/docs/archive/**") == ["archive/v1/x.html"]
    assert marks("https://h/docs/guide/a.html") == ["guide/a.html"]
    assert marks("https://H/docs/*.html") == ["faq.html"]
    assert marks("./") == [""]
    with pytest.raises(SourceError, match="nothing was marked") as info:
        request_reindex(config, "docs", "blog/**")
    assert not isinstance(info.value, SourceArgumentError)
    with pytest.raises(SourceError, match="nothing was marked"):
        request_reindex(config, "docs", "https://other/docs/faq.html")
    with pytest.raises(SourceError, match="unknown source 'nope'"):
        request_reindex(config, "nope", "faq.html")
    with pytest.raises(SourceArgumentError, match="invalid source name"):
        request_reindex(config, "No Such", "faq.html")
    # a commit that was not forced (a mark set while a crawl ran) keeps the mark for the next crawl
    request_reindex(config, "docs", "faq.html")
    store = SqlStateStore(config.state_url)
    store.commit_page(src.id, page("faq.html"))
    assert [p.rel_path for p in store.load_pages(src.id).values() if p.reindex_requested] == ["faq.html"]
    store.close()


def test_add_adopt_list_and_remove_through_the_api(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    assert list_sources(config) == []
    assert not (tmp_path / "state.db").exists()  # reading creates no database
    # a source a crawl of its URL created, with pages, a run, a report folder and chunks
    store = SqlStateStore(config.state_url)
    implicit = store.ensure_source("h-docs", "https://h/docs", {"prefix": "https://h/docs/", "block": ["x/**"]})
    store.commit_page(implicit.id, page("faq.html"))
    store.start_run(RunRecord("run-1", implicit.id, utcnow(), None, None, None))
    other = store.ensure_source("other", "https://o/", {"prefix": "https://o/"}, registered=True)
    store.commit_page(other.id, page("a.html", "https://o/"))
    store.close()
    (config.runs_dir / "h-docs").mkdir(parents=True)
    (config.runs_dir / "h-docs" / "run-1.json").write_text("{}")
    index = ChromaIndex(path=config.chroma_path)
    index.upsert(chunks("h-docs", "url_faq_html", 3) + chunks("other", "url_a_html", 2, seed=2))
    index.close()

    with pytest.raises(SourceError, match="a crawl of it is running"):
        add_source(config, "docs", "https://h/docs/", probe=False)
    store = SqlStateStore(config.state_url)
    store.finish_run(RunRecord("run-1", implicit.id, utcnow(), utcnow(), "finished", "success"))
    store.close()
    info, probe = add_source(config, "docs", "https://h/docs/", allow=["guide/**,faq.html", "index.html"],
                             max_pages=50, probe=False)
    assert probe is None
    assert (info.name, info.registered, info.pages, info.chunks) == ("docs", True, 1, 2)
    # comma-separated as in -a allow=..., and --allow may be repeated
    assert info.scope == {"prefix": "https://h/docs/", "allow": ["guide/**", "faq.html", "index.html"],
                          "block": [], "max_depth": None,
                          "max_pages": 50, "seed": "https://h/docs/"}
    assert info.last_run is not None and info.last_run["run_id"] == "run-1"
    assert [s.name for s in list_sources(config)] == ["docs", "other"]
    assert (config.runs_dir / "docs" / "run-1.json").exists() and not (config.runs_dir / "h-docs").exists()
    index = ChromaIndex(path=config.chroma_path)
    assert index.count("docs") == 3 and index.count("h-docs") == 0 and index.count("other") == 2
    index.close()

    with pytest.raises(SourceError, match="exists already"):
        add_source(config, "docs", "https://elsewhere/", probe=False)
    with pytest.raises(SourceError, match="registered already, as source 'docs'"):
        add_source(config, "docs2", "https://h/docs", probe=False)
    with pytest.raises(SourceArgumentError, match="invalid source name"):
        add_source(config, "Docs", "https://n/", probe=False)
    with pytest.raises(SourceArgumentError, match="give an http"):
        add_source(config, "fine", "ftp://n/", probe=False)
    with pytest.raises(SourceArgumentError, match="max_depth must be 0 or more"):
        add_source(config, "fine", "https://n/", max_depth=-1, probe=False)
    with pytest.raises(SourceArgumentError, match="patterns match URL paths"):
        add_source(config, "fine", "https://n/", block=["https://n/x"], probe=False)
    assert [s.name for s in list_sources(config)] == ["docs", "other"]

    assert remove_source(config, "docs") == {"pages": 1, "chunks": 3, "runs": 1}
    assert [s.name for s in list_sources(config)] == ["other"]
    assert get_source_info(config, "other").pages == 1
    assert not (config.runs_dir / "docs").exists()
    index = ChromaIndex(path=config.chroma_path)
    assert index.count("docs") == 0 and index.count("other") == 2
    index.close()
    with pytest.raises(SourceError, match="unknown source 'docs'"):
        remove_source(config, "docs")
    # a render mode is stored with the scope, for docscraper.crawl.rendering
    app, _ = add_source(config, "app", "https://app.example/docs/", render="JS", probe=False)
    assert app.scope["render"] == "js" and app.registered
    with pytest.raises(SourceArgumentError, match="render must be js"):
        add_source(config, "app2", "https://app2.example/", render="fast", probe=False)


# -- the commands ----------------------------------------------------------------------------------------


@pytest.mark.crawl
def test_sources_add_probes_the_site_then_list_and_show(shared_site: DocsServer, command: Crawl) -> None:
    base = shared_site.base_url
    added = command("sources", "add", "docs", f"{base}/docs/", "--block", "archive/**", "--max-pages", "500")
    out = added.stdout
    assert f"llms.txt       {base}/docs/llms.txt (11 links)" in out
    assert f"llms-full.txt  {base}/docs/llms-full.txt" in out
    assert f"{base}/sitemap_index.xml" in out and f"{base}/sitemaps/guides.xml.gz" in out
    assert "3 file(s), 32 URLs (31 under the source's folder)" in out
    assert f"robots.txt     {base}/robots.txt: disallow /docs/private/" in out
    assert "Added source docs" in out
    # the probe speaks as docscraper, and asks each file once
    agents = {headers.get("User-Agent", "") for _, _, headers in shared_site.requests}
    assert agents and all(a.startswith("docscraper/") for a in agents)
    assert shared_site.hits("/robots.txt") == 1 and shared_site.hits("/docs/llms.txt") == 1

    [info] = sources_json(command)
    assert (info["name"], info["url"], info["registered"], info["pages"], info["last_run"]) == (
        "docs", f"{base}/docs", True, 0, None)
    assert info["scope"]["block"] == ["archive/**"] and info["scope"]["max_pages"] == 500
    listed = command("sources", "list").stdout
    assert listed.splitlines()[0].split() == ["NAME", "URL", "PAGES", "CHUNKS", "LAST", "RUN", "RESULT", "SCOPE"]
    assert "docs" in listed and "block archive/**; max_pages 500" in listed and "never" in listed
    shown = json.loads(command("sources", "show", "docs", "--json").stdout)
    assert shown == info
    plain = command("sources", "show", "docs").stdout
    assert "registered  yes" in plain and "last run    never" in plain
    assert "INFO" not in added.stderr + listed


@pytest.mark.crawl
def test_sources_refuses_bad_input_and_conflicts_storing_nothing(shared_site: DocsServer, command: Crawl,
                                                                tmp_path: Path) -> None:
    base = shared_site.base_url
    data = tmp_path / "data"
    bad = command("sources", "add", "Docs!", f"{base}/docs/", check=False)
    assert bad.returncode == 2 and "invalid source name 'Docs!'" in error_line(bad)
    bad_glob = command("sources", "add", "docs", f"{base}/docs/", "--block", "https://h/x", check=False)
    assert bad_glob.returncode == 2 and "patterns match URL paths" in error_line(bad_glob)
    bad_number = command("sources", "add", "docs", f"{base}/docs/", "--max-depth", "deep", check=False)
    assert bad_number.returncode == 2 and "max_depth must be a whole number" in error_line(bad_number)
    assert shared_site.requests == []  # bad input: nothing fetched
    gone = f"http://127.0.0.1:{closed_port()}/docs/"
    unreachable = command("sources", "add", "docs", gone, check=False)
    assert unreachable.returncode == 1 and f"cannot reach {gone}" in error_line(unreachable)
    assert not (data / "state.db").exists()  # nothing stored
    assert command("sources", "list", "--json").stdout.strip() == "[]"

    command("sources", "add", "docs", f"{base}/docs/")
    requests = len(shared_site.requests)
    taken = command("sources", "add", "docs", f"{base}/blog/", check=False)
    assert taken.returncode == 1 and "source 'docs' exists already" in error_line(taken)
    same_url = command("sources", "add", "docs2", f"{base}/docs", check=False)
    assert same_url.returncode == 1 and "registered already, as source 'docs'" in error_line(same_url)
    assert len(shared_site.requests) == requests  # conflicts are found before the site is asked
    assert [s["name"] for s in sources_json(command)] == ["docs"]

    for args, code, message in [
        (("sources", "remove", "docs"), 2, "confirm with: scrapy sources remove docs --yes"),
        (("sources", "show", "nope"), 1, "unknown source 'nope'"),
        (("sources", "remove", "nope", "--yes"), 1, "unknown source 'nope'"),
        (("sources", "frob"), 2, "give one of add, list, show, update, remove"),
        (("sources", "show"), 2, "usage: scrapy sources show NAME"),
        (("sources", "list", "--block", "x"), 2, "scope options go with add"),
        (("reindex", "nope", "x.html"), 1, "unknown source 'nope'"),
        (("reindex", "docs", "guide/**"), 1, "no stored page of source 'docs' matches 'guide/**'"),
        (("recrawl", "nope"), 1, "unknown source 'nope'"),
        (("recrawl", f"{base}/docs/"), 2, "recrawl takes a source name"),
        (("recrawl", "docs", "--max-pages", "none"), 2, "max_pages must be a whole number"),
    ]:
        result = command(*args, check=False)
        assert result.returncode == code, (args, result.stderr[-2000:])
        assert message in error_line(result), args
    assert [s["name"] for s in sources_json(command)] == ["docs"]
    assert db_rows(data, "SELECT count(*) FROM runs") == [(0,)]  # no crawl started


@pytest.mark.crawl
def test_crawl_by_name_uses_the_stored_scope_and_overrides_never_persist(shared_site: DocsServer, crawl: Crawl,
                                                                          command: Crawl) -> None:
    command("sources", "add", "docs", f"{shared_site.base_url}/docs/", "--block", "archive/**")
    stored_scope = sources_json(command)[0]["scope"]
    first = crawl("docs")
    report = first.report
    assert report["source"] == "docs" and report["seedUrl"] == f"{shared_site.base_url}/docs/"
    assert report["scope"]["block"] == ["archive/**"] and report["scopeOverrides"] == []
    assert report["stats"]["success.new"] == ALLOWED_PAGES - ARCHIVE_PAGES
    assert "redirects" not in report["items"]["./"]  # the seed is asked for as registered, not via a 301
    blocked = {k for k, e in report["items"].items() if e.get("detail") == "blocked by pattern archive/**"}
    assert "archive/v1/install.html" in blocked

    # a one-time override that narrows the scope: used for this run, never stored, removes nothing
    shared_site.reset_requests()
    narrowed = command("recrawl", "docs", "--max-depth", "1")
    report = narrowed.report
    assert report["scope"]["max_depth"] == 1 and report["scope"]["block"] == ["archive/**"]
    assert report["scopeOverrides"] == ["max_depth"]
    assert narrowed.keys("skipped", "depth")
    assert report["removal"]["performed"] is False and "narrowed" in report["removal"]["reason"]
    assert report["stats"]["success.removed"] == 0
    assert db_rows(first.data_dir, "SELECT status, count(*) FROM pages WHERE rel_path NOT LIKE '%flaky%' "
                   "AND status != 'failed' GROUP BY status") == [("active", ALLOWED_PAGES - ARCHIVE_PAGES)]
    assert sources_json(command)[0]["scope"] == stored_scope
    conditional = [p for m, p, h in shared_site.requests if "If-None-Match" in h]
    assert conditional  # an incremental run sends validators

    # recrawl --full: the same stored scope, every page fetched without validators
    shared_site.reset_requests()
    full = command("recrawl", "docs", "--full")
    report = full.report
    assert report["full"] is True and report["scope"] == narrowed.report["scope"] | {"max_depth": None}
    assert report["stats"]["success"] == ALLOWED_PAGES - ARCHIVE_PAGES
    assert report["removal"]["performed"] is True and report["stats"]["success.removed"] == 0
    page_requests = [(p, h) for m, p, h in shared_site.requests
                     if p.startswith("/docs/") and p.endswith(("/", ".html"))]
    assert len(page_requests) >= ALLOWED_PAGES - ARCHIVE_PAGES - 4
    assert not [p for p, h in page_requests if {"if-none-match", "if-modified-since"} & {k.lower() for k in h}]
    assert sources_json(command)[0]["scope"] == stored_scope
    assert sources_json(command)[0]["last_run"]["run_id"] == report["runId"]


@pytest.mark.crawl
def test_sources_add_adopts_the_source_a_url_crawl_created(shared_site: DocsServer, crawl: Crawl,
                                                          command: Crawl) -> None:
    first = crawl(f"{shared_site.base_url}/docs/")
    implicit = first.report["source"]
    [info] = sources_json(command)
    assert (info["name"], info["registered"], info["pages"]) == (implicit, False, ALLOWED_PAGES)
    assert "created by a crawl of its URL" in command("sources", "list").stdout
    added = command("sources", "add", "acme", f"{shared_site.base_url}/docs/")
    assert f"adopted, with the {ALLOWED_PAGES} pages" in added.stdout
    [info] = sources_json(command)
    assert (info["name"], info["registered"], info["pages"]) == ("acme", True, ALLOWED_PAGES)
    assert info["last_run"]["run_id"] == first.report["runId"]
    assert (first.data_dir / "runs" / "acme" / f"{first.report['runId']}.json").exists()
    assert not (first.data_dir / "runs" / implicit).exists()
    # its pages were kept: a crawl by the new name, or by the URL, is all unchanged
    again = crawl("acme")
    assert again.report["source"] == "acme"
    assert again.report["stats"]["success.unchanged"] == ALLOWED_PAGES
    by_url = crawl(f"{shared_site.base_url}/docs/")
    assert by_url.report["source"] == "acme"
    assert [s["name"] for s in sources_json(command)] == ["acme"]


@pytest.mark.crawl
def test_reindex_one_page_re_embeds_only_it_and_remove_deletes_only_its_source(
        shared_site: DocsServer, crawl: Crawl, command: Crawl) -> None:
    base = shared_site.base_url
    first = crawl(f"{base}/docs/", index=True)
    implicit = first.report["source"]
    data = first.data_dir
    command("sources", "add", "docs", f"{base}/docs/")  # adopts: its chunks are relabelled
    command("sources", "add", "blog", f"{base}/blog/")
    command("recrawl", "blog", index=True)

    def chroma_rows() -> dict[str, dict]:
        index = ChromaIndex(path=data / "chroma")
        got = index.collection.get(include=["metadatas"])
        index.close()
        return {cid: dict(meta or {}) for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=True)}

    before = chroma_rows()
    docs_chunks = {cid for cid, m in before.items() if m["source"] == "docs"}
    blog_chunks = {cid for cid, m in before.items() if m["source"] == "blog"}
    assert docs_chunks and blog_chunks and len(docs_chunks) + len(blog_chunks) == len(before)
    assert not any(m["source"] == implicit for m in before.values())

    marked = command("reindex", "docs", "glossary.html")
    assert "Marked 1 page(s) of docs" in marked.stdout and f"{base}/docs/glossary.html" in marked.stdout
    glossary = {cid for cid, m in before.items() if m["source"] == "docs" and m["path"] == "glossary.html"}
    assert db_rows(data, "SELECT chunk_count FROM pages WHERE rel_path = 'glossary.html'") == [(len(glossary),)]

    shared_site.reset_requests()
    forced = command("recrawl", "docs", index=True)
    report = forced.report
    counters = report["counters"]
    assert counters["forced"] == 1
    assert counters["embeddings_computed"] == len(glossary)
    assert counters.get("embeddings_reused", 0) == 0
    assert counters.get("chunks_added", 0) == 0 and counters.get("chunks_deleted", 0) == 0  # same ids
    assert {k for k, e in report["items"].items() if e.get("forced")} == {"glossary.html"}
    assert report["stats"]["success.unchanged"] == ALLOWED_PAGES and report["stats"]["success.changed"] == 0
    asked = {p: {k.lower() for k in h} for m, p, h in shared_site.requests if p.endswith(".html")}
    assert "if-none-match" not in asked["/docs/glossary.html"]
    assert "if-none-match" in asked["/docs/changelog.html"]
    assert chroma_rows() == before  # nothing else touched; the page's chunks rewritten in place
    assert db_rows(data, "SELECT count(*) FROM pages WHERE reindex_requested") == [(0,)]

    again = command("recrawl", "docs", index=True)
    assert again.report["stats"]["success.unchanged"] == ALLOWED_PAGES
    assert again.report["counters"].get("forced", 0) == 0
    assert again.report["counters"].get("embeddings_computed", 0) == 0
    assert "Loaded embedding model" not in again.stderr

    removed = command("sources", "remove", "docs", "--yes")
    assert f"Removed source docs: {len(docs_chunks)} chunks" in removed.stdout
    after = chroma_rows()
    assert set(after) == blog_chunks
    assert [s["name"] for s in sources_json(command)] == ["blog"]
    docs_id = db_rows(data, "SELECT id FROM sources WHERE name = 'docs'")
    assert docs_id == []
    assert db_rows(data, "SELECT count(*) FROM pages WHERE source_id NOT IN (SELECT id FROM sources)") == [(0,)]
    assert db_rows(data, "SELECT count(*) FROM runs WHERE source_id NOT IN (SELECT id FROM sources)") == [(0,)]
    assert db_rows(data, "SELECT count(*) FROM pages") != [(0,)]  # the blog's pages stay
    assert not (data / "runs" / "docs").exists() and (data / "runs" / "blog").exists()


@pytest.mark.crawl
def test_two_sources_sharing_pages_keep_their_own_chunks(shared_site: DocsServer, command: Crawl) -> None:
    # Two registered sources whose scopes overlap index the same pages (the same page ids): a crawl of
    # one must not take over the other's chunks, and removing one must not delete the other's.
    base = shared_site.base_url
    command("sources", "add", "docs", f"{base}/docs/")
    command("sources", "add", "faq", f"{base}/docs/faq.html", "--allow", "faq.html")
    first = command("recrawl", "docs", index=True)
    data = first.data_dir

    def chunks_of(source: str) -> set[str]:
        index = ChromaIndex(path=data / "chroma")
        ids = set(index.collection.get(where={"source": source}, include=[])["ids"])
        index.close()
        return ids

    docs = chunks_of("docs")
    assert docs
    command("recrawl", "faq", index=True)
    faq = chunks_of("faq")
    assert faq and not faq & docs
    assert chunks_of("docs") == docs
    command("sources", "remove", "faq", "--yes", index=True)
    assert chunks_of("faq") == set() and chunks_of("docs") == docs
