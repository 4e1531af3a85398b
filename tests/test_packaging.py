"""The egg Scrapyd deploys: the project packages and the settings entry point, no tests."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT


def test_egg_carries_the_project_and_not_the_tests(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", "data", ".git", "*.egg-info", "build"))
    proc = subprocess.run(
        [sys.executable, "setup.py", "-q", "bdist_egg", "--dist-dir", str(tmp_path / "dist")],
        cwd=src, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (egg,) = (tmp_path / "dist").glob("*.egg")
    names = zipfile.ZipFile(egg).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"EGG-INFO", "docscraper", "pipelines", "settings"}
    assert "docscraper/schema/stats-report.schema.json" in names
    assert "docscraper/storage/state/migrations/versions/0001_initial.py" in names
    # the dashboard's templates and its script and stylesheet (scrapy serve, docscraper-serve)
    assert {"docscraper/ops/templates/base.html", "docscraper/ops/templates/source.html",
            "docscraper/ops/static/live.js", "docscraper/ops/static/dashboard.css"} <= set(names)
    entry_points = zipfile.ZipFile(egg).read("EGG-INFO/entry_points.txt").decode()
    parser = configparser.ConfigParser()
    parser.read_string(entry_points)
    assert parser["scrapy"]["settings"] == "settings"
    assert parser["console_scripts"]["docscraper-mcp"] == "docscraper.ops.mcp_server:main"
    assert parser["console_scripts"]["docscraper-serve"] == "docscraper.ops.server:main"


def test_scrapy_cfg_names_settings_and_a_deploy_target() -> None:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "scrapy.cfg")
    assert parser["settings"]["default"] == "settings"
    assert parser["deploy"]["project"] == "docscraper"


def test_package_data_is_read_from_a_zip(tmp_path: Path) -> None:
    """Scrapyd runs the egg as a zip on sys.path: migrations and the report schema load from there."""
    archive = tmp_path / "project.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((ROOT / "docscraper").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(ROOT).as_posix())
    code = (
        "import docscraper, sys; assert docscraper.__file__.startswith(sys.argv[1]), docscraper.__file__\n"
        "from docscraper.storage.state import SqlStateStore, schema_revision\n"
        "SqlStateStore(sys.argv[2]).close(); print(schema_revision(sys.argv[2]))\n"
        "from docscraper.crawl.report import load_schema; print(load_schema()['type'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(archive), f"sqlite:///{tmp_path / 'state.db'}"], cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(archive)}, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    revision, schema_type = proc.stdout.split()
    assert revision.startswith("0") and schema_type == "object"
