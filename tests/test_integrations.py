"""The LangChain and LlamaIndex integrations with the real packages (langchain-core, llama-index-core): their
loaders against the fixture site on loopback, their retrievers over the index a real crawl built."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_core.documents import Document as LangChainDocument
from llama_index.core.schema import Document as LlamaDocument
from llama_index.core.schema import MetadataMode, NodeWithScore

from docscraper.library.langchain import DocscraperLoader
from docscraper.library.langchain import DocscraperRetriever as LangChainRetriever
from docscraper.library.llamaindex import DocscraperReader
from docscraper.library.llamaindex import DocscraperRetriever as LlamaRetriever
from tests.conftest import ROOT, Crawl
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl

QUESTION = "Which advisory lock id does leader election use?"


def test_integrations_import_offline_and_light() -> None:
    code = ("import sys, docscraper.library.langchain, docscraper.library.llamaindex; "
            "print(sorted(m for m in ('torch', 'chromadb', 'nltk', 'tiktoken') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "NO_PROXY": "*",
                              "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert out.stdout.strip() == "[]", out.stderr
    assert "NLTK" not in out.stderr and "download" not in out.stderr.lower()


def test_langchain_loader_yields_documents(shared_site: DocsServer) -> None:
    loader = DocscraperLoader(f"{shared_site.base_url}/docs/", max_pages=3, metadata={"product": "relay"})
    documents = list(loader.lazy_load())
    assert len(documents) == 3 and all(isinstance(d, LangChainDocument) for d in documents)
    first = documents[0]
    assert first.page_content.startswith("#") and first.id == first.metadata["page_id"]
    assert first.metadata["url"].startswith(shared_site.base_url) and first.metadata["product"] == "relay"
    assert loader.removed == []


def test_llamaindex_reader_yields_documents(shared_site: DocsServer) -> None:
    reader = DocscraperReader(max_pages=2)
    documents = reader.load_data(f"{shared_site.base_url}/docs/")
    assert len(documents) == 2 and all(isinstance(d, LlamaDocument) for d in documents)
    assert documents[0].id_ == documents[0].metadata["page_id"] and documents[0].text
    assert "images" not in documents[0].get_metadata_str(MetadataMode.EMBED)
    assert "images" not in documents[0].get_metadata_str(MetadataMode.LLM)


def test_retrievers_answer_from_the_index(shared_site: DocsServer, crawl: Crawl) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", index=True)
    retriever = LangChainRetriever(k=3, data_dir=str(result.data_dir))
    try:
        answers = retriever.invoke(QUESTION)
    finally:
        retriever.close()
    assert len(answers) == 3 and len({d.metadata["page_id"] for d in answers}) == 3
    assert any(d.metadata["url"].endswith("/docs/guide/deployment.html") for d in answers)
    assert all(-1.0 <= d.metadata["score"] <= 1.0 and d.page_content for d in answers)
    source = answers[0].metadata["source"]
    llama = LlamaRetriever(k=3, source=source, data_dir=result.data_dir)
    try:
        nodes = llama.retrieve(QUESTION)
    finally:
        llama.close()
    assert len(nodes) == 3 and all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.metadata["url"] for n in nodes] == [d.metadata["url"] for d in answers]
    assert nodes[0].score == answers[0].metadata["score"]
