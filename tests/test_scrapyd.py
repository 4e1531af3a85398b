"""Deploying to a real Scrapyd: ``scrapyd-deploy`` the project's egg, schedule ``docs`` through
``schedule.json`` with spider arguments and settings, and find the run's report and state where the
settings said. The crawl runs from the egg (a zip on ``sys.path``), so the Alembic migrations and other
package data must be readable from there."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from alembic.script import ScriptDirectory

from docscraper.crawl.report import load_schema
from docscraper.storage.state.store import schema_revision
from tests.conftest import ROOT
from tests.mockserver import DocsServer
from tests.services import ScrapydServer, copy_project

pytestmark = [pytest.mark.services, pytest.mark.crawl]


def test_scrapyd_runs_the_deployed_egg(tmp_path: Path, shared_site: DocsServer, scrapyd_server: ScrapydServer) -> None:
    # What Scrapyd launches runs in its folder, where the checkout cannot be imported: only the egg can.
    probe = subprocess.run([sys.executable, "-c", "import docscraper"], cwd=scrapyd_server.root,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "No module named 'docscraper'" in probe.stderr

    output = scrapyd_server.deploy(copy_project(tmp_path / "project"), version="r1")
    assert '"status": "ok"' in output and '"spiders": 1' in output, output
    (egg,) = (scrapyd_server.root / "eggs" / "docscraper").glob("*.egg")
    assert egg.is_file()  # a zip, run as it is
    assert scrapyd_server.call("listspiders.json", [("project", "docscraper")])["spiders"] == ["docs"]

    data = tmp_path / "data"
    jobid = scrapyd_server.schedule(
        "docs",
        args={"source": f"{shared_site.base_url}/docs/", "max_depth": "0"},
        settings={"DOCSCRAPER_DATA_DIR": str(data), "DOCSCRAPER_INDEX_ENABLED": "0"},
    )
    job = scrapyd_server.wait(jobid)
    log = scrapyd_server.job_log(jobid)
    # the crawl's stderr (a spider argument it refused, say) is in Scrapyd's own log
    why = f"{log[-5000:]}\n--- scrapyd.log ---\n{scrapyd_server.log()}"
    assert job["spider"] == "docs", job
    assert "Traceback" not in log and "ERROR" not in log, why
    assert "Spider closed (finished)" in log, why

    # the stats report, under the DATA_DIR the setting named, valid against the published schema
    (metadata,) = data.glob("runs/*/crawl-metadata.json")
    report = json.loads(metadata.read_text())
    jsonschema.validate(report, load_schema())
    assert report["result"] == "success" and report["scrapydJob"] == jobid
    assert report["seedUrl"] == f"{shared_site.base_url}/docs/"
    assert report["scope"]["max_depth"] == 0 and report["scopeOverrides"] == ["max_depth"]
    assert (metadata.parent / f"{report['runId']}.json").is_file()
    # max_depth=0 came through: the seed only; llms.txt and sitemap pages are refused for depth
    indexed = {key for key, item in report["items"].items() if item["status"] == "success"}
    assert indexed == {"./"}
    assert {key for key, item in report["items"].items() if item["statusReason"] == "depth"} >= {"faq.html"}
    assert report["stats"]["success.new"] == 1

    # the state database, created by the egg's migrations
    database = data / "state.db"
    head = ScriptDirectory(str(ROOT / "docscraper" / "storage" / "state" / "migrations")).get_current_head()
    assert schema_revision(f"sqlite:///{database}") == head
    db = sqlite3.connect(database)
    try:
        pages = db.execute("SELECT url, status FROM pages").fetchall()
        runs = db.execute("SELECT run_id, result, close_reason, report_path FROM runs").fetchall()
    finally:
        db.close()
    assert pages == [(f"{shared_site.base_url}/docs/", "active")]
    assert runs == [(report["runId"], "success", "finished", str(metadata.parent / f"{report['runId']}.json"))]
