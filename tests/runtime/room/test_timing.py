"""Time-dependent behaviour of one Room, on the autojump clock.

The platform here is the in-memory fake REST client of ``fakes`` (no sockets,
so autojump cannot jump while a real read is pending). What is tested is
*when* the room acts: the periodic reconcile and its backoff (official runtime,
"Testable behaviours" 54, 55), the stopped-room probe (88), the turn timeout
(47), the retry backoff of deferred messages (37), and pending ``processed``
acks retried before ``/messages/next`` is read (57).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio
import trio.testing

from band_trio.errors import InternalServerError
from band_trio.testing._memory_rest import MemoryRest
from band_trio.wire.models import MessageStatus

from .fakes import Adapter, make_room


async def test_missed_push_is_recovered_by_the_timer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With no doorbell at all, the periodic reconcile finds the message (official runtime,
    "Testable behaviours" 54)."""
    rest = MemoryRest()
    adapter = Adapter()
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(1)
        mid = rest.add("nobody rang")  # no push: only /next can find it
        await trio.sleep(50)
        assert rest.status[mid] == "processed"
        assert adapter.seen == [mid]
        nursery.cancel_scope.cancel()


async def test_empty_reconciles_back_off_to_the_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The first check is jittered within the base interval; the interval doubles while /next is
    empty, capped; work resets it to the base (official runtime, "Testable behaviours" 54, 55)."""
    rest = MemoryRest()
    room = make_room(rest, Adapter(), idle_resync_interval=10.0, idle_resync_max_interval=80.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(400)
        times = rest.times("next")
        assert times[0] == 0  # the startup reconcile
        assert 0 < times[1] <= 10  # jittered first periodic check
        intervals = [round(b - a, 3) for a, b in itertools.pairwise(times[1:])]
        assert intervals[:4] == [40.0, 80.0, 80.0, 80.0]
        rest.add("work")
        await trio.sleep(81)
        assert rest.status["m1"] == "processed"
        (done_at,) = rest.times("processed")
        await trio.sleep(11)
        after = sorted({t for t in rest.times("next") if t >= done_at})
        # The reconcile's closing /next, then the next check a base interval later.
        assert round(after[1] - after[0], 3) == 10.0
        nursery.cancel_scope.cancel()


async def test_stopped_room_probes_and_resumes_when_work_appears(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A stopped room claims nothing; a probe that finds work on /next (the platform lifted the
    gate: a PLAY was missed) resumes it (official runtime, "Testable behaviours" 86, 88)."""
    rest = MemoryRest()
    adapter = Adapter()
    room = make_room(rest, adapter, stopped_resync_interval=5.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(1)
        room.stop()
        rest.gated = True
        mid = rest.add("while stopped")
        await trio.sleep(30)
        assert adapter.seen == []
        probes = rest.times("next")
        assert len(probes) >= 5  # probing at the stopped interval
        rest.gated = False
        await trio.sleep(6)
        assert not room.stopped
        assert rest.status[mid] == "processed"
        nursery.cancel_scope.cancel()


async def test_turn_timeout_fails_the_message(autojump_clock: trio.testing.MockClock) -> None:
    """A hung handler is cancelled at the timeout and the message marked failed with a safe
    label; the last attempt posts the generic error event (official runtime, "Testable
    behaviours" 47)."""
    rest = MemoryRest()
    adapter = Adapter(hang=True)
    room = make_room(rest, adapter, turn_timeout=30.0, max_attempts=2)
    mid = rest.add("hang")
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(29)
        assert rest.status[mid] == "processing"
        await trio.sleep(2)
        assert rest.errors[mid] == ["TurnTimeout"]
        await trio.sleep(40)
        assert rest.errors[mid] == ["TurnTimeout", "TurnTimeout"]
        assert [e.message_type for e in rest.events_sent] == ["error"]
        assert room.statistics().failed_for_good == 1
        nursery.cancel_scope.cancel()


async def test_refused_claims_are_retried_with_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A refused claim runs nothing and is retried soon, with backoff (official runtime,
    "Testable behaviours" 37)."""
    rest = MemoryRest()
    adapter = Adapter()
    rest.refuse_processing = 3
    mid = rest.add("claim me")
    room = make_room(rest, adapter, idle_resync_interval=1000.0, idle_resync_max_interval=1000.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(20)
        claims = rest.times("processing")
        assert len(claims) == 4
        intervals = [round(b - a, 3) for a, b in itertools.pairwise(claims)]
        assert intervals == [1.0, 2.0, 4.0]
        assert rest.status[mid] == "processed"
        assert adapter.seen == [mid]
        nursery.cancel_scope.cancel()


async def test_activity_echo_false_stops_the_turn_cooperatively(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A ``working: true`` report answered ``working: false`` ends the turn as a platform stop:
    nothing is marked failed and the message is retried (official runtime, "Testable behaviours"
    90)."""

    class EchoFalse(MemoryRest):
        def __init__(self) -> None:
            super().__init__()
            self.stop_reports = 1

        async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
            await trio.lowlevel.checkpoint()
            if working and self.stop_reports:
                self.stop_reports -= 1
                return False
            return working

    rest = EchoFalse()
    adapter = Adapter()
    first_hangs = [True]

    async def on_message(*args: Any, **kwargs: Any) -> None:
        msg = args[0]
        adapter.seen.append(msg.id)
        if first_hangs.pop() if first_hangs else False:
            await trio.sleep_forever()  # the platform stop must end this
        await args[1].send_message("ok", [msg.sender_id])

    adapter.on_message = on_message  # type: ignore[method-assign]
    mid = rest.add("stopped by the platform")
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(30)
        assert adapter.seen == [mid, mid]
        assert rest.status[mid] == "processed"
        assert mid not in rest.errors
        assert not room.stopped  # a platform stop is not a local pause
        assert len(rest.chat) == 1
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------------ pending acks before /next
class FlakyAckRest(MemoryRest):
    """``processed`` fails (HTTP 500, not performed) ``failing_acks`` times."""

    def __init__(self, failing_acks: int) -> None:
        super().__init__()
        self.failing_acks = failing_acks

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        if self.failing_acks:
            await trio.lowlevel.checkpoint()
            self.failing_acks -= 1
            self.log("processed!")  # a failed write, told apart in the log
            raise InternalServerError(500)
        return await super().mark_processed(chat_id, message_id)


def _names(rest: MemoryRest) -> list[str]:
    """The log of the message lifecycle calls (reads of ``/next`` and the work
    list, marks), without the posts, reports and roster reads."""
    return [name for _, name in rest.calls if name in _LIFECYCLE]


_LIFECYCLE = frozenset({"next", "list", "processing", "processed", "processed!", "failed"})


async def test_pending_ack_is_retried_before_next_and_blocks_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Every reconcile pass starts with the pending ack; while it fails the pass ends there (no
    ``/next``); once it lands, the room reconciles (official runtime, "Testable behaviours"
    57)."""
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
            "next",  # startup reconcile
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
        # Each retry of the ack was its own reconcile pass (startup reconcile + 3).
        assert room.statistics().resyncs >= 4
        assert room.statistics().completed == 2
        nursery.cancel_scope.cancel()


async def test_an_ack_that_never_lands_keeps_next_unread(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A retryable ack failure is retried
    at every pass for as long as it takes, and no pass reads ``/next`` meanwhile
    (the turn is never re-run either) (official runtime, "Testable behaviours" 57; and
    33, where band-trio differs)."""
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
