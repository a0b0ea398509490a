"""The HTTP transport under :class:`~band_trio.wire.rest.RestClient`.

httpx's default transport pools connections with httpcore's
``AsyncConnectionPool``, which re-examines every pooled connection (and polls
the idle ones' sockets) for every queued request whenever any request starts
or ends: its cost per request grows with the square of the pool size. In an
agent serving many rooms that bookkeeping was the largest single item of its
CPU profile. This transport keeps the same connections (httpcore's public
``AsyncHTTPConnection``, HTTP/1.1 with keep-alive) in a LIFO stack of idle
connections per origin, so one request costs one pop and one push.

It does not bound concurrency itself: ``RestClient`` admits at most
``max_connections`` requests at once, and a connection is created only when no
idle one is left, so there are never more connections than requests in flight.
Idle connections above ``max_keepalive`` are closed; expired ones are closed
when met. Errors are httpx's (``httpx.ConnectError``, ``httpx.ReadTimeout``,
...), exactly as from httpx's own transport.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Final

import httpcore
import httpx
import trio

__all__ = ["PooledTransport"]

_Key = tuple[bytes, bytes, int]

#: httpcore's errors and the httpx errors they become (most specific first).
_ERRORS: Final[tuple[tuple[type[Exception], type[httpx.HTTPError]], ...]] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)

#: How often a request is moved to another connection when the one taken from
#: the stack turns out unusable before anything was sent on it.
_MAX_UNAVAILABLE = 3


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except httpx.HTTPError:
        raise
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class PooledTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 connections reused last-in first-out, O(1) per request.

    Args:
        max_keepalive: idle connections kept open per origin.
        keepalive_expiry: seconds an idle connection may stay open.
        ssl_context: the context of ``https`` connections; ``None`` builds
            httpx's default (verifying) context on first use.
    """

    def __init__(
        self,
        *,
        max_keepalive: int,
        keepalive_expiry: float,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._max_keepalive = max_keepalive
        self._keepalive_expiry = keepalive_expiry
        self._idle: dict[_Key, list[httpcore.AsyncHTTPConnection]] = {}
        self._backend = httpcore.TrioBackend()
        self._ssl_context = ssl_context
        self._closed = False
        self.opened = 0
        """Connections opened so far (for tests and statistics)."""

    def idle_connections(self) -> int:
        """Idle connections held now, over every origin."""
        return sum(len(stack) for stack in self._idle.values())

    def _context(self) -> ssl.SSLContext:
        # Only built for an https origin: loading the CA store costs memory.
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    async def _checkout(self, key: _Key, origin: httpcore.Origin) -> httpcore.AsyncHTTPConnection:
        stack = self._idle.get(key)
        while stack:
            connection = stack.pop()
            if stack and stack[0].has_expired():
                # The oldest idle connection is checked too, so a deep stack
                # does not keep expired sockets open forever.
                await _close(stack.pop(0))
            if connection.is_idle() and not connection.has_expired():
                return connection
            await _close(connection)
        self.opened += 1
        return httpcore.AsyncHTTPConnection(
            origin=origin,
            ssl_context=self._context() if key[0] == b"https" else None,
            keepalive_expiry=self._keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=self._backend,
        )

    async def _checkin(self, key: _Key, connection: httpcore.AsyncHTTPConnection) -> None:
        stack = self._idle.setdefault(key, [])
        if (
            not self._closed
            and connection.is_idle()
            and not connection.has_expired()
            and len(stack) < self._max_keepalive
        ):
            stack.append(connection)
        else:
            await _close(connection)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request on an idle connection (or a new one)."""
        if self._closed:
            raise RuntimeError("the transport is closed")
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        scheme, host, port = url.raw_scheme, url.raw_host, url.port
        default_port = 443 if scheme == b"https" else 80
        key: _Key = (scheme, host, port or default_port)
        origin = httpcore.Origin(scheme, host, key[2])
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=scheme, host=host, port=port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        unavailable = 0
        while True:
            connection = await self._checkout(key, origin)
            try:
                with _httpx_errors():
                    response = await connection.handle_async_request(core_request)
            except httpcore.ConnectionNotAvailable:
                # Nothing was sent on it: drop it and use another connection.
                await _close(connection)
                unavailable += 1
                if unavailable >= _MAX_UNAVAILABLE:
                    raise httpx.ConnectError("no usable connection") from None
                continue
            except BaseException:
                # httpcore has closed or reset the connection already.
                with trio.CancelScope(shield=True):
                    await self._checkin(key, connection)
                raise
            break
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(self, key, connection, response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close every idle connection; later requests are refused."""
        self._closed = True
        stacks, self._idle = self._idle, {}
        with trio.CancelScope(shield=True):
            for stack in stacks.values():
                for connection in stack:
                    await _close(connection)


class _Body(httpx.AsyncByteStream):
    """A response body that gives its connection back when it is closed."""

    def __init__(
        self,
        transport: PooledTransport,
        key: _Key,
        connection: httpcore.AsyncHTTPConnection,
        stream: AsyncIterable[bytes],
    ) -> None:
        self._transport = transport
        self._key = key
        self._connection: httpcore.AsyncHTTPConnection | None = connection
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            close = getattr(self._stream, "aclose", None)
            if close is not None:
                with _httpx_errors():
                    await close()
        finally:
            with trio.CancelScope(shield=True):
                await self._transport._checkin(self._key, connection)


async def _close(connection: httpcore.AsyncHTTPConnection) -> None:
    with (
        trio.CancelScope(shield=True),
        suppress(
            OSError, trio.BrokenResourceError, trio.ClosedResourceError, httpcore.NetworkError
        ),
    ):
        await connection.aclose()
