"""RoomMachine: a room's flags and the order of its worker's steps, against a
reference model written from the rules the room documents.

The machine is driven the way the room's shell drives it (one worker that
waits, reconciles and runs turns, while the dispatcher and the pacer call in
between its awaits); a small pacer stand-in carries out the :class:`Pace`
bits in the shell's order and keeps the queues the real pacer keeps. The
model says which step comes next, which requests are owed, and which queues
the room must be in.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._room_machine import BulkPlace, Pace, RoomMachine, Step
from band_trio.runtime.core._schedule import ReconcileOutcome

CONFIG = AgentConfig(idle_resync_interval=30.0, retry_delay=1.0, max_retry_delay=8.0)


class PacerStandIn:
    """The queues a ``RoomPacer`` keeps for one room, fed with :class:`Pace` bits."""

    def __init__(self) -> None:
        self.epoch = 0
        self.bulk_queued = False  # asked for a place, not granted yet
        self.bulk_held = False  # granted a place, not given back yet
        self.idle_wanted = False
        self.wake_at = math.inf
        self.forgotten = False

    @property
    def placed(self) -> bool:
        """True while the room is queued for, or holds, a bulk-reconcile place."""
        return self.bulk_queued or self.bulk_held

    def apply(self, pace: int, m: RoomMachine) -> None:
        if pace & Pace.WITHDRAW_IDLE:
            self.idle_wanted = False
        if pace & Pace.END_BULK:
            self.bulk_queued = self.bulk_held = False
        if pace & Pace.REQUEST_BULK:
            assert not self.placed, "asked for a second place"
            self.bulk_queued = True
        if pace & Pace.WANT_IDLE:
            self.idle_wanted = True
        if pace & Pace.WAKE:
            self.wake_at = m.wake_at
        if pace & Pace.FORGET:
            self.forgotten = True
            self.bulk_queued = self.bulk_held = self.idle_wanted = False
            self.wake_at = math.inf


class RoomLife(RuleBasedStateMachine):
    """One paced room: the worker, the dispatcher, the pacer and the controls."""

    PACED = True

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.m = RoomMachine(paced=self.PACED)
        self.m.start(CONFIG, random.Random(0), self.now)
        self.pacer = PacerStandIn()
        # The reference model.
        self.reconcile_wanted = not self.PACED  # unpaced: reconcile at start-up at once
        self.owed: int | None = 0 if self.PACED else None  # the start-up bulk reconcile
        self.stopped = False
        self.fenced = False
        self.deferred = False
        self.synthetic = False
        self.turn = False
        self.in_pass = False
        self.pass_epoch = -1  # the epoch of the pass's latest /next

    # ------------------------------------------------------------------ the model

    def expected_step(self) -> Step:
        if self.fenced:
            return Step.PARK
        if self.synthetic and not self.stopped:
            return Step.SYNTHETIC
        if self.reconcile_wanted:
            return Step.RECONCILE
        if self.owed is not None and not self.pacer.placed:
            return Step.ASK_BULK
        return Step.WAIT

    @property
    def worker_free(self) -> bool:
        return not self.turn and not self.in_pass

    def tick(self, dt: float) -> float:
        self.now += dt
        return self.now

    # ------------------------------------------------------------------ dispatcher and controls

    @rule(refresh=st.booleans())
    def reconcile_asked(self, refresh: bool) -> None:
        self.m.reconcile_asked(refresh_roster=refresh)
        self.reconcile_wanted = True
        if refresh:
            assert self.m.roster_stale

    @precondition(lambda self: self.PACED)
    @rule()
    def reconnect(self) -> None:
        self.pacer.epoch += 1
        placed = self.pacer.placed
        self.pacer.apply(self.m.bulk_reconcile_owed(self.pacer.epoch, refresh_roster=True), self.m)
        self.owed = self.pacer.epoch
        if not self.in_pass and not self.turn:
            # Asked at once (rooms asked in order of activity are served so).
            assert self.pacer.placed
        else:
            # A pass or a turn holds the worker: the worker asks when it is free.
            assert self.pacer.placed == placed
        assert self.m.roster_stale

    @rule()
    def overflow(self) -> None:
        self.m.overflowed()
        self.reconcile_wanted = True
        assert self.m.roster_stale

    @rule()
    def stop(self) -> None:
        self.m.stop(self.tick(0.5))
        self.stopped = True

    @rule()
    def play(self) -> None:
        self.m.play(self.tick(0.5))
        self.stopped = self.deferred = False
        self.reconcile_wanted = True

    @rule()
    def fence(self) -> None:
        self.m.fence()
        self.fenced = True

    @rule()
    def synthetic_queued(self) -> None:
        self.synthetic = True

    # ------------------------------------------------------------------ the pacer

    @precondition(lambda self: self.pacer.bulk_queued)
    @rule()
    def grant_bulk(self) -> None:
        self.pacer.bulk_queued, self.pacer.bulk_held = False, True
        self.pacer.apply(self.m.bulk_granted(), self.m)
        if self.turn:
            assert not self.pacer.bulk_held, "a busy room gives its place back"
        else:
            self.reconcile_wanted = True
            assert self.m.bulk_place == BulkPlace.HELD

    @precondition(lambda self: self.pacer.idle_wanted)
    @rule()
    def grant_idle(self) -> None:
        self.pacer.idle_wanted = False
        self.m.idle_granted()
        self.reconcile_wanted = True

    @precondition(lambda self: not math.isinf(self.pacer.wake_at))
    @rule()
    def wake(self) -> None:
        self.now = max(self.now, self.pacer.wake_at)
        self.pacer.wake_at = math.inf
        self.m.wake_fired()

    # ------------------------------------------------------------------ the worker

    @precondition(lambda self: self.worker_free)
    @rule(refused=st.booleans())
    def worker_step(self, refused: bool) -> None:
        step = self.m.next_step(synthetic_waiting=self.synthetic)
        assert step is self.expected_step()
        if step is Step.SYNTHETIC:
            self.m.turn_started(None)
            assert self.m.turn_running
            self.m.turn_ended()
            if refused:
                self.m.synthetic_refused(self.tick(0.1))
                # Kept at the head; a pending reconcile request waits for the next pass.
                self.reconcile_wanted = False
            else:
                self.synthetic = False
        elif step is Step.RECONCILE:
            self.pacer.apply(self.m.reconcile_started(self.pacer.epoch), self.m)
            self.reconcile_wanted = False
            self.in_pass = True
            self.pass_epoch = self.pacer.epoch
            assert not self.pacer.idle_wanted, "the pass serves as the idle reconcile"
            assert not self.pacer.bulk_queued, "a pass that runs gives a queued place up"
        elif step is Step.ASK_BULK:
            self.pacer.apply(self.m.ask_bulk(), self.m)
            assert self.pacer.bulk_queued
        elif step is Step.WAIT:
            due = self.m.due
            pace = self.m.arm(due, self.now)
            if due <= self.now:
                assert pace is None
                self.timer_fired()
            else:
                assert pace is not None
                self.pacer.apply(pace, self.m)
                assert self.pacer.wake_at == (due if self.PACED else self.pacer.wake_at)

    def timer_fired(self) -> None:
        retry = self.now >= self.m.schedule.retry_due  # type: ignore[union-attr]
        self.pacer.apply(self.m.timer_fired(self.now), self.m)
        if self.PACED and not retry:
            assert self.pacer.idle_wanted
        else:
            self.reconcile_wanted = True

    @precondition(lambda self: self.worker_free and not self.fenced)
    @rule(dt=st.floats(min_value=0.0, max_value=120.0))
    def time_passes(self, dt: float) -> None:
        """The worker waited until its timer (or the pacer's wake) came."""
        if self.m.next_step(synthetic_waiting=self.synthetic) is not Step.WAIT:
            return
        self.tick(dt)
        if self.now >= self.m.due:
            assert self.m.arm(self.m.due, self.now) is None
            self.timer_fired()

    @precondition(lambda self: self.worker_free and not self.fenced)
    @rule(retry=st.booleans(), grant_during_turn=st.booleans())
    def message_pushed(self, retry: bool, grant_during_turn: bool) -> None:
        self.m.message_arrived(self.tick(0.1))
        assert self.m.last_active == self.now
        runs = self.m.runs_pushed_message()
        assert runs == (not self.stopped and not self.deferred)
        if runs:
            self.run_turn(grant_during_turn=grant_during_turn)
            if retry:
                self.m.deferred_message(self.now)
                self.deferred = True

    def run_turn(self, *, grant_during_turn: bool) -> None:
        self.m.turn_started(self.tick(0.1))
        self.turn = True
        assert self.m.last_active == self.now
        if grant_during_turn and self.pacer.bulk_queued:
            self.grant_bulk()
        if grant_during_turn and self.PACED:
            self.reconnect()  # owed, but not asked while the turn holds the worker
        self.m.turn_ended()
        self.turn = False

    @precondition(lambda self: self.in_pass)
    @rule(epoch_moved=st.booleans())
    def pass_finds_work(self, epoch_moved: bool) -> None:
        if epoch_moved and self.PACED:
            self.reconnect()
        self.m.next_asked(self.pacer.epoch)
        self.pass_epoch = self.pacer.epoch
        self.pacer.apply(self.m.work_found(), self.m)
        assert not self.pacer.placed, "work gives the place up"
        self.run_turn(grant_during_turn=epoch_moved)

    @precondition(lambda self: self.in_pass)
    @rule(result=st.sampled_from(ReconcileOutcome))
    def pass_ends(self, result: ReconcileOutcome) -> None:
        self.pacer.apply(self.m.reconcile_finished(result, self.tick(0.1)), self.m)
        self.in_pass = False
        if self.owed is not None and self.pass_epoch >= self.owed:
            self.owed = None  # this pass asked /next after the reconnect that owed it
        # A pass to retry leaves an earlier message waiting: pushes wait for
        # /next order; an emptied or worked mailbox lifts that; a stopped or
        # blocked pass leaves it as it was.
        if result is ReconcileOutcome.RETRY:
            self.deferred = True
        elif result in (ReconcileOutcome.EMPTY, ReconcileOutcome.WORK):
            self.deferred = False
        assert not self.pacer.placed
        assert self.m.last_reconcile == self.now

    # ------------------------------------------------------------------ what must always hold

    @invariant()
    def the_pacer_knows_what_the_room_waits_for(self) -> None:
        if not self.PACED:
            assert self.m.bulk_place == BulkPlace.NONE
            assert not self.m.idle_waiting
            return
        in_queue = self.pacer.placed
        assert in_queue == (self.m.bulk_place != BulkPlace.NONE)
        assert self.pacer.idle_wanted == self.m.idle_waiting

    @invariant()
    def requests_are_never_lost(self) -> None:
        assert self.m.reconcile_requested == self.reconcile_wanted
        owes = self.m.paced and self.m.owed_epoch > self.m.reconciled_epoch
        assert owes == (self.owed is not None)

    @invariant()
    def controls_are_remembered(self) -> None:
        assert self.m.stopped == self.stopped
        assert self.m.fenced == self.fenced
        assert self.m.paused == (self.stopped or self.fenced)
        assert self.m.deferred == self.deferred
        assert self.m.turn_running == self.turn
        assert self.m.reconciling == self.in_pass

    @invariant()
    def the_worker_does_what_the_model_says(self) -> None:
        if self.worker_free:
            assert self.m.next_step(synthetic_waiting=self.synthetic) is self.expected_step()

    def teardown(self) -> None:
        self.pacer.apply(self.m.stopped_serving(), self.m)
        assert math.isinf(self.m.wake_at)
        if self.PACED:
            assert self.pacer.forgotten
            assert self.m.bulk_place == BulkPlace.NONE
            assert not self.m.idle_waiting


class UnpacedRoomLife(RoomLife):
    """A room with no pacer: it reconciles at start-up at once and keeps its own time."""

    PACED = False


SETTINGS = settings(max_examples=150, stateful_step_count=40, deadline=None)
RoomLife.TestCase.settings = SETTINGS
UnpacedRoomLife.TestCase.settings = SETTINGS
test_a_paced_room_follows_the_model = RoomLife.TestCase
test_an_unpaced_room_follows_the_model = UnpacedRoomLife.TestCase


def test_a_room_asks_the_pacer_once_for_one_owed_bulk_reconcile() -> None:
    m = RoomMachine(paced=True)
    m.start(CONFIG, random.Random(0), 0.0)
    assert m.next_step(synthetic_waiting=False) is Step.ASK_BULK  # the start-up reconcile
    assert m.ask_bulk() == Pace.REQUEST_BULK
    assert (
        m.bulk_reconcile_owed(1, refresh_roster=False) == Pace.NOTHING
    )  # merged into the queued one
    assert m.next_step(synthetic_waiting=False) is Step.WAIT
    assert m.bulk_granted() == Pace.NOTHING
    assert m.next_step(synthetic_waiting=False) is Step.RECONCILE
    assert m.reconcile_started(1) == Pace.NOTHING  # a held place stays until work or the end
    assert m.reconcile_finished(ReconcileOutcome.EMPTY, 1.0) == Pace.END_BULK
    assert m.next_step(synthetic_waiting=False) is Step.WAIT  # epoch 1 was reconciled


def test_a_pass_whose_last_next_came_before_a_reconnect_leaves_it_owed() -> None:
    m = RoomMachine(paced=True)
    m.start(CONFIG, random.Random(0), 0.0)
    m.reconcile_asked()
    m.reconcile_started(0)
    m.next_asked(0)
    assert m.bulk_reconcile_owed(1, refresh_roster=True) == Pace.NOTHING  # reconciling: asked after
    m.reconcile_finished(ReconcileOutcome.EMPTY, 1.0)
    assert m.next_step(synthetic_waiting=False) is Step.ASK_BULK


@pytest.mark.parametrize("paced", [True, False])
def test_the_wake_time_is_told_once_per_change(paced: bool) -> None:
    m = RoomMachine(paced=paced)
    m.start(CONFIG, random.Random(0), 0.0)
    assert m.arm(10.0, 0.0) == Pace.WAKE
    assert m.arm(10.0, 1.0) == Pace.NOTHING
    assert m.arm(10.0, 10.0) is None
    m.wake_fired()
    assert m.arm(10.0, 5.0) == Pace.WAKE
