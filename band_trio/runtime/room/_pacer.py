"""``RoomPacer``: the agent-wide pace of room reconciles (the Trio shell).

Two sans-io cores decide, this shell carries their decisions out:

* :class:`~band_trio.runtime.core._bulk_reconcile.BulkReconcileQueue` bounds the bulk reconciles
  owed at start-up and after a reconnect (``AgentConfig.max_parallel_drains``
  at once, the most recently active rooms first);
* :class:`~band_trio.runtime.core._reconcile_budget.ReconcileBudget` caps the idle
  reconciles of all rooms together at ``AgentConfig.idle_reconcile_rate`` per
  second, stalest room first.

Rooms never block on the pacer: they ask, keep serving their inbox, and are
told by a call (:meth:`PacedRoom.grant_bulk`, :meth:`PacedRoom.grant_idle`)
when their turn comes. The pacer also keeps the reconnect *epoch*: a counter
bumped on every reconnect, so a room knows whether the reconcile it ran started
after the latest reconnect (then a second one is not needed).

It is also the rooms' one clock: a room waiting for its next reconcile does
not hold a cancel scope and a deadline of its own (ten thousand idle rooms
would be ten thousand of each); it asks :meth:`RoomPacer.wake_at`, and the
pacer calls :meth:`PacedRoom.wake_due` when that time comes.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Protocol, TypeGuard

import trio

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._bulk_reconcile import BulkReconcileQueue
from band_trio.runtime.core._reconcile_budget import ReconcileBudget

__all__ = ["PacedRoom", "RoomPacer"]


class PacedRoom(Protocol):
    """What the pacer needs from a room."""

    @property
    def room_id(self) -> str:
        """The room."""
        ...

    def grant_bulk(self) -> None:
        """The room may run its bulk reconcile now (never blocks)."""
        ...

    def grant_idle(self) -> None:
        """The room may run its idle reconcile now (never blocks)."""
        ...

    def wake_due(self) -> None:
        """The time the room asked for (:meth:`RoomPacer.wake_at`) has come (never blocks)."""
        ...


class RoomPacer:
    """Bounds bulk reconciles and budgets idle reconciles for all rooms of one agent.

    Args:
        config: the runtime knobs (``max_parallel_drains``, ``idle_reconcile_rate``).
    """

    def __init__(self, config: AgentConfig) -> None:
        self._bulk = BulkReconcileQueue(config.max_parallel_drains)
        self._budget = ReconcileBudget(
            rate=config.idle_reconcile_rate, now=_now_or_zero(), burst=1.0
        )
        self._bulk_rooms: dict[str, PacedRoom] = {}
        self._idle_rooms: dict[str, PacedRoom] = {}
        self._granting: deque[str] = deque()
        self._in_grant = False
        self._wake = trio.Event()
        self._sleeping_until = -math.inf
        # (when, seq, room id): a room's request is the entry whose seq is the
        # one in _wakers; older entries are skipped when they surface. Entries
        # name the room rather than hold it, so a room that has left is not
        # kept alive until its old time comes.
        self._timers: list[tuple[float, int, str]] = []
        self._wakers: dict[str, tuple[int, PacedRoom]] = {}
        self._seq = 0
        self.epoch = 0
        """Bumped on every reconnect (see :meth:`next_epoch`)."""

    @property
    def budget(self) -> ReconcileBudget:
        """The idle-reconcile budget (read its counters; do not drive it)."""
        return self._budget

    @property
    def bulk(self) -> BulkReconcileQueue:
        """The bulk-reconcile queue (read its state; do not drive it)."""
        return self._bulk

    def next_epoch(self) -> int:
        """A reconnect happened: every reconcile from now on counts for it."""
        self.epoch += 1
        return self.epoch

    # ------------------------------------------------------------------ bulk reconciles

    def request_bulk(self, room: PacedRoom, last_active: float) -> None:
        """Queue ``room`` for a bulk reconcile (granted now or later by ``grant_bulk``)."""
        self._bulk_rooms[room.room_id] = room
        self._grant(self._bulk.request(room.room_id, last_active))

    def end_bulk(self, room_id: str) -> None:
        """``room_id`` finished its bulk reconcile, or no longer needs it."""
        self._bulk_rooms.pop(room_id, None)
        self._grant(self._bulk.release(room_id))

    def _grant(self, granted: list[str]) -> None:
        # A room may give its place straight back (it is busy with a turn),
        # which grants the next room: a loop, not a recursion.
        self._granting.extend(granted)
        if self._in_grant:
            return
        self._in_grant = True
        try:
            while self._granting:
                room = self._bulk_rooms.get(self._granting.popleft())
                if room is not None:
                    room.grant_bulk()
        finally:
            self._in_grant = False

    # ------------------------------------------------------------------ idle budget

    def want_idle(self, room: PacedRoom, stale_since: float) -> None:
        """``room`` is due for an idle reconcile (granted later by ``grant_idle``)."""
        self._idle_rooms[room.room_id] = room
        self._budget.want(room.room_id, stale_since)
        self._wake.set()

    def withdraw_idle(self, room_id: str) -> None:
        """``room_id`` reconciled for another reason, or left."""
        self._idle_rooms.pop(room_id, None)
        self._budget.withdraw(room_id)

    def forget(self, room_id: str) -> None:
        """``room_id`` stopped being served: drop it from every queue."""
        self.withdraw_idle(room_id)
        self.end_bulk(room_id)
        self.cancel_wake(room_id)

    # ------------------------------------------------------------------ room timers

    def wake_at(self, room: PacedRoom, when: float) -> None:
        """Call ``room.wake_due()`` at ``when`` (replaces the room's earlier request)."""
        self._seq += 1
        self._wakers[room.room_id] = (self._seq, room)
        heapq.heappush(self._timers, (when, self._seq, room.room_id))
        self._compact_timers()
        if when < self._sleeping_until:
            self._wake.set()

    def cancel_wake(self, room_id: str) -> None:
        """Drop ``room_id``'s pending :meth:`wake_at` request, if any."""
        if self._wakers.pop(room_id, None) is not None:
            self._compact_timers()

    def _compact_timers(self) -> None:
        # Replaced and cancelled requests leave entries behind: drop them once
        # they outnumber the live ones, so the heap stays within twice the
        # rooms waiting (plus a little) whatever the churn.
        if len(self._timers) > 2 * len(self._wakers) + 64:
            wakers = self._wakers
            self._timers = [t for t in self._timers if _live(wakers.get(t[2]), t[1])]
            heapq.heapify(self._timers)

    def _fire_timers(self, now: float) -> None:
        timers, wakers = self._timers, self._wakers
        while timers and timers[0][0] <= now:
            _, seq, room_id = heapq.heappop(timers)
            waker = wakers.get(room_id)
            if _live(waker, seq):
                del wakers[room_id]
                waker[1].wake_due()

    async def run(self) -> None:
        """Hand idle reconciles out at the budget's pace and wake rooms at the
        times they asked for, until cancelled."""
        while True:
            now = trio.current_time()
            self._fire_timers(now)
            room_id = self._budget.grant(now)
            if room_id is not None:
                room = self._idle_rooms.pop(room_id, None)
                if room is not None:
                    room.grant_idle()
                continue
            self._wake = trio.Event()
            until = self._budget.next_grant_at(now)
            if self._timers:
                until = min(until, self._timers[0][0])
            self._sleeping_until = until
            try:
                with trio.move_on_at(until):
                    await self._wake.wait()
            finally:
                self._sleeping_until = -math.inf


def _live(waker: tuple[int, PacedRoom] | None, seq: int) -> TypeGuard[tuple[int, PacedRoom]]:
    return waker is not None and waker[0] == seq


def _now_or_zero() -> float:
    try:
        return trio.current_time()
    except RuntimeError:
        return 0.0
