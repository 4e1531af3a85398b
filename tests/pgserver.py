"""A throwaway PostgreSQL cluster for tests: ``initdb`` into a temporary folder, ``pg_ctl start`` on a free
loopback port with its unix socket in that folder, ``pg_ctl stop`` and removal at the end.

PostgreSQL refuses to run as root, so under root the cluster belongs to the ``postgres`` user (Debian's
``postgresql`` package creates it; ``.ci/run`` installs the package when ``initdb`` is missing) or, without
one, to ``nobody``. Its folder is made with :func:`tempfile.mkdtemp` rather than in pytest's ``tmp_path``:
that one sits under a 0700 folder of root's, which the cluster's owner could not enter. No server, no
skip: a missing PostgreSQL fails the tests with a hint.

Each test asks the session's cluster for a fresh database with :meth:`PgServer.create_database`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["PgServer", "pg_binaries", "pg_server", "postgres_server"]

USER = "docscraper"  # the cluster's superuser, trusted on loopback and the socket


def pg_binaries() -> Path:
    """The folder with ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest ``/usr/lib/postgresql/*/bin``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    raise RuntimeError("PostgreSQL's initdb is missing: apt-get install -y postgresql (.ci/run does)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """One cluster, started by :meth:`start` (a context manager) and stopped when it exits."""

    def __init__(self) -> None:
        self.bin = pg_binaries()
        self.port = 0
        self.root = Path()
        self._runas: list[str] = []

    def _owner(self) -> str | None:
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                pwd.getpwnam(name)
            except KeyError:
                continue
            return name
        raise RuntimeError("running as root with neither a 'postgres' nor a 'nobody' user to own the cluster")

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*self._runas, *args], capture_output=True, text=True, timeout=120, cwd=self.root)
        if proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{tail}")
        return proc

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    @contextmanager
    def start(self) -> Iterator[PgServer]:
        self.root = Path(tempfile.mkdtemp(prefix="docscraper-pg-"))
        owner = self._owner()
        if owner is not None:
            account = pwd.getpwnam(owner)
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._runas = ["runuser", "-u", owner, "--"]
        try:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8",
                      "--locale=C", "--no-sync")
            self.port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"),
                      "-o", options, "-w", "-t", "60", "start")
            try:
                yield self
            finally:
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def postgres_server() -> Iterator[PgServer]:
    """A started throwaway cluster, stopped and removed on exit."""
    with PgServer().start() as server:
        yield server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with postgres_server() as server:
        yield server
