"""runtime.md §8.57 on the autojump clock: when a room reconciles, its pending
``processed`` acks are retried before ``/messages/next`` is read, and while one
still fails, ``/next`` is not read in that pass.

The platform is the in-memory fake of tests/runtime/test_room_timing.py (its
call log is ordered and timed on the Trio clock), with a ``processed`` write
that fails with a retryable 500 a given number of times.
"""

from __future__ import annotations

import trio
import trio.testing

from band_trio.errors import InternalServerError
from band_trio.wire.models import MessageStatus

from .test_room_timing import Adapter, FakeRest, make_room


class FlakyAckRest(FakeRest):
    """``processed`` fails (HTTP 500, not performed) ``failing_acks`` times."""

    def __init__(self, failing_acks: int) -> None:
        super().__init__()
        self.failing_acks = failing_acks

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        if self.failing_acks:
            await trio.lowlevel.checkpoint()
            self.failing_acks -= 1
            self._log("processed!")  # a failed write, told apart in the log
            raise InternalServerError(500)
        return await super().mark_processed(chat_id, message_id)


def _names(rest: FakeRest) -> list[str]:
    return [name for _, name in rest.calls]


async def test_pending_ack_is_retried_before_next_and_blocks_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.57: every reconcile pass starts with the pending ack; while it fails
    the pass ends there (no ``/next``); once it lands, ``/next`` is drained."""
    rest = FlakyAckRest(failing_acks=3)
    adapter = Adapter()
    first = rest.add("first")
    room = make_room(rest, adapter, retry_delay=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(0.5)
        # Arrives while the first message's ack is pending: it must wait for
        # /next, which is not read until that ack landed.
        second = rest.add("second")
        await trio.sleep(30)
        assert rest.status == {first: "processed", second: "processed"}
        # The turn of the first message ran once: only its ack was retried.
        assert adapter.seen == [first, second]
        names = _names(rest)
        # Then only the periodic reconciles, which find nothing.
        assert set(names[10:]) <= {"next"}
        assert names[:10] == [
            "next",  # startup drain
            "processing",
            "processed!",  # the turn completed; its ack did not land
            "processed!",  # reconcile pass 1: the ack first, still failing: no /next
            "processed!",  # reconcile pass 2: same
            "processed",  # reconcile pass 3: the ack lands ...
            "next",  # ... and only then is /next read
            "processing",
            "processed",
            "next",
        ]
        # Each retry of the ack was its own reconcile pass (startup drain + 3).
        assert room.statistics().resyncs >= 4
        assert room.statistics().completed == 2
        nursery.cancel_scope.cancel()


async def test_an_ack_that_never_lands_keeps_next_unread(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.57 (and §8.33 as band-trio differs): a retryable ack failure is retried
    at every pass for as long as it takes, and no pass reads ``/next`` meanwhile
    (the turn is never re-run either)."""
    rest = FlakyAckRest(failing_acks=10_000)
    adapter = Adapter()
    first = rest.add("first")
    room = make_room(rest, adapter, retry_delay=1.0, idle_resync_interval=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(0.5)
        rest.add("second")
        await trio.sleep(300)
        names = _names(rest)
        assert names[:3] == ["next", "processing", "processed!"]
        assert set(names[3:]) == {"processed!"}
        assert len(names[3:]) >= 20  # retried at every pass (backoff capped at 10 s)
        assert adapter.seen == [first]
        assert rest.status[first] == "processing"
        nursery.cancel_scope.cancel()
