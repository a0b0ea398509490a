"""The sans-io cores that pace reconciles across rooms: the idle budget
(rate ceiling, stalest room first) and the bulk-reconcile queue (bounded, most
recently active first)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from band_trio.errors import BandConfigError
from band_trio.runtime.core._bulk_reconcile import BulkReconcileQueue
from band_trio.runtime.core._reconcile_budget import ReconcileBudget

ROOMS = [f"r{i}" for i in range(8)]


# ---------------------------------------------------------------- ReconcileBudget


def test_budget_grants_the_stalest_room_first() -> None:
    budget = ReconcileBudget(rate=1.0, now=0.0, burst=3.0)
    budget.want("fresh", stale_since=50.0)
    budget.want("old", stale_since=10.0)
    budget.want("middle", stale_since=30.0)
    assert [budget.grant(100.0) for _ in range(3)] == ["old", "middle", "fresh"]
    assert budget.grant(100.0) is None
    assert budget.next_grant_at(100.0) == math.inf


def test_budget_paces_grants_at_its_rate() -> None:
    budget = ReconcileBudget(rate=2.0, now=0.0)
    for i, room in enumerate(ROOMS):
        budget.want(room, stale_since=float(i))
    assert budget.grant(0.0) == "r0"
    assert budget.grant(0.0) is None
    assert budget.next_grant_at(0.0) == pytest.approx(0.5)
    assert budget.grant(0.5) == "r1"


def test_a_withdrawn_room_is_not_granted() -> None:
    budget = ReconcileBudget(rate=10.0, now=0.0, burst=5.0)
    budget.want("a", 1.0)
    budget.want("b", 2.0)
    budget.withdraw("a")
    assert budget.grant(0.0) == "b"
    assert budget.grant(0.0) is None
    assert budget.waiting == 0


def test_asking_twice_keeps_the_first_place() -> None:
    budget = ReconcileBudget(rate=10.0, now=0.0, burst=5.0)
    budget.want("a", 5.0)
    budget.want("b", 3.0)
    budget.want("a", 1.0)  # already waiting: no new place
    assert [budget.grant(0.0), budget.grant(0.0)] == ["b", "a"]


def test_the_notice_bound_grows_with_rooms_over_rate() -> None:
    bound = ReconcileBudget.notice_bound(rooms=10_000, rate=4.0, max_interval=120.0)
    assert bound == 120.0 + 2500.0


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1.0), (-1.0, 1.0), (math.inf, 1.0), (1.0, 0.5)])
def test_budget_rejects_bad_knobs(rate: float, burst: float) -> None:
    with pytest.raises(BandConfigError):
        ReconcileBudget(rate=rate, now=0.0, burst=burst)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(min_value=0.1, max_value=50.0),
    burst=st.integers(min_value=1, max_value=5),
    steps=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=3.0),  # time advance
            st.sampled_from(ROOMS),
            st.sampled_from(["want", "withdraw", "grant"]),
            st.floats(min_value=0.0, max_value=1000.0),  # stale_since
        ),
        max_size=120,
    ),
)
def test_grants_never_exceed_the_ceiling(
    rate: float, burst: int, steps: list[tuple[float, str, str, float]]
) -> None:
    """Over any window [a, b], at most ``burst + rate * (b - a)`` grants, each to
    a room that was waiting, and always the stalest one waiting."""
    budget = ReconcileBudget(rate=rate, now=0.0, burst=float(burst))
    now = 0.0
    waiting: dict[str, float] = {}
    grant_times: list[float] = []
    for advance, room, action, since in steps:
        now += advance
        if action == "want":
            budget.want(room, since)
            waiting.setdefault(room, since)
        elif action == "withdraw":
            budget.withdraw(room)
            waiting.pop(room, None)
        else:
            granted = budget.grant(now)
            if granted is not None:
                assert granted in waiting
                assert waiting[granted] == min(waiting.values())
                del waiting[granted]
                grant_times.append(now)
        assert budget.waiting == len(waiting)
        assert budget.next_grant_at(now) >= now
    for i, start in enumerate(grant_times):
        for j in range(i, len(grant_times)):
            window = grant_times[j] - start
            assert j - i + 1 <= burst + rate * window + 1e-6


@settings(max_examples=100, deadline=None)
@given(rooms=st.integers(min_value=1, max_value=60), rate=st.floats(min_value=0.5, max_value=20))
def test_every_waiting_room_is_granted_within_rooms_over_rate(rooms: int, rate: float) -> None:
    """Rooms that keep asking again once served: none waits longer than
    ``rooms / rate`` (the wait part of the documented notice bound)."""
    budget = ReconcileBudget(rate=rate, now=0.0)
    asked: dict[str, float] = {}
    now = 0.0
    for i in range(rooms):
        budget.want(f"r{i}", stale_since=0.0)
        asked[f"r{i}"] = now
    for _ in range(rooms * 3):
        now = budget.next_grant_at(now)
        granted = budget.grant(now)
        assert granted is not None
        assert now - asked[granted] <= rooms / rate + 1e-6
        budget.want(granted, stale_since=now)
        asked[granted] = now


# ---------------------------------------------------------------- BulkReconcileQueue


def test_bulk_reconciles_go_most_recently_active_first() -> None:
    queue = BulkReconcileQueue(1)
    assert queue.request("quiet", last_active=-math.inf) == ["quiet"]
    assert queue.request("old", last_active=10.0) == []
    assert queue.request("recent", last_active=90.0) == []
    assert queue.request("never", last_active=-math.inf) == []
    assert queue.release("quiet") == ["recent"]
    assert queue.release("recent") == ["old"]
    assert queue.release("old") == ["never"]
    assert queue.release("never") == []


def test_a_room_waiting_or_running_asks_once() -> None:
    queue = BulkReconcileQueue(1)
    assert queue.request("a", 0.0) == ["a"]
    assert queue.request("a", 5.0) == []
    assert queue.request("b", 0.0) == []
    assert queue.request("b", 9.0) == []
    assert queue.waiting == 1
    assert queue.release("b") == []  # withdrawn while waiting
    assert queue.release("a") == []
    assert queue.running == frozenset()


def test_bulk_reconcile_queue_rejects_a_bad_limit() -> None:
    with pytest.raises(BandConfigError):
        BulkReconcileQueue(0)


class BulkReconcileQueueMachine(RuleBasedStateMachine):
    """Never more than ``limit`` running; a free place never idles while a room
    waits; a grant always goes to the most recently active room waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.limit = 3
        self.queue = BulkReconcileQueue(self.limit)
        self.running: set[str] = set()
        self.waiting: dict[str, float] = {}

    def _take(self, granted: list[str]) -> None:
        for room in granted:
            assert room in self.waiting
            assert self.waiting[room] == max(self.waiting.values())
            del self.waiting[room]
            self.running.add(room)

    @rule(room=st.sampled_from(ROOMS), active=st.floats(min_value=-1e6, max_value=1e6))
    def request(self, room: str, active: float) -> None:
        if room not in self.running and room not in self.waiting:
            self.waiting[room] = active
        self._take(self.queue.request(room, active))

    @precondition(lambda self: bool(self.running))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        room = data.draw(st.sampled_from(sorted(self.running)))
        self.running.discard(room)
        self._take(self.queue.release(room))

    @rule(room=st.sampled_from(ROOMS))
    def withdraw(self, room: str) -> None:
        self.running.discard(room)
        self.waiting.pop(room, None)
        self._take(self.queue.release(room))

    @invariant()
    def bounded_and_busy(self) -> None:
        assert self.queue.running == frozenset(self.running)
        assert len(self.running) <= self.limit
        assert self.queue.waiting == len(self.waiting)
        if self.waiting:
            assert len(self.running) == self.limit


TestBulkReconcileQueueMachine = BulkReconcileQueueMachine.TestCase
