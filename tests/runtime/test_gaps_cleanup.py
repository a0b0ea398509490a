"""Cleanup on shutdown and on room removal (issue 3 items 7 and 9).

Shutdown runs every room's ``on_cleanup`` and then the adapter's
``cleanup_all``, shielded (they may await although ``serve`` was cancelled);
an ``on_cleanup`` or ``cleanup_all`` that hangs is cancelled at
``AgentConfig.cleanup_timeout`` and does not hold the shutdown or other rooms.

End to end over loopback (real time: each test waits on observable state under
``fail_after``), plus one engine test on the autojump clock for the bound itself.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio
import trio.testing

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.ledger import ClaimsLedger
from band_trio.runtime.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import RoomServices

from .agent_harness import RecordingAdapter, fast_config, scene, serving, token, wait_until
from .test_room_timing import AGENT, FakeTools
from .test_shutdown_scaling import Link, ManyRoomsRest, SlowOneAdapter


class CleanupAdapter(RecordingAdapter):
    """``on_cleanup`` hangs for the rooms in ``hang``; the others take a few
    checkpoints (so an unshielded cleanup would be cancelled at its first
    await). ``cleanup_all`` is recorded, and hangs when ``hang_all`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hang: set[str] = set()
        self.hang_all = False
        self.log: list[str] = []

    async def on_cleanup(self, room_id: str) -> None:
        self.log.append(f"enter {room_id}")
        try:
            if room_id in self.hang:
                await trio.sleep_forever()
            await trio.sleep(0.05)
            await trio.lowlevel.checkpoint()
        except trio.Cancelled:
            self.log.append(f"cancelled {room_id}")
            raise
        self.log.append(f"done {room_id}")
        await super().on_cleanup(room_id)

    async def cleanup_all(self) -> None:
        self.log.append("enter cleanup_all")
        try:
            if self.hang_all:
                await trio.sleep_forever()
            await trio.sleep(0.05)
        except trio.Cancelled:
            self.log.append("cancelled cleanup_all")
            raise
        self.log.append("done cleanup_all")


async def test_shutdown_runs_every_on_cleanup_then_cleanup_all(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Cancelling ``serve`` runs each room's ``on_cleanup`` once and then
    ``cleanup_all`` once, all to completion (shielded); a hanging
    ``on_cleanup`` is cancelled at ``cleanup_timeout`` and holds nothing."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(3)]
            hanging = rooms[0]
            adapter = CleanupAdapter()
            adapter.hang = {hanging}
            agent = s.make_agent(adapter, fast_config(cleanup_timeout=0.5))
            async with serving(agent):
                mid = await s.post(rooms[1], token())
                await wait_until(lambda: s.processed(rooms[1], mid))
                assert adapter.log == []
            # serve() has returned: the whole shutdown is over.
            log = adapter.log
            for room_id in rooms[1:]:
                assert log.count(f"enter {room_id}") == 1
                assert log.count(f"done {room_id}") == 1
            assert log.count(f"enter {hanging}") == 1
            assert f"cancelled {hanging}" in log
            assert f"done {hanging}" not in log
            # cleanup_all ran once, last, to completion.
            assert log[-2:] == ["enter cleanup_all", "done cleanup_all"]
            assert log.count("enter cleanup_all") == 1
            assert sorted(adapter.cleanups) == sorted(rooms[1:])


async def test_hanging_cleanup_all_is_bounded(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = CleanupAdapter()
            adapter.hang_all = True
            async with serving(s.make_agent(adapter, fast_config(cleanup_timeout=0.5))):
                pass
            assert adapter.log == [
                f"enter {room_id}",
                f"done {room_id}",
                "enter cleanup_all",
                "cancelled cleanup_all",
            ]


async def test_removed_room_with_hanging_cleanup_blocks_nothing(band_platform) -> None:  # type: ignore[no-untyped-def]
    """§8.74 / item 7: removal runs ``on_cleanup`` once, shielded under the
    deadline; while it hangs, other rooms are served; at the deadline it is
    cancelled, and shutdown later does not run it again."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            leaving = await s.new_room()
            staying = await s.new_room()
            adapter = CleanupAdapter()
            adapter.hang = {leaving}
            agent = s.make_agent(adapter, fast_config(cleanup_timeout=1.0))
            async with serving(agent):
                await s.human.remove_participant(leaving, s.agent_id)
                await wait_until(lambda: f"enter {leaving}" in adapter.log)
                # Hanging cleanup of one room: another room is still answered.
                word = token()
                mid = await s.post(staying, word)
                await wait_until(lambda: s.processed(staying, mid))
                await wait_until(lambda: f"cancelled {leaving}" in adapter.log)
                await wait_until(lambda: leaving not in agent.room_ids)
                assert staying in agent.room_ids
            assert adapter.log.count(f"enter {leaving}") == 1
            assert adapter.log.count(f"enter {staying}") == 1
            s.assert_exactly_once(staying, {mid: word})


class HangingCleanupAdapter(SlowOneAdapter):
    """Answers every room at once; ``on_cleanup`` hangs in one room."""

    def __init__(self, hanging: str) -> None:
        super().__init__()
        self.hanging = hanging
        self.cancelled_cleanups: list[str] = []

    async def on_cleanup(self, room_id: str) -> None:
        try:
            if room_id == self.hanging:
                await trio.sleep_forever()
            await trio.sleep(0.5)
        except trio.Cancelled:
            self.cancelled_cleanups.append(room_id)
            raise
        self.cleaned.append(room_id)


async def test_hanging_on_cleanup_is_cut_at_cleanup_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The bound itself, on the virtual clock: with no turn running, a shutdown
    whose one ``on_cleanup`` hangs ends exactly ``cleanup_timeout`` after it
    started; every other room cleaned up meanwhile."""
    rooms = [f"room-{i}" for i in range(1, 21)]  # room-0 (the slow-turn room) absent
    rest = ManyRoomsRest(rooms)
    adapter = HangingCleanupAdapter(hanging="room-7")
    config = AgentConfig(state_dir=None, shutdown_timeout=5.0, cleanup_timeout=3.0)
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(max_attempts=config.max_attempts),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=config,
        make_tools=lambda room_id, participants, hooks: FakeTools(rest.rooms[room_id], hooks),  # type: ignore[arg-type,return-value]
        rng=random.Random(5),
    )
    engine = AgentEngine(services, Link())
    send, recv = trio.open_memory_channel[Any](16)
    async with send, trio.open_nursery() as nursery:
        await nursery.start(engine.serve, recv)
        await trio.sleep(1)
        started = trio.current_time()
        graceful = await engine.shutdown(started + config.shutdown_timeout)
        elapsed = trio.current_time() - started
        nursery.cancel_scope.cancel()
    assert graceful  # no turn was running
    assert elapsed == pytest.approx(config.cleanup_timeout, abs=0.01)
    assert adapter.cancelled_cleanups == ["room-7"]
    assert sorted(adapter.cleaned) == sorted(r for r in rooms if r != "room-7")
