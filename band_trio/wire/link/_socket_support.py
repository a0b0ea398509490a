"""Small pieces of the link's socket handling, each independent of the link.

* :class:`MalformedWindow` (sans-io) counts malformed frames on one socket in a
  sliding window, so that one bad frame costs that frame and only repeated
  garbage closes the socket.
* :class:`ShieldedStarter` runs trio-websocket's reader task shielded, so a
  closing handshake can complete while ``serve`` is being cancelled.
* :class:`SocketGone` and :class:`SocketEnd` say how one socket ended, and
  :func:`one_error` turns the group of a socket's tasks into its one error.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio
import trio_websocket

__all__ = ["MalformedWindow", "ShieldedStarter", "SocketEnd", "SocketGone", "one_error"]


class MalformedWindow:
    """Sans-io: malformed frames seen on one socket inside a sliding window."""

    def __init__(self, limit: int, window: float) -> None:
        self._limit = limit
        self._window = window
        self._seen: deque[float] = deque()

    def note(self, now: float) -> bool:
        """Record one malformed frame at ``now``; True when the limit is reached."""
        self._seen.append(now)
        while self._seen and now - self._seen[0] > self._window:
            self._seen.popleft()
        return len(self._seen) >= self._limit


class ShieldedStarter:
    """Stands in for the nursery trio-websocket starts its reader task in.

    The connection's reader runs shielded, so that when ``serve`` is cancelled
    the closing handshake (close 1000) can still complete; the scope is
    cancelled once we are done with the socket.
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self.scopes: list[trio.CancelScope] = []
        self.connections: list[trio_websocket.WebSocketConnection] = []

    def start_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        scope = trio.CancelScope(shield=True)
        self.scopes.append(scope)
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, trio_websocket.WebSocketConnection):
            self.connections.append(owner)

        async def run() -> None:
            with scope:
                await fn(*args)

        self._nursery.start_soon(run)

    def cancel(self) -> None:
        for scope in self.scopes:
            scope.cancel()


class SocketGone(Exception):
    """Internal: the session's socket ended (never escapes the link).

    ``alive`` marks a close we chose while the platform was still talking
    (malformed frames): not a drop by the platform.
    """

    def __init__(self, code: int | None, why: str, *, alive: bool = False) -> None:
        super().__init__(why)
        self.code = code
        self.why = why
        self.alive = alive


@attrs.define
class SocketEnd:
    """How one socket ended: its uptime, close code, and whether we closed a
    live connection ourselves."""

    uptime: float
    code: int | None
    alive: bool = False


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from _leaves(sub)
    else:
        yield exc


@contextmanager
def one_error() -> Iterator[None]:
    """Turn a nursery's ExceptionGroup holding one real error into that error.

    Several internal "socket gone" signals (reader and heartbeat noticing the
    same close) count as one; any other error wins over them.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        real = [e for e in _leaves(group) if not isinstance(e, trio.Cancelled)]
        other = [e for e in real if not isinstance(e, SocketGone)]
        if len(other) == 1:
            raise other[0] from None
        if not other and real:
            raise real[0] from None
        raise
