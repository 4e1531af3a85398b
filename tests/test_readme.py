"""The README is a front page: short, and its Python example runs as written against the fixture site on
loopback (its URL in place of https://docs.example.com/), in a folder of its own. The examples of the docs
pages, the Python API how-to's included, are run by tests/test_docs.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.mockserver import DocsServer


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_the_readme_is_a_front_page() -> None:
    text = readme()
    assert len(text.splitlines()) <= 150
    # the two set-up commands, as the README always gave them, and the offline demo
    assert "make crawl SOURCE=https://docs.example.com/" in text and "make test" in text and "make demo" in text
    assert "](docs/tutorial.md)" in text and "](CHANGELOG.md)" in text


@pytest.mark.crawl
def test_the_python_example_runs(shared_site: DocsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", readme(), flags=re.S)
    monkeypatch.chdir(tmp_path)
    # as if installed: the crawls' child processes find the project's settings from any folder
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONWARNINGS", "")
    monkeypatch.delenv("DOCSCRAPER_DATA_DIR", raising=False)
    code = block.replace("https://docs.example.com/", f"{shared_site.base_url}/docs/")
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.count(f"{shared_site.base_url}/docs/") > 30  # every page, then the answers
    assert (tmp_path / "data" / "chroma").is_dir()
    answers = out.strip().splitlines()[-3:]
    assert "/docs/guide/delivery.html" in answers[0], answers
