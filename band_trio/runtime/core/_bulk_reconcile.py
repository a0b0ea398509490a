"""Which rooms may run their bulk reconcile now (sans-io).

At start-up and after a reconnect every room owes one reconcile pass of
``GET /messages/next``. Running them all at once would put thousands of
requests in flight; running them one by one would keep the last room waiting
for all the others. This queue lets ``limit`` reconciles run at once and hands
the free places to the rooms with the most recent activity first (ties in
the order they asked), so the conversations that are alive are answered
first after a reconnect.

Nothing here reads a clock or blocks: the caller passes the activity times
and carries out the grants it gets back.
"""

from __future__ import annotations

import heapq

from band_trio.errors import BandConfigError

__all__ = ["BulkReconcileQueue"]


class BulkReconcileQueue:
    """A bounded set of running reconciles and a priority queue of waiting ones.

    Args:
        limit: reconciles that may run at once (at least 1).
    """

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BandConfigError(f"limit must be an integer >= 1, got {limit!r}")
        self.limit = limit
        self._running: set[str] = set()
        self._heap: list[tuple[float, int, str]] = []
        self._waiting: dict[str, int] = {}
        self._seq = 0

    @property
    def running(self) -> frozenset[str]:
        """The rooms reconciling now."""
        return frozenset(self._running)

    @property
    def waiting(self) -> int:
        """Rooms waiting for a place."""
        return len(self._waiting)

    def holds(self, room_id: str) -> bool:
        """True while ``room_id`` is waiting or running."""
        return room_id in self._running or room_id in self._waiting

    def request(self, room_id: str, last_active: float) -> list[str]:
        """``room_id`` asks for a place; ``last_active`` is the time of its latest
        activity (more recent goes first). Asking twice changes nothing.

        Returns:
            The rooms granted a place by this call (in grant order).
        """
        if not self.holds(room_id):
            self._seq += 1
            self._waiting[room_id] = self._seq
            heapq.heappush(self._heap, (-last_active, self._seq, room_id))
        return self._fill()

    def release(self, room_id: str) -> list[str]:
        """``room_id`` finished its reconcile, or no longer wants one.

        Returns:
            The rooms granted the freed place (in grant order).
        """
        self._running.discard(room_id)
        self._waiting.pop(room_id, None)
        if not self._waiting:
            self._heap.clear()
        return self._fill()

    def _fill(self) -> list[str]:
        granted: list[str] = []
        while len(self._running) < self.limit and self._heap:
            _, seq, room_id = heapq.heappop(self._heap)
            if self._waiting.get(room_id) != seq:
                continue
            del self._waiting[room_id]
            self._running.add(room_id)
            granted.append(room_id)
        return granted
