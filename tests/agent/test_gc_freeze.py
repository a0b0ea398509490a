"""The garbage-collector freeze of an agent with many rooms, on the local
platform with a small threshold (``gc_freeze_min_rooms=3``): frozen once every
room joined and drained, what survives each full collection frozen too,
unfrozen when rooms churn and when the agent stops.

These tests freeze the test process for real (``gc.freeze()`` is per process)
and check that it is unfrozen again afterwards, its callback on
``gc.callbacks`` gone.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import AsyncIterator

import pytest
import trio

from band_trio.agent import Agent
from band_trio.local import LocalPlatform

from .harness import RecordingAdapter, Scene, fast_config, scene, serving, token


@pytest.fixture(autouse=True)
def _nothing_frozen_before_or_after() -> object:
    assert gc.get_freeze_count() == 0
    callbacks = list(gc.callbacks)
    yield None
    frozen = gc.get_freeze_count()
    left = [c for c in gc.callbacks if c not in callbacks]
    gc.unfreeze()  # never leave the rest of the test run frozen
    for callback in left:
        gc.callbacks.remove(callback)
    assert frozen == 0
    assert left == []


@contextlib.asynccontextmanager
async def _frozen_agent(s: Scene) -> AsyncIterator[tuple[Agent, list[str]]]:
    """Three rooms and an agent that freezes from three rooms on, serving and frozen."""
    rooms = [await s.new_room() for _ in range(3)]
    agent = s.make_agent(RecordingAdapter(), fast_config(gc_freeze_min_rooms=3))
    async with serving(agent):
        await s.wait_for(lambda: agent.statistics().gc.frozen)
        yield agent, rooms


async def test_frozen_after_start_up_settled_and_unfrozen_at_exit(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="band_trio.runtime.gc_policy")
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            async with _frozen_agent(s) as (agent, rooms):
                stats = agent.statistics()
                # Frozen only after every room's start-up drain.
                assert {r.room_id for r in stats.per_room} == set(rooms)
                assert all(r.resyncs >= 1 for r in stats.per_room)
                assert stats.gc.freezes == 1
                assert stats.gc.frozen_objects == gc.get_freeze_count() > 0
                # The agent still answers, and settling again freezes nothing more.
                word = token()
                mid = await s.post(rooms[0], word)
                await s.wait_for(lambda: s.processed(rooms[0], mid))
                assert s.replies_to(rooms[0], word) == 1
                assert agent.statistics().gc.freezes == 1
            assert gc.get_freeze_count() == 0
    frozen = [r.getMessage() for r in caplog.records if "frozen with" in r.getMessage()]
    assert len(frozen) == 1
    assert frozen[0].startswith("garbage collector frozen with 3 rooms")
    assert any("unfrozen: the agent stopped serving" in r.getMessage() for r in caplog.records)


async def test_while_frozen_an_automatic_full_collection_freezes_its_survivors(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            callbacks = len(gc.callbacks)
            async with _frozen_agent(s) as (agent, rooms):
                assert len(gc.callbacks) == callbacks + 1
                assert agent.statistics().gc.refreezes == 0
                frozen = gc.get_freeze_count()
                kept: list[list[int]] = []
                # Low thresholds make the interpreter start full collections
                # by itself while the objects are allocated.
                thresholds = gc.get_threshold()
                gc.set_threshold(100, 1, 1)
                try:
                    while agent.statistics().gc.refreezes == 0 and len(kept) < 2_000_000:
                        kept.extend([i] for i in range(20_000))
                finally:
                    gc.set_threshold(*thresholds)
                assert agent.statistics().gc.refreezes >= 1
                # What survived is out of every later collection: the list
                # that holds the new objects was frozen, not left to walk.
                assert not any(o is kept for o in gc.get_objects())
                assert gc.get_freeze_count() > frozen
                word = token()
                mid = await s.post(rooms[1], word)
                await s.wait_for(lambda: s.processed(rooms[1], mid))
            assert gc.get_freeze_count() == 0
            assert len(gc.callbacks) == callbacks


async def test_removing_more_than_a_quarter_of_the_rooms_unfreezes(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            async with _frozen_agent(s) as (agent, rooms):
                await s.human.remove_participant(rooms[0], s.agent_id)
                await s.wait_for(lambda: agent.statistics().gc.unfreezes == 1)
                # Two rooms are under the threshold: it stays unfrozen.
                stats = agent.statistics().gc
                assert (stats.frozen, stats.frozen_objects, stats.freezes) == (False, 0, 1)
                assert gc.get_freeze_count() == 0
                # A room added back: frozen again once its drain settled.
                await s.human.add_participant(rooms[0], s.agent_id)
                await s.wait_for(lambda: agent.statistics().gc.freezes == 2)
                assert agent.statistics().gc.frozen
            assert gc.get_freeze_count() == 0


async def test_frozen_again_once_a_reconnect_has_drained_every_room(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            async with _frozen_agent(s) as (agent, rooms):
                drained = {r.room_id: r.resyncs for r in agent.statistics().per_room}
                await band_platform.drop_agent_sockets(s.agent_id)
                await s.wait_for(lambda: agent.statistics().gc.freezes == 2)
                stats = agent.statistics()
                # Renewed only after every room drained again.
                assert stats.reconnects == 1
                assert all(r.resyncs > drained[r.room_id] for r in stats.per_room)
                assert (stats.gc.frozen, stats.gc.unfreezes) == (True, 1)
                word = token()
                mid = await s.post(rooms[2], word)
                await s.wait_for(lambda: s.processed(rooms[2], mid))
            assert gc.get_freeze_count() == 0


async def _serve_until_drained_and_answered(s: Scene, agent: Agent, rooms: list[str]) -> None:
    async with serving(agent):
        await s.wait_for(
            lambda: (
                {r.room_id for r in agent.statistics().per_room} == set(rooms)
                and all(r.resyncs >= 1 for r in agent.statistics().per_room)
            )
        )
        word = token()
        mid = await s.post(rooms[-1], word)
        await s.wait_for(lambda: s.processed(rooms[-1], mid))
        assert agent.statistics().gc.freezes == 0
        assert gc.get_freeze_count() == 0


async def test_the_test_configuration_and_too_few_rooms_never_freeze(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(2)]
            off = s.make_agent(RecordingAdapter(), fast_config())
            await _serve_until_drained_and_answered(s, off, rooms)
            few = s.make_agent(RecordingAdapter(), fast_config(gc_freeze_min_rooms=3))
            await _serve_until_drained_and_answered(s, few, rooms)
