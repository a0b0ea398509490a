"""Conformance-kit support for adapters on the asyncio bridge.

The conformance kit (``band_trio.testing.conformance``) plays scenarios in
virtual time, which jumps ahead whenever every Trio task is blocked: while the
bridge's asyncio thread computes, they all are. :class:`ClockHoldingBridge`
keeps one Trio task busy while the asyncio side has the ball (not while a
Band tool it called runs on Trio, which may wait in virtual time): the
framework's work then takes no virtual time, as a model answering at once
would, and the kit takes its next step only once the framework has handed
control back. Everything else of the bridge (the thread, the portal,
cancelling and waiting for the asyncio task) is the real
:class:`~band_trio_asyncio.AsyncioBridge`'s.

Give it to the adapter under test, and close it when the agent stops::

    class TestMyAdapter(AdapterConformance):
        def make_adapter(self) -> MyAdapter:
            return MyAdapter(bridge=ClockHoldingBridge())
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, TypeVar

import trio
import trio.lowlevel

from band_trio_asyncio._bridge import AsyncioBridge, TrioPortal

__all__ = ["MAX_HOLD", "ClockHoldingBridge"]

T = TypeVar("T")

MAX_HOLD: Final = 10.0
"""Real seconds the clock is held at most in one go (a framework that never
hands control back then lets virtual time run, and the kit reports it)."""


class _Ball:
    """Who works now: the asyncio side, or Trio (``in_trio`` portal calls)."""

    def __init__(self) -> None:
        self.in_trio = 0
        self.trio_done = trio.Event()
        self.done = False

    async def on_trio(self, afn: Callable[..., Awaitable[T]], *args: Any) -> T:
        if self.in_trio == 0:
            self.trio_done = trio.Event()
        self.in_trio += 1
        try:
            return await afn(*args)
        finally:
            self.in_trio -= 1
            if self.in_trio == 0:
                self.trio_done.set()

    async def hold(self) -> None:
        # Shielded: while a cancelled run unwinds, the bridge waits for it,
        # and that wait must take no virtual time either.
        with trio.CancelScope(shield=True):
            deadline = time.monotonic() + MAX_HOLD
            while not self.done and time.monotonic() < deadline:
                if self.in_trio:
                    await self.trio_done.wait()
                else:
                    # Runnable, so neither the clock nor the kit sees Trio idle.
                    await trio.lowlevel.checkpoint()


class _CountingPortal(TrioPortal):
    """The run's portal, telling the ball when a call works on Trio."""

    def __init__(self, portal: TrioPortal, ball: _Ball) -> None:
        self._inner = portal
        self._ball = ball

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def close(self) -> None:
        self._inner.close()

    async def run(self, afn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await self._inner.run(self._ball.on_trio, afn, *args)


class ClockHoldingBridge(AsyncioBridge):
    """An :class:`~band_trio_asyncio.AsyncioBridge` whose asyncio work takes no
    virtual time (see the module docs). For tests only: it keeps a Trio task
    busy while the asyncio side works."""

    async def _holding(self, work: Callable[[], Awaitable[T]], ball: _Ball) -> T:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ball.hold)
                try:
                    return await work()
                finally:
                    ball.done = True
        except BaseExceptionGroup as group:
            # The one error of the work (or its Cancelled), as the bridge raises it.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def run(self, fn: Callable[[TrioPortal], Coroutine[Any, Any, T]]) -> T:
        """Run ``fn(portal)`` as :meth:`AsyncioBridge.run` does, holding the clock."""
        ball = _Ball()
        return await self._holding(
            lambda: super(ClockHoldingBridge, self).run(lambda p: fn(_CountingPortal(p, ball))),
            ball,
        )

    async def aclose(self) -> None:
        """Close as :meth:`AsyncioBridge.aclose` does, holding the clock."""
        await self._holding(super().aclose, _Ball())
