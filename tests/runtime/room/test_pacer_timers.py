"""The pacer as the rooms' clock: each room is woken at the latest time it asked for."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.room._pacer import RoomPacer


class _Room:
    def __init__(self, room_id: str, log: list[tuple[str, float]]) -> None:
        self.room_id = room_id
        self._log = log

    def grant_bulk(self) -> None:
        raise AssertionError("not asked")

    def grant_idle(self) -> None:
        raise AssertionError("not asked")

    def wake_due(self) -> None:
        self._log.append((self.room_id, trio.current_time()))


@asynccontextmanager
async def _running_pacer() -> AsyncIterator[tuple[RoomPacer, float]]:
    """A running pacer with nothing else to do, and the time it started;
    stopped when the block ends (after the block's own sleeps)."""
    pacer = RoomPacer(AgentConfig(state_dir=None))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        yield pacer, trio.current_time()
        nursery.cancel_scope.cancel()


async def test_rooms_are_woken_at_their_times_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    async with _running_pacer() as (pacer, start):
        pacer.wake_at(_Room("b", log), start + 20)
        pacer.wake_at(_Room("a", log), start + 10)
        await trio.sleep(30)
    assert log == [("a", start + 10), ("b", start + 20)]


async def test_a_new_request_replaces_the_earlier_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    room = _Room("a", log)
    async with _running_pacer() as (pacer, start):
        pacer.wake_at(room, start + 10)
        pacer.wake_at(room, start + 5)
        pacer.wake_at(room, start + 15)
        await trio.sleep(30)
    assert log == [("a", start + 15)]


async def test_a_cancelled_or_forgotten_request_never_fires(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    async with _running_pacer() as (pacer, start):
        pacer.wake_at(_Room("a", log), start + 10)
        pacer.wake_at(_Room("b", log), start + 10)
        pacer.cancel_wake("a")
        pacer.forget("b")
        await trio.sleep(30)
    assert log == []


async def test_many_replaced_requests_still_fire_once_each(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    rooms = [_Room(f"r{i}", log) for i in range(10)]
    async with _running_pacer() as (pacer, start):
        for step in range(50):  # enough stale entries to compact the heap
            for i, room in enumerate(rooms):
                pacer.wake_at(room, start + 100 + i + step)
        await trio.sleep(200)
    assert log == [(f"r{i}", start + 100 + i + 49) for i in range(10)]


async def test_a_room_that_left_is_not_kept_alive_by_its_old_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A thousand rooms ask for a time far ahead and then leave (cancelled or
    # forgotten): the pacer must not hold any of them until that time comes.
    log: list[tuple[str, float]] = []
    async with _running_pacer() as (pacer, start):
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
    assert alive == []
    assert log == [("keeper", start + 10)]
