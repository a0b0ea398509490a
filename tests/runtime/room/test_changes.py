"""StateChanges: waiting on observable state without polling, on the autojump
clock; and a room notifying it at the moments a waiter cares about."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from band_trio.runtime.state_changes import StateChanges
from band_trio.testing._memory_rest import MemoryRest

from .fakes import Adapter, make_room


async def test_a_true_predicate_returns_at_once() -> None:
    changes = StateChanges()
    with trio.testing.assert_checkpoints():
        await changes.wait_for(lambda: True)


async def test_a_waiter_wakes_on_notify_and_rechecks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    changes = StateChanges()
    value = [0]
    checks = [0]
    woke_at: list[float] = []

    def reached() -> bool:
        checks[0] += 1
        return value[0] >= 2

    async def waiter() -> None:
        await changes.wait_for(reached)
        woke_at.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(5)
        assert checks[0] == 1  # checked once, then parked: no polling
        value[0] = 1
        changes.notify()
        await trio.sleep(5)
        assert checks[0] == 2  # re-checked on the notify, still false
        assert woke_at == []
        value[0] = 2
        changes.notify()
    assert woke_at == [10.0]
    assert checks[0] == 3


async def test_a_change_without_notify_wakes_nobody(
    autojump_clock: trio.testing.MockClock,
) -> None:
    changes = StateChanges()
    value = [False]
    with trio.move_on_after(5) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(changes.wait_for, lambda: value[0])
            await trio.sleep(1)
            value[0] = True  # never announced
    assert scope.cancelled_caught


async def test_the_wait_is_cancellable(autojump_clock: trio.testing.MockClock) -> None:
    changes = StateChanges()
    with pytest.raises(trio.TooSlowError), trio.fail_after(3):
        await changes.wait_for(lambda: False)
    assert trio.current_time() == 3


async def test_a_room_notifies_when_its_turn_starts_and_when_the_message_settles(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The waiter wakes at the virtual instant the room's statistics change,
    without any other wake-up source."""
    changes = StateChanges()
    rest = MemoryRest()
    adapter = Adapter(hang=True)
    room = make_room(rest, adapter, changes=changes)
    mid = rest.add("hello")
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        with trio.fail_after(1):
            await changes.wait_for(lambda: room.statistics().turn_running)
        assert adapter.seen == [mid]
        adapter.hang = False
        assert room.interrupt()  # an interrupt ends the turn; its message is settled
        with trio.fail_after(1):
            await changes.wait_for(
                lambda: not room.statistics().turn_running and rest.status[mid] == "processed"
            )
        assert room.statistics().interrupted == 1
        nursery.cancel_scope.cancel()
