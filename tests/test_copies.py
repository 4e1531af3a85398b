"""A single-page edition of a site (Node's ``all.html``, Sphinx's ``singlehtml``) copies the passages of the pages
it holds: its copied chunks are marked (:mod:`docscraper.storage.copies`) and search ranks the page they copy.
The last test crawls a small site of its own with the real model and Chroma."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docscraper.config import DocscraperConfig
from docscraper.storage.copies import copy_chunks, page_of
from docscraper.storage.search import Searcher
from tests.conftest import Crawl
from tests.mockserver import DocsServer

# Three chapters of a made-up manual, each about one thing, in sentences long enough to be compared.
CHAPTERS = {
    "kettles": ("Kettles", [
        "A kettle boils water by heating a coil that sits under a steel plate at the bottom of the jug.",
        "The thermostat opens the circuit when the steam reaches the bimetallic strip near the handle.",
        "Descale the kettle every month with a mixture of citric acid and warm water to remove the limescale.",
        "Never run the kettle empty, because the dry coil overheats and the thermal fuse blows for good.",
    ]),
    "bicycles": ("Bicycles", [
        "Pump the bicycle tyres to the pressure printed on the sidewall of each tyre before every long ride.",
        "A derailleur moves the chain between sprockets when the rider shifts gear while pedalling forward.",
        "Oil the chain after riding in the rain, then wipe off the surplus so that it does not collect grit.",
        "Disc brakes need their pads replaced once the friction material is thinner than half a millimetre.",
    ]),
    "orchids": ("Orchids", [
        "Water an orchid once a week by soaking its pot of bark for ten minutes, then let it drain fully.",
        "Orchids flower again when the nights are a few degrees cooler than the days for several weeks.",
        "Repot the orchid every second year into fresh bark, cutting away any roots that are brown and soft.",
        "Bright indirect light suits most orchids, while direct afternoon sun scorches their broad leaves.",
    ]),
}


def _chapter(title: str, sentences: list[str], level: int = 1) -> str:
    return f"<h{level}>{title}</h{level}>" + "".join(f"<p>{sentence}</p>" for sentence in sentences)


def _page(title: str, body: str) -> str:
    return f"<!doctype html><html lang=\"en\"><head><title>{title}</title></head><body><main>{body}</main></body></html>"


def _site(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    links = "".join(f'<li><a href="{name}.html">{title}</a></li>' for name, (title, _) in CHAPTERS.items())
    (docs / "index.html").write_text(_page("The household manual", "<h1>The household manual</h1><p>Chapters:</p>"
                                           f"<ul>{links}<li><a href=\"all.html\">All on one page</a></li></ul>"))
    for name, (title, sentences) in CHAPTERS.items():
        (docs / f"{name}.html").write_text(_page(title, _chapter(title, sentences)))
    # the whole manual on one page, with no noindex: only its first section is its own
    whole = "".join(_chapter(title, sentences, 2) for title, sentences in CHAPTERS.values())
    (docs / "all.html").write_text(_page("The household manual on one page", (
        "<h1>The household manual on one page</h1><h2>About this edition</h2><p>This edition gathers every chapter "
        "of the household manual so that it can be printed and read from the first page to the last without "
        "following a single link.</p><p>Print it on both sides of the paper; the chapters follow each other in the "
        "order of the table of contents, each starting on a new sheet.</p>" + whole)))
    return root


def _ids(page: str, count: int) -> list[str]:
    return [f"s1-{page}-abcdef012345-{i:04d}" for i in range(count)]


def test_a_page_that_copies_smaller_pages_has_its_copied_chunks_marked() -> None:
    kettles = CHAPTERS["kettles"][1]
    bicycles = CHAPTERS["bicycles"][1]
    orchids = CHAPTERS["orchids"][1]
    own = "This edition gathers every chapter of the manual so that it can be printed in one go, cover to cover."
    ids = [*_ids("kettles", 1), *_ids("bicycles", 1), *_ids("orchids", 1), *_ids("all", 4)]
    documents = [" ".join(kettles), " ".join(bicycles), "\n\n".join(orchids),
                 own, "## Kettles\n\n" + " ".join(kettles), "## Bicycles\n\n" + " ".join(bicycles),
                 "## Orchids\n\n" + "\n".join(orchids)]
    marks = copy_chunks(ids, ["s"] * len(ids), documents)
    assert marks == [False, False, False, False, True, True, True]
    assert page_of(ids[4]) == "s1-all"

    # the same texts in another source (another version of the manual) are no copies
    assert copy_chunks(ids, ["a", "a", "a", "b", "b", "b", "b"], documents) == [False] * 7

    # a page that repeats one other page (javadoc's twin classes, rustdoc's PathBuf showing Path's methods) is no
    # edition: the question may be about either
    twin = copy_chunks(["a-h-0", "b-h-0", "b-h-1"], ["s"] * 3,
                       [" ".join(kettles), " ".join(kettles), "The twin's one sentence of its own, which the other lacks."])
    assert twin == [False, False, False]

    # nor is a page that holds two smaller pages' text (rustdoc's Vec shows the slice methods IoSlice and IoSliceMut
    # show): a question about them may be about Vec
    two = copy_chunks(["v-h-0", "v-h-1", "a-h-0", "b-h-0"], ["s"] * 4,
                      [" ".join(kettles), " ".join(bicycles), " ".join(kettles), " ".join(bicycles)])
    assert two == [False] * 4

    # a page that quotes one paragraph of another keeps its chunks: its own text is not mostly copies
    guide = [f"The guide's own sentence number {i} explains something else entirely about the house." for i in range(6)]
    quoting = copy_chunks(["g-h-0", "g-h-1", "k-h-0"], ["s"] * 3,
                          [" ".join(guide), " ".join(kettles[:2]), " ".join(kettles)])
    assert quoting == [False, False, False]

    # code is not compared: a program repeated on a longer page is not a copy
    code = "```python\n" + "\n".join(f"print('the same long line of example code, number {i}')" for i in range(8)) + "\n```"
    assert copy_chunks(["a-h-0", "b-h-0"], ["s", "s"], [code, code + "\n" + code]) == [False, False]


@pytest.fixture
def manual_site(tmp_path: Path) -> Iterator[DocsServer]:
    server = DocsServer(_site(tmp_path / "manual"))
    with server.start():
        yield server


@pytest.mark.crawl
def test_search_ranks_the_chapter_before_the_single_page_edition(manual_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{manual_site.base_url}/docs/", index=True)
    assert {"all.html", "kettles.html", "bicycles.html", "orchids.html"} <= result.keys("success", "new")
    config = DocscraperConfig(data_dir=result.data_dir, state_url=f"sqlite:///{result.data_dir / 'state.db'}")
    searcher = Searcher(config)
    try:
        copies = searcher.keywords().copies
        copied_pages = {page_of(cid) for cid in copies}
        assert copies and all(page.endswith(_page_id_of(manual_site, "all.html")) for page in copied_pages)
        questions = {
            "How often should I descale the kettle, and with what?": "kettles.html",
            "When do disc brake pads need replacing?": "bicycles.html",
            "How do I water an orchid?": "orchids.html",
        }
        for question, page in questions.items():
            results = searcher.search(question, k=3)
            assert results[0].url.endswith(f"/docs/{page}"), (question, [r.url for r in results])
            # the edition's copied passage never ranks: what is left of it is its own paragraph
            assert all(r.chunk_id not in copies for r in results)
        # the edition's own section still answers (a chunk mostly of copied text would not)
        own = searcher.search("Is there an edition of the manual I can print in one go?", k=3)
        assert own[0].url.endswith("/docs/all.html")
    finally:
        searcher.close()


def _page_id_of(server: DocsServer, name: str) -> str:
    from docscraper.urls import page_id

    return page_id(f"{server.base_url}/docs/{name}")
