"""A creation whose outcome is unknown is found among what the platform did
not hold before the write; creations of the same thing by one agent run one
after the other; what cannot be told apart is not repeated."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from band_trio.errors import (
    BandConnectionError,
    NotFoundError,
    OutcomeUnknownServiceUnavailableError,
)
from band_trio.tools.settled_writes import WriteLocks, create_once, read_patiently
from band_trio.tools.unsure_posts import UnsurePostPolicy

POLICY = UnsurePostPolicy(give_up_after=30.0)


def _lost() -> OutcomeUnknownServiceUnavailableError:
    return OutcomeUnknownServiceUnavailableError(503, message="lost", method="POST", path="/x")


class FakeStore:
    """Holds items; ``plan`` says how each send ends: ``ok`` stores and
    answers, ``lost`` stores and raises, ``refused`` raises."""

    def __init__(self, plan: list[str], items: list[str] | None = None) -> None:
        self.plan = plan
        self.items = list(items or [])
        self.sends = 0
        self.reads = 0

    async def send(self) -> str:
        await trio.lowlevel.checkpoint()
        self.sends += 1
        outcome = self.plan.pop(0) if self.plan else "ok"
        if outcome != "refused":
            self.items.append(f"new-{self.sends}")
        if outcome == "ok":
            return f"receipt:new-{self.sends}"
        raise _lost()

    async def existing(self) -> list[str]:
        await trio.lowlevel.checkpoint()
        self.reads += 1
        return list(self.items)


async def _create(store: FakeStore, locks: WriteLocks | None = None, key: str = "k") -> object:
    return await create_once(
        store.send,
        existing=store.existing,
        key_of=lambda x: x,
        policy=POLICY,
        locks=WriteLocks() if locks is None else locks,
        lock_key=key,
        what="thing",
    )


async def test_an_identical_older_item_is_not_taken_for_the_lost_one(
    autojump_clock: Any,
) -> None:
    store = FakeStore(["refused", "ok"], items=["old"])
    assert await _create(store) == "receipt:new-2"
    assert store.items == ["old", "new-2"]


async def test_a_lost_answer_is_found_among_the_new_items(autojump_clock: Any) -> None:
    store = FakeStore(["lost"], items=["old"])
    assert await _create(store) == "new-1"
    assert store.sends == 1


async def test_two_new_items_cannot_be_told_apart_and_nothing_is_repeated(
    autojump_clock: Any,
) -> None:
    store = FakeStore(["lost"], items=["old"])
    real_send = store.send

    async def send_and_someone_else_too() -> str:
        store.items.append("someone-elses")
        return await real_send()

    store.send = send_and_someone_else_too  # type: ignore[method-assign]
    with pytest.raises(OutcomeUnknownServiceUnavailableError):
        await _create(store)
    assert store.sends == 1


async def test_creations_of_the_same_thing_never_take_each_others_result(
    autojump_clock: Any,
) -> None:
    # Both answers are lost: run together, each would see the other's item
    # as new; serialised, each reads after the other's write.
    store = FakeStore(["lost", "lost"])
    locks = WriteLocks()
    results: list[object] = []

    async def one() -> None:
        results.append(await _create(store, locks))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one)
        nursery.start_soon(one)
    assert sorted(results) == ["new-1", "new-2"]  # type: ignore[type-var]
    assert store.sends == 2
    assert locks.in_use == 0


async def test_the_lock_of_one_thing_does_not_hold_another(autojump_clock: Any) -> None:
    locks = WriteLocks()
    entered: list[str] = []

    async def enter(key: str) -> None:
        with trio.move_on_after(1):
            async with locks.hold(key):
                entered.append(key)

    async with locks.hold("a"), trio.open_nursery() as nursery:
        nursery.start_soon(enter, "b")
        nursery.start_soon(enter, "a")
        await trio.testing.wait_all_tasks_blocked()
        assert entered == ["b"]
        assert locks.in_use == 1  # "a", held and waited for; "b" was dropped
    assert entered == ["b"]
    assert locks.in_use == 0


async def test_a_read_before_the_write_retries_within_the_bound(autojump_clock: Any) -> None:
    failures = [BandConnectionError("down"), BandConnectionError("down")]

    async def read() -> list[str]:
        await trio.lowlevel.checkpoint()
        if failures:
            raise failures.pop(0)
        return ["x"]

    assert await read_patiently(read, policy=POLICY, what="things") == ["x"]


async def test_a_read_that_cannot_succeed_raises_at_once_and_nothing_is_written(
    autojump_clock: Any,
) -> None:
    store = FakeStore([])

    async def gone() -> list[str]:
        await trio.lowlevel.checkpoint()
        raise NotFoundError(404, message="no such room", method="GET", path="/x")

    start = trio.current_time()
    with pytest.raises(NotFoundError):
        await create_once(
            store.send,
            existing=gone,
            key_of=lambda x: x,
            policy=POLICY,
            locks=WriteLocks(),
            lock_key="k",
            what="thing",
        )
    assert trio.current_time() == start
    assert store.sends == 0


async def test_an_unreachable_platform_is_reported_after_the_bound(
    autojump_clock: Any,
) -> None:
    async def down() -> list[str]:
        await trio.lowlevel.checkpoint()
        raise BandConnectionError("down")

    start = trio.current_time()
    with pytest.raises(BandConnectionError):
        await read_patiently(down, policy=POLICY, what="things")
    assert 26.0 <= trio.current_time() - start <= POLICY.give_up_after
