"""Hypothesis: random sequences of failures through the real client loop.

Invariants, whatever the platform and the network do:

* a non-idempotent write is sent again only after a failure that proves the
  platform did not act (connect failure, pool timeout, 429, 503 with
  ``Retry-After``); a write that ends on any other 5xx, a 408, a timeout or
  a reset raises ``OutcomeUnknownError``;
* per endpoint and status, a write and an idempotent request are told apart;
* never more than ``1 + max_retries`` attempts;
* the call ends in a model or a ``BandError`` — nothing else escapes;
* the time spent waiting is bounded by the policy (autojump clock).
"""

from __future__ import annotations

from typing import Any

import httpx
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from band_trio.errors import APIStatusError, BandError, OutcomeUnknownError
from band_trio.wire.models import MentionRequest
from band_trio.wire.retry import RetryPolicy

from .rest_mock import ROOM, Recorder, error, make_client, ok
from .retry_cases import IDEMPOTENT, WRITES

SAFE = "safe"
AMBIGUOUS = "ambiguous"

_failures: list[tuple[str, Any]] = [
    (SAFE, httpx.ConnectError("refused")),
    (SAFE, httpx.ConnectTimeout("connect timed out")),
    (SAFE, httpx.PoolTimeout("pool")),
    (SAFE, error(429, "rate_limited", "x", headers={"Retry-After": "3"})),
    (SAFE, error(503, "unavailable", "x", headers={"Retry-After": "1"})),
    (AMBIGUOUS, httpx.ReadError("reset")),
    (AMBIGUOUS, httpx.ReadTimeout("slow")),
    (AMBIGUOUS, httpx.WriteError("pipe")),
    (AMBIGUOUS, httpx.RemoteProtocolError("eof")),
    (AMBIGUOUS, error(500, "internal", "x")),
    (AMBIGUOUS, error(502, "bad_gateway", "x")),
    (AMBIGUOUS, error(504, "timeout", "x")),
    (AMBIGUOUS, error(408, "timeout", "x")),
    (AMBIGUOUS, error(503, "unavailable", "x")),
    ("final", error(400, "bad_request", "x")),
    ("final", error(404, "not_found", "x")),
    ("final", error(409, "conflict", "x")),
    ("final", error(422, "validation_error", "x")),
]

SENT = {"id": "m", "success": True, "recipients": []}


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.sampled_from(range(len(_failures))), max_size=6),
    idempotent=st.booleans(),
    max_retries=st.integers(0, 4),
)
def test_retry_loop_invariants(steps: list[int], idempotent: bool, max_retries: int) -> None:
    script: list[Any] = [_failures[i][1] for i in steps]
    script.append(ok(ROOM if idempotent else SENT))
    policy = RetryPolicy(max_retries=max_retries)
    outcome: dict[str, Any] = {}

    async def run() -> None:
        recorder = Recorder(script)
        start = trio.current_time()
        async with make_client(recorder, retry=policy) as rest:
            try:
                if idempotent:
                    outcome["result"] = await rest.get_chat("room-1")
                else:
                    outcome["result"] = await rest.send_message(
                        "room-1", "x", [MentionRequest(id="u")]
                    )
            except BandError as exc:
                outcome["error"] = exc
        outcome["attempts"] = recorder.count
        outcome["waited"] = trio.current_time() - start

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))

    attempts = outcome["attempts"]
    assert 1 <= attempts <= 1 + max_retries
    # Every attempt but the last was followed by a retry: each of those failures
    # must have been retryable for this request.
    for index in steps[: attempts - 1]:
        kind = _failures[index][0]
        assert kind != "final"
        if not idempotent:
            assert kind == SAFE
    assert ("result" in outcome) != ("error" in outcome)
    if "result" in outcome:
        assert attempts == len(steps) + 1
    else:
        last = _failures[steps[attempts - 1]][0]
        # A write whose last answer may hide a commit says so; nothing else does.
        unknown = not idempotent and last == AMBIGUOUS
        assert isinstance(outcome["error"], OutcomeUnknownError) == unknown
    # Each wait is at most the 60 s cap plus jitter headroom.
    assert outcome["waited"] <= (attempts - 1) * 66.0


ENDPOINTS = [(name, call, data, False) for name, call, data in WRITES] + [
    (name, call, data, True) for name, call, data in IDEMPOTENT
]


@settings(max_examples=300, deadline=None)
@given(
    endpoint=st.sampled_from(ENDPOINTS),
    status=st.integers(400, 599),
    retry_after=st.booleans(),
)
def test_each_endpoint_and_status(
    endpoint: tuple[str, Any, Any, bool], status: int, retry_after: bool
) -> None:
    """One error answer, then success: retried exactly when that is safe."""
    _name, call, data, idempotent = endpoint
    headers = {"Retry-After": "1"} if retry_after else {}
    outcome: dict[str, Any] = {}

    async def run() -> None:
        recorder = Recorder([error(status, "x", "y", headers=headers), ok(data)])
        async with make_client(recorder) as rest:
            try:
                await call(rest)
            except BandError as exc:
                outcome["error"] = exc
        outcome["attempts"] = recorder.count
        outcome["request"] = recorder.requests[0]

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))

    proof = status == 429 or (status == 503 and retry_after)
    ambiguous = not proof and (status == 408 or status >= 500)
    retried = proof or (ambiguous and idempotent)
    assert outcome["attempts"] == (2 if retried else 1)
    if retried:
        assert "error" not in outcome
        return
    exc = outcome["error"]
    assert isinstance(exc, APIStatusError)
    assert exc.status_code == status
    assert isinstance(exc, OutcomeUnknownError) == (ambiguous and not idempotent)
    if isinstance(exc, OutcomeUnknownError):
        assert exc.method == outcome["request"].method
        assert exc.path == outcome["request"].url.path
        assert not exc.terminal or status == 408
