"""The room's inbox: bounded with one consumer, woken by items or by
its time keeper."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from band_trio.runtime.room._inbox import TIMED_OUT, Inbox


async def test_items_come_out_in_order() -> None:
    box: Inbox[int] = Inbox(3)
    for i in range(3):
        box.put_nowait(i)
    assert box.depth == 3
    assert [await box.get() for _ in range(3)] == [0, 1, 2]
    assert box.depth == 0


async def test_a_full_inbox_refuses_without_blocking() -> None:
    box: Inbox[int] = Inbox(2)
    box.put_nowait(1)
    box.put_nowait(2)
    with pytest.raises(trio.WouldBlock):
        box.put_nowait(3)
    assert await box.get() == 1
    box.put_nowait(3)
    assert [await box.get(), await box.get()] == [2, 3]


async def test_a_closed_inbox_refuses_items() -> None:
    box: Inbox[int] = Inbox(2)
    box.close()
    with pytest.raises(trio.ClosedResourceError):
        box.put_nowait(1)


async def test_a_parked_consumer_gets_the_item_put(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Inbox[str] = Inbox(1)
    got: list[object] = []

    async def consume() -> None:
        got.append(await box.get())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert box.waiting
        box.put_nowait("a")
    assert got == ["a"]
    assert not box.waiting


async def test_wake_ends_the_wait_with_timed_out(autojump_clock: trio.testing.MockClock) -> None:
    box: Inbox[str] = Inbox(1)
    got: list[object] = []

    async def consume() -> None:
        got.append(await box.get())

    assert not box.wake()  # nobody waits: nothing happens
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert box.wake()
    assert got == [TIMED_OUT]


async def test_an_item_put_after_a_wake_is_taken_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Inbox[str] = Inbox(1)
    got: list[object] = []

    async def consume() -> None:
        got.append(await box.get())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        box.wake()
        box.put_nowait("a")
    assert got == ["a"]
    assert box.depth == 0


async def test_a_cancelled_wait_takes_no_item(autojump_clock: trio.testing.MockClock) -> None:
    box: Inbox[str] = Inbox(1)
    with trio.move_on_after(1):
        await box.get()
    assert not box.waiting
    box.put_nowait("a")
    assert await box.get() == "a"


async def test_only_one_consumer_may_wait(autojump_clock: trio.testing.MockClock) -> None:
    box: Inbox[str] = Inbox(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.get)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await box.get()
        nursery.cancel_scope.cancel()
