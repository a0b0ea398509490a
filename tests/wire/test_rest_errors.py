"""Error mapping: statuses, platform error bodies, 204s, execution-stopped, bad
responses, transport failures, and secrets kept out of every text."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    BandConfigError,
    BandConnectionError,
    BandError,
    BandProtocolError,
    BandTimeoutError,
    ConflictError,
    ContentTooLargeError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RangeNotSatisfiableError,
    RateLimitError,
    RoomExecutionStoppedError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)
from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

from .rest_mock import API_KEY, BASE, MESSAGE, ROOM, Recorder, error, make_client, ok

NO_RETRY = RetryPolicy(max_retries=0)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, ContentTooLargeError),
        (416, RangeNotSatisfiableError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, InternalServerError),
        (502, InternalServerError),
        (503, ServiceUnavailableError),
        (418, APIStatusError),
    ],
)
async def test_status_maps_to_error_class_with_platform_fields(
    status: int, cls: type[APIStatusError]
) -> None:
    recorder = Recorder(
        [error(status, "some_code", "it went wrong", details={"/field": ["is bad"]})]
    )
    with trio.fail_after(5):
        async with make_client(recorder, retry=NO_RETRY) as rest:
            with pytest.raises(APIStatusError) as info:
                await rest.get_chat("room-1")
    err = info.value
    assert type(err) is cls
    assert err.status_code == status
    assert err.code == "some_code"
    assert err.message == "it went wrong"
    assert err.request_id == "req-1"
    assert err.details == {"/field": ["is bad"]}
    assert err.method == "GET"
    assert err.path == "/api/v1/agent/chats/room-1"
    assert "/api/v1/agent/chats/room-1" in str(err)
    assert "some_code" in str(err)


async def test_validation_error_details_on_mark_processed() -> None:
    recorder = Recorder(
        [
            error(
                422,
                "validation_error",
                "no active attempt",
                details={"/processing_attempt": ["must be active"]},
            )
        ]
    )
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            with pytest.raises(UnprocessableEntityError) as info:
                await rest.mark_processed("room-1", "msg-1")
    assert info.value.code == "validation_error"
    assert info.value.details["/processing_attempt"] == ["must be active"]
    assert recorder.count == 1


async def test_not_found_code_on_mark_failed() -> None:
    recorder = Recorder([error(404, "not_found", "Not found")])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            with pytest.raises(NotFoundError) as info:
                await rest.mark_failed("room-1", "msg-1", "boom")
    assert info.value.code == "not_found"


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, content=b"<html>Bad Gateway</html>"),
        httpx.Response(404, content=b""),
        httpx.Response(400, json=["not", "an", "object"]),
        httpx.Response(401, json={"error": "unauthorized"}),
        httpx.Response(403, json={"error": {"code": 5, "message": None}}),
        httpx.Response(422, content=b"\xff\xfe\x00garbage"),
    ],
)
async def test_odd_error_bodies_still_give_typed_errors(response: httpx.Response) -> None:
    recorder = Recorder([response])
    with trio.fail_after(5):
        async with make_client(recorder, retry=NO_RETRY) as rest:
            with pytest.raises(APIStatusError) as info:
                await rest.get_me()
    assert info.value.status_code == response.status_code
    assert info.value.code is None or isinstance(info.value.code, str)


async def test_string_error_body_becomes_message() -> None:
    recorder = Recorder([httpx.Response(401, json={"error": "unauthorized"})])
    async with make_client(recorder) as rest:
        with pytest.raises(AuthenticationError) as info:
            await rest.get_me()
    assert info.value.message == "unauthorized"


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner)


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


# Named functions, not lambdas: Hypothesis reads a lambda's source to describe a
# strategy, which is fragile for lambdas inside multi-line expressions.
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    _containers,
    max_leaves=8,
)
_error_objects = st.fixed_dictionaries(
    {"error": st.dictionaries(st.sampled_from(["code", "message", "request_id", "details"]), _json)}
)
_bodies = st.binary(max_size=64) | _json.map(_encode) | _error_objects.map(_encode)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(status=st.integers(min_value=400, max_value=599), body=_bodies)
def test_random_error_bodies_only_raise_api_status_errors(status: int, body: bytes) -> None:
    async def run() -> None:
        recorder = Recorder([httpx.Response(status, content=body)])
        async with make_client(recorder, retry=NO_RETRY) as rest:
            with pytest.raises(APIStatusError) as info:
                await rest.list_participants("room-1")
        err = info.value
        assert err.status_code == status
        for value in (err.code, err.message, err.request_id):
            assert value is None or isinstance(value, str)
        assert isinstance(dict(err.details), dict)
        str(err)

    trio.run(run)


# ------------------------------------------------------------------ 204s


async def test_next_message_204_is_none() -> None:
    recorder = Recorder([httpx.Response(204)])
    async with make_client(recorder) as rest:
        assert await rest.next_message("room-1") is None


@pytest.mark.parametrize("which", ["processing", "processed", "failed"])
async def test_lifecycle_204_means_execution_stopped(which: str) -> None:
    recorder = Recorder([httpx.Response(204)])
    async with make_client(recorder) as rest:
        if which == "processing":
            call = rest.mark_processing("room-9", "msg-1")
        elif which == "processed":
            call = rest.mark_processed("room-9", "msg-1")
        else:
            call = rest.mark_failed("room-9", "msg-1", "x")
        with pytest.raises(RoomExecutionStoppedError) as info:
            await call
    assert info.value.room_id == "room-9"
    assert recorder.count == 1


async def test_lifecycle_other_2xx_is_a_protocol_error() -> None:
    recorder = Recorder(
        [ok({"id": "m", "status": "processing", "attempt_number": 1, "success": True}, 202)]
    )
    async with make_client(recorder) as rest:
        with pytest.raises(BandProtocolError, match="202"):
            await rest.mark_processing("room-1", "msg-1")


# --------------------------------------------------- execution stopped (403)


@pytest.mark.parametrize("message", ["Agent execution is stopped", "EXECUTION IS STOPPED here"])
async def test_403_execution_stopped_on_send_message(message: str) -> None:
    recorder = Recorder([error(403, "forbidden", message)])
    async with make_client(recorder) as rest:
        with pytest.raises(RoomExecutionStoppedError) as info:
            await rest.send_message("room-2", "hi", [MentionRequest(id="u")])
    assert info.value.room_id == "room-2"
    assert isinstance(info.value.__cause__, PermissionDeniedError)


async def test_403_execution_stopped_on_send_event() -> None:
    recorder = Recorder([error(403, "forbidden", "Agent execution is stopped for this room")])
    async with make_client(recorder) as rest:
        with pytest.raises(RoomExecutionStoppedError):
            await rest.send_event("room-2", "x", "thought")


async def test_other_403_on_send_message_stays_permission_denied() -> None:
    recorder = Recorder([error(403, "forbidden", "not a participant")])
    async with make_client(recorder) as rest:
        with pytest.raises(PermissionDeniedError) as info:
            await rest.send_message("room-2", "hi", [MentionRequest(id="u")])
    assert not isinstance(info.value, RoomExecutionStoppedError)


async def test_execution_stopped_text_elsewhere_is_not_special() -> None:
    recorder = Recorder([error(403, "forbidden", "execution is stopped")])
    async with make_client(recorder) as rest:
        with pytest.raises(PermissionDeniedError):
            await rest.add_participant("room-2", "agent-3")


# ------------------------------------------------------------ bad 2xx bodies


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, content=b"not json"),
        httpx.Response(200, json=[1, 2]),
        httpx.Response(200, json={"nodata": 1}),
        httpx.Response(200, json={"data": {"id": 5}}),
        httpx.Response(200, json={"data": None}),
    ],
)
async def test_malformed_success_is_a_protocol_error(response: httpx.Response) -> None:
    recorder = Recorder([response])
    async with make_client(recorder) as rest:
        with pytest.raises(BandProtocolError) as info:
            await rest.get_chat("room-1")
    assert "/api/v1/agent/chats/room-1" in str(info.value)


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {"has_more": "yes", "limit": 5},
        {"has_more": True},
        {"has_more": True, "limit": 5, "next_cursor": 9},
    ],
)
async def test_cursor_metadata_is_validated(metadata: dict[str, Any] | None) -> None:
    body: dict[str, Any] = {"data": [MESSAGE]}
    if metadata is not None:
        body["metadata"] = metadata
    recorder = Recorder([httpx.Response(200, json=body)])
    async with make_client(recorder) as rest:
        with pytest.raises(BandProtocolError, match="metadata"):
            await rest.list_messages("room-1")


async def test_list_data_must_be_a_list() -> None:
    recorder = Recorder([ok({"id": "x"}, metadata={"page": 1})])
    async with make_client(recorder) as rest:
        with pytest.raises(BandProtocolError, match="not a list"):
            await rest.list_chats()


# ------------------------------------------------------- transport failures


async def test_connect_error_becomes_band_connection_error_with_cause() -> None:
    recorder = Recorder([httpx.ConnectError("connection refused")])
    async with make_client(recorder, retry=NO_RETRY) as rest:
        with pytest.raises(BandConnectionError) as info:
            await rest.get_me()
    assert not isinstance(info.value, BandTimeoutError)
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.retryable
    assert "GET /api/v1/agent/me" in str(info.value)


@pytest.mark.parametrize(
    ("failure", "cls"),
    [
        (httpx.UnsupportedProtocol("no such scheme"), BandConfigError),
        (httpx.LocalProtocolError("bad header"), BandConnectionError),
        (httpx.TooManyRedirects("loop"), BandProtocolError),
        (httpx.DecodingError("bad gzip"), BandProtocolError),
    ],
)
async def test_non_transient_failures_are_not_retried(
    failure: httpx.HTTPError, cls: type[BandError]
) -> None:
    recorder = Recorder([failure, ok(ROOM)])
    async with make_client(recorder) as rest:
        with pytest.raises(cls) as info:
            await rest.get_chat("room-1")
    assert recorder.count == 1
    assert info.value.__cause__ is failure


async def test_read_timeout_becomes_band_timeout_error() -> None:
    recorder = Recorder([httpx.ReadTimeout("timed out")])
    async with make_client(recorder, retry=NO_RETRY) as rest:
        with pytest.raises(BandTimeoutError) as info:
            await rest.get_me()
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


async def test_hanging_server_times_out_each_attempt(autojump_clock: Any) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    recorder = Recorder([hang])
    start = trio.current_time()
    async with make_client(recorder, timeout=10.0, retry=RetryPolicy(max_retries=0)) as rest:
        with pytest.raises(BandTimeoutError):
            await rest.get_me()
    assert trio.current_time() - start == pytest.approx(10.0)


async def test_report_activity_short_timeout_no_retry(autojump_clock: Any) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    recorder = Recorder([hang])
    start = trio.current_time()
    async with make_client(recorder) as rest:
        with pytest.raises(BandTimeoutError):
            await rest.report_activity("room-1", True)
    assert trio.current_time() - start == pytest.approx(2.0)
    assert recorder.count == 1


async def test_report_activity_503_not_retried() -> None:
    recorder = Recorder(
        [error(503, "unavailable", "later", headers={"Retry-After": "1"}), ok({"working": True})]
    )
    async with make_client(recorder) as rest:
        with pytest.raises(ServiceUnavailableError) as info:
            await rest.report_activity("room-1", True)
    assert recorder.count == 1
    assert info.value.retry_after == 1.0


# ------------------------------------------------------------------ config


@pytest.mark.parametrize(
    "base_url",
    [
        "ftp://band.test",
        "band.test",
        "https://band.test/api/v1",
        "",
        "http://",
        "https://band.test/?api_key=x",
        "https://band.test/#frag",
    ],
)
def test_bad_base_url_is_a_config_error(base_url: str) -> None:
    with pytest.raises(BandConfigError):
        RestClient(base_url=base_url, api_key=API_KEY)


def test_credentials_in_base_url_are_refused_without_echo() -> None:
    with pytest.raises(BandConfigError) as info:
        RestClient(base_url="http://me:hunter2@band.test", api_key=API_KEY)
    assert "hunter2" not in str(info.value)


def test_empty_api_key_is_a_config_error() -> None:
    with pytest.raises(BandConfigError):
        RestClient(base_url=BASE, api_key="  ")


@pytest.mark.parametrize("size", [0, 65, -1])
def test_pool_size_is_bounded(size: int) -> None:
    with pytest.raises(BandConfigError):
        RestConfig(max_connections=size)


def test_keepalive_pool_is_bounded() -> None:
    with pytest.raises(BandConfigError):
        RestConfig(max_keepalive_connections=-1)
    with pytest.raises(BandConfigError):
        RestConfig(max_keepalive_connections=65)
    assert RestConfig(max_keepalive_connections=0).max_keepalive_connections == 0


def test_timeouts_must_be_positive() -> None:
    with pytest.raises(BandConfigError):
        RestConfig(timeout=0)
    with pytest.raises(BandConfigError):
        RestConfig(activity_timeout=-1)


# ------------------------------------------------------------------ secrets


async def test_api_key_never_in_repr_errors_or_logs(
    caplog: pytest.LogCaptureFixture, autojump_clock: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    recorder = Recorder(
        [
            httpx.ReadError(f"boom while sending X-API-Key: {API_KEY}"),
            error(503, "unavailable", "down"),
            error(401, "unauthorized", f"bad key {API_KEY}"),
        ]
    )
    rest = make_client(recorder)
    texts = [repr(rest), str(rest)]
    async with rest:
        with pytest.raises(AuthenticationError) as info:
            await rest.get_me()
        texts += [str(info.value), repr(info.value), info.value.message or ""]
        recorder.script = [httpx.ReadError(f"key={API_KEY}")]
        recorder.requests.clear()
        with pytest.raises(BandConnectionError) as info2:
            await rest.send_message("room-1", "x", [MentionRequest(id="u")])
        texts += [str(info2.value), repr(info2.value)]
        # A logged traceback shows the whole chain of causes too.
        texts += ["".join(traceback.format_exception(info2.value))]
    texts += [record.getMessage() for record in caplog.records]
    assert recorder.count == 1
    assert len(texts) > 6
    for text in texts:
        assert API_KEY not in text
    assert any("redacted" in t for t in texts)


async def test_key_is_dropped_on_cross_origin_redirect() -> None:
    recorder = Recorder(
        [
            lambda r: (
                httpx.Response(302, headers={"Location": "https://band.test/api/v1/agent/me2"})
                if r.url.path.endswith("/me")
                else (
                    httpx.Response(302, headers={"Location": "http://evil.test/steal"})
                    if r.url.host == "band.test"
                    else ok({"id": "x"})
                )
            )
        ]
    )
    async with make_client(recorder) as rest:
        with pytest.raises(BandError):
            await rest.get_me()  # the final body is not an AgentMe
    hosts = [(r.url.host, r.headers.get("x-api-key")) for r in recorder.requests]
    assert hosts == [
        ("band.test", API_KEY),
        ("band.test", API_KEY),
        ("evil.test", None),
    ]


async def test_statistics_count_calls_attempts_retries_errors(autojump_clock: Any) -> None:
    recorder = Recorder([error(503, "x", "y"), ok(ROOM), error(404, "not_found", "no")])
    async with make_client(recorder) as rest:
        await rest.get_chat("room-1")
        recorder.script = [error(404, "not_found", "no")]
        with pytest.raises(NotFoundError):
            await rest.get_chat("room-2")
        stats = rest.statistics()
    assert (stats.calls, stats.attempts, stats.retries, stats.errors) == (2, 3, 1, 1)


async def test_closed_client_is_a_config_error() -> None:
    recorder = Recorder([ok(ROOM)])
    rest = make_client(recorder)
    await rest.aclose()
    with pytest.raises(BandConfigError, match="closed"):
        await rest.get_chat("room-1")
    assert recorder.count == 0
