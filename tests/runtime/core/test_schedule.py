"""Reconcile schedule and control de-duplication (sans-io).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.errors import BandConfigError
from band_trio.runtime.core._schedule import (
    ControlDeduplicator,
    ReconcileOutcome,
    ReconcileSchedule,
)

E = ReconcileOutcome.EMPTY
W = ReconcileOutcome.WORK


def make(now: float = 0.0, jitter: float = 0.5, **kw: float | None) -> ReconcileSchedule:
    args: dict[str, float | None] = {"base": 60.0, "maximum": 120.0}
    args.update(kw)
    return ReconcileSchedule(now=now, rng=lambda: jitter, **args)  # type: ignore[arg-type]


@given(st.floats(min_value=0.0, max_value=0.999999), st.floats(min_value=0, max_value=1e6))
def test_first_check_is_jittered_within_base(jitter: float, now: float) -> None:
    # The first reconcile is at a random time within the base interval (official runtime,
    # "Testable behaviours" 54).
    s = make(now=now, jitter=jitter)
    assert now <= s.due <= now + 60.0
    assert s.due == pytest.approx(now + jitter * 60.0)
    assert s.is_due(now) == (s.due <= now)


def test_empty_doubles_up_to_max_and_work_resets() -> None:
    # Empty /next doubles the interval up to the maximum; work resets it (official runtime,
    # "Testable behaviours" 55).
    s = make(jitter=0.0)
    t = 0.0
    intervals = []
    for outcome in (E, E, E, W, E):
        due = s.completed(outcome, t)
        intervals.append(due - t)
        t = due
    assert intervals == [120.0, 120.0, 120.0, 60.0, 120.0]
    s2 = make(base=10.0, maximum=100.0, jitter=0.0)
    t = 0.0
    seen = []
    for _ in range(6):
        due = s2.completed(E, t)
        seen.append(due - t)
        t = due
    assert seen == [20.0, 40.0, 80.0, 100.0, 100.0, 100.0]


@pytest.mark.parametrize(
    "outcome", [ReconcileOutcome.WORK, ReconcileOutcome.BLOCKED, ReconcileOutcome.RETRY]
)
def test_non_empty_outcomes_reset_to_base(outcome: ReconcileOutcome) -> None:
    s = make(base=10.0, maximum=100.0, jitter=0.0)
    s.completed(E, 0.0)
    s.completed(E, 20.0)
    assert s.interval == 40.0
    due = s.completed(outcome, 60.0)
    assert due == 70.0


def test_stopped_interval_never_grows() -> None:
    s = make(base=10.0, maximum=100.0, stopped=30.0, jitter=0.0)
    s.set_stopped(True, 0.0)
    t = 0.0
    for _ in range(4):
        due = s.completed(ReconcileOutcome.STOPPED, t)
        assert due - t == 30.0
        due = s.completed(E, due)
        assert s.interval == 30.0
        t = due


def test_stopped_interval_defaults_to_base() -> None:
    s = make(base=10.0, maximum=100.0, jitter=0.0)
    assert s.completed(ReconcileOutcome.STOPPED, 0.0) == 10.0
    assert s.stopped


def test_play_resets_and_requests_a_check() -> None:
    # PLAY clears the stop and polls /next immediately (official runtime, "Testable behaviours" 87).
    s = make(base=10.0, maximum=100.0, stopped=50.0, jitter=0.9)
    s.set_stopped(True, 0.0)
    s.completed(ReconcileOutcome.STOPPED, 9.0)
    assert s.due == 59.0
    s.set_stopped(False, 20.0)
    assert not s.stopped
    assert s.is_due(20.0)
    assert s.time_until_due(20.0) == 0.0
    assert s.completed(W, 20.0) == 30.0


def test_requests_coalesce_and_never_postpone() -> None:
    # Concurrent resync requests collapse into one pending request (official runtime, "Testable
    # behaviours" 56).
    s = make(jitter=0.5)
    assert s.request(5.0) is True
    assert s.request(6.0) is False
    assert s.is_due(6.0)
    assert s.completed(E, 7.0) == 7.0 + 120.0
    assert not s.requested
    assert s.request(8.0) is True


def test_work_only_pulls_the_due_time_earlier() -> None:
    s = make(base=10.0, maximum=100.0, jitter=0.0)
    s.completed(E, 0.0)
    s.completed(E, 20.0)  # due 60, interval 40
    s.note_work(25.0)
    assert s.due == 35.0
    s.note_work(34.0)
    assert s.due == 35.0  # never postponed
    assert s.interval == 10.0


def test_early_pass_keeps_the_earlier_due_time() -> None:
    s = make(base=10.0, maximum=100.0, jitter=0.0)
    s.completed(E, 0.0)  # due 20
    s.request(5.0)
    assert s.completed(W, 5.0) == 5.0 + 10.0


@given(
    st.lists(st.sampled_from(list(ReconcileOutcome)), max_size=30),
    st.floats(min_value=0.1, max_value=100),
    st.floats(min_value=0.1, max_value=1000),
)
def test_interval_stays_within_bounds(
    outcomes: list[ReconcileOutcome], base: float, maximum: float
) -> None:
    s = ReconcileSchedule(base=base, maximum=maximum, now=0.0, rng=lambda: 0.3)
    t = s.due
    for outcome in outcomes:
        due = s.completed(outcome, t)
        assert due > t
        assert base - 1e-9 <= due - t <= max(base, maximum) + 1e-9
        t = due


def test_time_until_due() -> None:
    s = make(jitter=0.5)
    assert s.time_until_due(10.0) == 20.0
    assert s.time_until_due(100.0) == 0.0
    assert s.is_due(30.0)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "5"])
def test_bad_intervals_are_config_errors(bad: object) -> None:
    with pytest.raises(BandConfigError):
        ReconcileSchedule(base=bad, maximum=10.0, now=0.0)  # type: ignore[arg-type]


def test_maximum_is_raised_to_base() -> None:
    s = ReconcileSchedule(base=10.0, maximum=5.0, now=0.0, rng=lambda: 0.0)
    assert s.maximum == 10.0


# --------------------------------------------------------------------------- control de-dup


def test_duplicate_correlation_id_is_seen_only_after_record() -> None:
    # A duplicate is ignored, but only once the
    # first copy was applied (recorded) (official runtime, "Testable behaviours" 80, 81).
    d = ControlDeduplicator(4)
    assert not d.seen("c1")
    assert not d.seen("c1")  # not applied yet (room not routed): a copy still applies
    d.record("c1")
    assert d.seen("c1")


def test_missing_correlation_id_never_deduplicated() -> None:
    d = ControlDeduplicator()
    d.record(None)
    d.record("")
    assert not d.seen(None)
    assert not d.seen("")
    assert len(d) == 0


def test_lru_bound_refreshed_by_seen() -> None:
    d = ControlDeduplicator(2)
    d.record("a")
    d.record("b")
    assert d.seen("a")  # refresh a
    d.record("c")  # evicts b
    assert "a" in d
    assert "b" not in d
    assert "c" in d


@given(st.lists(st.text(min_size=1, max_size=3), max_size=100), st.integers(1, 10))
def test_dedup_never_exceeds_bound_and_keeps_newest(ids: list[str], size: int) -> None:
    d = ControlDeduplicator(size)
    for cid in ids:
        d.record(cid)
        assert len(d) <= size
        assert d.seen(cid)


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_dedup_size_validated(bad: object) -> None:
    with pytest.raises(BandConfigError):
        ControlDeduplicator(bad)  # type: ignore[arg-type]
