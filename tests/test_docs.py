"""The documentation's examples, run: every fenced block of ``docs/**/*.md`` and the README is run here, or names
in a ``<!-- tested-by: tests/test_x.py::test_name -->`` comment right before it the test that runs it.

Run here: the tutorial's shell commands against the fixture site (its URL in place of
``http://127.0.0.1:8000``), ``make demo``, the Python API how-to's examples (the fixture site's URL in place of
``https://docs.example.com/``), and the JSON examples (question files, the MCP client configuration), parsed
as their readers parse them. Blocks without a language or in ``text`` are pictures (the flow, the layout),
unless they show a command's output (a line starting with ``$``): those name their test too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.mockserver import DocsServer

DOCS = ROOT / "docs"
MARKER = re.compile(r"^\s*<!-- tested-by: (.+?) -->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
#: Pages whose shell blocks this file runs, and the test that runs them.
RUN_HERE = {"docs/tutorial.md": "test_the_tutorial_runs_as_written"}
#: Pages whose Python blocks this file runs (the README's: tests/test_readme.py).
PYTHON_HERE = {"docs/howto/python-api.md": "test_every_python_api_example_runs", "README.md": "tests/test_readme.py"}
JSON_HERE = {"docs/howto/evaluate.md", "docs/howto/mcp.md"}
FIXTURE_URL = "https://docs.example.com/"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    tested_by: tuple[str, ...]


def pages() -> list[Path]:
    found = [p for p in DOCS.rglob("*.md") if "_generated" not in p.parts]
    return [*sorted(found), ROOT / "README.md", ROOT / "CHANGELOG.md"]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, language, start = match.group(1), match.group(2), index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index][len(indent):])
            index += 1
        index += 1
        before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        marker = MARKER.match(before)
        found.append(Block(path.relative_to(ROOT).as_posix(), start + 1, language, "\n".join(body) + "\n",
                           tuple(marker.group(1).split()) if marker else ()))
    return found


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks(path)]


def page_blocks(page: str, language: str) -> list[Block]:
    return [b for b in blocks(ROOT / page) if b.language == language and not b.tested_by]


def test_every_block_is_run_here_or_names_the_test_that_runs_it() -> None:
    unaccounted = []
    for block in all_blocks():
        if block.language.startswith("{") or block.tested_by:  # a MyST directive (toctree, include, eval-rst)
            continue
        if block.language in ("", "text"):
            if any(line.startswith("$ ") for line in block.code.splitlines()):
                unaccounted.append(block)
        elif block.language in ("sh", "bash", "console"):
            if block.page not in RUN_HERE:
                unaccounted.append(block)
        elif block.language == "python":
            if block.page not in PYTHON_HERE:
                unaccounted.append(block)
        elif block.language == "json":
            if block.page not in JSON_HERE:
                unaccounted.append(block)
        else:
            unaccounted.append(block)
    assert not unaccounted, "blocks neither run by tests/test_docs.py nor marked <!-- tested-by: ... -->: " + ", ".join(
        f"{b.page}:{b.line} ({b.language or 'no language'})" for b in unaccounted)


def test_every_named_test_exists() -> None:
    missing = []
    names = {name for block in all_blocks() for name in block.tested_by}
    assert names
    for name in sorted(names):
        file, _, test = name.partition("::")
        path = ROOT / file
        function = test.split("::")[-1]
        if not test or not path.is_file() or not re.search(rf"\bdef {re.escape(function)}\(", path.read_text()):
            missing.append(name)
    assert not missing, f"tested-by names a test that does not exist: {missing}"


def test_make_docs_target_is_strict() -> None:
    """``make docs`` builds with warnings as errors and unresolved references as warnings, and CI runs it."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    assert "sphinx-build -W --keep-going -n" in recipe and "build/docs/html" in recipe
    assert re.search(r"^\.PHONY:.*\bdocs\b", makefile, flags=re.M)
    assert "make docs" in makefile.split("\nhelp:", 1)[1].split("\n\n", 1)[0]
    assert 'make docs VENV="$venv"' in (ROOT / ".ci" / "run").read_text()


def test_readme_links_into_the_docs_resolve() -> None:
    for page in [ROOT / "README.md", *pages()]:
        prose = re.sub(r"^\s*```.*?^\s*```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", prose):
            if "://" not in target:
                assert (page.parent / target).resolve().is_file(), f"{page.relative_to(ROOT)}: no {target}"


def test_question_file_examples_load(tmp_path: Path) -> None:
    from docscraper.ops.evaluate import load_questions

    (example,) = [b for b in page_blocks("docs/howto/evaluate.md", "json")]
    path = tmp_path / "questions.jsonl"
    path.write_text(example.code, encoding="utf-8")
    questions = load_questions(path)
    assert len(questions) == len(example.code.strip().splitlines()) == 4


def test_mcp_client_configuration_is_valid_json_that_starts_the_server() -> None:
    (example,) = page_blocks("docs/howto/mcp.md", "json")
    server = json.loads(example.code)["mcpServers"]["docscraper"]
    assert server["args"] == ["-m", "scrapy", "mcp"] and server["env"]["HF_HUB_OFFLINE"] == "1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _env(data_dir: Path) -> dict[str, str]:
    return dict(os.environ, DOCSCRAPER_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1", PYTHONWARNINGS="")


@pytest.mark.crawl
def test_make_demo_crawls_twice_and_answers(tmp_path: Path) -> None:
    """``make demo``, as the tutorial's first step and the README say: two crawls and a question, offline."""
    data = tmp_path / "demo"
    proc = subprocess.run(["make", "-s", "demo", f"ARGS=--data-dir {data} --port {_free_port()}"], cwd=ROOT,
                          env=_env(data), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = re.findall(r"^result \w+: new (\d+), changed (\d+), unchanged (\d+)", proc.stdout, flags=re.M)
    assert len(results) == 2, proc.stdout
    (first_new, _, _), (second_new, second_changed, second_unchanged) = (tuple(map(int, r)) for r in results)
    readme = (ROOT / "README.md").read_text()
    claimed = re.search(r"the first run indexes (\d+) pages, the second finds all (\d+) unchanged", readme)
    assert claimed, "the README no longer says what make demo does"
    assert (first_new, second_unchanged) == (int(claimed.group(1)), int(claimed.group(2)))
    assert second_new == second_changed == 0
    assert "guide/delivery.html" in proc.stdout.split("=== scrapy search", 1)[1]


def _commands(block: Block) -> list[str]:
    return [line for line in block.code.replace("\\\n", " ").splitlines() if line.strip()
            and not line.lstrip().startswith("#")]


@pytest.mark.crawl
def test_the_tutorial_runs_as_written(site: DocsServer, tmp_path: Path) -> None:
    """Every command of the tutorial, in order, on a copy of the fixture site: the copy and its server are the
    ``site`` fixture's (the tutorial's ``cp`` and ``python -m tests.mockserver``, which
    ``tests/test_mockserver.py::test_command_line_serves_the_site`` runs), the data directory the test's."""
    data = tmp_path / "data"
    outputs: list[tuple[str, str]] = []
    for block in page_blocks("docs/tutorial.md", "sh"):
        for command in _commands(block):
            if command.startswith(("cp -r tests/site ", ".venv/bin/python -m tests.mockserver ")):
                assert "/tmp/acme-site" in command
                continue
            command = (command.replace("http://127.0.0.1:8000", site.base_url)
                       .replace("/tmp/acme-site", str(site.root))
                       .replace("data/runs/127.0.0.1-8000-docs/", f"{data}/runs/*/"))
            program = shlex.split(command)[0]
            assert program in (".venv/bin/scrapy", ".venv/bin/python", "sed"), command
            if program.startswith(".venv/bin/"):
                command = str(Path(sys.executable).parent / program.rsplit("/", 1)[1]) + command[len(program):]
            proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=_env(data),
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, f"{command}\n{proc.stderr[-3000:]}"
            outputs.append((command, proc.stdout))
    statuses = [out for command, out in outputs if command.endswith("scrapy status")]
    answers = [out for command, out in outputs if " search " in command]
    report = next(out for command, out in outputs if "json.tool" in command)
    assert len(statuses) == len(answers) == 2
    # the tutorial's words: 36 pages done, all new at first; then one changed; the answer says 14, then 30 days
    assert re.search(r"pages 36 done \(35 new, 0 changed", statuses[0]), statuses[0]
    assert re.search(r"\(0 new, 1 changed, 34 unchanged\)", statuses[1]), statuses[1]
    assert '"seedUrl"' in report and '"items"' in (data / "runs").joinpath(
        next(p.relative_to(data / "runs") for p in (data / "runs").glob("*/crawl-metadata.json"))).read_text()
    first = answers[0].split("\n2. ", 1)[0]
    assert "Dead-letter queue" in first and "guide/delivery.html" in first and "14 days" in first
    assert "30 days" in answers[1] and "guide/delivery.html" in answers[1]


@pytest.mark.crawl
def test_every_python_api_example_runs(shared_site: DocsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The Python API how-to's examples, run as written against the fixture site, in a folder of their own, one
    after another (the retrievers ask the index the incremental example built)."""
    examples = page_blocks("docs/howto/python-api.md", "python")
    assert len(examples) == 5
    monkeypatch.chdir(tmp_path)
    # as if installed: the crawls' child processes find the project's settings from any folder
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONWARNINGS", "")
    results: list[dict[str, Any]] = []
    for block in examples:
        code = block.code.replace(FIXTURE_URL, f"{shared_site.base_url}/docs/")
        namespace: dict[str, Any] = {"__name__": "docs_example"}
        exec(compile(code, f"{block.page}:{block.line}", "exec"), namespace)
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
