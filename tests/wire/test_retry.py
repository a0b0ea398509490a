"""The sans-io retry policy: header parsing and decisions, with Hypothesis properties."""

from __future__ import annotations

from email.utils import formatdate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from band_trio.wire.retry import (
    RetryPolicy,
    parse_retry_after,
    server_requested_delay,
    status_leaves_outcome_unknown,
    status_proves_nothing_done,
)

NOW = 1_800_000_000.0
EXACT = RetryPolicy(jitter=0.0, backoff_base=1.0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"RETRY-AFTER": "0"}, 0.0),
        ({"Retry-After": formatdate(NOW + 42, usegmt=True)}, 42.0),
        ({"Retry-After": formatdate(NOW - 42, usegmt=True)}, 0.0),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"retry-after-ms": "junk", "Retry-After": "9"}, 9.0),
        ({"Retry-After": "-3"}, None),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": ""}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_rate_limit_reset_is_absolute_and_ignored_when_past() -> None:
    assert server_requested_delay({"X-RateLimit-Reset": str(NOW + 12)}, now=NOW) == 12.0
    assert server_requested_delay({"x-ratelimit-reset": str(NOW - 5)}, now=NOW) is None
    assert server_requested_delay({"x-ratelimit-reset": "later"}, now=NOW) is None
    # Retry-After wins over the reset time.
    both = {"Retry-After": "3", "X-RateLimit-Reset": str(NOW + 30)}
    assert server_requested_delay(both, now=NOW) == 3.0


def _status(
    policy: RetryPolicy,
    status: int,
    *,
    idempotent: bool,
    attempt: int = 0,
    headers: dict[str, str] | None = None,
    random: float = 0.5,
) -> float | None:
    return policy.after_status(
        attempt=attempt,
        status=status,
        headers=headers or {},
        idempotent=idempotent,
        now=NOW,
        random=random,
    )


@pytest.mark.parametrize("idempotent", [True, False])
def test_429_always_retried(idempotent: bool) -> None:
    assert _status(EXACT, 429, idempotent=idempotent) == 1.0


@pytest.mark.parametrize(
    "headers", [{"Retry-After": "2"}, {"retry-after-ms": "2000"}, {"Retry-After": "0"}]
)
@pytest.mark.parametrize("idempotent", [True, False])
def test_503_with_retry_after_always_retried(idempotent: bool, headers: dict[str, str]) -> None:
    expected = 0.0 if headers.get("Retry-After") == "0" else 2.0
    assert _status(EXACT, 503, idempotent=idempotent, headers=headers) == expected


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504, 599])
def test_ambiguous_statuses_only_for_idempotent(status: int) -> None:
    assert _status(EXACT, status, idempotent=True) == 1.0
    assert _status(EXACT, status, idempotent=False) is None


@pytest.mark.parametrize(
    "headers",
    [
        {},
        # Not a Retry-After: a rate-limit reset time says nothing about a write.
        {"X-RateLimit-Reset": str(NOW + 5)},
        {"Retry-After": "soon"},
        {"Retry-After": "-1"},
    ],
)
def test_bare_503_leaves_a_write_unknown(headers: dict[str, str]) -> None:
    assert status_leaves_outcome_unknown(503, headers, now=NOW)
    assert not status_proves_nothing_done(503, headers, now=NOW)
    assert _status(EXACT, 503, idempotent=False, headers=headers) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 416, 422, 418])
def test_client_errors_are_final(status: int) -> None:
    assert _status(EXACT, status, idempotent=True) is None


def test_exponential_backoff_without_jitter() -> None:
    delays = [_status(EXACT, 500, idempotent=True, attempt=n) for n in range(4)]
    assert delays == [1.0, 2.0, 4.0, None]


def test_default_backoff_starts_at_half_a_second() -> None:
    # A fifth of the calls failing must not hold every turn for seconds:
    # 0.5, 1, 2 s before the three retries.
    policy = RetryPolicy(jitter=0.0)
    delays = [_status(policy, 503, idempotent=True, attempt=n) for n in range(4)]
    assert delays == [0.5, 1.0, 2.0, None]


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(max_retries=20, jitter=0.0, backoff_cap=10.0)
    assert _status(policy, 503, idempotent=True, attempt=10) == 10.0


def test_server_delay_is_used_capped_and_jittered_upwards() -> None:
    assert _status(EXACT, 429, idempotent=False, headers={"Retry-After": "7"}) == 7.0
    assert _status(EXACT, 429, idempotent=False, headers={"Retry-After": "600"}) == 60.0
    jittered = RetryPolicy()  # jitter 0.1: server waits get +0..20 %
    assert (
        _status(jittered, 429, idempotent=False, headers={"Retry-After": "10"}, random=0.0) == 10.0
    )
    assert _status(
        jittered, 429, idempotent=False, headers={"Retry-After": "10"}, random=0.999
    ) == pytest.approx(11.998)


def test_zero_budget_never_retries() -> None:
    policy = RetryPolicy(max_retries=0)
    assert _status(policy, 503, idempotent=True) is None
    assert (
        policy.after_transport_error(attempt=0, maybe_sent=False, idempotent=True, random=0.5)
        is None
    )


@pytest.mark.parametrize(
    ("maybe_sent", "idempotent", "retried"),
    [(False, False, True), (False, True, True), (True, True, True), (True, False, False)],
)
def test_transport_errors(maybe_sent: bool, idempotent: bool, retried: bool) -> None:
    delay = EXACT.after_transport_error(
        attempt=0, maybe_sent=maybe_sent, idempotent=idempotent, random=0.5
    )
    assert (delay is not None) is retried
    if retried:
        assert delay == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"backoff_base": -1.0},
        {"jitter": 1.5},
        {"server_delay_cap": float("inf")},
    ],
)
def test_invalid_policy_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


_header_values = st.one_of(
    st.text(max_size=12),
    st.integers(-100, 10_000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.integers(-1000, 100_000).map(lambda d: formatdate(NOW + d, usegmt=True)),
)


@settings(max_examples=300)
@given(
    attempt=st.integers(0, 10),
    status=st.integers(400, 599),
    idempotent=st.booleans(),
    random=st.floats(0.0, 1.0, exclude_max=True),
    headers=st.dictionaries(
        st.sampled_from(["Retry-After", "retry-after-ms", "X-RateLimit-Reset", "other"]),
        _header_values,
        max_size=3,
    ),
    jitter=st.floats(0.0, 1.0),
)
def test_status_decisions_are_safe_and_bounded(
    attempt: int,
    status: int,
    idempotent: bool,
    random: float,
    headers: dict[str, str],
    jitter: float,
) -> None:
    policy = RetryPolicy(jitter=jitter)
    delay = policy.after_status(
        attempt=attempt,
        status=status,
        headers=headers,
        idempotent=idempotent,
        now=NOW,
        random=random,
    )
    if delay is None:
        return
    assert attempt < policy.max_retries
    assert 0.0 <= delay <= max(policy.server_delay_cap, policy.backoff_cap)
    # A non-idempotent request is retried only on the statuses that prove
    # nothing happened: 429, or 503 saying when to come back.
    if not idempotent:
        assert status == 429 or (status == 503 and parse_retry_after(headers, now=NOW) is not None)
    assert status in (408, 429) or status >= 500


@settings(max_examples=300)
@given(
    status=st.integers(100, 599),
    headers=st.dictionaries(
        st.sampled_from(["Retry-After", "retry-after-ms", "X-RateLimit-Reset", "other"]),
        _header_values,
        max_size=3,
    ),
)
def test_every_status_is_proof_ambiguous_or_final(status: int, headers: dict[str, str]) -> None:
    proof = status_proves_nothing_done(status, headers, now=NOW)
    unknown = status_leaves_outcome_unknown(status, headers, now=NOW)
    assert not (proof and unknown)
    assert proof == (
        status == 429 or (status == 503 and parse_retry_after(headers, now=NOW) is not None)
    )
    assert unknown == (not proof and (status == 408 or status >= 500))
    # A write is retried exactly on proof; an idempotent request on either.
    write = _status(EXACT, status, idempotent=False, headers=headers)
    read = _status(EXACT, status, idempotent=True, headers=headers)
    assert (write is not None) == proof
    assert (read is not None) == (proof or unknown)


@settings(max_examples=200)
@given(
    attempt=st.integers(0, 100),
    random=st.floats(0.0, 1.0, exclude_max=True),
    jitter=st.floats(0.0, 1.0),
)
def test_backoff_stays_within_jitter_band(attempt: int, random: float, jitter: float) -> None:
    policy = RetryPolicy(jitter=jitter, max_retries=200)
    delay = policy.backoff(attempt, random)
    nominal = min(policy.backoff_cap, policy.backoff_base * 2.0**attempt)
    assert (
        nominal * (1 - jitter) - 1e-9
        <= delay
        <= min(policy.backoff_cap, nominal * (1 + jitter)) + 1e-9
    )
