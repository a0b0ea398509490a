"""A tiny HTTP/1.1 server on Trio for the probes and the metrics scrape.

h11 does the protocol (it comes with httpx); this module only moves bytes. It
answers ``GET`` and ``HEAD`` from a synchronous handler (every answer is
computed from in-memory state, so nothing here blocks the agent), keeps
connections alive for the next request, and bounds what a client can hold:

* at most :data:`MAX_CONNECTIONS` connections at once (more are closed at
  once);
* a request head of at most :data:`MAX_REQUEST_HEAD` bytes, and no body;
* :data:`IDLE_TIMEOUT` seconds to send each request, then the connection is
  closed.

It runs as a task of the nursery that starts it (the agent's own), so it
stops with it.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from functools import partial
from typing import Final

import attrs
import h11
import trio

from band_trio._logging import get_logger

__all__ = [
    "IDLE_TIMEOUT",
    "MAX_CONNECTIONS",
    "MAX_REQUEST_HEAD",
    "Handler",
    "ProbeResponse",
    "serve_http",
]

logger = get_logger("band_trio.observe")

MAX_CONNECTIONS: Final = 32
"""Connections served at once; a probe or a scrape needs one each."""
MAX_REQUEST_HEAD: Final = 8192
"""Bytes of a request line and its headers."""
IDLE_TIMEOUT: Final = 10.0
"""Seconds a connection may take to send a whole request."""
_READ_SIZE: Final = 4096


@attrs.frozen
class ProbeResponse:
    """What the handler answers to one request."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str], ProbeResponse]
"""``handler(path) -> ProbeResponse``, for a ``GET`` or ``HEAD`` of ``path``."""


async def serve_http(
    handler: Handler,
    host: str,
    port: int,
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``host:port`` and answer with ``handler`` until cancelled.

    ``task_status.started((host, port))`` reports the address bound (the
    port chosen when ``port`` is 0).

    Raises:
        OSError: the address cannot be bound (in use, not local...).
    """
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()
    slots = trio.CapacityLimiter(MAX_CONNECTIONS)
    task_status.started((str(bound[0]), int(bound[1])))
    await trio.serve_listeners(partial(_serve_connection, handler, slots), listeners)


async def _serve_connection(
    handler: Handler, slots: trio.CapacityLimiter, stream: trio.SocketStream
) -> None:
    async with stream:
        try:
            slots.acquire_nowait()
        except trio.WouldBlock:
            return
        try:
            await _serve_requests(handler, stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass  # the client went away or spoke nonsense: nothing to answer
        except OSError as exc:
            if exc.errno not in (errno.ECONNRESET, errno.EPIPE):
                raise
        finally:
            slots.release()


async def _serve_requests(handler: Handler, stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_HEAD)
    while True:
        request: h11.Request | None = None
        with trio.move_on_after(IDLE_TIMEOUT):
            try:
                request = await _read_request(conn, stream)
            except h11.RemoteProtocolError as exc:
                await _refuse(stream, exc.error_status_hint)
                return
        if request is None:
            return
        method = request.method.decode("ascii", "replace").upper()
        if method not in ("GET", "HEAD"):
            response = ProbeResponse(405, b"only GET and HEAD\n")
        else:
            response = _answer(handler, request.target.decode("ascii", "replace"))
        await _send(conn, stream, response, method == "HEAD")
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()


def _answer(handler: Handler, target: str) -> ProbeResponse:
    path = target.split("?", 1)[0]
    try:
        return handler(path)
    except Exception:
        logger.exception("the health listener failed to answer %s", path)
        return ProbeResponse(500, b"internal error\n")


async def _read_request(conn: h11.Connection, stream: trio.SocketStream) -> h11.Request | None:
    """The next request, its (empty) body read; None when the client closed."""
    request: h11.Request | None = None
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(_READ_SIZE)
            conn.receive_data(data)
            if not data and request is None:
                return None
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.EndOfMessage):
            return request
        elif isinstance(event, h11.ConnectionClosed):
            return None
        elif isinstance(event, h11.Data):
            raise h11.RemoteProtocolError("a probe request has no body", error_status_hint=413)


async def _refuse(stream: trio.SocketStream, status: int) -> None:
    """Answer a request that cannot be served, then close. h11 cannot send a
    response to a request it never parsed, so these few bytes are written
    here."""
    reason = {413: b"Content Too Large", 431: b"Request Header Fields Too Large"}
    line = b"HTTP/1.1 %d %s\r\n" % (status, reason.get(status, b"Bad Request"))
    await stream.send_all(line + b"content-length: 0\r\nconnection: close\r\n\r\n")


async def _send(
    conn: h11.Connection, stream: trio.SocketStream, response: ProbeResponse, head_only: bool
) -> None:
    headers = [
        ("content-type", response.content_type),
        ("content-length", str(len(response.body))),
        ("cache-control", "no-store"),
    ]
    if response.status == 405:
        headers.append(("allow", "GET, HEAD"))
    data = conn.send(h11.Response(status_code=response.status, headers=headers))
    if not head_only and response.body:
        data = (data or b"") + (conn.send(h11.Data(data=response.body)) or b"")
    data = (data or b"") + (conn.send(h11.EndOfMessage()) or b"")
    await stream.send_all(data)
