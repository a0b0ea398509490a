"""Sans-io schedules of the room runtime: when to reconcile, which control
signals were already applied.

Neither object reads a clock or a random source by itself: the caller passes
``now`` (for example ``trio.current_time()``) and may inject ``rng``, so tests
are exact.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import enum
import math
import random
from collections import OrderedDict
from collections.abc import Callable

from band_trio.errors import BandConfigError

__all__ = [
    "ControlDeduplicator",
    "ReconcileOutcome",
    "ReconcileSchedule",
]


class ReconcileOutcome(enum.Enum):
    """What one reconcile pass of a room found (official runtime,
    "Backlog (/next) message lifecycle"; "Reconcile pass and periodic schedule")."""

    EMPTY = "empty"
    """``/next`` had nothing: the interval doubles (up to the maximum)."""
    WORK = "work"
    """At least one turn ran."""
    BLOCKED = "blocked"
    """The pass stopped at something it could not step past this time."""
    RETRY = "retry"
    """Something failed (REST error, an ack that did not land): try again soon."""
    STOPPED = "stopped"
    """The room's execution is stopped."""


def _check_interval(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BandConfigError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise BandConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


class ReconcileSchedule:
    """When a room should next reconcile on its own.

    * The first check is jittered uniformly in ``[now, now + base]`` so rooms
      started together do not poll together.
    * After a pass that found nothing the interval doubles, capped at
      ``maximum``; after any other outcome it resets to ``base``.
    * While the room is stopped the interval is ``stopped`` (default ``base``)
      and never grows.
    * Work (a turn starting), STOP and PLAY reset the interval to ``base`` and
      can only pull the next check earlier.
    * :meth:`request` (doorbell, inbox overflow, reconnect) makes it due now;
      repeated requests collapse into one.

    Args:
        base: the base interval in seconds.
        maximum: the ceiling of the doubling (raised to at least ``base``).
        stopped: the interval while stopped; None means ``base``.
        now: the current time.
        rng: returns a float in ``[0, 1)``; used once, for the first jitter.
    """

    def __init__(
        self,
        *,
        base: float,
        maximum: float,
        stopped: float | None = None,
        now: float,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.base = _check_interval("base", base)
        self.maximum = max(self.base, _check_interval("maximum", maximum))
        self.stopped_interval = (
            self.base if stopped is None else _check_interval("stopped", stopped)
        )
        self._stopped = False
        self._interval = self.base
        jitter = min(max(rng(), 0.0), 1.0)
        self._due = now + jitter * self.base
        self._requested = False

    @property
    def due(self) -> float:
        """The time of the next check."""
        return self._due

    @property
    def interval(self) -> float:
        """The interval that will follow the next pass."""
        return self.stopped_interval if self._stopped else self._interval

    @property
    def stopped(self) -> bool:
        """True while the room is stopped."""
        return self._stopped

    @property
    def requested(self) -> bool:
        """True when a check was requested and has not happened yet."""
        return self._requested

    def is_due(self, now: float) -> bool:
        """True when a reconcile should run now."""
        return self._requested or now >= self.due

    def time_until_due(self, now: float) -> float:
        """Seconds to wait before the next check (0 when due)."""
        if self._requested:
            return 0.0
        return max(0.0, self.due - now)

    def request(self, now: float) -> bool:
        """Ask for a check as soon as possible.

        Returns:
            True if this is a new request, False if one was already pending
            (requests are coalesced).
        """
        fresh = not self._requested
        self._requested = True
        self._due = min(self._due, now)
        return fresh

    def completed(self, outcome: ReconcileOutcome, now: float) -> float:
        """Record a finished pass and schedule the next one.

        Returns:
            The new due time.
        """
        self._requested = False
        if outcome is ReconcileOutcome.STOPPED:
            self._stopped = True
        elif outcome is ReconcileOutcome.EMPTY and not self._stopped:
            self._interval = min(self._interval * 2, self.maximum)
        elif not self._stopped:
            self._interval = self.base
        if self._due <= now:
            self._due = now + self.interval
        else:
            self._due = min(self._due, now + self.interval)
        return self._due

    def note_work(self, now: float) -> None:
        """A turn started: reset the interval; the next check may only come sooner."""
        self._interval = self.base
        self._due = min(self._due, now + self.interval)

    def set_stopped(self, stopped: bool, now: float) -> None:
        """The room was stopped (STOP) or resumed (PLAY).

        Either resets the interval to base and can only pull the next check
        earlier. Resuming also requests a check, so the paused message runs.
        """
        self._stopped = stopped
        self._interval = self.base
        self._due = min(self._due, now + self.interval)
        if not stopped:
            self.request(now)


class ControlDeduplicator:
    """Remembers applied control signals by ``correlation_id`` (an LRU).

    Use :meth:`seen` before applying a signal and :meth:`record` only once it
    actually reached a room, so a copy re-sent after the room became ready
    still applies. Signals without a correlation id are never de-duplicated.

    Args:
        size: how many ids are remembered (least recently seen evicted first).
    """

    def __init__(self, size: int = 256) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise BandConfigError(f"size must be an integer >= 1, got {size!r}")
        self.size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def seen(self, correlation_id: str | None) -> bool:
        """True when a signal with this id was already applied (refreshes it)."""
        if not correlation_id or correlation_id not in self._ids:
            return False
        self._ids.move_to_end(correlation_id)
        return True

    def record(self, correlation_id: str | None) -> None:
        """Remember that a signal with this id was applied (no-op without an id)."""
        if not correlation_id:
            return
        self._ids[correlation_id] = None
        self._ids.move_to_end(correlation_id)
        while len(self._ids) > self.size:
            self._ids.popitem(last=False)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self._ids
