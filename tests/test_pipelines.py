"""The item pipelines end to end, in this process: the middle of the three test layers (STYLE habit 8).

Layer 1 (test_crawl_components.py) builds one component at a time with ``get_crawler``; layer 3
(test_crawl.py and most others) crawls the fixture site in a ``scrapy crawl`` subprocess. Here hand-made
:class:`~docscraper.items.PageItem` objects go through the project's real ``ITEM_PIPELINES`` (mirror,
change detection, chunking, embedding, index, state commit) in a real crawl: the project's settings, the
:class:`~docscraper.crawl.resources.CrawlResources` extension opening a real SQLite state database (through
SQLAlchemy) and a real persistent Chroma directory under ``tmp_path`` at ``spider_opened``, the engine,
the scraper and Scrapy's item pipeline manager. Only two things differ from ``scrapy crawl docs``:

- the spider is the ``docs`` spider with its discovery replaced by the test's items (:class:`FeedSpider`),
  and the scope middleware, which judges pages against the responses they came from, is off: the items
  reach the pipelines as the scope middleware would have handed them over;
- the embedder is :class:`WordEmbedder` (``DOCSCRAPER_EMBEDDER_CLASS``): deterministic, no model.

The vector index is the real :class:`~docscraper.storage.vectors.ChromaIndex`, subclassed
(``DOCSCRAPER_VECTOR_INDEX_CLASS``) to remember the writes the run made, or to fail them.

The pipelines wait on Twisted thread pools and timers, so the tests need a running reactor: they are
Twisted trial test cases (pytest runs them as it runs any ``unittest.TestCase``; trial runs the reactor
until the Deferred a test returns has fired, then stops it, and fails a test that leaves timers or
connections behind), their bodies coroutines turned into Deferreds by Scrapy's ``deferred_f_from_coro_f``.
The reactor is Scrapy's asyncio one, installed by the ``reactor`` fixture unless one is installed already.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f, maybe_deferred_to_future
from scrapy.utils.reactor import install_reactor, is_reactor_installed
from scrapy.utils.test import get_reactor_settings
from sqlalchemy import select
from sqlalchemy.orm import Session
from twisted.internet.defer import Deferred
from twisted.trial.unittest import TestCase

from docscraper.config import DocscraperConfig
from docscraper.crawl.resources import CrawlResources
from docscraper.items import PageItem, PageMetadata
from docscraper.spiders.docs import DocsSpider
from docscraper.storage.consistency import Verification, check
from docscraper.storage.model_identity import ModelMismatch
from docscraper.storage.search import Searcher
from docscraper.storage.state import PageRecord, PageWrite, SqlStateStore
from docscraper.storage.state.models import PageRow
from docscraper.storage.vectors import ChromaIndex, ChunkRecord, IndexError_, chunk_id, forget_persistent_clients
from docscraper.urls import page_id
from pipelines.change_detection import content_hash

SEED = "https://docs.example.test/guide/"
URL = SEED + "install.html"
PID = page_id(URL)

INSTALL = " ".join(f"install{i}" for i in range(30))
USAGE = " ".join(f"usage{i}" for i in range(30))
PAGE = f"# Install the tool\n\n## Install\n\n{INSTALL}\n\n## Usage\n\n{USAGE}\n"
# the same page with its Usage section rewritten: the Install chunk's text (and vector) stays
CHANGED = PAGE.replace(USAGE, " ".join(f"usage{i}" for i in range(30, 60)))


class WordEmbedder:
    """A deterministic stand-in for the model (:class:`~docscraper.storage.embedding.Embedder`): a token is a
    whitespace-separated word (plus two special tokens), and a text's vector is a normalized function of
    its SHA-256, so equal texts get equal vectors and no model is loaded."""

    name = "words"
    dimension = 16
    max_tokens = 128

    def __init__(self, model: str, *, device: str | None = None, batch_size: int | None = None) -> None:
        self.batch_size = batch_size or 16

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(text.split()) + 2 for text in texts]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(text.encode()).digest()[: self.dimension], dtype=np.uint8)
                for text in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension) - 127.5
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)

    def close(self) -> None:
        pass


class WideWordEmbedder(WordEmbedder):
    """Another model: the same words, vectors of another dimension."""

    dimension = 24


class RecordingIndex(ChromaIndex):
    """The real Chroma index, keeping the run's writes in order: ``("upsert" | "delete", ids)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.writes: list[tuple[str, list[str]]] = []

    def upsert(self, chunks: Sequence[ChunkRecord]) -> None:
        self.writes.append(("upsert", [c.id for c in chunks]))
        super().upsert(chunks)

    def delete(self, ids: Sequence[str]) -> None:
        self.writes.append(("delete", list(ids)))
        super().delete(ids)


class FailingIndex(RecordingIndex):
    """An index whose every upsert fails (a full disk, a Chroma server gone)."""

    def upsert(self, chunks: Sequence[ChunkRecord]) -> None:
        self.writes.append(("upsert", [c.id for c in chunks]))
        raise IndexError_("upsert failed: no space left on device")


class HalfWriteIndex(RecordingIndex):
    """An index whose upserts write their first chunk, then fail (a server gone in the middle of a batch)."""

    def upsert(self, chunks: Sequence[ChunkRecord]) -> None:
        self.writes.append(("upsert", [c.id for c in chunks]))
        ChromaIndex.upsert(self, list(chunks)[:1])
        raise IndexError_("upsert failed after its first chunk: connection reset")


class FailingCommitStore(SqlStateStore):
    """The real state store, except that committing a page's row fails (the process dies there)."""

    def commit_pages(self, source_id: int, pages: Sequence[PageWrite]) -> None:
        raise RuntimeError("the state database went away")


class OneBadCommitStore(SqlStateStore):
    """The real state store, except that a transaction holding the row of ``broken.html`` fails."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.transactions: list[list[str]] = []

    def commit_pages(self, source_id: int, pages: Sequence[PageWrite]) -> None:
        self.transactions.append(sorted(p.url.rsplit("/", 1)[1] for p in pages))
        if any(p.url.endswith("/broken.html") for p in pages):
            raise RuntimeError("constraint failed")
        super().commit_pages(source_id, pages)


class FeedSpider(DocsSpider):
    """The ``docs`` spider, its discovery replaced: once the run is open, it yields the items it was given.

    Its ``start`` ends when every item has left the pipelines (scraped, dropped or failed, as Scrapy's
    signals tell), so the engine finds the crawl idle and closes it at once rather than at its next
    heartbeat, five seconds later."""

    def __init__(self, *args: Any, pages: Sequence[PageItem] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pages = list(pages)
        self._left = len(self.pages)
        self._done: Deferred[None] = Deferred()

    def _finished(self, item: Any) -> None:
        self._left -= 1
        if self._left == 0:
            self._done.callback(None)

    async def start(self) -> AsyncIterator[Any]:
        if not self.run_resources().opened or not self.pages:
            return
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            self.crawler.signals.connect(self._finished, signal=signal)
        for item in self.pages:
            yield item
        await maybe_deferred_to_future(self._done)


def page(markdown: str = PAGE, *, url: str = URL, title: str = "Install the tool", etag: str | None = '"v1"',
         not_modified: bool = False) -> PageItem:
    """A page as the spider yields it (a 304: *not_modified*, no body)."""
    return PageItem(
        url=url, title=title, markdown="" if not_modified else markdown, not_modified=not_modified,
        metadata=PageMetadata(
            page_id=page_id(url), source="", path=url.removeprefix(SEED), canonical_url=None, language="en",
            description=None, finder="link", depth=1, http_status=304 if not_modified else 200,
            content_type=None if not_modified else "text/html", etag=etag, last_modified=None,
            fetched_at="2026-11-24T10:00:00Z"),
    )


@pytest.fixture(scope="module", autouse=True)
def reactor() -> None:
    """Scrapy's asyncio reactor, unless this process installed a reactor already (the crawl's settings then
    follow the installed one: ``get_reactor_settings``)."""
    if not is_reactor_installed():
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


class Run:
    """One finished crawl: its crawler, resources and the writes its index made."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        resources = CrawlResources.find(crawler)
        assert resources is not None and resources.target is not None
        self.resources = resources
        self.source = resources.target.source

    @property
    def writes(self) -> list[tuple[str, list[str]]]:
        index = self.resources.index
        assert isinstance(index, RecordingIndex)
        return index.writes

    def stat(self, name: str) -> Any:
        assert self.crawler.stats is not None
        return self.crawler.stats.get_value(name)

    def report_entry(self, key: str) -> dict[str, Any]:
        report = json.loads(next(self.resources.config.runs_dir.glob("*/crawl-metadata.json")).read_text())
        entry: dict[str, Any] = report["items"][key]
        return entry


class PipelineTests(TestCase):
    @pytest.fixture(autouse=True)
    def _paths(self, tmp_path: Path) -> Iterator[None]:
        self.tmp_path = tmp_path
        self.data_dir = tmp_path / "data"
        yield
        # the persistent Chroma system this process keeps for the test's directory
        forget_persistent_clients()

    async def crawl(self, *items: PageItem, settings: dict[str, Any] | None = None, finish: str = "finished",
                    **args: str) -> Run:
        """Feed *items* to the pipelines in one crawl of SEED (``-a`` arguments in *args*) and wait for it to end."""
        project = Settings()
        project.setmodule("settings", priority="project")
        project.update({
            **get_reactor_settings(),
            "DOCSCRAPER_DATA_DIR": str(self.data_dir),
            "DOCSCRAPER_EMBEDDER_CLASS": f"{__name__}.WordEmbedder",
            "DOCSCRAPER_VECTOR_INDEX_CLASS": f"{__name__}.RecordingIndex",
            # two sections of 30 words: two chunks, one per section
            "DOCSCRAPER_CHUNK_TARGET_TOKENS": 48,
            "DOCSCRAPER_CHUNK_MIN_TOKENS": 0,
            "DOCSCRAPER_CHUNK_OVERLAP_TOKENS": 0,
            "DOCSCRAPER_EMBEDDING_FLUSH_SECONDS": 0.01,
            "DOCSCRAPER_PARSE_WORKERS": 0,
            "DOCSCRAPER_PROGRESS_LINE": "off",
            "SPIDER_MIDDLEWARES": {"docscraper.crawl.scope_middleware.ScopeMiddleware": None},
            **(settings or {}),
        }, priority="cmdline")
        crawler = Crawler(FeedSpider, project)
        await crawler.crawl_async(pages=list(items), **{"source": SEED, **args})
        run = Run(crawler)
        assert run.stat("finish_reason") == finish
        return run

    def state(self, run: Run) -> dict[str, PageRecord]:
        store = SqlStateStore(run.resources.config.state_url)
        try:
            return store.load_pages(run.source.id)
        finally:
            store.close()

    def verify(self, run: Run) -> Verification:
        """The state and the index compared (:func:`docscraper.storage.consistency.check`)."""
        store = SqlStateStore(run.resources.config.state_url)
        index = ChromaIndex(path=run.resources.config.chroma_path)
        try:
            return check(store, index)
        finally:
            index.close()
            store.close()

    def last_run_id(self, run: Run, pid: str = PID) -> str | None:
        store = SqlStateStore(run.resources.config.state_url)
        try:
            with Session(store.engine) as session:
                return session.scalars(select(PageRow.last_run_id).where(
                    PageRow.source_id == run.source.id, PageRow.page_id == pid)).one()
        finally:
            store.close()

    def chunks(self, run: Run, pid: str = PID) -> dict[str, dict[str, Any]]:
        """The page's chunks in Chroma: id -> metadata."""
        index = ChromaIndex(path=run.resources.config.chroma_path)
        try:
            got = index.collection.get(where={"page_id": pid}, include=["metadatas"])
            return {cid: dict(meta or {}) for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=True)}
        finally:
            index.close()

    def ids(self, run: Run, markdown: str, count: int, pid: str = PID) -> set[str]:
        return {chunk_id(pid, content_hash(markdown), i, run.source.id) for i in range(count)}

    # -- new, unchanged, changed ------------------------------------------------------------------------

    @deferred_f_from_coro_f
    async def test_a_new_page_is_chunked_embedded_indexed_and_committed(self) -> None:
        run = await self.crawl(page())
        (row,) = self.state(run).values()
        assert row.page_id == PID and row.status == "active" and row.etag == '"v1"'
        assert row.content_hash == content_hash(PAGE) and row.chunk_count == 2
        stored = self.chunks(run)
        assert set(stored) == self.ids(run, PAGE, 2)
        assert run.writes == [("upsert", sorted(stored))]
        by_index = {meta["chunk_index"]: meta for meta in stored.values()}
        assert [by_index[i]["heading"] for i in (0, 1)] == ["Install", "Usage"]
        for meta in stored.values():
            assert meta["source"] == run.source.name and meta["page_id"] == PID and meta["url"] == URL
            assert meta["title"] == "Install the tool" and meta["content_hash"] == content_hash(PAGE)
            assert meta["path"] == "install.html"
        assert run.stat("docscraper/pages_new") == 1 and run.stat("docscraper/embeddings_computed") == 2
        assert run.stat("item_scraped_count") == 1
        assert run.report_entry("install.html")["statusReason"] == "new"

    @deferred_f_from_coro_f
    async def test_the_same_page_again_is_dropped_as_unchanged_without_a_chroma_write(self) -> None:
        first = await self.crawl(page())
        before = self.chunks(first)
        again = await self.crawl(page(etag='"v2"'))
        assert again.writes == []
        assert again.stat("docscraper/chunks") is None and again.stat("docscraper/embedding_batches") is None
        assert again.stat("item_dropped_count") == 1 and again.stat("item_scraped_count") is None
        assert self.chunks(again) == before
        (row,) = self.state(again).values()
        # marked seen by this run: the new validator is kept, the hash and chunks are not touched
        assert row.content_hash == content_hash(PAGE) and row.chunk_count == 2 and row.etag == '"v2"'
        assert self.last_run_id(again) == again.resources.run_id != first.resources.run_id
        assert again.report_entry("install.html")["statusReason"] == "unchanged"

    @deferred_f_from_coro_f
    async def test_a_changed_page_replaces_its_chunks_upsert_first_and_reuses_unchanged_vectors(self) -> None:
        first = await self.crawl(page())
        old = set(self.chunks(first))
        changed = await self.crawl(page(CHANGED))
        new = self.ids(changed, CHANGED, 2)
        assert set(self.chunks(changed)) == new and not old & new
        # DESIGN rule 1: the new chunks are upserted before the old ones are deleted
        assert changed.writes == [("upsert", sorted(new)), ("delete", sorted(old))]
        (row,) = self.state(changed).values()
        assert row.content_hash == content_hash(CHANGED) and row.chunk_count == 2
        # the Install section's text did not change: its vector is read back, not computed
        assert changed.stat("docscraper/embeddings_reused") == 1
        assert changed.stat("docscraper/embeddings_computed") == 1
        assert changed.stat("docscraper/chunks_added") == 2 and changed.stat("docscraper/chunks_deleted") == 2
        assert changed.report_entry("install.html")["statusReason"] == "changed"

    @deferred_f_from_coro_f
    async def test_a_new_title_alone_is_a_change_that_rewrites_every_chunks_title(self) -> None:
        first = await self.crawl(page())
        assert {meta["title"] for meta in self.chunks(first).values()} == {"Install the tool"}
        renamed = await self.crawl(page(title="Installing"))
        assert renamed.stat("docscraper/pages_changed") == 1
        assert renamed.report_entry("install.html")["statusReason"] == "changed"
        stored = self.chunks(renamed)
        # every chunk carries the new title; the ids still follow the Markdown's hash, which did not change
        assert {meta["title"] for meta in stored.values()} == {"Installing"}
        assert {meta["content_hash"] for meta in stored.values()} == {content_hash(PAGE)}
        ((kind, upserted), *_) = renamed.writes
        assert kind == "upsert" and set(upserted) == set(stored)
        (row,) = self.state(renamed).values()
        assert row.title == "Installing" and row.chunk_count == len(stored)
        # once recorded, the same title is unchanged again
        again = await self.crawl(page(title="Installing"))
        assert again.writes == [] and again.stat("docscraper/pages_unchanged") == 1

    @deferred_f_from_coro_f
    async def test_a_304_marks_the_page_seen_without_touching_chroma(self) -> None:
        first = await self.crawl(page())
        before = self.chunks(first)
        not_modified = await self.crawl(page(not_modified=True, etag='"v1"'))
        assert not_modified.writes == [] and self.chunks(not_modified) == before
        assert not_modified.stat("docscraper/chunks") is None
        assert not_modified.stat("docscraper/embedding_batches") is None
        # dropped by change detection: it never leaves the pipelines (nor reaches a feed export)
        assert not_modified.stat("item_dropped_count") == 1 and not_modified.stat("item_scraped_count") is None
        (row,) = self.state(not_modified).values()
        assert row.content_hash == content_hash(PAGE) and row.chunk_count == 2 and row.status == "active"
        assert self.last_run_id(not_modified) == not_modified.resources.run_id
        entry = not_modified.report_entry("install.html")
        assert entry["statusReason"] == "unchanged" and entry["httpStatus"] == 304

    @deferred_f_from_coro_f
    async def test_the_model_loads_at_open_for_a_new_source_and_not_for_a_recrawl_with_nothing_new(self) -> None:
        # a source with no page indexed: the model starts loading as the run opens, before any page
        new = await self.crawl()
        assert new.stat("docscraper/embedding/loaded_at_open") == 1
        first = await self.crawl(page())
        assert first.stat("docscraper/embedding/loaded_at_open") == 1  # still no page indexed before it
        # the source has pages: an unchanged recrawl never loads the model
        unchanged = await self.crawl(page(not_modified=True))
        assert unchanged.stat("docscraper/embedding/loaded_at_open") is None
        assert unchanged.stat("docscraper/embedding_batches") is None

    # -- duplicates by content ---------------------------------------------------------------------------

    @deferred_f_from_coro_f
    async def test_a_page_with_another_pages_content_is_its_alias_not_a_second_copy(self) -> None:
        twin_url = SEED + "install/index.html"
        twin = page_id(twin_url)
        first = await self.crawl(page(), page(url=twin_url))
        # one copy in the index, under the page that came first; the other URL kept as its alias
        assert set(self.chunks(first)) == self.ids(first, PAGE, 2) and self.chunks(first, twin) == {}
        rows = self.state(first)
        assert rows[twin].status == "alias" and rows[twin].alias_of == PID and rows[twin].chunk_count == 0
        entry = first.report_entry("install/index.html")
        assert (entry["status"], entry["statusReason"], entry["aliasOf"]) == ("skipped", "duplicateContent", PID)
        assert entry["detail"] == f"same content as {URL}"
        assert first.report_entry("install.html")["aliases"] == [twin_url]
        assert self.verify(first).ok
        # again, both unchanged: nothing written, the alias stays one (a 304 of it too)
        again = await self.crawl(page(etag='"v2"'), page(url=twin_url, not_modified=True))
        assert again.writes == [] and self.state(again)[twin].status == "alias"
        assert again.report_entry("install/index.html")["statusReason"] == "duplicateContent"
        # the page changes, its twin does not: the twin is a page of its own again, with its own chunks
        diverged = await self.crawl(page(CHANGED), page(url=twin_url))
        rows = self.state(diverged)
        assert rows[twin].status == "active" and rows[twin].alias_of is None
        assert set(self.chunks(diverged, twin)) == self.ids(diverged, PAGE, 2, pid=twin)
        assert set(self.chunks(diverged)) == self.ids(diverged, CHANGED, 2)
        assert self.verify(diverged).ok

    @deferred_f_from_coro_f
    async def test_a_page_that_becomes_a_copy_loses_its_chunks_and_its_alias_goes_with_the_site(self) -> None:
        twin_url = SEED + "install/index.html"
        twin = page_id(twin_url)
        await self.crawl(page(), page(CHANGED, url=twin_url))
        # the twin now serves the same content as install.html: its own chunks go
        copied = await self.crawl(page(), page(url=twin_url))
        assert self.chunks(copied, twin) == {} and self.state(copied)[twin].status == "alias"
        assert self.verify(copied).ok
        # the twin leaves the site: at a clean finish its alias row is retired (it had no chunks)
        gone = await self.crawl(page())
        assert self.state(gone)[twin].status == "removed" and gone.stat("docscraper/aliases_removed") == 1
        assert set(self.chunks(gone)) == self.ids(gone, PAGE, 2) and self.verify(gone).ok

    # -- the index records its model --------------------------------------------------------------------

    @deferred_f_from_coro_f
    async def test_another_model_is_refused_unless_the_run_re_embeds_everything(self) -> None:
        first = await self.crawl(page())
        index = ChromaIndex(path=first.resources.config.chroma_path)
        try:
            recorded = index.recorded_model()
        finally:
            index.close()
        assert recorded is not None and recorded.embedder == f"{__name__}.WordEmbedder" and recorded.dimension == 16
        before = self.chunks(first)
        other = {"DOCSCRAPER_EMBEDDER_CLASS": f"{__name__}.WideWordEmbedder"}
        refused = await self.crawl(page(CHANGED), settings=other, finish="model_mismatch")
        assert refused.writes == [] and self.chunks(refused) == before
        assert "WordEmbedder" in (refused.resources.open_error or "") and "-a full=1" in refused.resources.open_error
        assert self.state(refused)[PID].content_hash == content_hash(PAGE)
        # a search with the other model is refused too: its distances would mean nothing
        searching = DocscraperConfig.from_settings(Settings({**other, "DOCSCRAPER_DATA_DIR": str(self.data_dir)}))
        with pytest.raises(ModelMismatch, match="WordEmbedder"):
            Searcher(searching).close()
        # -a full=1 re-embeds everything: every old vector goes, the new model is recorded
        full = await self.crawl(page(CHANGED), settings=other, full="1")
        assert full.stat("docscraper/model_reset_chunks") == len(before)
        stored = self.chunks(full)
        assert set(stored) == self.ids(full, CHANGED, 2)
        index = ChromaIndex(path=full.resources.config.chroma_path)
        try:
            recorded = index.recorded_model()
            assert {len(v) for v in index.vectors_for(list(stored)).values()} == {24}
        finally:
            index.close()
        assert recorded is not None and recorded.embedder == f"{__name__}.WideWordEmbedder" and recorded.dimension == 24
        # and the next run with that model is an ordinary one
        again = await self.crawl(page(CHANGED), settings=other)
        assert again.writes == [] and again.stat("docscraper/pages_unchanged") == 1

    @deferred_f_from_coro_f
    async def test_a_model_change_marks_every_other_sources_pages_to_be_embedded_again(self) -> None:
        other_seed = "https://other.example.test/"
        other_url = other_seed + "page.html"
        other_page = page(url=other_url)
        other_page.metadata.path = "page.html"
        theirs = await self.crawl(other_page, source=other_seed)
        ours = await self.crawl(page())
        assert ours.source.id != theirs.source.id
        wide = {"DOCSCRAPER_EMBEDDER_CLASS": f"{__name__}.WideWordEmbedder"}
        await self.crawl(page(), settings=wide, full="1")
        # the other source's chunks were dropped with the old model's vectors: its next run embeds them again
        assert self.chunks(ours, page_id(other_url)) == {}
        # (the spider turns the mark into a forced page, as for `scrapy reindex`: tests/test_reindex.py)
        assert self.state(theirs)[page_id(other_url)].reindex_requested is True
        assert self.state(ours)[PID].reindex_requested is False  # re-embedded by the full run itself

    # -- DESIGN rule 1: the state row is committed last ------------------------------------------------------

    @deferred_f_from_coro_f
    async def test_an_index_failure_leaves_the_old_state_row_and_chunks_and_the_next_run_redoes_the_page(
            self) -> None:
        first = await self.crawl(page())
        old = self.chunks(first)
        failed = await self.crawl(page(CHANGED), settings={
            "DOCSCRAPER_VECTOR_INDEX_CLASS": f"{__name__}.FailingIndex"})
        assert [kind for kind, _ in failed.writes] == ["upsert"]  # tried, failed, nothing deleted
        assert self.chunks(failed) == old
        (row,) = self.state(failed).values()
        # the old row stands, the failure counted against it
        assert row.status == "active" and row.content_hash == content_hash(PAGE) and row.chunk_count == 2
        assert row.failure_count == 1
        assert failed.report_entry("install.html")["status"] == "failed"
        assert failed.stat("docscraper/pages_changed") is None
        # the state still holds the old hash, so the next run sees the page as changed and indexes it
        redone = await self.crawl(page(CHANGED))
        assert set(self.chunks(redone)) == self.ids(redone, CHANGED, 2)
        assert self.state(redone)[PID].content_hash == content_hash(CHANGED)
        assert redone.stat("docscraper/pages_changed") == 1

    @deferred_f_from_coro_f
    async def test_a_failed_state_commit_is_reconciled_at_close_and_the_next_run_catches_up(self) -> None:
        behind = await self.crawl(page(), settings={
            "DOCSCRAPER_STATE_STORE_CLASS": f"{__name__}.FailingCommitStore"})
        # the chunks went in, the state row did not: at close the run takes back what it wrote (DESIGN rule 8)
        assert [kind for kind, _ in behind.writes] == ["upsert", "delete"]
        assert self.chunks(behind) == {}
        row = self.state(behind)[PID]
        assert row.status == "failed" and row.content_hash is None and row.chunk_count is None
        assert behind.report_entry("install.html")["status"] == "failed"
        report = json.loads(next(behind.resources.config.runs_dir.glob("*/crawl-metadata.json")).read_text())
        assert report["reconciled"]["pages"] == 1 and report["reconciled"]["chunksDeleted"] == 2
        assert self.verify(behind).ok
        again = await self.crawl(page())
        assert again.stat("docscraper/pages_new") == 1
        assert set(self.chunks(again)) == self.ids(again, PAGE, 2)
        assert self.state(again)[PID].chunk_count == 2
        assert self.verify(again).ok

    @deferred_f_from_coro_f
    async def test_a_changed_page_whose_commit_failed_is_indexed_again_by_the_next_run(self) -> None:
        await self.crawl(page())
        failed = await self.crawl(page(CHANGED), settings={
            "DOCSCRAPER_STATE_STORE_CLASS": f"{__name__}.FailingCommitStore"})
        # the new chunks went in and the old ones out before the commit failed: the new ones are taken back,
        # and the page, left without chunks, is marked to be indexed again
        assert self.chunks(failed) == {}
        row = self.state(failed)[PID]
        assert row.content_hash == content_hash(PAGE) and row.reindex_requested is True
        redone = await self.crawl(page(CHANGED))
        assert set(self.chunks(redone)) == self.ids(redone, CHANGED, 2)
        assert self.state(redone)[PID].reindex_requested is False
        assert self.verify(redone).ok

    @deferred_f_from_coro_f
    async def test_an_upsert_that_failed_half_way_leaves_no_chunk_of_a_new_page(self) -> None:
        failed = await self.crawl(page(), settings={"DOCSCRAPER_VECTOR_INDEX_CLASS": f"{__name__}.HalfWriteIndex"})
        assert failed.report_entry("install.html")["status"] == "failed"
        # one chunk had gone in before the failure; nothing of the page stays, and nothing disagrees
        assert self.chunks(failed) == {}
        assert self.verify(failed).ok

    @deferred_f_from_coro_f
    async def test_pages_embedded_together_write_together_and_one_bad_commit_fails_alone(self) -> None:
        names = ["a", "b", "broken", "c", "d", "e"]
        pages = [page(PAGE.replace("Install the tool", f"Install {name}"), url=f"{SEED}{name}.html")
                 for name in names]
        # one embedding call for all six pages (a long flush wait): they go on through the index and the state
        # commit together
        run = await self.crawl(*pages, settings={"DOCSCRAPER_EMBEDDING_FLUSH_SECONDS": 0.5,
                                                 "DOCSCRAPER_STATE_STORE_CLASS": f"{__name__}.OneBadCommitStore"})
        assert run.stat("docscraper/embedding_batches") == 1
        upserts = [ids for kind, ids in run.writes if kind == "upsert"]
        # every chunk of the six pages in one Chroma call
        assert len(upserts) == 1 and len(upserts[0]) == run.stat("docscraper/chunks") >= 12
        store = run.resources.store
        assert isinstance(store, OneBadCommitStore)
        # one transaction for the six rows failed; each page was then committed alone, and only one failed
        assert store.transactions[0] == sorted(f"{name}.html" for name in names)
        assert sorted(map(tuple, store.transactions[1:])) == [(f"{name}.html",) for name in sorted(names)]
        state = self.state(run)
        assert sorted(row.url.rsplit("/", 1)[1] for row in state.values() if row.status == "active") == [
            f"{name}.html" for name in names if name != "broken"]
        assert run.stat("docscraper/pages_new") == 5
        assert run.report_entry("broken.html")["status"] == "failed"
        # the failed page's chunks, written before its commit failed, were taken back at close (DESIGN rule 8)
        assert self.chunks(run, page_id(f"{SEED}broken.html")) == {}
        assert len(self.chunks(run, page_id(f"{SEED}a.html"))) == state[page_id(f"{SEED}a.html")].chunk_count >= 2
        assert self.verify(run).ok

    # -- the mirror --------------------------------------------------------------------------------------

    @deferred_f_from_coro_f
    async def test_the_mirror_writes_each_page_and_restores_an_unchanged_pages_deleted_file(self) -> None:
        mirror = self.tmp_path / "mirror"
        first = await self.crawl(page(), save_dir=str(mirror))
        written = mirror / "install.md"
        text = written.read_text(encoding="utf-8")
        assert text.startswith("---\n") and f'content_hash: "{content_hash(PAGE)}"' in text
        assert f'url: "{URL}"' in text and f'page_id: "{PID}"' in text and INSTALL in text and USAGE in text
        assert first.stat("docscraper/mirror/written") == 1
        written.unlink()
        # the mirror runs before change detection: the unchanged page is dropped, its file written again
        again = await self.crawl(page(), save_dir=str(mirror))
        assert written.read_text(encoding="utf-8") == text
        assert again.stat("docscraper/mirror/written") == 1 and again.writes == []
        assert again.stat("docscraper/pages_unchanged") == 1
