"""Accepting TCP connections for the local platform, one guarded connection at a time.

Hypercorn's own serve loop runs every connection in one nursery: an exception
escaping one connection's protocol code (an HTTP/2 stream the library loses
track of, for example) ends the whole server. Here each connection runs
Hypercorn's per-connection server inside a guard, so whatever goes wrong
costs that connection only, and three limits apply before Hypercorn sees a
byte:

- HTTP/2 with prior knowledge (the ``PRI * HTTP/2.0`` preface) is refused with
  an HTTP/2 ``GOAWAY`` saying ``HTTP_1_1_REQUIRED``: the platform speaks
  HTTP/1.1 and WebSocket only, and a protocol it does not use is one it need
  not defend. (An ``Upgrade: h2c`` request is still switched by Hypercorn; a
  failure there is contained like any other.)
- Each client address may hold at most ``max_per_client`` connections; one
  more is answered ``429 too_many_connections`` and closed.
- Every connection is counted in :class:`ConnectionStatistics`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs
import trio

from band_trio.errors import MissingExtraError

try:
    from hypercorn.config import Config
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app
except ModuleNotFoundError as exc:  # installed without the `local` extra
    raise MissingExtraError("local", "the embedded local Band platform") from exc

__all__ = [
    "DEFAULT_MAX_CONNECTIONS_PER_CLIENT",
    "H2_PREFACE",
    "ConnectionGuard",
    "ConnectionStatistics",
]

log = logging.getLogger("band_trio.local.server")

DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 512
"""Connections one client address may hold at once (REST pools and sockets together)."""

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# GOAWAY (type 7) on stream 0: last stream 0, error HTTP_1_1_REQUIRED (0xd).
_H2_GOAWAY = struct.pack(">I", 8)[1:] + b"\x07\x00" + struct.pack(">III", 0, 0, 0xD)
_FIRST_BYTES_TIMEOUT = 30.0


def _too_many_connections() -> bytes:
    body = (
        b'{"error":{"code":"too_many_connections","message":"this client holds too many '
        b'connections; close some and retry","request_id":null}}'
    )
    return (
        b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
        b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


@attrs.frozen
class ConnectionStatistics:
    """What the guard has seen.

    Attributes:
        open: connections open now.
        accepted: connections served since start.
        refused_busy: connections refused because their client held too many.
        refused_http2: connections refused for speaking HTTP/2 with prior knowledge.
        failed: connections whose protocol code raised (closed, server unharmed).
    """

    open: int
    accepted: int
    refused_busy: int
    refused_http2: int
    failed: int


class _ReplayStream(trio.abc.HalfCloseableStream):
    """A socket stream that first hands back bytes already read from it."""

    def __init__(self, inner: trio.SocketStream, head: bytes) -> None:
        self._inner = inner
        self._head = head
        self.socket = inner.socket  # Hypercorn reads the peer address from it

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            await trio.lowlevel.checkpoint()
            return head
        return await self._inner.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._inner.send_eof()

    async def aclose(self) -> None:
        await self._inner.aclose()


class ConnectionGuard:
    """Serves an ASGI app on a listening socket, each connection guarded.

    Args:
        app: the ASGI application.
        config: Hypercorn's configuration (timeouts, sizes, logging).
        max_per_client: connections one client address may hold at once.
        on_change: called whenever a connection opens or closes.
    """

    def __init__(
        self,
        app: Any,
        config: Config,
        *,
        max_per_client: int,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._on_change = on_change
        self._app = wrap_app(app, config.wsgi_max_body_size, "asgi")
        self._config = config
        self._context = WorkerContext(None)
        self._max_per_client = max_per_client
        self._per_client: Counter[str] = Counter()
        self._accepted = 0
        self._refused_busy = 0
        self._refused_http2 = 0
        self._failed = 0

    def statistics(self) -> ConnectionStatistics:
        """The counters (a frozen snapshot)."""
        return ConnectionStatistics(
            open=sum(self._per_client.values()),
            accepted=self._accepted,
            refused_busy=self._refused_busy,
            refused_http2=self._refused_http2,
            failed=self._failed,
        )

    async def serve(
        self,
        listener: socket.socket,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on ``listener`` (bound, not yet listening) until cancelled."""
        listener.listen(self._config.backlog)
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(listener))]
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(trio.serve_listeners, self._handle, listeners))
            task_status.started()

    async def _handle(self, stream: trio.SocketStream) -> None:
        client = _peer_host(stream)
        if self._per_client[client] >= self._max_per_client:
            self._refused_busy += 1
            self._on_change()
            await _answer_and_close(stream, _too_many_connections())
            return
        self._per_client[client] += 1
        self._accepted += 1
        self._on_change()
        try:
            head = await _first_bytes(stream)
            if head is None:
                await stream.aclose()
                return
            if head.startswith(H2_PREFACE):
                self._refused_http2 += 1
                await _answer_and_close(stream, _H2_GOAWAY)
                return
            server = TCPServer(
                self._app,
                self._config,
                self._context,
                ConnectionState({}),
                _ReplayStream(stream, head),  # type: ignore[arg-type]
            )
            await server.run()
        except Exception as exc:  # one connection's failure is never the server's
            self._failed += 1
            log.warning("a connection from %r failed and was closed: %r", client, exc)
            with trio.CancelScope(shield=True):
                await stream.aclose()
        finally:
            self._per_client[client] -= 1
            if not self._per_client[client]:
                del self._per_client[client]
            self._on_change()


def _peer_host(stream: trio.SocketStream) -> str:
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return "?"
    return str(peer[0]) if isinstance(peer, tuple) else str(peer)


async def _first_bytes(stream: trio.SocketStream) -> bytes | None:
    """The first bytes of a connection: enough to tell an HTTP/2 preface from
    anything else (None when the client closed or sent nothing in time)."""
    head = b""
    with trio.move_on_after(_FIRST_BYTES_TIMEOUT):
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not chunk:
                return head or None
            head += chunk
            if len(head) >= len(H2_PREFACE) or not H2_PREFACE.startswith(head):
                return head
    return None


async def _answer_and_close(stream: trio.SocketStream, data: bytes) -> None:
    with trio.move_on_after(5):
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(data)
    with trio.CancelScope(shield=True):
        await stream.aclose()
