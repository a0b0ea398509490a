"""Retries through the client: what is retried, what is never re-sent, how long it
waits (asserted on the autojump clock) and that every wait is cancellable."""

from __future__ import annotations

import time
from email.utils import formatdate
from typing import Any

import httpx
import pytest
import trio

from band_trio.errors import (
    APIStatusError,
    BandConnectionError,
    BandTimeoutError,
    ConflictError,
    InternalServerError,
    OutcomeUnknownError,
    RateLimitError,
    ServiceUnavailableError,
)
from band_trio.wire.models import MentionRequest
from band_trio.wire.retry import RetryPolicy

from .rest_mock import ROOM, Recorder, error, make_client, ok
from .retry_cases import IDEMPOTENT, SENT, WRITES, Call

AMBIGUOUS_FAILURES = [
    httpx.ReadError("reset by peer"),
    httpx.ReadTimeout("read timed out"),
    httpx.WriteError("broken pipe"),
    httpx.WriteTimeout("write timed out"),
    httpx.RemoteProtocolError("server disconnected"),
    error(500, "internal", "oops"),
    error(502, "bad_gateway", "oops"),
    error(504, "timeout", "oops"),
    error(408, "timeout", "oops"),
    # A 503 that does not say when to come back: what a gateway answers when
    # the platform committed the write but the answer was lost.
    error(503, "unavailable", "later"),
]
SAFE_FAILURES = [
    httpx.ConnectError("refused"),
    httpx.ConnectTimeout("connect timed out"),
    httpx.PoolTimeout("no free connection"),
    error(429, "rate_limited", "slow down"),
    error(503, "unavailable", "later", headers={"Retry-After": "1"}),
]


def _name(v: Any) -> str:
    return type(v).__name__ if isinstance(v, Exception) else f"HTTP{v.status_code}"


@pytest.mark.parametrize("failure", AMBIGUOUS_FAILURES, ids=_name)
@pytest.mark.parametrize(("name", "call", "data"), WRITES, ids=[w[0] for w in WRITES])
async def test_write_is_never_resent_after_ambiguous_failure(
    name: str, call: Call, data: Any, failure: Any, autojump_clock: Any
) -> None:
    recorder = Recorder([failure, ok(data)])
    async with make_client(recorder) as rest:
        with pytest.raises((BandConnectionError, APIStatusError)) as info:
            await call(rest)
    assert recorder.count == 1
    error = info.value
    assert isinstance(error, OutcomeUnknownError)
    assert error.method == recorder.last.method
    assert error.path == recorder.last.url.path
    if isinstance(failure, Exception):
        assert error.__cause__ is failure
        assert error.status_code is None
    else:
        assert error.status_code == failure.status_code


@pytest.mark.parametrize("failure", SAFE_FAILURES, ids=_name)
@pytest.mark.parametrize(("name", "call", "data"), WRITES, ids=[w[0] for w in WRITES])
async def test_write_is_retried_when_it_provably_did_not_happen(
    name: str, call: Call, data: Any, failure: Any, autojump_clock: Any
) -> None:
    recorder = Recorder([failure, ok(data)])
    async with make_client(recorder) as rest:
        await call(rest)
    assert recorder.count == 2
    assert recorder.requests[0].content == recorder.requests[1].content


@pytest.mark.parametrize("failure", AMBIGUOUS_FAILURES + SAFE_FAILURES, ids=_name)
@pytest.mark.parametrize(("name", "call", "data"), IDEMPOTENT, ids=[w[0] for w in IDEMPOTENT])
async def test_idempotent_request_is_retried(
    name: str, call: Call, data: Any, failure: Any, autojump_clock: Any
) -> None:
    recorder = Recorder([failure, failure, ok(data)])
    async with make_client(recorder) as rest:
        await call(rest)
    assert recorder.count == 3


async def test_write_not_resent_after_attempt_timeout(autojump_clock: Any) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    recorder = Recorder([hang, ok(SENT)])
    async with make_client(recorder, timeout=5.0) as rest:
        with pytest.raises(BandTimeoutError) as info:
            await rest.send_message("room-1", "x", [MentionRequest(id="u")])
    assert recorder.count == 1
    assert isinstance(info.value, OutcomeUnknownError)


async def test_get_retried_after_attempt_timeout(autojump_clock: Any) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    recorder = Recorder([hang, ok(ROOM)])
    start = trio.current_time()
    async with make_client(recorder, timeout=5.0) as rest:
        room = await rest.get_chat("room-1")
    assert room.id == "room-1"
    assert recorder.count == 2
    assert trio.current_time() - start == pytest.approx(5.0 + 0.5)


async def test_budget_is_three_retries_then_the_error(autojump_clock: Any) -> None:
    recorder = Recorder([error(500, "internal", "oops")])
    start = trio.current_time()
    async with make_client(recorder) as rest:
        with pytest.raises(InternalServerError):
            await rest.get_chat("room-1")
    assert recorder.count == 4
    # Exponential backoff without jitter: 0.5 + 1 + 2 seconds.
    assert trio.current_time() - start == pytest.approx(3.5)


async def test_conflict_is_never_retried() -> None:
    recorder = Recorder([error(409, "conflict", "exists"), ok({"id": "c", "status": "pending"})])
    async with make_client(recorder) as rest:
        with pytest.raises(ConflictError):
            await rest.add_contact("bob")
    assert recorder.count == 1


async def test_retry_after_seconds_is_honoured(autojump_clock: Any) -> None:
    recorder = Recorder(
        [error(429, "rate_limited", "slow", headers={"Retry-After": "7"}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder) as rest:
        await rest.create_chat(title="t")
    assert recorder.count == 2
    assert trio.current_time() - start == pytest.approx(7.0)


async def test_retry_after_with_jitter_is_never_early(autojump_clock: Any) -> None:
    recorder = Recorder(
        [error(503, "unavailable", "later", headers={"Retry-After": "10"}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder, retry=RetryPolicy()) as rest:
        await rest.get_chat("room-1")
    waited = trio.current_time() - start
    assert 10.0 <= waited <= 12.0 + 1e-9


async def test_retry_after_http_date_is_honoured(autojump_clock: Any) -> None:
    when = formatdate(time.time() + 30, usegmt=True)
    recorder = Recorder(
        [error(429, "rate_limited", "slow", headers={"Retry-After": when}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder) as rest:
        await rest.get_chat("room-1")
    # The HTTP date has one-second resolution.
    assert 28.0 <= trio.current_time() - start <= 30.0


async def test_ratelimit_reset_is_honoured(autojump_clock: Any) -> None:
    reset = str(int(time.time()) + 12)
    recorder = Recorder(
        [error(429, "rate_limited", "slow", headers={"X-RateLimit-Reset": reset}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder) as rest:
        await rest.get_chat("room-1")
    assert 10.0 <= trio.current_time() - start <= 12.0


async def test_retry_after_is_capped(autojump_clock: Any) -> None:
    recorder = Recorder(
        [error(429, "rate_limited", "slow", headers={"Retry-After": "3600"}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder) as rest:
        await rest.get_chat("room-1")
    assert trio.current_time() - start == pytest.approx(60.0)


async def test_rate_limit_after_budget_carries_retry_after(autojump_clock: Any) -> None:
    recorder = Recorder([error(429, "rate_limited", "slow", headers={"Retry-After": "2"})])
    async with make_client(recorder) as rest:
        with pytest.raises(RateLimitError) as info:
            await rest.exchange_delegation_token("aud", "msg-1")
    assert recorder.count == 4
    assert info.value.retry_after == 2.0
    assert info.value.code == "rate_limited"


async def test_error_retry_after_comes_from_ratelimit_reset(autojump_clock: Any) -> None:
    reset = str(int(time.time()) + 20)
    recorder = Recorder([error(429, "rate_limited", "slow", headers={"X-RateLimit-Reset": reset})])
    async with make_client(recorder, retry=RetryPolicy(max_retries=0)) as rest:
        with pytest.raises(RateLimitError) as info:
            await rest.get_me()
    assert info.value.retry_after is not None
    assert 18.0 <= info.value.retry_after <= 20.0


async def test_cancellation_during_retry_sleep(autojump_clock: Any) -> None:
    recorder = Recorder(
        [error(503, "unavailable", "later", headers={"Retry-After": "30"}), ok(ROOM)]
    )
    start = trio.current_time()
    async with make_client(recorder) as rest:
        with trio.move_on_after(5) as scope:
            await rest.get_chat("room-1")
    assert scope.cancelled_caught
    assert trio.current_time() - start == pytest.approx(5.0)
    assert recorder.count == 1


async def test_cancellation_during_request(autojump_clock: Any) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    recorder = Recorder([hang])
    async with make_client(recorder) as rest:
        with trio.move_on_after(1) as scope:
            await rest.get_chat("room-1")
    assert scope.cancelled_caught
    assert recorder.count == 1
    assert rest.statistics().retries == 0


async def test_retry_budget_zero_disables_retries() -> None:
    recorder = Recorder([error(503, "unavailable", "later"), ok(ROOM)])
    async with make_client(recorder, retry=RetryPolicy(max_retries=0)) as rest:
        with pytest.raises(ServiceUnavailableError):
            await rest.get_chat("room-1")
    assert recorder.count == 1
