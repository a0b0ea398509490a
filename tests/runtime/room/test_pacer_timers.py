"""The pacer as the rooms' clock: each room is woken at the latest time it asked for."""

from __future__ import annotations

import gc
import weakref

import trio
import trio.testing

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.pacer import RoomPacer


class _Room:
    def __init__(self, room_id: str, log: list[tuple[str, float]]) -> None:
        self.room_id = room_id
        self._log = log

    def grant_drain(self) -> None:
        raise AssertionError("not asked")

    def grant_idle(self) -> None:
        raise AssertionError("not asked")

    def wake_due(self) -> None:
        self._log.append((self.room_id, trio.current_time()))


def _pacer() -> RoomPacer:
    return RoomPacer(AgentConfig(state_dir=None))


async def test_rooms_are_woken_at_their_times_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    pacer = _pacer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        pacer.wake_at(_Room("b", log), start + 20)
        pacer.wake_at(_Room("a", log), start + 10)
        await trio.sleep(30)
        nursery.cancel_scope.cancel()
    assert log == [("a", start + 10), ("b", start + 20)]


async def test_a_new_request_replaces_the_earlier_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    pacer = _pacer()
    room = _Room("a", log)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        pacer.wake_at(room, start + 10)
        pacer.wake_at(room, start + 5)
        pacer.wake_at(room, start + 15)
        await trio.sleep(30)
        nursery.cancel_scope.cancel()
    assert log == [("a", start + 15)]


async def test_a_cancelled_or_forgotten_request_never_fires(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    pacer = _pacer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        pacer.wake_at(_Room("a", log), start + 10)
        pacer.wake_at(_Room("b", log), start + 10)
        pacer.cancel_wake("a")
        pacer.forget("b")
        await trio.sleep(30)
        nursery.cancel_scope.cancel()
    assert log == []


async def test_many_replaced_requests_still_fire_once_each(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    pacer = _pacer()
    rooms = [_Room(f"r{i}", log) for i in range(10)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        for step in range(50):  # enough stale entries to compact the heap
            for i, room in enumerate(rooms):
                pacer.wake_at(room, start + 100 + i + step)
        await trio.sleep(200)
        nursery.cancel_scope.cancel()
    assert log == [(f"r{i}", start + 100 + i + 49) for i in range(10)]


async def test_a_room_that_left_is_not_kept_alive_by_its_old_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A thousand rooms ask for a time far ahead and then leave (cancelled or
    # forgotten): the pacer must not hold any of them until that time comes.
    log: list[tuple[str, float]] = []
    pacer = _pacer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        refs = []
        for i in range(1000):
            room = _Room(f"r{i}", log)
            refs.append(weakref.ref(room))
            pacer.wake_at(room, start + 3600 + i)
        for i in range(1000):
            if i % 2:
                pacer.cancel_wake(f"r{i}")
            else:
                pacer.forget(f"r{i}")
        del room
        gc.collect()
        alive = [ref for ref in refs if ref() is not None]
        # One that stays is still woken on time.
        keeper = _Room("keeper", log)
        pacer.wake_at(keeper, start + 10)
        await trio.sleep(4700)
        nursery.cancel_scope.cancel()
    assert alive == []
    assert log == [("keeper", start + 10)]
