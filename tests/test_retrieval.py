"""Retrieval quality on the fixture site: docscraper against the tutorial pipeline.

``tests/questions.json`` holds questions a user would ask about the fixture site, each with the one page
(path under ``/docs/``) that answers it, and a ``needle``: a string found in that page's text and in no
other page's. One question has ``"expected": null``: its answer is only on the robots-disallowed private
page, which must never come back.

One real crawl with the index on, then every question goes to docscraper's :class:`Searcher` and to the
tutorial pipeline of ``benchmarks/baseline.py`` (``get_text()``, 1,000-character windows with 200 of
overlap, the same model) built over the same pages, fetched from the same server. The figures of both
are in the failure message of every assertion, and printed (``pytest -s``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from benchmarks.baseline import BaselineIndex
from benchmarks.retrieval_eval import batched, fetch, report, urls_search
from docscraper.config import DocscraperConfig
from docscraper.ops.evaluate import Hit, answer_key, load_questions, page_key, score
from docscraper.storage.backends import load_query_embedder
from docscraper.storage.embedding import SentenceTransformerEmbedder
from docscraper.storage.onnx_embedding import OnnxQueryEmbedder
from docscraper.storage.search import Searcher
from docscraper.storage.vectors import ChromaIndex
from tests.conftest import Crawl
from tests.mockserver import SITE_ROOT, DocsServer

pytestmark = pytest.mark.crawl

QUESTIONS = load_questions(Path(__file__).parent / "questions.json")
PRIVATE = "private/secret.html"

# Measured 2026-11-24 (45 questions, 44 answerable): docscraper (hybrid) recall@1 0.841, recall@5 0.977
# (43/44), MRR@10 0.902; the vectors alone 0.659, 0.977, 0.790; the tutorial baseline 0.545, 0.909, 0.697.
# The floor allows three more misses than measured.
MIN_RECALL_AT_5 = 0.90


@pytest.fixture(scope="module")
def embedder() -> Iterator[SentenceTransformerEmbedder]:
    model = SentenceTransformerEmbedder()
    yield model
    model.close()


def test_question_set_is_sound() -> None:
    """Each needle lives on its expected page only, so each question has exactly one right page."""
    assert len(QUESTIONS) >= 25
    texts = {str(path.relative_to(SITE_ROOT / "docs")): BeautifulSoup(path.read_text(), "html.parser").get_text()
             for path in (SITE_ROOT / "docs").rglob("*.html")}
    assert PRIVATE in texts
    needles = {q["question"]: q["needle"] for q in json.loads((Path(__file__).parent / "questions.json").read_text())}
    for item in QUESTIONS:
        where = sorted(page for page, text in texts.items() if needles[item.text] in text)
        assert where == list(item.answers or [PRIVATE]), item
    assert sum(not item.answers for item in QUESTIONS) == 1


def test_docscraper_finds_the_right_page_more_often_than_the_tutorial_pipeline(
        shared_site: DocsServer, crawl: Crawl, embedder: SentenceTransformerEmbedder) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", index=True)
    prefix = f"{shared_site.base_url}/docs/"

    def docs(hit: Hit) -> str:  # the question file's paths are relative to the source's folder
        return prefix
    index = ChromaIndex(path=result.data_dir / "chroma")
    try:
        got = index.collection.get(include=["metadatas"])
        urls = sorted({str(meta["url"]) for meta in got["metadatas"] or []})
        searcher = Searcher(DocscraperConfig(data_dir=result.data_dir, state_url="sqlite://"), embedder=embedder,
                            index=index)
        ours = score(QUESTIONS, urls_search(lambda q, k: [r.url for r in searcher.search(q, k=k)]), docs)
        vectors = Searcher(DocscraperConfig(data_dir=result.data_dir, state_url="sqlite://", search_keyword_weight=0),
                           embedder=embedder, index=index)
        dense = score(QUESTIONS, urls_search(lambda q, k: [r.url for r in vectors.search(q, k=k)]), docs)
        private_hits = {item.text: [r.url for r in searcher.search(item.text, k=10, per_page=None)]
                        for item in QUESTIONS if not item.answers}
        # the crawl left the model's ONNX export: a new searcher asks without torch, and ranks alike
        fast = load_query_embedder(DocscraperConfig(data_dir=result.data_dir, state_url="sqlite://"))
        assert isinstance(fast, OnnxQueryEmbedder)
        onnx = Searcher(DocscraperConfig(data_dir=result.data_dir, state_url="sqlite://"), embedder=fast,
                        index=index)
        for item in QUESTIONS:
            assert ([r.url for r in onnx.search(item.text, k=5)]
                    == [r.url for r in searcher.search(item.text, k=5)]), item.text
    finally:
        index.close()

    # The baseline sees exactly the HTML pages docscraper indexed, from the same server (the tutorial pipeline
    # reads HTML; the fixture's one-line PDF answers no question).
    html = [url for url in urls if not url.endswith(".pdf")]
    assert len(urls) == 35 and len(html) == 34, urls
    baseline = BaselineIndex.build([(url, fetch(url)) for url in html], encode=embedder.embed)
    theirs = score(QUESTIONS, batched(baseline, QUESTIONS), docs)
    figures = report({"docscraper": ours, "vectors": dense, "baseline": theirs})
    print("\n" + figures)

    expected = {answer_key(answer, prefix) for item in QUESTIONS for answer in item.answers}
    assert expected <= {page_key(url) for url in urls}, figures
    for question, hits in private_hits.items():
        assert not any("/private/" in url for url in hits), (question, hits)
    assert ours.recall(5) >= MIN_RECALL_AT_5, figures
    assert ours.recall(1) >= theirs.recall(1) and ours.recall(5) >= theirs.recall(5), figures
    assert ours.mrr >= theirs.mrr, figures
    # the keyword ranking fused in must not cost what the vectors alone find
    assert ours.recall(5) >= dense.recall(5) and ours.mrr >= dense.mrr, figures
