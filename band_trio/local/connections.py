"""Accepting TCP connections for the local platform, one guarded connection at a time.

Hypercorn's own serve loop runs every connection in one nursery: an exception
escaping one connection's protocol code (an HTTP/2 stream the library loses
track of, for example) ends the whole server. Here each connection runs
Hypercorn's per-connection server inside a guard, so whatever goes wrong
costs that connection only, and these limits apply before Hypercorn sees a
byte:

- The first request's headers must arrive within :data:`HEADER_TIMEOUT`; a
  connection closed before that is forgotten at once, and one that is still
  sending them when a new connection of the same address (or a new one past
  the global cap) needs room is closed to make it.
- HTTP/2 is not spoken: the ``PRI * HTTP/2.0`` preface is refused with an
  HTTP/2 ``GOAWAY`` saying ``HTTP_1_1_REQUIRED``, and ``Upgrade: h2c`` is
  ignored (the request is answered in HTTP/1.1). A protocol the platform does
  not use is one it need not defend.
- A connection ends once its client has gone and none of its requests is
  being answered (after :data:`_GONE_GRACE` at most, for a request read just
  before the client went to reach the application); Hypercorn alone would
  keep one whose client sent something it could not answer until the
  keep-alive timer fires.
- A connection whose first request carries a valid key counts against that
  user or agent; one without a key counts against its client address. Each
  may hold at most ``max_per_client`` connections; one more is answered
  ``429 too_many_connections`` and closed. So a local process without a key
  can fill its own address's share, never lock out a client with a key.
- At most ``max_connections`` connections are open at once (keyless ones:
  half of that), below the process's file limit; past it a connection is
  answered ``503 too_many_connections`` and closed, and a warning is logged
  once per episode.
- Every connection is counted in :class:`ConnectionStatistics`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import socket
import struct
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import parse_qsl

import attrs
import trio

from band_trio.errors import MissingExtraError

try:
    from hypercorn.config import Config
    from hypercorn.protocol.h11 import H11Protocol
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app
except ModuleNotFoundError as exc:  # installed without the `local` extra
    raise MissingExtraError("local", "the embedded local Band platform") from exc

__all__ = [
    "DEFAULT_MAX_CONNECTIONS_PER_CLIENT",
    "H2_PREFACE",
    "HEADER_TIMEOUT",
    "MAX_REQUEST_HEAD",
    "ConnectionGuard",
    "ConnectionStatistics",
    "default_max_connections",
    "raise_file_limit",
    "request_key",
]

log = logging.getLogger("band_trio.local.server")

DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 512
"""Connections one user, agent, or keyless client address may hold at once."""
HEADER_TIMEOUT = 10.0
"""Seconds a new connection has to send its first request's headers."""
MAX_REQUEST_HEAD = 16 * 1024
"""Bytes of request headers read before the guard hands the connection on
(Hypercorn refuses a longer head itself)."""

_GONE_GRACE = 1.0
"""Seconds a connection whose client has gone waits for a request it read
last to reach the application before it ends."""

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# GOAWAY (type 7) on stream 0: last stream 0, error HTTP_1_1_REQUIRED (0xd).
_H2_GOAWAY = struct.pack(">I", 8)[1:] + b"\x07\x00" + struct.pack(">III", 0, 0, 0xD)
_KEY_PARAMETERS = ("api_key", "token")


def _refusal(status: bytes, message: bytes) -> bytes:
    body = (
        b'{"error":{"code":"too_many_connections","message":"' + message + b'","request_id":null}}'
    )
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
        b"x-content-type-options: nosniff\r\n"
        b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


_TOO_MANY_FOR_CLIENT = _refusal(
    b"429 Too Many Requests", b"this client holds too many connections; close some and retry"
)
_TOO_MANY_IN_ALL = _refusal(
    b"503 Service Unavailable", b"the platform holds too many connections; retry shortly"
)


@attrs.frozen
class ConnectionStatistics:
    """What the guard has seen.

    Attributes:
        open: connections open now (those still sending their first headers too).
        accepted: connections served since start.
        refused_busy: connections refused because their client (key or
            address) held too many.
        refused_http2: connections refused for speaking HTTP/2 with prior knowledge.
        failed: connections whose protocol code raised (closed, server unharmed).
        refused_full: connections refused because the platform held
            ``max_connections``.
        cut_slow: connections closed because their first headers took longer
            than :data:`HEADER_TIMEOUT`.
        cut_for_room: connections still sending their first headers, closed
            to make room for a new one.
    """

    open: int
    accepted: int
    refused_busy: int
    refused_http2: int
    failed: int
    refused_full: int = 0
    cut_slow: int = 0
    cut_for_room: int = 0


class _ConnectionEnd:
    """When one connection has nothing left to do: its client has gone (end
    of input, or the socket closed) and no request of it is being answered.

    Hypercorn keeps such a connection until its keep-alive timer fires (a
    malformed request, or half a pipelined one, before the client closed);
    this ends it at once, by cancelling :attr:`scope`, without touching
    Hypercorn's internals: it watches the stream (:class:`_ReplayStream`)
    and the application calls (:meth:`app`).
    """

    def __init__(self, app: Any) -> None:
        self.scope = trio.CancelScope()
        self._app = app
        self._calls = 0
        self._gone = False

    def client_gone(self) -> None:
        self._gone = True
        if not self._calls:
            # A request read just before the end of input may not have
            # reached the application yet: give it a moment to.
            self.scope.deadline = min(self.scope.deadline, trio.current_time() + _GONE_GRACE)

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        """The platform's ASGI application, counted while it answers."""
        self._calls += 1
        self.scope.deadline = math.inf
        try:
            await self._app(scope, receive, send)
        finally:
            self._calls -= 1
            if self._gone and not self._calls:
                self.scope.cancel()


class _ReplayStream(trio.abc.HalfCloseableStream):
    """A socket stream that first hands back bytes already read from it, and
    says when the client has gone."""

    def __init__(self, inner: trio.SocketStream, head: bytes, end: _ConnectionEnd) -> None:
        self._inner = inner
        self._head = head
        self._end = end
        self.socket = inner.socket  # Hypercorn reads the peer address from it

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            await trio.lowlevel.checkpoint()
            return head
        try:
            data = await self._inner.receive_some(max_bytes)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._end.client_gone()
            raise
        if not data:
            self._end.client_gone()
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._inner.send_eof()

    async def aclose(self) -> None:
        self._end.client_gone()
        await self._inner.aclose()


async def _stay_on_http1(event: object) -> None:
    """Hypercorn's protocol switch (``Upgrade: h2c``, a ``PRI`` request) made a no-op."""
    del event
    await trio.lowlevel.checkpoint()


class _Http1Server(TCPServer):
    """Hypercorn's connection server, never switching an HTTP/1.1 connection
    to HTTP/2: the upgrade header is ignored and the request answered as it is.

    Hypercorn has no setting for this: the server replaces the protocol's
    private ``H11Protocol._check_protocol`` as the protocol is created
    (``tests/local/test_http1_server.py`` pins it).
    """

    @property
    def protocol(self) -> Any:
        return self._wrapper

    @protocol.setter
    def protocol(self, wrapper: Any) -> None:
        inner = getattr(wrapper, "protocol", None)
        if isinstance(inner, H11Protocol):
            inner._check_protocol = _stay_on_http1  # type: ignore[method-assign]
        self._wrapper = wrapper


def request_key(head: bytes) -> str | None:
    """The API key a request head carries: its ``x-api-key`` header, else an
    ``api_key`` or ``token`` query parameter (as the platform's routes read
    them); None when there is none or the head is malformed."""
    lines = head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"x-api-key":
            return value.strip().decode("latin-1") or None
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        return None
    query = parts[1].partition(b"?")[2].decode("latin-1")
    params = dict(parse_qsl(query, keep_blank_values=True))
    for parameter in _KEY_PARAMETERS:
        if params.get(parameter):
            return params[parameter]
    return None


class ConnectionGuard:
    """Serves an ASGI app on a listening socket, each connection guarded.

    Args:
        app: the ASGI application.
        config: Hypercorn's configuration (timeouts, sizes, logging).
        max_per_client: connections one user or agent (by the key of the first
            request) or one keyless client address may hold at once.
        max_connections: connections open at once in all; keyless ones may
            use half of them.
        identify: the user or agent id owning a key, or None.
        on_change: called whenever a connection opens or closes.
    """

    def __init__(
        self,
        app: Any,
        config: Config,
        *,
        max_per_client: int,
        max_connections: int = 2**31,
        identify: Callable[[str], str | None] = lambda key: None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._on_change = on_change
        self._identify = identify
        self._app = app
        self._config = config
        self._context = WorkerContext(None)
        self._max_per_client = max_per_client
        self._max_connections = max_connections
        # Connections still sending their first headers, oldest first: the
        # cancel scope of the read and the client address.
        self._waiting: dict[int, tuple[trio.CancelScope, str]] = {}
        self._waiting_per_address: Counter[str] = Counter()
        self._ids = itertools.count()
        # Connections handed to Hypercorn, by "key:<principal>" or "address:<host>".
        self._served: Counter[str] = Counter()
        self._keyless = 0
        self._full = False
        self._accepted = 0
        self._refused_busy = 0
        self._refused_http2 = 0
        self._refused_full = 0
        self._failed = 0
        self._cut_slow = 0
        self._cut_for_room = 0

    @property
    def open(self) -> int:
        """Connections open now."""
        return len(self._waiting) + sum(self._served.values())

    def statistics(self) -> ConnectionStatistics:
        """The counters (a frozen snapshot)."""
        return ConnectionStatistics(
            open=self.open,
            accepted=self._accepted,
            refused_busy=self._refused_busy,
            refused_http2=self._refused_http2,
            failed=self._failed,
            refused_full=self._refused_full,
            cut_slow=self._cut_slow,
            cut_for_room=self._cut_for_room,
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
        address = _peer_host(stream)
        if self.open >= self._max_connections and not self._cut_oldest_waiting(None):
            await self._refuse_full(stream)
            return
        if self._waiting_per_address[address] >= self._max_per_client:
            self._cut_oldest_waiting(address)
        head = await self._first_head(stream, address)
        if head is None:
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
        if head.startswith(H2_PREFACE):
            self._refused_http2 += 1
            self._on_change()
            await _answer_and_close(stream, _H2_GOAWAY)
            return
        key = request_key(head)
        principal = self._identify(key) if key else None
        bucket = f"key:{principal}" if principal else f"address:{address}"
        if self._served[bucket] >= self._max_per_client:
            self._refused_busy += 1
            self._on_change()
            await _answer_and_close(stream, _TOO_MANY_FOR_CLIENT)
            return
        if principal is None and self._keyless >= self._max_connections // 2:
            await self._refuse_full(stream)
            return
        await self._serve(stream, head, bucket, keyless=principal is None)

    async def _first_head(self, stream: trio.SocketStream, address: str) -> bytes | None:
        """The connection's first bytes, up to the end of the first request's
        headers (or the whole HTTP/2 preface); None when the client closed,
        was too slow, or was cut to make room."""
        token = next(self._ids)
        scope = trio.CancelScope(deadline=trio.current_time() + HEADER_TIMEOUT)
        self._waiting[token] = (scope, address)
        self._waiting_per_address[address] += 1
        self._on_change()
        head = b""
        try:
            with scope:
                while True:
                    try:
                        chunk = await stream.receive_some(65536)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return None
                    if not chunk:
                        return None  # closed before a whole request: nothing to answer
                    head += chunk
                    if len(head) < len(H2_PREFACE) and H2_PREFACE.startswith(head):
                        continue
                    if head.startswith(H2_PREFACE) or b"\r\n\r\n" in head:
                        return head
                    if len(head) > MAX_REQUEST_HEAD:
                        return head  # Hypercorn answers 431 for it
            if scope.cancelled_caught and token in self._waiting:
                self._cut_slow += 1
            return None
        finally:
            if self._waiting.pop(token, None) is not None:
                self._waiting_per_address[address] -= 1
                if not self._waiting_per_address[address]:
                    del self._waiting_per_address[address]
            self._on_change()

    def _cut_oldest_waiting(self, address: str | None) -> bool:
        """Close the oldest connection still sending its first headers (of
        ``address``, or of anyone); whether there was one."""
        for token, (scope, owner) in self._waiting.items():
            if address is None or owner == address:
                del self._waiting[token]
                self._waiting_per_address[owner] -= 1
                if not self._waiting_per_address[owner]:
                    del self._waiting_per_address[owner]
                scope.cancel()
                self._cut_for_room += 1
                return True
        return False

    async def _refuse_full(self, stream: trio.SocketStream) -> None:
        self._refused_full += 1
        if not self._full:
            self._full = True
            log.warning(
                "the local platform holds %d connections, its maximum: new ones are "
                "answered 503 until some close",
                self.open,
            )
        self._on_change()
        await _answer_and_close(stream, _TOO_MANY_IN_ALL)

    async def _serve(
        self, stream: trio.SocketStream, head: bytes, bucket: str, *, keyless: bool
    ) -> None:
        self._served[bucket] += 1
        self._keyless += keyless
        self._accepted += 1
        self._on_change()
        end = _ConnectionEnd(self._app)
        try:
            with end.scope:
                server = _Http1Server(
                    wrap_app(end.app, self._config.wsgi_max_body_size, "asgi"),
                    self._config,
                    self._context,
                    ConnectionState({}),
                    _ReplayStream(stream, head, end),  # type: ignore[arg-type]
                )
                await server.run()
        except Exception as exc:  # one connection's failure is never the server's
            self._failed += 1
            log.warning("a connection from %r failed and was closed: %r", bucket, exc)
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()
            self._served[bucket] -= 1
            if not self._served[bucket]:
                del self._served[bucket]
            self._keyless -= keyless
            if self._full and self.open < self._max_connections * 9 // 10:
                self._full = False
                log.warning("the local platform accepts connections again")
            self._on_change()


def raise_file_limit(wanted: int = 65536) -> int:
    """Raise the process's soft limit of open files towards ``wanted`` (never
    above the hard limit, never lowering it); the soft limit now, or 1024
    where the platform has no such limit to read.

    Each connection is a file: the default soft limit (1,024 on most Linux
    systems) is low for a server, while the hard limit usually allows more.
    """
    try:
        import resource  # POSIX only
    except ImportError:  # pragma: no cover - Windows
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # not allowed here: keep the limit as it is
            pass
    return soft if soft != resource.RLIM_INFINITY else wanted


def default_max_connections(file_limit: int) -> int:
    """Connections the platform holds at most under ``file_limit`` open files:
    three quarters of it, the rest left for the process's own files (state,
    logs, the agents and clients it runs)."""
    return max(16, file_limit * 3 // 4)


def _peer_host(stream: trio.SocketStream) -> str:
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return "?"
    return str(peer[0]) if isinstance(peer, tuple) else str(peer)


async def _answer_and_close(stream: trio.SocketStream, data: bytes) -> None:
    with trio.move_on_after(5):
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(data)
    with trio.CancelScope(shield=True):
        await stream.aclose()
