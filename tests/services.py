"""Real servers for the ``services`` tests: Scrapyd and a Chroma server, on free loopback ports.

Each server is a context manager that starts the real program from this virtual environment in its own
process group, waits until it answers over HTTP, and on exit stops that process group by its id
(SIGTERM, then SIGKILL after a grace period), so nothing it spawned (Scrapyd's crawl processes) outlives
the test. Everything a server writes lives under the folder it is given (``tmp_path``); its output goes
to ``<folder>/<name>.log``, and a server that dies or does not answer in time fails the test with the
end of that log.

* :func:`start_scrapyd` / fixture ``scrapyd_server``: Scrapyd with a ``scrapyd.conf`` of its own
  (eggs, logs, dbs in the folder, no items feed, one process at a time), run from that folder so that the
  crawl it launches imports the project from the deployed egg, not from the checkout.
* :func:`start_chroma` / fixture ``chroma_server``: ``chroma run --path <folder>/chroma``.

Helpers for other servers follow the same shape: :func:`free_port`, :func:`running`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

__all__ = [
    "BIN",
    "ChromaServer",
    "ScrapydServer",
    "chroma_server",
    "copy_project",
    "free_port",
    "running",
    "scrapyd_server",
    "start_chroma",
    "start_scrapyd",
]

ROOT = Path(__file__).resolve().parent.parent
#: The scripts of the Python that runs the tests (the project's virtual environment).
BIN = Path(sys.executable).parent

#: Environment for servers and what they run: offline, quiet, no telemetry.
_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "PYTHONWARNINGS": ""}


class ServiceError(RuntimeError):
    """A server did not start, or died; the message carries the end of its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, size: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""


def _stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Stop *process* and its process group (it leads one: ``start_new_session``)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
            # the leader is gone; children of the group (a crawl) may not be
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def running(command: Sequence[str | Path], *, ready_url: str, log: Path, cwd: Path,
            env: Mapping[str, str] | None = None, timeout: float = 60.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run *command* until the block ends; enter the block once *ready_url* answers 2xx."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(part) for part in command], cwd=cwd, env=dict(env if env is not None else os.environ),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise ServiceError(f"{command[0]} exited with status {process.returncode}:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as response:
                    if 200 <= response.status < 300:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ServiceError(f"{command[0]} did not answer {ready_url} in {timeout:.0f} s:\n{_tail(log)}")
            time.sleep(0.1)
        yield process
    finally:
        _stop(process)


@contextlib.contextmanager
def _on_free_port(start: Callable[[int], contextlib.AbstractContextManager[subprocess.Popen[bytes]]],
                  log: Path, attempts: int = 3) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """Start a server with ``start(port)`` on a free port; again on another when the port was taken
    between :func:`free_port` and the server's bind. Only the start is retried, never the block."""
    for attempt in range(attempts):
        port = free_port()
        stack = contextlib.ExitStack()
        try:
            process = stack.enter_context(start(port))
        except ServiceError:
            if attempt + 1 < attempts and "in use" in _tail(log, 2000):
                continue
            raise
        with stack:
            yield port, process
        return


def _service_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **_ENV, **(extra or {})}
    # whatever runs there imports only what is installed (and, under Scrapyd, the deployed egg)
    env.pop("PYTHONPATH", None)
    return env


def copy_project(dest: Path) -> Path:
    """A copy of the project (what ``scrapyd-deploy`` packs) at *dest*, so that building an egg leaves no
    ``build/`` or ``*.egg-info`` in the checkout."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".venv", "data", ".git", "*.egg-info", "build", "dist", "__pycache__", ".*_cache", "site"))
    return dest


# -- Scrapyd ----------------------------------------------------------------------------------------


@dataclass
class ScrapydServer:
    url: str  # http://127.0.0.1:PORT/
    root: Path  # its folder: scrapyd.conf, eggs/, logs/, dbs/
    process: subprocess.Popen[bytes]

    def call(self, endpoint: str, fields: Sequence[tuple[str, str]] | None = None, *,
             post: bool = False, timeout: float = 60.0) -> dict[str, Any]:
        """GET (or POST, form-encoded) ``<url><endpoint>``; the JSON answer, which must be ``ok``."""
        query = urlencode(list(fields or ()))
        if post:
            request = urllib.request.Request(self.url + endpoint, data=query.encode(), method="POST")
        else:
            request = urllib.request.Request(self.url + endpoint + (f"?{query}" if query else ""))
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read())
        assert answer.get("status") == "ok", answer
        return answer

    def deploy(self, project_dir: Path, *, project: str = "docscraper", version: str = "1") -> str:
        """``scrapyd-deploy`` the project in *project_dir* (a copy: a ``[deploy:services]`` target naming
        this server is added to its ``scrapy.cfg``); returns scrapyd-deploy's output."""
        with (project_dir / "scrapy.cfg").open("a", encoding="utf-8") as cfg:
            cfg.write(f"\n[deploy:services]\nurl = {self.url}\nproject = {project}\n")
        proc = subprocess.run(
            [BIN / "scrapyd-deploy", "services", "-p", project, "-v", version], cwd=project_dir,
            env=_service_env(), capture_output=True, text=True, timeout=300,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output
        return output

    def schedule(self, spider: str, *, project: str = "docscraper", args: Mapping[str, str] | None = None,
                 settings: Mapping[str, str] | None = None) -> str:
        """``schedule.json``: spider arguments as fields, settings as ``setting=NAME=VALUE``; the job id."""
        fields = [("project", project), ("spider", spider), *(args or {}).items(),
                  *(("setting", f"{name}={value}") for name, value in (settings or {}).items())]
        return str(self.call("schedule.json", fields, post=True)["jobid"])

    def wait(self, jobid: str, *, project: str = "docscraper", timeout: float = 300.0) -> dict[str, Any]:
        """Poll ``listjobs.json`` until job *jobid* is finished; its entry."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.call("listjobs.json", [("project", project)])
            for job in jobs.get("finished", []):
                if job["id"] == jobid:
                    return dict(job)
            if self.process.poll() is not None:
                raise ServiceError(f"scrapyd exited while job {jobid} ran:\n{self.log()}")
            time.sleep(0.25)
        raise ServiceError(f"job {jobid} did not finish in {timeout:.0f} s:\n{self.job_log(jobid, project=project)}\n"
                           f"--- scrapyd.log ---\n{self.log()}")

    def log(self) -> str:
        """The end of Scrapyd's own log (with its crawls' stderr)."""
        return _tail(self.root / "scrapyd.log", 5000)

    def job_log(self, jobid: str, *, project: str = "docscraper", spider: str = "docs") -> str:
        """The end of a job's Scrapy log."""
        return _tail(self.root / "logs" / project / spider / f"{jobid}.log", 20000)


_SCRAPYD_CONF = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {root}/eggs
logs_dir = {root}/logs
items_dir =
dbs_dir = {root}/dbs
max_proc = 1
poll_interval = 0.2
"""


@contextlib.contextmanager
def start_scrapyd(root: Path, *, env: Mapping[str, str] | None = None, timeout: float = 60.0) -> Iterator[ScrapydServer]:
    """A Scrapyd on a free port, configured and run in *root*."""
    root.mkdir(parents=True, exist_ok=True)

    def start(port: int) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
        (root / "scrapyd.conf").write_text(_SCRAPYD_CONF.format(port=port, root=root))
        command = [sys.executable, "-m", "scrapyd", f"--pidfile={root / 'scrapyd.pid'}"]
        return running(command, ready_url=f"http://127.0.0.1:{port}/daemonstatus.json", log=root / "scrapyd.log",
                       cwd=root, env=_service_env(env), timeout=timeout)

    with _on_free_port(start, root / "scrapyd.log") as (port, process):
        yield ScrapydServer(f"http://127.0.0.1:{port}/", root, process)


@pytest.fixture
def scrapyd_server(tmp_path: Path) -> Iterator[ScrapydServer]:
    with start_scrapyd(tmp_path / "scrapyd") as server:
        yield server


# -- Chroma -----------------------------------------------------------------------------------------


@dataclass
class ChromaServer:
    url: str  # http://127.0.0.1:PORT (DOCSCRAPER_CHROMA_URL)
    path: Path  # its persistent directory
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def start_chroma(root: Path, *, timeout: float = 60.0) -> Iterator[ChromaServer]:
    """``chroma run`` (chromadb's CLI) on a free port, keeping its data in ``<root>/chroma``."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "chroma"

    def start(port: int) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
        command: list[str | Path] = [BIN / "chroma", "run", "--path", path, "--host", "127.0.0.1", "--port", str(port)]
        return running(command, ready_url=f"http://127.0.0.1:{port}/api/v2/heartbeat", log=root / "chroma.log",
                       cwd=root, env=_service_env(), timeout=timeout)

    with _on_free_port(start, root / "chroma.log") as (port, process):
        yield ChromaServer(f"http://127.0.0.1:{port}", path, process)


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    with start_chroma(tmp_path / "chroma-server") as server:
        yield server
