"""Waiting on the agent's observable state instead of polling it.

Every place where what :meth:`~band_trio.agent.Agent.statistics` reports can
change (an event routed, a room joined or left, a turn started or ended, a
message settled, a reconcile pass done, a contact event handled, serving
started or stopped) calls :meth:`StateChanges.notify`; a waiter re-checks its
predicate then. Notifying with nobody waiting costs one empty unpark.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["StateChanges"]


class StateChanges:
    """Wakes the waiters of one agent whenever its observable state changed."""

    __slots__ = ("_lot",)

    def __init__(self) -> None:
        self._lot = trio.lowlevel.ParkingLot()

    def notify(self) -> None:
        """Wake every :meth:`wait_for` caller so that it re-checks its predicate.

        Never blocks; safe to call from synchronous code in any Trio task.
        """
        self._lot.unpark_all()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` is true, re-checking it after every notify.

        Returns at once (after a checkpoint) when it is already true.

        Cancellation: a plain Trio wait; put a deadline (``trio.fail_after``)
        around it.
        """
        await trio.lowlevel.checkpoint()
        while not predicate():
            await self._lot.park()
