"""The life of one room as a state machine (sans-io).

A :class:`~band_trio.runtime.room.Room` is a Trio shell: it owns the inbox,
the REST calls and the turns' cancel scopes, and it tells a
:class:`RoomMachine` what happened. The machine keeps the room's flags (a
reconcile asked for, a bulk reconcile owed and its place in the agent's queue, an
idle reconcile waited for, a deferred message, stopped, fenced, a turn
running, the time the room asked to be woken at) and answers with what to do
next:

* :meth:`RoomMachine.admit` starts one message's walk through admission
  (:class:`~band_trio.runtime.core._admission.AdmissionWalk`: claim, the
  platform's status, a lookup of an earlier reply, the attempt budget, in
  that order), which the shell feeds until it names a final action;
* :meth:`RoomMachine.next_step` is the order of the worker's steps: park
  once fenced, run a queued synthetic turn, reconcile, ask for a bulk-reconcile
  place, or wait for the next inbox item until :attr:`RoomMachine.due`;
* every event that touches the agent's pace (the bulk-reconcile queue, the
  idle-reconcile budget, the pacer's timers) returns a :class:`Pace` set:
  the pacer calls the shell makes, in one place and in a fixed order
  (``Room._pace``).

The events in: an item arrived (:meth:`~RoomMachine.message_arrived`,
:meth:`~RoomMachine.overflowed`), a turn started and finished
(:meth:`~RoomMachine.turn_started`, :meth:`~RoomMachine.turn_ended`), a
message was settled for later (:meth:`~RoomMachine.deferred_message`), a
REST answer during a reconcile (:meth:`~RoomMachine.next_asked`,
:meth:`~RoomMachine.work_found`, :meth:`~RoomMachine.reconcile_finished`), a
timer fired (:meth:`~RoomMachine.timer_fired`, :meth:`~RoomMachine.wake_fired`),
the pacer's grants (:meth:`~RoomMachine.bulk_granted`,
:meth:`~RoomMachine.idle_granted`) and the control signals
(:meth:`~RoomMachine.stop`, :meth:`~RoomMachine.play`,
:meth:`~RoomMachine.fence`, :meth:`~RoomMachine.reconcile_asked`,
:meth:`~RoomMachine.bulk_reconcile_owed`). The caller passes the time and the
pacer's reconnect epoch; nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import enum
import math
import random
from typing import Final

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._admission import AdmissionWalk
from band_trio.runtime.core._reconcile_pass import deferred_after
from band_trio.runtime.core._reconcile_timer import ReconcileTimer
from band_trio.runtime.core._schedule import ReconcileOutcome

__all__ = ["BulkPlace", "Pace", "RoomMachine", "Step"]


class Step(enum.Enum):
    """What the room's worker does next."""

    PARK = "park"
    """Fenced: stop between two steps and wait to be cancelled."""
    SYNTHETIC = "synthetic"
    """Run the synthetic message at the head of the queue."""
    RECONCILE = "reconcile"
    """Reconcile now (call :meth:`RoomMachine.reconcile_started` first)."""
    ASK_BULK = "ask_bulk"
    """A bulk reconcile is owed: ask the pacer for a place (:meth:`RoomMachine.ask_bulk`)."""
    WAIT = "wait"
    """Wait for the next inbox item until :attr:`RoomMachine.due`."""


class BulkPlace:
    """Where a room stands in the pacer's bulk-reconcile queue."""

    NONE: Final = 0
    WAITING: Final = 1
    HELD: Final = 2


class Pace:
    """The pacer calls an event asks for, as bits of an ``int``.

    The shell carries them out in this order: withdraw from the idle budget,
    give the bulk place up, ask for a bulk place, ask for the idle budget,
    set or cancel the wake-up time (:attr:`RoomMachine.wake_at`), forget the room.
    """

    NOTHING: Final = 0
    WITHDRAW_IDLE: Final = 1
    END_BULK: Final = 2
    REQUEST_BULK: Final = 4
    WANT_IDLE: Final = 8
    WAKE: Final = 16
    FORGET: Final = 32


class RoomMachine:
    """The flags of one room and the order of its worker's steps.

    Args:
        paced: True under an engine's pacer (bulk reconciles wait for a place,
            idle reconciles for the agent-wide budget, the pacer keeps time);
            False for a room that reconciles at once and keeps its own time.
    """

    # One per room, and a process may hold ten thousand rooms.
    __slots__ = (
        "bulk_place",
        "deferred",
        "fenced",
        "idle_waiting",
        "last_active",
        "last_reconcile",
        "next_epoch",
        "owed_epoch",
        "paced",
        "reconcile_requested",
        "reconciled_epoch",
        "reconciling",
        "roster_stale",
        "schedule",
        "stopped",
        "turn_running",
        "wake_at",
    )

    def __init__(self, *, paced: bool) -> None:
        self.paced = paced
        # With a pacer the start-up reconcile is a bulk reconcile (bounded, ordered);
        # without one the room reconciles at once, on its own.
        self.reconcile_requested = not paced
        self.owed_epoch = 0 if paced else -1
        self.reconciled_epoch = -1
        self.next_epoch = -1
        self.bulk_place = BulkPlace.NONE
        self.roster_stale = True
        self.reconciling = False
        self.idle_waiting = False
        self.last_active = -math.inf
        self.last_reconcile = -math.inf
        self.deferred = False
        self.stopped = False
        self.fenced = False
        self.turn_running = False
        self.wake_at = math.inf
        self.schedule: ReconcileTimer | None = None

    def start(self, config: AgentConfig, rng: random.Random, now: float) -> None:
        """The worker started: the room's own reconcile timer begins now."""
        self.schedule = ReconcileTimer(config, rng, now)

    def _schedule(self) -> ReconcileTimer:
        assert self.schedule is not None, "the worker has not started"
        return self.schedule

    # ------------------------------------------------------------------ the worker's steps

    def next_step(self, *, synthetic_waiting: bool) -> Step:
        """The worker's next step, in the order that keeps turns serial."""
        if self.fenced:
            return Step.PARK
        if synthetic_waiting and not self.stopped:
            return Step.SYNTHETIC
        if self.reconcile_requested:
            return Step.RECONCILE
        if (
            self.paced
            and self.owed_epoch > self.reconciled_epoch
            and self.bulk_place == BulkPlace.NONE
        ):
            return Step.ASK_BULK
        return Step.WAIT

    @property
    def due(self) -> float:
        """When the waiting worker starts a reconcile on its own.

        While the room waits for the idle budget only a retry wakes it.
        """
        schedule = self._schedule()
        return schedule.retry_due if self.idle_waiting else schedule.due

    def arm(self, due: float, now: float) -> int | None:
        """The paced worker is about to wait until ``due``.

        Returns:
            None when ``due`` has passed (the timer fires at once), else the
            pacing it needs: :attr:`Pace.WAKE` when the pacer must be told
            the new :attr:`wake_at`.
        """
        if due <= now:
            return None
        if due == self.wake_at:
            return Pace.NOTHING
        self.wake_at = due
        return Pace.WAKE

    def wake_fired(self) -> None:
        """The pacer woke the room at the time it asked for."""
        self.wake_at = math.inf

    def timer_fired(self, now: float) -> int:
        """The worker's wait ran out: the periodic reconcile, or a retry, is due."""
        if self.paced and not self._schedule().retry_is_due(now):
            # The periodic reconcile: ask the agent-wide budget.
            self.idle_waiting = True
            return Pace.WANT_IDLE
        self.reconcile_requested = True
        return Pace.NOTHING

    def worker_failed(self) -> None:
        """The worker caught a bug: it restarts with a reconcile."""
        self.reconcile_requested = True

    def stopped_serving(self) -> int:
        """The worker ended (room removed, agent shutting down)."""
        self.wake_at = math.inf
        if not self.paced:
            return Pace.NOTHING
        self.bulk_place = BulkPlace.NONE
        self.idle_waiting = False
        return Pace.FORGET

    # ------------------------------------------------------------------ arrivals

    def message_arrived(self, now: float) -> None:
        """A ``message_created`` push reached the room."""
        self.last_active = now

    def overflowed(self) -> None:
        """The inbox was full: what was lost is recovered by a reconcile."""
        self.reconcile_requested = True
        self.roster_stale = True

    def runs_pushed_message(self) -> bool:
        """Whether a pushed message runs now (else ``/next`` order recovers it)."""
        # Stopped: left on the platform, replayed after play; deferred: an
        # earlier message waits, and /next order recovers this one.
        return not self.stopped and not self.deferred

    def deferred_message(self, now: float) -> None:
        """A message was left on the platform to retry: later ones wait for it."""
        self.deferred = True
        self._schedule().after(ReconcileOutcome.RETRY, now)

    def synthetic_refused(self, now: float) -> None:
        """The adapter refused the synthetic turn: tried again at the next reconcile."""
        self.reconcile_requested = False
        self._schedule().after(ReconcileOutcome.RETRY, now)

    # ------------------------------------------------------------------ the roster

    def roster_offered(self, complete: bool) -> None:
        """A room listing came; an incomplete roster must be read before a turn."""
        if not complete:
            self.roster_stale = True

    def roster_read(self, ok: bool) -> None:
        """The roster was replaced (``ok``) or could not be (read again later)."""
        self.roster_stale = not ok

    # ------------------------------------------------------------------ control signals

    def reconcile_asked(self, *, refresh_roster: bool = False) -> None:
        """A reconcile pass is asked for soon (many requests, one reconcile)."""
        self.reconcile_requested = True
        if refresh_roster:
            self.roster_stale = True

    def bulk_reconcile_owed(self, epoch: int, *, refresh_roster: bool) -> int:
        """One reconcile that starts after now is owed (start-up, reconnect).

        Call only when :attr:`paced`; ``epoch`` is the pacer's epoch now.
        """
        if refresh_roster:
            self.roster_stale = True
        self.owed_epoch = epoch
        if not self.reconciling and not self.turn_running and self.bulk_place == BulkPlace.NONE:
            # Queued now, so rooms asked in order of activity are served in
            # that order (not in the order their workers happen to wake).
            return self.ask_bulk()
        return Pace.NOTHING

    def ask_bulk(self) -> int:
        """Ask the pacer for a bulk-reconcile place."""
        self.bulk_place = BulkPlace.WAITING
        return Pace.REQUEST_BULK

    def bulk_granted(self) -> int:
        """The pacer gave this room a bulk-reconcile place."""
        if self.turn_running:
            # A turn holds the worker (maybe for long): give the place to a
            # room that can use it now; this one asks again after the turn.
            self.bulk_place = BulkPlace.NONE
            return Pace.END_BULK
        self.bulk_place = BulkPlace.HELD
        self.reconcile_requested = True
        return Pace.NOTHING

    def idle_granted(self) -> None:
        """The pacer gave this room its idle reconcile."""
        self.idle_waiting = False
        self.reconcile_requested = True

    def stop(self, now: float) -> None:
        """A ``stop`` control: claim nothing new until :meth:`play`."""
        self.stopped = True
        if self.schedule is not None:
            self.schedule.set_stopped(True, now)

    def play(self, now: float) -> None:
        """A ``play`` control: resume and reconcile at once."""
        self.stopped = False
        self.deferred = False
        if self.schedule is not None:
            self.schedule.set_stopped(False, now)
        self.reconcile_asked()

    def fence(self) -> None:
        """Shutdown: start no new turn."""
        self.fenced = True

    @property
    def paused(self) -> bool:
        """True when no message may be claimed now (stopped or fenced)."""
        return self.stopped or self.fenced

    # ------------------------------------------------------------------ admission

    def admit(self, *, own: bool) -> AdmissionWalk:
        """A message is offered (pushed, from ``/next`` or from a listing): its
        walk through admission, from this room's state now.

        Args:
            own: the message is this agent's own.
        """
        return AdmissionWalk(own=own, paused=self.paused)

    # ------------------------------------------------------------------ turns

    def turn_started(self, now: float | None) -> None:
        """A turn started (``now`` is None for a synthetic turn, which is no
        activity and does not restart the idle interval)."""
        self.turn_running = True
        if now is not None:
            self.last_active = now
            self._schedule().note_work(now)

    def turn_ended(self) -> None:
        """The running turn ended."""
        self.turn_running = False

    # ------------------------------------------------------------------ reconcile

    def reconcile_started(self, epoch: int) -> int:
        """A reconcile pass starts (``epoch``: the pacer's epoch now, else 0)."""
        self.reconcile_requested = False
        pace = Pace.NOTHING
        if self.paced:
            # Whatever asked for this pass, it also serves as the idle
            # reconcile and the owed bulk reconcile: those requests are merged.
            if self.idle_waiting:
                self.idle_waiting = False
                pace |= Pace.WITHDRAW_IDLE
            if self.bulk_place == BulkPlace.WAITING:
                # Runs now without waiting for a place: give the place up.
                self.bulk_place = BulkPlace.NONE
                pace |= Pace.END_BULK
        self.next_epoch = epoch
        self.reconciling = True
        return pace

    def resumed_by_probe(self, now: float) -> None:
        """``/next`` had work while stopped: a ``play`` was missed."""
        self.stopped = False
        self._schedule().set_stopped(False, now)

    def next_asked(self, epoch: int) -> None:
        """The pass asks ``/next`` again (``epoch``: the pacer's epoch now)."""
        self.next_epoch = epoch

    def work_found(self) -> int:
        """``/next`` answered with a message: the bulk place goes to another room
        (turns can be long; the bound is on idle probing, not on turns)."""
        return self._end_bulk_place()

    def reconcile_finished(self, result: ReconcileOutcome, now: float) -> int:
        """The pass ended with ``result``."""
        # A pass whose last /next was sent after the latest reconnect settles
        # what that reconnect owed (a failed pass is retried on the room's
        # own backoff, not through the bulk queue).
        self.reconciled_epoch = max(self.reconciled_epoch, self.next_epoch)
        self.reconciling = False
        pace = self._end_bulk_place()
        self.last_reconcile = now
        self.deferred = deferred_after(result, self.deferred)
        self._schedule().after(result, now)
        return pace

    def _end_bulk_place(self) -> int:
        pace = Pace.END_BULK if self.bulk_place != BulkPlace.NONE and self.paced else 0
        self.bulk_place = BulkPlace.NONE
        return pace
