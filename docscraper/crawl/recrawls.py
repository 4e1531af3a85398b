"""A source's recrawl schedule: an interval or a cron expression, its run times, and its jitter.

The schedule is stored in the source's scope (``schedule``: the text the user gave; ``schedule_since``: when it was
set). :mod:`docscraper.ops.schedules` decides which sources are due and starts their crawls.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from croniter import croniter

from docscraper.config import ConfigError, duration

__all__ = ["MAX_JITTER", "Schedule", "jitter_for", "parse_schedule"]

#: The most a source's run time is moved later, whatever its interval.
MAX_JITTER = timedelta(minutes=10)


@dataclass(frozen=True)
class Schedule:
    """A source's schedule: ``interval`` seconds, or a ``cron`` expression; ``text`` as the user wrote it."""

    text: str
    interval: float | None = None
    cron: str | None = None

    def period(self, after: datetime) -> timedelta:
        """How long one period of the schedule is around *after* (for the jitter)."""
        if self.interval is not None:
            return timedelta(seconds=self.interval)
        it = croniter(self.cron, after)
        first = it.get_next(datetime)
        return it.get_next(datetime) - first

    def next_after(self, moment: datetime) -> datetime:
        """The first run time after *moment*."""
        if self.interval is not None:
            return moment + timedelta(seconds=self.interval)
        return croniter(self.cron, moment).get_next(datetime)


def parse_schedule(text: str) -> Schedule | None:
    """A schedule from ``--schedule``: a duration (``6h``), a five-field cron expression, or ``none`` (None).
    :class:`ConfigError` otherwise."""
    spec = " ".join(str(text or "").split())
    if spec.lower() in ("none", "off", ""):
        return None
    if len(spec.split(" ")) == 5:
        if not croniter.is_valid(spec):
            raise ConfigError(f"schedule {text!r} is not a valid cron expression (minute hour day month weekday)")
        return Schedule(spec, cron=spec)
    seconds = duration("schedule", spec)
    if seconds < 60:
        raise ConfigError(f"schedule {text!r} is shorter than a minute")
    return Schedule(spec, interval=seconds)


def jitter_for(name: str, period: timedelta, share: float) -> timedelta:
    """A fixed delay in [0, share x period), at most :data:`MAX_JITTER`, from the source's name."""
    fraction = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") / 2**32
    return min(period * share, MAX_JITTER) * fraction
