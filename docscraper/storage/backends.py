"""The one place the state store, the vector index and the embedder are built: each implementation is named
by a dotted path in settings (``DOCSCRAPER_STATE_STORE_CLASS``, ``DOCSCRAPER_VECTOR_INDEX_CLASS``,
``DOCSCRAPER_EMBEDDER_CLASS``), as Scrapyd chooses its job storage. The crawl, search, the source registry,
the status and the MCP server all open them here. Blocking: call them off the reactor thread in a crawl."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig
    from docscraper.storage.embedding import Embedder
    from docscraper.storage.state import StateStore
    from docscraper.storage.vectors import VectorIndex

__all__ = ["load_embedder", "open_state_store", "open_vector_index"]


def open_state_store(config: DocscraperConfig) -> StateStore:
    """The state store at ``DOCSCRAPER_STATE_URL`` (migrated to the current schema when it opens)."""
    store: StateStore = load_object(config.state_store_class)(config.state_url)
    return store


def open_vector_index(config: DocscraperConfig) -> VectorIndex:
    """The vector index: the Chroma server at ``DOCSCRAPER_CHROMA_URL``, else the data directory's."""
    index: VectorIndex = load_object(config.vector_index_class)(
        path=config.chroma_path, url=config.chroma_url, collection=config.chroma_collection,
        telemetry=config.chroma_telemetry)
    return index


def load_embedder(config: DocscraperConfig) -> Embedder:
    """The embedding model named by ``DOCSCRAPER_EMBEDDING_MODEL`` (the bundled one by default)."""
    embedder: Embedder = load_object(config.embedder_class)(
        config.embedding_model, device=config.embedding_device, batch_size=config.embedding_batch_size)
    return embedder
