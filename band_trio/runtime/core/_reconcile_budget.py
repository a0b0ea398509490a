"""The agent-wide budget of idle reconciles (sans-io).

A room whose idle timer fires does not poll ``/messages/next`` on its own: it
asks this budget for a turn. The budget hands turns out at most ``rate`` per
second (a token bucket holding at most ``burst`` tokens), always to the room
that has gone longest without a reconcile. The idle REST rate of an agent is
therefore capped whatever the number of rooms, and no waiting room starves:
a room that has just been visited only asks again one idle interval later,
behind every room already waiting.

How late a missed push is noticed: a room asks at the latest
``idle_resync_max_interval`` after its last reconcile, and then waits behind
at most ``rooms - 1`` others, each costing one token, so the wait is at most
``rooms / rate`` seconds (:meth:`ReconcileBudget.notice_bound`).

Nothing here reads a clock: the caller passes ``now``.
"""

from __future__ import annotations

import heapq
import math

from band_trio.errors import BandConfigError

__all__ = ["ReconcileBudget"]

_EPSILON = 1e-9
"""Rounding slack: a token refilled by :meth:`ReconcileBudget.next_grant_at`'s
time counts as whole."""


class ReconcileBudget:
    """Which room may run its idle reconcile next, and when.

    Args:
        rate: idle reconciles granted per second at most (the ceiling).
        now: the current time.
        burst: tokens the bucket holds at most (grants allowed at once after a
            quiet spell); at least 1.
    """

    def __init__(self, *, rate: float, now: float, burst: float = 1.0) -> None:
        if isinstance(rate, bool) or not (math.isfinite(rate) and rate > 0):
            raise BandConfigError(f"rate must be a finite number > 0, got {rate!r}")
        if isinstance(burst, bool) or not (math.isfinite(burst) and burst >= 1):
            raise BandConfigError(f"burst must be a finite number >= 1, got {burst!r}")
        self.rate = float(rate)
        self.burst = float(burst)
        self._tokens = self.burst
        self._last = now
        self._heap: list[tuple[float, int, str]] = []
        self._wanted: dict[str, int] = {}
        self._seq = 0
        self.granted = 0
        """Turns handed out so far."""

    @staticmethod
    def notice_bound(*, rooms: int, rate: float, max_interval: float) -> float:
        """Seconds after its last reconcile by which every room is reconciled again.

        A push missed by a room is noticed at most this long after that room's
        previous reconcile: ``max_interval`` until the room asks, then at most
        ``rooms / rate`` behind the others.
        """
        return max_interval + max(rooms, 1) / rate

    @property
    def waiting(self) -> int:
        """Rooms waiting for a turn."""
        return len(self._wanted)

    def is_waiting(self, room_id: str) -> bool:
        """True while ``room_id`` waits for a turn."""
        return room_id in self._wanted

    def want(self, room_id: str, stale_since: float) -> None:
        """``room_id`` asks for an idle reconcile; it was last reconciled at
        ``stale_since`` (older goes first). A room already waiting keeps its place."""
        if room_id in self._wanted:
            return
        self._seq += 1
        self._wanted[room_id] = self._seq
        heapq.heappush(self._heap, (stale_since, self._seq, room_id))

    def withdraw(self, room_id: str) -> None:
        """``room_id`` no longer needs a turn (it reconciled for another reason)."""
        self._wanted.pop(room_id, None)
        if not self._wanted:
            self._heap.clear()

    def next_grant_at(self, now: float) -> float:
        """When :meth:`grant` can next hand out a turn (``inf`` while nobody waits)."""
        if not self._wanted:
            return math.inf
        tokens = self._refilled(now)
        if tokens >= 1.0 - _EPSILON:
            return now
        return now + (1.0 - tokens) / self.rate

    def grant(self, now: float) -> str | None:
        """Hand the next turn out, if a token is available and a room waits.

        Returns:
            The stalest waiting room, which is no longer waiting; or None.
        """
        self._tokens = self._refilled(now)
        self._last = max(self._last, now)
        if self._tokens < 1.0 - _EPSILON:
            return None
        while self._heap:
            _, seq, room_id = heapq.heappop(self._heap)
            if self._wanted.get(room_id) != seq:
                continue  # withdrawn (or asked again later)
            del self._wanted[room_id]
            self._tokens = max(0.0, self._tokens - 1.0)
            self.granted += 1
            return room_id
        return None

    def _refilled(self, now: float) -> float:
        elapsed = max(0.0, now - self._last)
        return min(self.burst, self._tokens + elapsed * self.rate)
