"""BandLink's WebSocket upgrade: the URL it builds and what each refusal means.

Tests that involve heartbeats, dead deadlines or backoff waits run under
``autojump_clock`` (both ends live in this Trio run, so the clock only jumps
when no socket has data pending); the others run on the real clock with fast
backoff policies, and every test is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from band_trio.errors import (
    AgentAlreadyRunningError,
    BandConfigError,
    BandConnectionError,
    UpgradeRefusedError,
)
from band_trio.wire.link import (
    BandLink,
    LinkConfig,
    LinkEvent,
    LinkReconnected,
    build_ws_url,
)

from .phoenix_server import (
    AGENT,
    KEY,
    FakePhoenix,
    error_body,
    make_link,
    serve_until_error,
    start,
)

# --------------------------------------------------------------------------- URL


def test_build_ws_url_replaces_vsn_and_strips_credentials() -> None:
    url = build_ws_url("wss://h.example/api/v1/socket/websocket?vsn=1.0.0&api_key=zz&keep=1", "a b")
    assert url == "wss://h.example/api/v1/socket/websocket?keep=1&vsn=2.0.0&agent_id=a%20b"
    assert "zz" not in url


def test_build_ws_url_drops_userinfo_and_fragment() -> None:
    url = build_ws_url("wss://me:secret@h.example:8443/ws#frag", "a1")
    assert url == "wss://h.example:8443/ws?vsn=2.0.0&agent_id=a1"


def test_build_ws_url_on_conflict_and_scheme() -> None:
    url = build_ws_url(
        "http://127.0.0.1:4000/ws?on_conflict=supersede", "a1", on_conflict_reject=True
    )
    assert url == "ws://127.0.0.1:4000/ws?vsn=2.0.0&agent_id=a1&on_conflict=reject"


@pytest.mark.parametrize("url", ["ftp://x/y", "not a url", "ws:///nohost"])
def test_build_ws_url_rejects_bad_urls(url: str) -> None:
    with pytest.raises(BandConfigError):
        build_ws_url(url, "a1")


# --------------------------------------------------------------------------- upgrade refusals


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "invalid_on_conflict"), (403, "forbidden"), (409, "connection_conflict")],
)
async def test_terminal_refusals_on_first_connect(
    server: FakePhoenix, status: int, code: str
) -> None:
    server.reject_always = (status, [], error_body(code, "no"))
    with trio.fail_after(10):
        error = await serve_until_error(make_link(server))
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == status
    assert error.code == code
    assert error.message == "no"
    assert not error.retryable
    assert KEY not in str(error)
    assert len(server.requests) == 1


async def test_409_with_reject_policy_is_agent_already_running(server: FakePhoenix) -> None:
    server.reject_always = (409, [], error_body("connection_conflict", "active connection"))
    with trio.fail_after(10):
        error = await serve_until_error(make_link(server, on_conflict="reject"))
    assert isinstance(error, AgentAlreadyRunningError)


@pytest.mark.parametrize("status", [401, 503, 404])
async def test_retried_refusals_on_first_connect(server: FakePhoenix, status: int) -> None:
    server.rejections = [(status, [], error_body("x", "y")), (status, [], b"")]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            assert len(server.requests) == 3
            assert running.link.statistics().connect_failures == 2
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("extra", "body"),
    [
        ([], error_body("too_many_requests", "slow down", retry_after=42)),
        ([(b"Retry-After", b"42")], error_body("too_many_requests", "slow down")),
        ([(b"Retry-After", b"42")], b""),
    ],
)
async def test_429_waits_for_retry_after(
    server: FakePhoenix,
    autojump_clock: trio.testing.MockClock,
    extra: list[tuple[bytes, bytes]],
    body: bytes,
) -> None:
    server.rejections = [(429, extra, body)]
    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            t0 = trio.current_time()
            await start(nursery, make_link(server, LinkConfig()))
            assert len(server.requests) == 2
            assert 42.0 <= trio.current_time() - t0 < 43.0
            nursery.cancel_scope.cancel()


async def test_first_connect_gives_up_after_ten_rapid_failures(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.reject_always = (503, [], error_body("tracking_failed", "busy"))
    with trio.fail_after(1000):
        error = await serve_until_error(make_link(server, LinkConfig()))
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == 503
    assert len(server.requests) == 10


@pytest.mark.parametrize(
    ("status", "code", "retry_after"),
    [(401, "unauthorized", None), (429, "too_many_requests", 2), (503, "tracking_failed", 3)],
)
async def test_retried_refusals_surface_typed_and_retryable_when_the_policy_gives_up(
    server: FakePhoenix,
    autojump_clock: trio.testing.MockClock,
    status: int,
    code: str,
    retry_after: int | None,
) -> None:
    more = {} if retry_after is None else {"retry_after": retry_after}
    server.reject_always = (status, [], error_body(code, "refused", **more))
    with trio.fail_after(1000):
        error = await serve_until_error(make_link(server, LinkConfig()))
    assert type(error) is UpgradeRefusedError
    assert (error.status_code, error.code, error.message) == (status, code, "refused")
    assert error.retry_after == retry_after
    # Not terminal by its status: the first-connect policy ran out of attempts.
    assert error.retryable
    assert not error.terminal
    assert len(server.requests) == 10
    assert KEY not in str(error)


async def test_403_on_reconnect_is_terminal(server: FakePhoenix) -> None:
    async def refuse_then_drop() -> None:
        server.reject_always = (403, [], b"")
        await server.conn.ws.aclose(1000)

    with trio.fail_after(10):
        error = await serve_until_error(make_link(server), refuse_then_drop)
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == 403
    assert not error.retryable


async def test_409_on_reconnect_is_retried(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, on_conflict="reject"))
            server.rejections = [(409, [], error_body("connection_conflict", "x"))]
            await server.conn.ws.aclose(1000)
            assert isinstance(await running.next(), LinkReconnected)
            assert len(server.requests) == 3
            nursery.cancel_scope.cancel()


async def test_unreachable_platform(autojump_clock: trio.testing.MockClock) -> None:
    # Bind a port, then close it, so nothing listens there.
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()
    link = BandLink(agent_id=AGENT, api_key=KEY, ws_url=f"ws://127.0.0.1:{port}/ws")
    send, _receive = trio.open_memory_channel[LinkEvent](10)
    with trio.fail_after(1000), pytest.raises(BandConnectionError) as info:
        await link.serve(send)
    assert type(info.value) is BandConnectionError
    assert link.statistics().connect_failures == 10
    assert KEY not in str(info.value)
