"""How the platform's connections end, and what it changes in Hypercorn's
connection server (``band_trio.local.connections``), pinned by what a client
sees, so that a Hypercorn release that breaks either fails here.

Hypercorn keeps a connection whose client has gone until its keep-alive
timer fires when the client sent something it could not answer (a malformed
head, half a pipelined request); the platform ends it itself, watching the
stream and its application calls, without touching Hypercorn's internals.
Hypercorn switches a connection to HTTP/2 on ``Upgrade: h2c`` and has no
setting against it: there the platform replaces the private
``H11Protocol._check_protocol`` (also pinned by
``test_an_h2c_upgrade_is_answered_in_http1_without_a_warning``).
"""

from __future__ import annotations

import socket

import pytest
import trio
from hypercorn.protocol.h11 import H11Protocol

from band_trio.local import LocalPlatform
from band_trio.local.connections import _GONE_GRACE, _ConnectionEnd
from tests.local.helpers import IO_DEADLINE


def _port(platform: LocalPlatform) -> int:
    return int(platform.rest_url.rsplit(":", 1)[1])


def _request(platform: LocalPlatform) -> bytes:
    key = platform.agents[0].api_key.encode()
    return b"GET /api/v1/agent/me HTTP/1.1\r\nhost: localhost\r\nx-api-key: " + key + b"\r\n\r\n"


async def _until_closed(stream: trio.SocketStream) -> bytes:
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    return data


def test_the_private_method_the_server_replaces_is_hypercorns() -> None:
    """Renamed or removed upstream, the replacement would silently do nothing."""
    assert callable(vars(H11Protocol)["_check_protocol"])


async def test_a_closed_keep_alive_connection_frees_its_slot_before_its_timer(
    band_platform: LocalPlatform, autojump_clock: trio.testing.MockClock
) -> None:
    """A client that made a request and closed does not count until the
    keep-alive timer (30 s) fires."""
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(_request(band_platform))
        answer = await stream.receive_some(65536)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert band_platform.connection_statistics().open == 1
        await stream.aclose()
        started = trio.current_time()
        await band_platform.wait_for(lambda: band_platform.connection_statistics().open == 0)
    assert trio.current_time() - started <= _GONE_GRACE


async def test_a_client_that_half_closes_still_gets_its_answer_then_its_slot_frees(
    band_platform: LocalPlatform, autojump_clock: trio.testing.MockClock
) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(_request(band_platform))
        stream.socket.shutdown(socket.SHUT_WR)  # the request, then end of input
        answer = await _until_closed(stream)
        started = trio.current_time()
        await band_platform.wait_for(lambda: band_platform.connection_statistics().open == 0)
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert b'"data"' in answer
    assert trio.current_time() - started <= _GONE_GRACE


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"XXXX\r\n\r\n", id="malformed"),
        pytest.param(b"GET / HTTP/1.1\r\nx: " + b"a" * 20_000, id="oversized-head"),
        pytest.param(None, id="half-a-pipelined-request"),
    ],
)
@pytest.mark.parametrize("close", ["close", "half-close"])
async def test_a_connection_hypercorn_would_keep_ends_once_its_client_has_gone(
    band_platform: LocalPlatform,
    autojump_clock: trio.testing.MockClock,
    sent: bytes | None,
    close: str,
) -> None:
    data = sent if sent is not None else _request(band_platform) + b"GET /api/v1/ag"
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(data)
        if close == "close":
            await stream.aclose()
        else:
            stream.socket.shutdown(socket.SHUT_WR)
        started = trio.current_time()
        await band_platform.wait_for(lambda: band_platform.connection_statistics().open == 0)
        if close != "close":
            answer = await _until_closed(stream)
            await stream.aclose()
            assert answer.startswith(b"HTTP/1.1 200" if sent is None else b"HTTP/1.1 4"), answer
    assert trio.current_time() - started <= _GONE_GRACE
    assert band_platform.connection_statistics().failed == 0


async def test_a_request_read_just_before_the_client_went_is_still_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The end of input can be read before the application call of the request
    just before it has started: that call still runs, and the connection ends
    when it returns."""
    answered = []

    async def app(scope: object, receive: object, send: object) -> None:
        await trio.sleep(5)
        answered.append(scope)

    end = _ConnectionEnd(app)
    with end.scope:
        end.client_gone()
        await trio.sleep(_GONE_GRACE / 2)  # Hypercorn starting the call
        await end.app("request", None, None)
        await trio.sleep_forever()
    assert answered == ["request"]
    assert trio.current_time() == _GONE_GRACE / 2 + 5


async def test_a_connection_with_nothing_to_answer_ends_within_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("never called")

    end = _ConnectionEnd(app)
    with end.scope:
        end.client_gone()
        await trio.sleep_forever()
    assert trio.current_time() <= _GONE_GRACE
