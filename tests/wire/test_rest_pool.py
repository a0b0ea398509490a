"""The keep-alive pool under RestClient (band_trio.wire._pool), over loopback.

A small h11 server on 127.0.0.1 counts the TCP connections it accepts, so
each test sees exactly how connections are opened, reused and dropped; a raw
server scripting its answers byte by byte covers the broken answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

import h11
import httpx
import pytest
import trio

from band_trio.errors import BandConnectionError, BandTimeoutError
from band_trio.wire._pool import PooledTransport
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

from .rest_mock import API_KEY, ME

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about band-trio's own pool, used when no proxy is set."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class Server:
    """Answers ``GET /api/v1/agent/me`` with ``ME``; ``behaviour`` changes that.

    behaviour: "ok", "close" (answer with ``Connection: close``), "hang" (read
    the request, never answer), "garbage" (answer bytes that are not HTTP),
    "gate" (answer once ``gate`` is set).
    """

    def __init__(self) -> None:
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self.requests = 0
        self.targets: list[bytes] = []
        self.behaviour = "ok"
        self.gate = trio.Event()
        self.port = 0
        self._changed = trio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    async def handle(self, stream: trio.SocketStream) -> None:
        self.accepted += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        self._notify()
        try:
            await self._serve(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            pass
        finally:
            self.open -= 1
            self._notify()
            await stream.aclose()

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
                continue
            if isinstance(event, h11.ConnectionClosed):
                return
            if isinstance(event, h11.Request):
                self.targets.append(event.target)
            if not isinstance(event, h11.EndOfMessage):
                continue
            self.requests += 1
            self._notify()
            if self.behaviour == "hang":
                await trio.sleep_forever()
            if self.behaviour == "garbage":
                await stream.send_all(b"this is not http\r\n\r\n")
                return
            if self.behaviour == "gate":
                await self.gate.wait()
            body = json.dumps({"data": ME}).encode()
            headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
            if self.behaviour == "close":
                headers.append(("connection", "close"))
            out = conn.send(h11.Response(status_code=200, headers=headers))
            assert out is not None
            out += conn.send(h11.Data(data=body)) or b""
            out += conn.send(h11.EndOfMessage()) or b""
            await stream.send_all(out)
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()


@asynccontextmanager
async def running_server() -> AsyncIterator[Server]:
    server = Server()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


def client(server: Server, **config: object) -> RestClient:
    return RestClient(
        base_url=f"http://127.0.0.1:{server.port}",
        api_key=API_KEY,
        config=RestConfig(retry=RetryPolicy(max_retries=0), **config),  # type: ignore[arg-type]
    )


def transport(rest: RestClient) -> PooledTransport:
    pooled = rest._client._transport
    assert isinstance(pooled, PooledTransport)
    return pooled


async def test_concurrent_calls_never_open_more_connections_than_the_limit() -> None:
    with trio.fail_after(30):
        async with running_server() as server, client(server, max_connections=4) as rest:
            server.behaviour = "gate"
            async with trio.open_nursery() as nursery:
                for _ in range(40):
                    nursery.start_soon(rest.get_me)
                await server.wait_until(lambda: server.requests >= 4)
                await trio.testing.wait_all_tasks_blocked()
                assert server.requests == 4
                assert rest.statistics().queued == 36
                server.gate.set()
            assert server.requests == 40
            assert server.most_open == 4
            assert transport(rest).opened == 4
            assert transport(rest).idle_connections() == 4
            # Later calls reuse those connections: nothing new is accepted.
            server.behaviour = "ok"
            for _ in range(10):
                await rest.get_me()
            assert server.accepted == 4


async def test_sequential_calls_reuse_one_connection() -> None:
    with trio.fail_after(30):
        async with running_server() as server, client(server) as rest:
            for _ in range(20):
                await rest.get_me()
            assert server.accepted == 1
            assert transport(rest).opened == 1


async def test_idle_connections_above_the_keepalive_limit_are_closed() -> None:
    with trio.fail_after(30):
        async with (
            running_server() as server,
            client(server, max_connections=4, max_keepalive_connections=1) as rest,
        ):
            server.behaviour = "gate"
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(rest.get_me)
                await server.wait_until(lambda: server.requests >= 4)
                server.gate.set()
            assert transport(rest).idle_connections() == 1
            # The platform sees the three surplus connections closed.
            await server.wait_until(lambda: server.open <= 1)


async def test_a_connection_the_server_closes_is_not_reused() -> None:
    with trio.fail_after(30):
        async with running_server() as server, client(server) as rest:
            server.behaviour = "close"
            for _ in range(3):
                await rest.get_me()
            assert server.accepted == 3
            assert transport(rest).idle_connections() == 0


async def test_an_expired_connection_is_not_reused() -> None:
    # An expiry shorter than any round trip: every connection has expired by
    # the time it is given back, so each call needs a new one.
    with trio.fail_after(30):
        async with running_server() as server, client(server, keepalive_expiry=1e-9) as rest:
            for _ in range(3):
                await rest.get_me()
            assert server.accepted == 3
            assert transport(rest).idle_connections() == 0


async def test_a_cancelled_request_drops_its_connection_and_the_next_call_works() -> None:
    with trio.fail_after(30):
        async with running_server() as server, client(server) as rest:
            await rest.get_me()
            server.behaviour = "hang"
            with trio.move_on_after(0.2) as scope:
                await rest.get_me()
            assert scope.cancelled_caught
            assert transport(rest).idle_connections() == 0
            server.behaviour = "ok"
            await rest.get_me()
            assert server.accepted == 2
            stats = rest.statistics()
            assert (stats.in_flight, stats.queued) == (0, 0)


async def test_a_reply_that_is_not_http_is_a_typed_error_and_the_connection_is_dropped() -> None:
    with trio.fail_after(30):
        async with running_server() as server, client(server) as rest:
            server.behaviour = "garbage"
            with pytest.raises(BandConnectionError) as info:
                await rest.get_me()
            assert isinstance(info.value.__cause__, httpx.RemoteProtocolError)
            assert transport(rest).idle_connections() == 0
            server.behaviour = "ok"
            await rest.get_me()


async def test_a_refused_connection_is_a_typed_error() -> None:
    with trio.fail_after(30):
        async with running_server() as server:
            port = server.port
        rest = RestClient(
            base_url=f"http://127.0.0.1:{port}",
            api_key=API_KEY,
            config=RestConfig(retry=RetryPolicy(max_retries=0)),
        )
        async with rest:
            with pytest.raises(BandConnectionError) as info:
                await rest.get_me()
            assert isinstance(info.value.__cause__, httpx.ConnectError)


async def test_closing_the_client_closes_idle_connections_and_refuses_new_calls() -> None:
    with trio.fail_after(30):
        async with running_server() as server:
            rest = client(server)
            await rest.get_me()
            pooled = transport(rest)
            await rest.aclose()
            assert pooled.idle_connections() == 0
            await server.wait_until(lambda: server.open == 0)
            with pytest.raises(Exception):  # noqa: B017, PT011 - httpx's own "closed client" error
                await rest.get_me()


async def test_proxies_from_the_environment_are_honoured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With HTTP_PROXY set, requests go to the proxy in absolute form (httpx's
    # own transport applies the environment; band-trio's pool does not).
    with trio.fail_after(30):
        async with running_server() as proxy:
            for name in ("HTTP_PROXY", "http_proxy"):
                monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
            rest = RestClient(
                base_url="http://band.test",
                api_key=API_KEY,
                config=RestConfig(retry=RetryPolicy(max_retries=0), allow_insecure_transport=True),
            )
            async with rest:
                assert not isinstance(rest._client._transport, PooledTransport)
                await rest.get_me()
            assert proxy.targets == [b"http://band.test/api/v1/agent/me"]


async def test_without_proxies_the_own_pool_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    async with running_server() as server, client(server) as rest:
        assert isinstance(rest._client._transport, PooledTransport)
        await rest.get_me()
        assert server.targets == [b"/api/v1/agent/me"]


# --------------------------------------------------------------------------- #
# Answers a raw loopback server scripts byte by byte: a body cut short, a
# request cancelled while its body is read, and a redirect to another origin.
# --------------------------------------------------------------------------- #

Script = Callable[[trio.SocketStream, bytes], Awaitable[bool]]
"""Answers one request (its head); returns False to close the connection."""


_BODY = json.dumps({"data": ME}).encode()


def _ok(extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + extra
        + b"content-length: "
        + str(len(_BODY)).encode()
        + b"\r\n\r\n"
        + _BODY
    )


class RawServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.accepted = 0
        self.open = 0
        self.heads: list[bytes] = []
        self.port = 0

    async def handle(self, stream: trio.SocketStream) -> None:
        self.accepted += 1
        self.open += 1
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                self.heads.append(head)
                if not await self.script(stream, head):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.open -= 1
            await stream.aclose()


@asynccontextmanager
async def serving(script: Script) -> AsyncIterator[RawServer]:
    server = RawServer(script)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


def raw_client(port: int, **config: object) -> RestClient:
    return RestClient(
        base_url=f"http://127.0.0.1:{port}",
        api_key=API_KEY,
        config=RestConfig(retry=RetryPolicy(max_retries=0), **config),  # type: ignore[arg-type]
    )


async def test_a_body_cut_short_is_a_typed_error_and_its_connection_is_dropped() -> None:
    answers = iter([b"short", b"ok"])

    async def script(stream: trio.SocketStream, head: bytes) -> bool:
        if next(answers) == b"short":
            await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n" + _BODY[:10])
            return False
        await stream.send_all(_ok())
        return True

    with trio.fail_after(10):
        async with serving(script) as server, raw_client(server.port) as rest:
            with pytest.raises(BandConnectionError):
                await rest.get_me()
            assert transport(rest).idle_connections() == 0
            me = await rest.get_me()
            assert me.id == ME["id"]
            assert server.accepted == 2
            assert transport(rest).idle_connections() == 1


async def test_a_timeout_while_the_body_is_read_drops_the_connection_and_frees_the_slot(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = trio.Event()

    async def script(stream: trio.SocketStream, head: bytes) -> bool:
        if not slow.is_set():
            slow.set()
            await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n{")
            await trio.sleep_forever()
        await stream.send_all(_ok())
        return True

    async with (
        serving(script) as server,
        raw_client(server.port, timeout=5.0, max_connections=1) as rest,
    ):
        with pytest.raises(BandTimeoutError):
            await rest.get_me()
        assert transport(rest).idle_connections() == 0
        assert rest.statistics().in_flight == 0
        with trio.fail_after(10):
            me = await rest.get_me()
        assert me.id == ME["id"]
        assert server.accepted == 2


async def test_a_redirect_to_another_origin_keeps_the_key_and_pools_per_origin() -> None:
    async def target(stream: trio.SocketStream, head: bytes) -> bool:
        await stream.send_all(_ok())
        return True

    with trio.fail_after(10):
        async with serving(target) as other:

            async def redirect(stream: trio.SocketStream, head: bytes) -> bool:
                location = f"http://localhost:{other.port}/api/v1/agent/me".encode()
                await stream.send_all(
                    b"HTTP/1.1 307 Temporary Redirect\r\nlocation: "
                    + location
                    + b"\r\ncontent-length: 0\r\n\r\n"
                )
                return True

            async with serving(redirect) as first, raw_client(first.port) as rest:
                for _ in range(2):
                    me = await rest.get_me()
                    assert me.id == ME["id"]
                # One connection per origin, each reused.
                assert (first.accepted, other.accepted) == (1, 1)
                assert transport(rest).idle_connections() == 2
                assert all(b"x-api-key" in h.lower() for h in first.heads)
                assert not any(b"x-api-key" in h.lower() for h in other.heads)
