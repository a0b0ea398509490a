"""Review of the keep-alive pool (band_trio.wire._pool) on paths its own tests
leave out: a body cut short, a request cancelled while its body is read, and a
redirect to another origin. A raw loopback server scripts each answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from band_trio.errors import BandConnectionError, BandTimeoutError
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

from .rest_mock import API_KEY, ME
from .test_rest_pool import _no_proxies, transport

__all__ = ["_no_proxies"]  # the autouse fixture applies here too

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


def client(port: int, **config: object) -> RestClient:
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
        async with serving(script) as server, client(server.port) as rest:
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
        client(server.port, timeout=5.0, max_connections=1) as rest,
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

            async with serving(redirect) as first, client(first.port) as rest:
                for _ in range(2):
                    me = await rest.get_me()
                    assert me.id == ME["id"]
                # One connection per origin, each reused.
                assert (first.accepted, other.accepted) == (1, 1)
                assert transport(rest).idle_connections() == 2
                assert all(b"x-api-key" in h.lower() for h in first.heads)
                assert not any(b"x-api-key" in h.lower() for h in other.heads)
