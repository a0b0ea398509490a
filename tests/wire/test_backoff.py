"""Tests for the sans-io reconnect policies (protocol, "Reconnection").

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from band_trio.wire.backoff import (
    CloseAction,
    FirstConnectPolicy,
    ReconnectPolicy,
    RetryDecision,
    classify_close,
    first_connect_status_is_terminal,
    reconnect_status_is_terminal,
)


def const(value: float) -> Callable[[], float]:
    return lambda: value


def seq(*values: float) -> Callable[[], float]:
    it = iter(values)
    return lambda: next(it)


# ----------------------------------------------------------------- first connect


def test_first_connect_unreachable_platform_schedule() -> None:
    # With the jitter at its maximum the floors still dominate: 1, 5, 10, 20, 30 … 60,
    # and the 10th rapid failure ends the session ("First connect of a session": about 4.6 minutes).
    policy = FirstConnectPolicy(random=const(0.999))
    now = 0.0
    delays = []
    for _ in range(9):
        decision = policy.failure(now)
        assert not decision.give_up
        delays.append(decision.delay)
        now += decision.delay
    assert delays == pytest.approx([1, 5, 10, 20, 30, 40, 50, 60, 60], abs=0.1)
    assert policy.failure(now) == RetryDecision.stop("rapid_disconnect")
    assert 270 < now < 300


def test_first_connect_full_jitter_above_the_floor() -> None:
    policy = FirstConnectPolicy(random=const(0.5), rapid_uptime=0.0)
    # Not rapid (rapid_uptime 0): pure full jitter U(0,1) x min(30, 2^n).
    assert [policy.failure(float(i), uptime=1.0).delay for i in range(7)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        15.0,
        15.0,
    ]


def test_first_connect_zero_jitter_uses_the_floor() -> None:
    policy = FirstConnectPolicy(random=const(0.0))
    assert policy.failure(0.0).delay == 1.0
    assert policy.failure(1.0).delay == 5.0


@pytest.mark.parametrize("status", [400, 403, 409])
def test_first_connect_terminal_statuses(status: int) -> None:
    assert first_connect_status_is_terminal(status)
    assert FirstConnectPolicy().failure(0.0, status=status) == RetryDecision.stop(f"http_{status}")


@pytest.mark.parametrize("status", [401, 404, 429, 500, 503])
def test_first_connect_retried_statuses(status: int) -> None:
    assert not first_connect_status_is_terminal(status)
    assert not FirstConnectPolicy().failure(0.0, status=status).give_up


def test_first_connect_retry_after_is_a_minimum() -> None:
    policy = FirstConnectPolicy(random=const(0.0))
    assert policy.failure(0.0, status=429, retry_after=42.0).delay == 42.0
    assert policy.failure(42.0, status=503, retry_after=1.0).delay == 5.0


def test_first_connect_retry_after_beyond_the_window_keeps_the_session_alive() -> None:
    policy = FirstConnectPolicy(random=const(0.0))
    now = 0.0
    for _ in range(50):
        decision = policy.failure(now, status=429, retry_after=400.0)
        assert not decision.give_up
        now += decision.delay
    assert policy.rapid_failures == 1


def test_first_connect_rapid_failures_expire_from_the_window() -> None:
    policy = FirstConnectPolicy(random=const(0.0))
    for i in range(9):
        assert not policy.failure(float(i)).give_up
    # 301 s later the old failures are out of the window.
    assert not policy.failure(400.0).give_up
    assert policy.rapid_failures == 1


def test_first_connect_stable_connection_resets() -> None:
    policy = FirstConnectPolicy(random=const(0.999))
    for i in range(5):
        policy.failure(float(i))
    decision = policy.failure(10.0, uptime=60.0)
    assert policy.rapid_failures == 0
    assert decision.delay == pytest.approx(0.999)


# ----------------------------------------------------------------- reconnect


def test_reconnect_examples_from_the_reference() -> None:
    # A 1001 close after 0.3 s of uptime: first rapid drop, floor 2 s, equal jitter -> U(1, 2).
    low = ReconnectPolicy(random=const(0.0)).connection_lost(0.0, uptime=0.3, close_code=1001)
    high = ReconnectPolicy(random=const(0.999999)).connection_lost(0.0, uptime=0.3, close_code=1001)
    assert low.delay == 1.0
    assert high.delay == pytest.approx(2.0)
    # A second rapid drop (watchdog close after 2.5 s): floor 10 s -> U(5, 10).
    policy = ReconnectPolicy(random=const(0.0))
    policy.connection_lost(0.0, uptime=0.3, close_code=1001)
    assert policy.connection_lost(5.0, uptime=2.5, close_code=4000).delay == 5.0


def test_reconnect_exponential_equal_jitter_without_rapid_drops() -> None:
    policy = ReconnectPolicy(random=const(1.0), rapid_uptime=0.0)
    delays = [policy.connection_lost(float(i), uptime=10.0).delay for i in range(8)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    policy = ReconnectPolicy(random=const(0.0), rapid_uptime=0.0)
    delays = [policy.connection_lost(float(i), uptime=10.0).delay for i in range(3)]
    assert delays == [0.25, 0.5, 1.0]


def test_reconnect_long_lived_connection_resets_attempts() -> None:
    policy = ReconnectPolicy(random=const(1.0))
    for i in range(4):
        policy.connection_lost(float(i), uptime=10.0)
    assert policy.attempt == 4
    assert policy.connection_lost(100.0, uptime=60.0).delay == 0.5
    assert policy.attempt == 1
    assert policy.rapid_drops == 0


def test_reconnect_rapid_floors_and_hold_down() -> None:
    policy = ReconnectPolicy(random=const(0.0))
    # floors 2, 10, 60 (hold-down jitter from the 3rd rapid drop: 0.25 d), 90, 120 ...
    assert policy.connect_failed(0.0).delay == 1.0
    assert policy.connect_failed(1.0).delay == 5.0
    assert policy.connect_failed(2.0).delay == 15.0
    assert policy.connect_failed(3.0).delay == 22.5
    assert ReconnectPolicy.floor(20) == 300.0


def test_reconnect_suppressed_after_ten_rapid_drops_in_a_minute() -> None:
    policy = ReconnectPolicy(random=const(0.0))
    for i in range(9):
        assert not policy.connection_lost(float(i), uptime=0.1).give_up
    assert policy.connection_lost(9.0, uptime=0.1) == RetryDecision.stop("suppressed")


def test_reconnect_rapid_window_slides() -> None:
    policy = ReconnectPolicy(random=const(0.0))
    for i in range(9):
        policy.connection_lost(float(i), uptime=0.1)
    assert not policy.connection_lost(200.0, uptime=0.1).give_up
    assert policy.rapid_drops == 1


@pytest.mark.parametrize(
    ("code", "action"),
    [
        (None, CloseAction.RECONNECT),
        (1000, CloseAction.RECONNECT),
        (1001, CloseAction.RECONNECT),
        (1006, CloseAction.RECONNECT),
        (4000, CloseAction.RECONNECT),
        (1008, CloseAction.TERMINAL),
        (1012, CloseAction.SERVICE_RESTART),
        (1013, CloseAction.TRY_AGAIN_LATER),
    ],
)
def test_close_classification(code: int | None, action: CloseAction) -> None:
    assert classify_close(code) is action


def test_close_1008_is_terminal() -> None:
    assert ReconnectPolicy().connection_lost(
        0.0, uptime=100.0, close_code=1008
    ) == RetryDecision.stop("close_1008")


def test_close_1012_and_1013_floors() -> None:
    # Stable connection: base delay 0.25 s with r=0, then the extra floor U(1,5) / U(30,60).
    assert ReconnectPolicy(random=seq(0.0, 0.5)).connection_lost(
        0.0, uptime=100.0, close_code=1012
    ).delay == pytest.approx(3.0)
    assert ReconnectPolicy(random=seq(0.0, 0.5)).connection_lost(
        0.0, uptime=100.0, close_code=1013
    ).delay == pytest.approx(45.0)


def test_reconnect_statuses() -> None:
    assert reconnect_status_is_terminal(403)
    assert ReconnectPolicy().connect_failed(0.0, status=403) == RetryDecision.stop("http_403")
    for status in (400, 401, 409, 429, 503):
        assert not reconnect_status_is_terminal(status)
        assert not ReconnectPolicy().connect_failed(0.0, status=status).give_up


def test_reconnect_honours_retry_after() -> None:
    policy = ReconnectPolicy(random=const(0.0))
    assert policy.connect_failed(0.0, status=429, retry_after=17.0).delay == 17.0


def test_bad_random_source_is_rejected() -> None:
    with pytest.raises(ValueError, match="random source"):
        ReconnectPolicy(random=const(2.0)).connect_failed(0.0)


# ----------------------------------------------------------------- properties

failures = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=120),  # time since previous failure
        st.floats(min_value=0, max_value=200),  # uptime
        st.sampled_from([None, 1000, 1001, 1006, 1012, 1013, 4000]),
        st.floats(min_value=0, max_value=1),  # random
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200)
@given(failures)
def test_reconnect_delay_bounds(steps: list[tuple[float, float, int | None, float]]) -> None:
    now = 0.0
    randoms: list[float] = []
    policy = ReconnectPolicy(random=lambda: randoms.pop(0))
    for gap, uptime, code, r in steps:
        now += gap
        randoms[:] = [r, r]
        attempt_before = 0 if uptime >= 60 else policy.attempt
        decision = policy.connection_lost(now, uptime=uptime, close_code=code)
        if decision.give_up:
            assert decision.reason == "suppressed"
            assert policy.rapid_drops >= 10
            return
        rapid = policy.rapid_drops if uptime < 5 else 0
        d = max(min(30.0, 0.5 * 2**attempt_before), ReconnectPolicy.floor(rapid))
        low = 0.25 if policy.rapid_drops >= 3 else 0.5
        lower = low * d
        if code == 1012:
            lower = max(lower, 1.0)
        if code == 1013:
            lower = max(lower, 30.0)
        upper = max(d, 5.0 if code == 1012 else 60.0 if code == 1013 else 0.0)
        assert lower - 1e-9 <= decision.delay <= upper + 1e-9
        assert 0 < decision.delay <= 300.0
        now += decision.delay


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=400),
            st.floats(min_value=0, max_value=1),
            st.none() | st.floats(min_value=0, max_value=1000),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_first_connect_delay_bounds(steps: list[tuple[float, float, float | None]]) -> None:
    now = 0.0
    current = [0.0]
    policy = FirstConnectPolicy(random=lambda: current[0])
    for n, (gap, r, retry_after) in enumerate(steps):
        now += gap
        current[0] = r
        decision = policy.failure(now, retry_after=retry_after)
        if decision.give_up:
            assert policy.rapid_failures >= 10
            return
        floor = FirstConnectPolicy.floor(policy.rapid_failures)
        exponential = min(30.0, 2.0**n)
        assert decision.delay >= floor
        assert decision.delay >= r * exponential - 1e-9
        assert decision.delay <= max(exponential, floor, retry_after or 0.0) + 1e-9
        if retry_after:
            assert decision.delay >= retry_after
        now += decision.delay


def test_a_local_close_is_never_a_rapid_drop() -> None:
    policy = ReconnectPolicy(random=const(1.0))
    # Twelve closes of sockets that lived no time at all: never suppressed,
    # no floors, the plain exponential delay capped at 30 s.
    delays = [policy.closed_locally(float(i), uptime=0.0).delay for i in range(12)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0] + [30.0] * 6
    assert policy.rapid_drops == 0
    # A drop by the platform afterwards still counts as its first rapid drop.
    assert policy.connection_lost(20.0, uptime=0.1).delay == 30.0
    assert policy.rapid_drops == 1


def test_a_local_close_after_a_stable_connection_starts_over() -> None:
    policy = ReconnectPolicy(random=const(0.0))
    for i in range(3):
        policy.connection_lost(float(i), uptime=0.1)
    assert policy.rapid_drops == 3
    decision = policy.closed_locally(100.0, uptime=60.0)
    assert decision.delay == 0.25
    assert (policy.attempt, policy.rapid_drops) == (1, 0)
