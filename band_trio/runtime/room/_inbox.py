"""``Inbox``: a room's bounded inbox with one consumer (Trio).

A room's worker is the only task that reads its inbox, and the dispatcher
only ever puts without blocking. A Trio memory channel would serve, but it
carries what this does not need (several senders and receivers, blocking
sends, clones) and costs about two kilobytes per room even while empty. An
agent may hold ten thousand idle rooms, so the inbox keeps only a capacity,
a deque made when the first item arrives, and the parked worker (if any).

The worker's wait can end at a deadline without a cancel scope of its own:
whoever keeps the time (the agent-wide pacer) calls :meth:`Inbox.wake`,
and :meth:`Inbox.get` returns :data:`TIMED_OUT`.
"""

from __future__ import annotations

from collections import deque
from typing import Final, Generic, TypeVar

import trio

__all__ = ["TIMED_OUT", "Inbox", "TimedOut"]

T = TypeVar("T")


class TimedOut:
    """What :meth:`Inbox.get` returns when :meth:`Inbox.wake` ended the wait."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "TIMED_OUT"


TIMED_OUT: Final = TimedOut()


class Inbox(Generic[T]):
    """A bounded FIFO for one consumer task; putting never blocks.

    Args:
        capacity: items held at most (at least 1).
    """

    __slots__ = ("_capacity", "_closed", "_items", "_waiter")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: deque[T] | None = None
        self._waiter: trio.lowlevel.Task | None = None
        self._closed = False

    @property
    def depth(self) -> int:
        """Items waiting now."""
        return 0 if self._items is None else len(self._items)

    @property
    def waiting(self) -> bool:
        """True while the consumer is parked in :meth:`get`."""
        return self._waiter is not None

    def put_nowait(self, item: T) -> None:
        """Queue ``item``, or hand it straight to the parked consumer.

        Raises:
            trio.WouldBlock: the mailbox is full.
            trio.ClosedResourceError: the mailbox is closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the mailbox is closed")
        items = self._items
        if items is None:
            items = self._items = deque()
        elif len(items) >= self._capacity:
            raise trio.WouldBlock
        items.append(item)
        waiter = self._waiter
        if waiter is not None:
            # Parked means the deque was empty: the consumer takes this item.
            self._waiter = None
            trio.lowlevel.reschedule(waiter)

    def wake(self) -> bool:
        """End the consumer's wait with :data:`TIMED_OUT` (never blocks).

        Returns:
            True when the consumer was parked.
        """
        waiter = self._waiter
        if waiter is None:
            return False
        self._waiter = None
        trio.lowlevel.reschedule(waiter)
        return True

    def close(self) -> None:
        """Refuse further items (those queued are dropped)."""
        self._closed = True
        self._items = None

    async def get(self) -> T | TimedOut:
        """The next item; waits until one arrives or :meth:`wake` is called.

        Cancellation: a checkpoint; a cancelled wait takes no item.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        items = self._items
        if items:
            item = items.popleft()
            if not items:
                self._items = None  # an empty deque is most of an idle mailbox
            await trio.lowlevel.cancel_shielded_checkpoint()
            return item
        if self._waiter is not None:
            raise trio.BusyResourceError("another task is already waiting on this mailbox")
        self._waiter = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)
        # Woken by an item, or by wake() (then an item put since is taken
        # first: the caller sees its deadline passed at its next wait).
        items = self._items
        if items:
            item = items.popleft()
            if not items:
                self._items = None
            return item
        return TIMED_OUT

    def _abort(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        # A method, not a closure: the parked wait holds one object less.
        self._waiter = None
        return trio.lowlevel.Abort.SUCCEEDED
