"""Whether a run recorded in the state database is running, finished or died (``scrapy status``, and the
next run of a source, which reconciles what a died run left: :mod:`docscraper.storage.consistency`).

A run without ``finished_at`` is ``running`` while its heartbeat is fresh. It is ``died`` when its last
heartbeat is older than max(3 × its progress interval, 30 s), or at once when it ran on this host and its
process is gone.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from docscraper.storage.state import RunState

__all__ = ["MIN_STALE_SECONDS", "State", "pid_alive", "run_state", "stale_after"]

#: A heartbeat younger than this never makes a run dead, however short the progress interval.
MIN_STALE_SECONDS = 30.0

State = Literal["running", "finished", "died"]


def pid_alive(pid: int) -> bool:
    """Whether process *pid* runs on this machine (a zombie does not). True where it cannot be told."""
    if pid <= 0:
        return False
    if os.name != "posix":  # os.kill(pid, 0) is not a probe on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except OSError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    fields = stat.rpartition(")")[2].split()
    return not fields or fields[0] != "Z"


def stale_after(interval: float) -> float:
    """Seconds without a heartbeat after which a run of progress *interval* is dead."""
    return max(3 * interval, MIN_STALE_SECONDS)


def run_state(run: RunState, *, now: datetime, interval: float, host: str | None = None) -> State:
    """``finished``, ``running`` or ``died``: see the module's docstring. *interval* is the progress
    interval to assume when the run did not record its own; *host* is this machine's name."""
    if run.run.finished_at is not None:
        return "finished"
    if host is not None and run.host == host and run.pid is not None and not pid_alive(run.pid):
        return "died"
    recorded = (run.progress or {}).get("interval_s")
    if isinstance(recorded, (int, float)) and recorded > 0:
        interval = float(recorded)
    last = run.heartbeat_at or run.run.started_at
    if (now - last).total_seconds() > stale_after(interval):
        return "died"
    return "running"
