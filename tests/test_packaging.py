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
    assert "docscraper/state/migrations/versions/0001_initial.py" in names
    entry_points = zipfile.ZipFile(egg).read("EGG-INFO/entry_points.txt").decode()
    parser = configparser.ConfigParser()
    parser.read_string(entry_points)
    assert parser["scrapy"]["settings"] == "settings"


def test_scrapy_cfg_names_settings_and_a_deploy_target() -> None:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "scrapy.cfg")
    assert parser["settings"]["default"] == "settings"
    assert parser["deploy"]["project"] == "docscraper"
