"""Whether a run (or a source's lock) recorded in the state database is alive: ``scrapy status``, the next run
of a source (which reconciles what a died run left: :mod:`docscraper.storage.consistency`), and every operation
that must not touch a source while another process works on it (DESIGN rule 10).

A run is ``died`` only when its process is gone. On the machine it ran on, that is decided by the process
itself: its pid, and the identity of the process that had it (:func:`process_start`: Linux's boot id and the
process's start time), so a pid the system gave to another process since does not count; a process that is
slow, or whose reactor is blocked, is alive. From another machine only the heartbeat can tell: a run whose
last heartbeat is older than ``DOCSCRAPER_HEARTBEAT_TIMEOUT`` seconds (60) is dead. The heartbeat is written by
a thread of its own (:mod:`docscraper.crawl.progress`), so a busy reactor does not stop it. Heartbeats are
wall-clock times, stored; only their age is compared, with a generous timeout.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from docscraper.storage.state import LockRecord, RunState, SourceRecord, StateStore, utcnow

__all__ = [
    "MIN_STALE_SECONDS",
    "SourceBusy",
    "State",
    "hold_source",
    "lock_alive",
    "pid_alive",
    "process_alive",
    "process_start",
    "run_state",
    "running_runs",
    "stale_after",
    "take_lock",
    "this_process",
]

#: A heartbeat younger than this never makes a run dead, however short the timeout.
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
    fields = _stat_fields(pid)
    return fields is None or not fields or fields[0] != "Z"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (the state first: field 3 of proc(5)), None
    where there is no such file."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()


@functools.lru_cache(maxsize=1)
def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """The identity of process *pid* on this machine (``<boot id>:<start time in clock ticks>``, from
    ``/proc``), None where it cannot be read (not Linux, no such process)."""
    boot = _boot_id()
    if boot is None or pid <= 0:
        return None
    fields = _stat_fields(pid)
    # starttime is field 22 of proc(5), the 20th after the command name
    if fields is None or len(fields) < 20 or fields[0] == "Z":
        return None
    return f"{boot}:{fields[19]}"


def this_process() -> tuple[str, int, str | None]:
    """This machine's name, this process's pid and identity: what a run or a lock records."""
    pid = os.getpid()
    return socket.gethostname(), pid, process_start(pid)


def process_alive(host: str | None, pid: int | None, start: str | None, *, here: str) -> bool | None:
    """Whether the process recorded as (*host*, *pid*, *start*) runs: True or False when it ran on this
    machine (*here*), None when only its heartbeat can tell (another machine, or nothing recorded)."""
    if host is None or pid is None or host != here:
        return None
    if not pid_alive(pid):
        return False
    if start is None:
        return True  # recorded before identities were: the pid is all there is
    current = process_start(pid)
    return current is None or current == start


def stale_after(timeout: float) -> float:
    """Seconds without a heartbeat after which a run judged from another machine is dead."""
    return max(timeout, MIN_STALE_SECONDS)


def _heartbeat_stale(last: datetime, now: datetime, timeout: float) -> bool:
    return (now - last).total_seconds() > stale_after(timeout)


def run_state(run: RunState, *, now: datetime, timeout: float, host: str | None = None) -> State:
    """``finished``, ``running`` or ``died``: see the module's docstring. *timeout* is
    ``DOCSCRAPER_HEARTBEAT_TIMEOUT``; *host* this machine's name (default: asked)."""
    if run.run.finished_at is not None:
        return "finished"
    alive = process_alive(run.host, run.pid, run.process_start, here=host or socket.gethostname())
    if alive is not None:
        return "running" if alive else "died"
    last = run.heartbeat_at or run.run.started_at
    return "died" if _heartbeat_stale(last, now, timeout) else "running"


def running_runs(store: StateStore, source_id: int | None = None, *, timeout: float) -> list[RunState]:
    """The runs (of source *source_id*, or of all) that are running now, as :func:`run_state` judges them."""
    now, host = utcnow(), socket.gethostname()
    return [state for state in store.run_states(source_id)
            if run_state(state, now=now, timeout=timeout, host=host) == "running"]


def lock_alive(lock: LockRecord, *, now: datetime, timeout: float, host: str | None = None) -> bool:
    """Whether the holder of a source's lock still works. A shared run's workers refresh its lock in turn, so
    it lives while any refreshes it; any other lock lives while its process does (judged as :func:`run_state`
    judges a run)."""
    if not lock.shared:
        alive = process_alive(lock.host, lock.pid, lock.process_start, here=host or socket.gethostname())
        if alive is not None:
            return alive
    return not _heartbeat_stale(lock.heartbeat_at, now, timeout)


class SourceBusy(RuntimeError):
    """Another process holds the source's lock (:func:`take_lock`); ``holder`` says who."""

    def __init__(self, message: str, holder: LockRecord) -> None:
        super().__init__(message)
        self.holder = holder


def take_lock(store: StateStore, source_id: int, holder: str, *, purpose: str, timeout: float,
              shared: bool = False) -> LockRecord | None:
    """Take source *source_id*'s lock for *holder* (this process): None when taken, else the live holder's
    record. A holder whose process is gone (:func:`lock_alive`) is taken over."""
    host, pid, start = this_process()

    def is_dead(lock: LockRecord) -> bool:
        return not lock_alive(lock, now=utcnow(), timeout=timeout, host=host)

    return store.acquire_lock(source_id, holder, purpose=purpose, host=host, pid=pid, process_start=start,
                              shared=shared, is_dead=is_dead)


@contextlib.contextmanager
def hold_source(store: StateStore, source: SourceRecord, *, purpose: str, timeout: float,
                doing: str) -> Iterator[str]:
    """Hold *source*'s lock while the block runs (a removal, a repair): :class:`SourceBusy`, saying what
    *doing* cannot be done and who holds it, when another process does. Yields the holder id."""
    holder = f"{purpose}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"[:64]
    busy = take_lock(store, source.id, holder, purpose=purpose, timeout=timeout)
    if busy is not None:
        raise SourceBusy(f"cannot {doing} source {source.name!r}: {busy.describe()} holds it; wait for it to "
                         "finish", busy)
    try:
        yield holder
    finally:
        with contextlib.suppress(Exception):  # a removed source took its lock with it
            store.release_lock(source.id, holder)
