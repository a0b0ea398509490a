"""What RestClient puts on the wire is what httpx's own client would send.

The client builds its requests and hands them to the transport itself (httpx's
client costs much per request); these tests pin that the URL, headers, body,
timeout, cookies, log line and errors stay exactly httpx's.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.errors import BandConnectionError
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.rest._client_core import path_segment
from band_trio.wire.retry import RetryPolicy

from .rest_mock import API_KEY, Recorder, ok

NO_RETRY = RetryPolicy(max_retries=0)


def _client(recorder: Recorder, base_url: str = "https://band.test", **config: Any) -> RestClient:
    return RestClient(
        base_url=base_url,
        api_key=API_KEY,
        config=RestConfig(retry=NO_RETRY, **config),
        transport=httpx.MockTransport(recorder),
    )


def _as_httpx_builds(
    rest: RestClient,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> httpx.Request:
    return rest._client.build_request(
        method,
        path,
        params=params,
        content=content,
        headers=headers or {},
        timeout=httpx.Timeout(timeout),
    )


def _same(sent: httpx.Request, expected: httpx.Request) -> None:
    assert str(sent.url) == str(expected.url)
    assert sent.url.raw_path == expected.url.raw_path
    assert sent.method == expected.method
    assert sent.headers.raw == expected.headers.raw
    assert sent.content == expected.content
    assert sent.extensions == expected.extensions


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    room=st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s),
    base=st.sampled_from(["https://band.test", "http://127.0.0.1:8080", "https://band.test/x/"]),
)
def test_a_drain_request_is_the_one_httpx_would_build(room: str, base: str) -> None:
    async def main() -> None:
        recorder = Recorder([httpx.Response(204)])
        async with _client(recorder, base, allow_insecure_transport=True) as rest:
            assert await rest.next_message(room) is None
            path = f"/api/v1/agent/chats/{path_segment(room)}/messages/next"
            _same(recorder.last, _as_httpx_builds(rest, "GET", path))

    trio.run(main)


async def test_a_json_body_a_query_and_a_shorter_timeout_are_the_ones_httpx_would_build() -> None:
    recorder = Recorder(
        [
            ok({"id": "m-1", "status": "failed", "attempt_number": 1, "success": True}),
            ok({"working": True}),
            ok([]),
        ]
    )
    async with _client(recorder) as rest:
        await rest.mark_failed("room 1", "m/1", "it broke")
        _same(
            recorder.last,
            _as_httpx_builds(
                rest,
                "POST",
                "/api/v1/agent/chats/room%201/messages/m%2F1/failed",
                content=b'{"error":"it broke"}',
                headers={"Content-Type": "application/json"},
            ),
        )
        await rest.report_activity("room-1", True)
        expected = _as_httpx_builds(
            rest,
            "POST",
            "/api/v1/agent/chats/room-1/activity",
            content=recorder.last.content,
            headers={"Content-Type": "application/json"},
            timeout=rest.config.activity_timeout,
        )
        _same(recorder.last, expected)
        async for _ in rest.iter_chats(include_participants=True, max_pages=1):
            pass
        sent = recorder.last
        assert sent.url.params["include"] == "participants"
        _same(
            sent,
            _as_httpx_builds(rest, "GET", "/api/v1/agent/chats", params=dict(sent.url.params)),
        )


async def test_cookies_the_platform_sets_are_sent_back_as_httpx_would() -> None:
    recorder = Recorder(
        [
            httpx.Response(
                200, json={"data": {"id": "a"}}, headers={"Set-Cookie": "lb=node-7; Path=/"}
            ),
            httpx.Response(204),
        ]
    )
    async with _client(recorder) as rest:
        await rest._request("GET", "/api/v1/agent/me")
        assert "cookie" not in recorder.last.headers
        assert await rest.next_message("room-1") is None
        assert recorder.last.headers["cookie"] == "lb=node-7"
        _same(
            recorder.last,
            _as_httpx_builds(rest, "GET", "/api/v1/agent/chats/room-1/messages/next"),
        )


async def test_the_httpx_request_log_line_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder([httpx.Response(204)])
    with caplog.at_level(logging.INFO, logger="httpx"):
        async with _client(recorder) as rest:
            await rest.next_message("room-1")
    lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert lines == [
        "HTTP Request: GET https://band.test/api/v1/agent/chats/room-1/messages/next "
        '"HTTP/1.1 204 No Content"'
    ]
    assert all(API_KEY not in line for line in lines)


async def test_a_transport_error_carries_its_request() -> None:
    recorder = Recorder([httpx.ConnectError("refused")])
    async with _client(recorder) as rest:
        with pytest.raises(BandConnectionError) as info:
            await rest.next_message("room-1")
    cause = info.value.__cause__
    assert isinstance(cause, httpx.ConnectError)
    assert cause.request.url.path == "/api/v1/agent/chats/room-1/messages/next"


async def test_a_same_origin_redirect_is_followed_with_the_key() -> None:
    recorder = Recorder(
        [
            lambda r: (
                httpx.Response(
                    307, headers={"Location": "/api/v1/agent/chats/room-2/messages/next"}
                )
                if "room-1" in r.url.path
                else httpx.Response(204)
            )
        ]
    )
    async with _client(recorder) as rest:
        with trio.fail_after(5):
            assert await rest.next_message("room-1") is None
    assert [(r.url.path, r.headers.get("x-api-key")) for r in recorder.requests] == [
        ("/api/v1/agent/chats/room-1/messages/next", API_KEY),
        ("/api/v1/agent/chats/room-2/messages/next", API_KEY),
    ]


@pytest.mark.parametrize(
    "target", ["https://elsewhere.test/api/v1/agent/me", "//elsewhere.test/api/v1/agent/me"]
)
async def test_a_path_not_under_the_base_url_is_built_by_httpx_and_guarded(target: str) -> None:
    recorder = Recorder([ok({"id": "a"})])
    async with _client(recorder) as rest:
        await rest._request("GET", target)
        expected = _as_httpx_builds(rest, "GET", target)
        if expected.url.host != "band.test":
            # The key guard runs on every request: the key never leaves the origin.
            del expected.headers["X-API-Key"]
        _same(recorder.last, expected)


async def test_the_client_hooks_see_every_request_and_response() -> None:
    seen: list[str] = []

    async def on_request(request: httpx.Request) -> None:
        seen.append(f"request {request.url.path}")

    async def on_response(response: httpx.Response) -> None:
        seen.append(f"response {response.status_code} {response.request.url.path}")

    recorder = Recorder([httpx.Response(204)])
    async with _client(recorder) as rest:
        rest._client.event_hooks["request"].append(on_request)
        rest._client.event_hooks["response"].append(on_response)
        await rest.next_message("room-1")
    path = "/api/v1/agent/chats/room-1/messages/next"
    assert seen == [f"request {path}", f"response 204 {path}"]
