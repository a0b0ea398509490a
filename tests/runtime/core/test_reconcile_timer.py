"""ReconcileTimer: the idle timer plus the backoff of deferred messages."""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._reconcile_timer import ReconcileTimer
from band_trio.runtime.core._schedule import ReconcileOutcome, ReconcileSchedule

BASE = 30.0
RETRY = 1.0
CAP = 8.0

events = st.lists(
    st.tuples(
        st.sampled_from(("after", "work", "stop", "play")),
        st.sampled_from(ReconcileOutcome),
        st.floats(min_value=0.0, max_value=100.0),
    ),
    max_size=25,
)


@given(events, st.integers(min_value=0, max_value=2**32 - 1))
def test_due_is_the_idle_timer_or_the_retry_backoff(
    steps: list[tuple[str, ReconcileOutcome, float]], seed: int
) -> None:
    config = AgentConfig(idle_resync_interval=BASE, retry_delay=RETRY, max_retry_delay=CAP)
    schedule = ReconcileTimer(config, random.Random(seed), now=0.0)
    idle = ReconcileSchedule(
        base=config.idle_resync_interval,
        maximum=config.idle_resync_max_interval,
        stopped=config.stopped_resync_interval,
        now=0.0,
        rng=random.Random(seed).random,
    )
    retry_at, delay = math.inf, RETRY
    now = 0.0
    for kind, result, step in steps:
        now += step
        if kind == "after":
            schedule.after(result, now)
            idle.completed(result, now)
            if result is ReconcileOutcome.RETRY:
                retry_at, delay = now + delay, min(delay * 2, CAP)
            else:
                retry_at, delay = math.inf, RETRY
        elif kind == "work":
            schedule.note_work(now)
            idle.note_work(now)
        else:
            schedule.set_stopped(kind == "stop", now)
            idle.set_stopped(kind == "stop", now)
            retry_at, delay = math.inf, RETRY
        assert schedule.due == min(idle.due, retry_at)


class _LateJitter(random.Random):
    """Puts the first idle check at the end of its window."""

    def random(self) -> float:
        return 1.0


def test_retries_back_off_doubling() -> None:
    config = AgentConfig(idle_resync_interval=4.0, retry_delay=0.25)
    schedule = ReconcileTimer(config, _LateJitter(), now=0.0)
    assert schedule.due == 4.0
    delays = []
    now = 0.0
    for _ in range(4):
        schedule.after(ReconcileOutcome.RETRY, now)
        delays.append(schedule.due - now)
        now = schedule.due
    assert delays == [0.25, 0.5, 1.0, 2.0]
    schedule.after(ReconcileOutcome.EMPTY, now)
    schedule.after(ReconcileOutcome.RETRY, now)
    assert schedule.due == now + 0.25  # a clean pass starts the backoff over


def test_a_deferred_message_waits_at_most_the_max_retry_delay() -> None:
    # A mark the platform did not confirm is tried again within
    # max_retry_delay (4 s by default), however often it failed before.
    schedule = ReconcileTimer(AgentConfig(), random.Random(0), now=0.0)
    now, waits = 0.0, []
    for _ in range(10):
        schedule.after(ReconcileOutcome.RETRY, now)
        waits.append(schedule.retry_due - now)
        now = schedule.retry_due
    assert waits == [1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
