"""Publishing what a state change caused, and waiting on observable state.

Every door into the platform (an HTTP request, a WebSocket frame, a socket
opening or closing, an in-process call) ends with :meth:`ChangeFeed.publish`:
the pushes the change queued go to the sockets, and every
:meth:`ChangeFeed.wait_for` caller re-checks its predicate.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from band_trio.local.hub import Hub
from band_trio.local.live_feed import LiveFeed
from band_trio.local.store import PlatformState

__all__ = ["ChangeFeed"]


class ChangeFeed:
    """Delivers queued pushes and wakes the waiters of one platform.

    Args:
        state: the platform's state (its queued pushes are drained).
        hub: the WebSocket hub that delivers them.

    Attributes:
        live: the human live feed, told of every change after the sockets.
    """

    def __init__(self, state: PlatformState, hub: Hub) -> None:
        self._state = state
        self._hub = hub
        self._changed = trio.Event()
        self.live = LiveFeed(state)

    def publish(self) -> None:
        """Deliver the queued pushes and wake every :meth:`wait_for` caller."""
        pushes = self._state.drain_pushes()
        if pushes:
            self._hub.deliver(pushes)
        self.live.publish(pushes)
        self._changed.set()
        self._changed = trio.Event()

    def wake(self) -> None:
        """Wake every :meth:`wait_for` caller without publishing anything (a
        change outside the state, such as a TCP connection opening)."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` is true, re-checking it after every publish.

        Cancellation: a plain Trio wait; put a deadline around it.
        """
        while not predicate():
            await self._changed.wait()
