"""Bad arguments to every docscraper command: one ``error:`` line on stderr naming the problem, exit status 2,
no traceback; the real commands in a subprocess from the project root (the ``command`` fixture). Also the
limits behind them: ``k`` in the Python API, the question file's answers, the probe of a ``file://`` folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from docscraper.config import DocscraperConfig
from docscraper.ops.evaluate import QuestionFileError, parse_questions
from docscraper.ops.sources import SourceArgumentError, add_source, list_sources, probe_site
from docscraper.storage.search import MAX_K, Searcher
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, chunk_id
from tests.conftest import Crawl, CrawlResult

HUGE = "2000000000"


def only_error_line(result: CrawlResult, *, crawl_log: bool = False) -> str:
    """The one ``error:`` line of a command that exited 2, with nothing else on stderr; *crawl_log*: a
    ``docs`` spider argument, checked once the crawler process has started (and logged that it did), so
    the error is the last line of stderr."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr[-3000:]
    if not crawl_log:
        assert lines == errors, result.stderr[-3000:]
    assert result.stdout == ""
    return errors[0]


BAD_INVOCATIONS = [
    # k and other numbers: capped, named with their range
    (("search", "-k", HUGE, "q"), "argument -k: must be a whole number from 1 to 1000, got 2000000000"),
    (("search", "--all-chunks", "-k", "1001", "q"), "from 1 to 1000, got 1001"),
    (("search", "-k", "0", "q"), "from 1 to 1000, got 0"),
    (("search", "-k", "many", "q"), "from 1 to 1000, got 'many'"),
    (("search", "q", "-k"), "argument -k: expected one argument"),
    (("evaluate", "-k", HUGE, "questions.jsonl"), "argument -k: must be a whole number from 1 to 1000"),
    (("mcp", "--port", "99999"), "--port must be between 0 and 65535, got 99999"),
    (("mcp", "--port", "http"), "argument --port: invalid int value: 'http'"),
    (("sources", "add", "docs", "http://127.0.0.1:9/", "--max-depth", "-1"), "max_depth must be 0 or more, got -1"),
    (("sources", "add", "docs", "http://127.0.0.1:9/", "--max-pages", "0"), "max_pages must be 1 or more, got 0"),
    (("recrawl", "docs", "--max-depth", "deep"), "docs spider: max_depth must be a whole number, got 'deep'"),
    (("recrawl", "docs", "--full", "--due"), "docs spider: full=1 re-processes every page and due=1 checks only"),
    (("crawl", "docs", "-a", "source=http://127.0.0.1:9/", "-a", "max_pages=-5"),
     "docs spider: max_pages must be 1 or more"),
    # unknown options, named, with the command's usage
    (("recrawl", "docs", "--bogus"),
     "unknown option --bogus; usage: scrapy recrawl NAME [--full | --due] [--allow GLOBS] [--block GLOBS] [--max-depth N] "
     "[--max-pages N] [--render MODE]"),
    (("search", "--bogus", "q"), "unknown option --bogus; usage: scrapy search"),
    (("evaluate", "questions.jsonl", "--frob=1"), "unknown option --frob=1; usage: scrapy evaluate"),
    (("sources", "list", "--bogus"), "unknown option --bogus; usage: scrapy sources"),
    (("reindex", "docs", "guide/**", "--bogus"), "unknown option --bogus; usage: scrapy reindex"),
    (("verify", "--bogus"), "unknown option --bogus; usage: scrapy verify"),
    (("status", "--bogus", "--worse"), "unknown options --bogus --worse; usage: scrapy status"),
    (("crawl", "docs", "--bogus", "-a", "source=http://127.0.0.1:9/"), "unknown option --bogus; usage: scrapy crawl"),
    (("mcp", "--bogus"), "unknown option --bogus; usage: scrapy mcp"),
    (("mcp", "--transport", "pigeon"), "argument --transport: invalid choice: 'pigeon'"),
    (("serve", "--bogus"), "unknown option --bogus; usage: scrapy serve"),
    (("serve", "--port", "99999"), "--port must be between 0 and 65535, got 99999"),
    (("serve", "--tick", "soon"), "argument --tick: invalid float value: 'soon'"),
    (("serve", "--tick", "0"), "--tick must be more than 0 seconds, got 0.0"),
    (("serve", "extra"), "unexpected argument(s): extra"),
    # missing, empty and extra arguments
    (("search",), "give one question"),
    (("search", "q", "extra"), "give one question"),
    (("search", "q", "--source", ""), "--source must name a source"),
    (("evaluate",), "give one question file"),
    (("evaluate", ""), "give one question file"),
    (("recrawl",), "give one source name; usage: scrapy recrawl"),
    (("recrawl", "a", "b"), "give one source name, got a b"),
    (("recrawl", "http://127.0.0.1:9/docs/"), "recrawl takes a source name"),
    (("reindex", "docs"), "usage: scrapy reindex NAME URL|GLOB"),
    (("status", "a", "b"), "give at most one source name"),
    (("verify", ""), "usage: scrapy verify"),
    (("sources", "show"), "usage: scrapy sources show NAME"),
    (("sources", "add", "", "http://127.0.0.1:9/"), "invalid source name ''"),
    (("mcp", "extra"), "unexpected argument(s): extra"),
    (("crawl",), "give one spider: scrapy crawl docs -a source=URL|NAME"),
    (("crawl", "nope"), "unknown spider 'nope' (spiders: docs)"),
    (("crawl", "docs"), "docs spider: missing source"),
    (("crawl", "docs", "-a", "nonsense"), "Invalid -a value, use -a NAME=VALUE"),
    # URLs with an invalid port or host, files and folders that are not there
    (("sources", "add", "docs", "http://127.0.0.1:99999/"), "URL 'http://127.0.0.1:99999/' is not a valid URL"),
    (("sources", "add", "docs", "http://[bad/"), "URL 'http://[bad/' is not a valid URL"),
    (("crawl", "docs", "-a", "source=http://127.0.0.1:99999/"),
     "docs spider: source 'http://127.0.0.1:99999/' has an invalid port"),
    (("crawl", "docs", "-a", "source=file:///nonexistent-docscraper-folder/"), "docs spider: source 'file:///"),
    (("evaluate", "missing.jsonl"), "no question file at "),
    (("sources", "add", "local", "file:///nonexistent-docscraper-folder/"),
     "source 'local' not added: cannot read file:///nonexistent-docscraper-folder/: the folder "
     "/nonexistent-docscraper-folder does not exist"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INVOCATIONS, ids=[" ".join(a) for a, _ in BAD_INVOCATIONS])
def test_a_bad_argument_is_one_error_line_and_exit_status_2(command: Crawl, tmp_path: Path, args: tuple[str, ...],
                                                            message: str) -> None:
    (tmp_path / "questions.jsonl").write_text('{"question": "q", "answers": ["a.html"]}\n')
    args = tuple(str(tmp_path / a) if a.endswith(".jsonl") else a for a in args)
    result = command(*args, check=False)
    assert message in only_error_line(result, crawl_log=message.startswith("docs spider:"))
    assert not (tmp_path / "data" / "state.db").exists()  # nothing stored


def test_a_bad_answer_in_the_question_file_is_named_before_the_index_is_opened(command: Crawl,
                                                                               tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "a", "answers": ["guide/a.html"]}\n# a comment\n'
                         '{"question": "b", "answers": ["guide/b.html", "//[bad"]}\n')
    line = only_error_line(command("evaluate", str(questions), check=False))
    assert line == f"error: {questions} line 3: answer '//[bad' is not a valid path (Invalid IPv6 URL)"


@pytest.mark.parametrize(("answer", "problem"), [
    ("//[bad", "is not a valid path (Invalid IPv6 URL)"),
    ("http://[bad/x.html", "is not a valid URL (Invalid IPv6 URL)"),
    ("https://docs.example.com:99999/x.html", "is not a valid URL (Port out of range 0-65535)"),
    ("ftp://docs.example.com/x.html", "is not an http(s) or file URL"),
    ("http:///x.html", "is a URL without a host"),
])
def test_every_answer_is_checked_when_the_file_is_loaded(answer: str, problem: str) -> None:
    text = ('[{"question": "first", "answers": ["ok.html"]},\n'
            f' {{"question": "second", "answers": ["/docs/ok.html", "{answer}"]}}]')
    with pytest.raises(QuestionFileError) as raised:
        parse_questions(text, "q.json")
    assert str(raised.value) == f"q.json line 2: answer {answer!r} {problem}"


def test_good_answers_still_load() -> None:
    text = '{"question": "q", "answers": ["guide/a.html", "/docs/b.html", "https://h:8443/c.html", "file:///d/e.md"]}'
    assert parse_questions(text)[0].answers == ("guide/a.html", "/docs/b.html", "https://h:8443/c.html",
                                                "file:///d/e.md")


class _Embedder:
    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 8), dtype=np.float32)

    def close(self) -> None:
        pass


def test_searcher_takes_k_from_1_to_max_k(tmp_path: Path) -> None:
    index = ChromaIndex(path=tmp_path / "chroma")
    vectors = np.random.default_rng(1).random((12, 8), dtype=np.float32)
    index.upsert([ChunkRecord(chunk_id(f"url_p{i}", "0" * 12, 0), f"page {i} text", vectors[i],
                              {"source": "s", "page_id": f"url_p{i}", "url": f"http://x/{i}.html", "title": str(i),
                               "heading": "", "chunk_index": 0, "content_hash": "0" * 12})
                  for i in range(12)])
    searcher = Searcher(DocscraperConfig(data_dir=tmp_path, state_url="sqlite://"), embedder=_Embedder(),
                        index=index)
    try:
        for k in (0, -1, MAX_K + 1, 2_000_000_000, True, 2.0):
            with pytest.raises(ValueError, match=f"k must be a whole number from 1 to {MAX_K}"):
                searcher.search("q", k=k)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="per_page must be a whole number"):
            searcher.search("q", k=5, per_page=0)
        # the largest k is answered, with every page the index has, one chunk or many per page
        assert len(searcher.search("q", k=MAX_K)) == 12
        assert len(searcher.search("q", k=MAX_K, per_page=None)) == 12
    finally:
        searcher.close()


def test_the_probe_of_a_local_folder_looks_at_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "index.html").write_text("<h1>Docs</h1><a href='guide/a.md'>a</a>")
    (folder / "guide" / "a.md").write_text("# A")
    (folder / "guide" / "b.txt").write_text("B")
    (folder / "logo.png").write_bytes(b"\x89PNG")
    (folder / "llms.txt").write_text("# Docs\n- [A](guide/a.md)\n")
    (folder / "sitemap.xml").write_text("<urlset/>")
    probe = probe_site(folder.as_uri() + "/")
    assert probe.status == 200 and probe.problems == []
    assert probe.notes == [f"folder {folder}: 3 files to index (HTML, Markdown, text, documents); a crawl reads "
                           "those that index.html and llms.txt and sitemap.xml lead to"]
    assert probe.llms_txt == folder.as_uri() + "/llms.txt" and probe.sitemaps == [folder.as_uri() + "/sitemap.xml"]
    assert probe.as_dict()["notes"] == probe.notes

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "page.md").write_text("# P")
    probe = probe_site(bare.as_uri())
    assert probe.status == 200 and probe.notes == [f"folder {bare}: 1 file to index (HTML, Markdown, text, documents); "
                                                   "no index.html, index.htm, index.md: a crawl reads them all, "
                                                   "folder by folder"]
    assert probe.problems == []


@pytest.mark.parametrize(("make", "problem"), [
    (lambda p: None, "cannot read {u}: the folder {p} does not exist"),
    (lambda p: p.write_text("x"), "cannot read {u}: {p} is not a folder"),
    (lambda p: p.mkdir(), "the folder {p} is empty: a crawl would index nothing"),
    (lambda p: (p.mkdir(), (p / "a.png").write_bytes(b"x")),
     "the folder {p} holds no file to index (HTML, Markdown, text or a document): a crawl would index nothing"),
])
def test_a_local_folder_that_cannot_be_crawled_is_bad_input(tmp_path: Path, make: Callable[[Path], object],
                                                            problem: str) -> None:
    path = tmp_path / "docs"
    make(path)
    probe = probe_site(path.as_uri() + "/")
    assert probe.status is None and probe.problems == [problem.format(p=path, u=path.as_uri() + "/")]
    config = DocscraperConfig(data_dir=tmp_path / "data", state_url=f"sqlite:///{tmp_path / 'state.db'}")
    with pytest.raises(SourceArgumentError, match="source 'docs' not added: "):
        add_source(config, "docs", path.as_uri() + "/")
    assert list_sources(config) == []


def test_sources_add_of_a_folder_probes_the_folder(command: Crawl, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "index.md").write_text("# Docs")
    added = command("sources", "add", "local", folder.as_uri() + "/")
    assert f"Probed {folder.as_uri()}/: folder" in added.stdout
    assert f"found          folder {folder}: 1 file to index (HTML, Markdown, text, documents)" in added.stdout
    assert "Added source local" in added.stdout
