"""A private redis-server for the distributed tests: loopback, a free port, no persistence, in tmp_path.

``redis-server`` must be installed (``apt-get install -y redis-server``; ``.ci/run`` installs it): the
tests that use it fail, never skip, without it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["RedisServer", "redis_server"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed: apt-get install -y redis-server (.ci/run installs it)"
        folder.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = folder / "redis.log"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(folder), "--logfile", str(self.log)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start: {self.log.read_text() if self.log.exists() else ''}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    try:
        yield server
    finally:
        server.stop()
