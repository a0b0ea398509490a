"""Connection accounting for an in-process :class:`~band_trio.local.LocalPlatform`.

The platform runs one Hypercorn ``TCPServer`` per accepted TCP connection
(``band_trio.local.connections`` starts them, as its subclass
``_Http1Server``). :func:`install` swaps that class for a subclass that tells a :class:`ConnectionProbe` when a connection opens and
closes, and which principal (by API key) it carries: a connection belongs to
the principal of its first request (``x-api-key`` header of an HTTP request or
of the WebSocket upgrade). So the probe knows, per principal and exactly (no
sampling):

* how many TCP connections it opened (churn), HTTP and WebSocket apart;
* how many HTTP connections it had open at the same time (and the maximum);
* how many HTTP requests it made (to tell when an agent has gone quiet).

Call :func:`install` before the platform starts serving; it only affects
servers started afterwards in this process. This is benchmark instrumentation:
nothing in ``band_trio`` depends on it.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import hypercorn.trio.run as hypercorn_run
from hypercorn.trio.tcp_server import TCPServer

import band_trio.local.connections as local_connections

__all__ = ["ConnectionProbe", "PrincipalConnections", "install"]


@attrs.define
class PrincipalConnections:
    """Connection counters of one principal (user or agent)."""

    http_connects: int = 0
    ws_connects: int = 0
    http_open: int = 0
    max_http_open: int = 0
    requests: int = 0
    routes: Counter[str] = attrs.Factory(Counter)
    #: route -> seconds spent serving it (app entry to return), summed
    route_seconds: dict[str, float] = attrs.Factory(dict)

    def snapshot(self) -> dict[str, Any]:
        """The counters as a plain dict."""
        return attrs.asdict(self)


_ID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def route(method: str, path: str) -> str:
    """``POST /api/v1/agent/chats/{id}/messages`` for any ids in the path."""
    return f"{method} {_ID_RE.sub('{id}', path)}"


class ConnectionProbe:
    """Counts TCP connections per principal; see the module docstring.

    Args:
        principal_of: maps an API key to a principal id (None: unknown key).
    """

    def __init__(self, principal_of: Callable[[str], str | None]) -> None:
        self._principal_of = principal_of
        self.by_principal: dict[str, PrincipalConnections] = {}
        self.accepted = 0
        self.unattributed_closed = 0

    def counters(self, principal_id: str) -> PrincipalConnections:
        """The (live) counters of one principal; created empty on first use."""
        found = self.by_principal.get(principal_id)
        if found is None:
            found = self.by_principal[principal_id] = PrincipalConnections()
        return found

    # Called by _CountingTCPServer -------------------------------------------------

    def _attribute(self, conn: _Conn, scope: dict[str, Any]) -> None:
        if scope.get("type") not in ("http", "websocket"):
            return
        if conn.principal is None:
            key = None
            for name, value in scope.get("headers", ()):
                if name.lower() == b"x-api-key":
                    key = value.decode("latin-1")
                    break
            principal = self._principal_of(key) if key else None
            if principal is None:
                return
            conn.principal = principal
            counters = self.counters(principal)
            if scope["type"] == "websocket":
                conn.websocket = True
                counters.ws_connects += 1
            else:
                counters.http_connects += 1
                counters.http_open += 1
                counters.max_http_open = max(counters.max_http_open, counters.http_open)
        if scope["type"] == "http":
            counters = self.counters(conn.principal)
            counters.requests += 1
            counters.routes[route(scope.get("method", "?"), scope.get("path", "?"))] += 1

    def _closed(self, conn: _Conn) -> None:
        if conn.principal is None:
            self.unattributed_closed += 1
        elif not conn.websocket:
            self.counters(conn.principal).http_open -= 1


@attrs.define(eq=False)
class _Conn:
    principal: str | None = None
    websocket: bool = False


_active: ConnectionProbe | None = None


class _AppSpy:
    """Wraps Hypercorn's app wrapper for one connection: sees every scope."""

    def __init__(self, app: Any, probe: ConnectionProbe, conn: _Conn) -> None:
        self._app = app
        self._probe = probe
        self._conn = conn

    async def __call__(self, scope: Any, *args: Any) -> None:
        self._probe._attribute(self._conn, scope)
        if scope.get("type") != "http" or self._conn.principal is None:
            await self._app(scope, *args)
            return
        started = time.perf_counter()
        try:
            await self._app(scope, *args)
        finally:
            seconds = self._probe.counters(self._conn.principal).route_seconds
            key = route(scope.get("method", "?"), scope.get("path", "?"))
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - started


class _Counting:
    """Counts a connection server's connection (mixed into Hypercorn's server
    and into the local platform's subclass of it)."""

    def __init__(self, app: Any, *args: Any) -> None:
        self._probe = _active
        self._conn = _Conn()
        if self._probe is not None:
            self._probe.accepted += 1
            app = _AppSpy(app, self._probe, self._conn)
        super().__init__(app, *args)  # type: ignore[call-arg]

    async def run(self) -> None:
        try:
            await super().run()  # type: ignore[misc]
        finally:
            if self._probe is not None:
                self._probe._closed(self._conn)


class _CountingTCPServer(_Counting, TCPServer):
    pass


class _CountingHttp1Server(_Counting, local_connections._Http1Server):
    pass


@contextmanager
def install(probe: ConnectionProbe) -> Iterator[ConnectionProbe]:
    """Count the connections of Hypercorn servers started inside the block."""
    global _active
    original = hypercorn_run.TCPServer  # type: ignore[attr-defined]
    original_local = local_connections._Http1Server
    hypercorn_run.TCPServer = _CountingTCPServer  # type: ignore[attr-defined,assignment]
    local_connections._Http1Server = _CountingHttp1Server  # type: ignore[misc]
    _active = probe
    try:
        yield probe
    finally:
        hypercorn_run.TCPServer = original  # type: ignore[attr-defined]
        local_connections._Http1Server = original_local  # type: ignore[misc]
        _active = None
