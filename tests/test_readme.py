"""The README's Python API examples, run as written against the fixture site on loopback (its URL in place of
https://docs.example.com/), in a folder of their own, one after another (the retrievers ask the index the
incremental example built)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.mockserver import DocsServer

pytestmark = pytest.mark.crawl


def examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_every_python_api_example_runs(shared_site: DocsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    blocks = examples()
    assert len(blocks) == 5
    monkeypatch.chdir(tmp_path)
    # as if installed: the crawls' child processes find the project's settings from any folder
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONWARNINGS", "")
    results: list[dict[str, Any]] = []
    for block in blocks:
        code = block.replace("https://docs.example.com/", f"{shared_site.base_url}/docs/")
        namespace: dict[str, Any] = {"__name__": "readme_example"}
        exec(compile(code, "README.md", "exec"), namespace)
        results.append(namespace)
    out = capsys.readouterr().out
    assert results[0]["loader"].last_report["result"] in ("success", "partial")
    # the guide's pages, the source folder's own page (always indexed), the two notes
    others = sorted(d.title for d in results[1]["docs"] if "/guide/" not in d.url)
    assert others == ["Acme Relay documentation", "Changes", "Notes"]
    assert len(results[1]["docs"]) > 5
    assert len(results[2]["store"]) > 30 and (tmp_path / "data" / "chroma").is_dir()
    assert len(results[3]["documents"]) == 5
    assert len(results[4]["documents"]) == 5
    assert out.count("/docs/guide/deployment.html") >= 2  # both retrievers found the answer's page
