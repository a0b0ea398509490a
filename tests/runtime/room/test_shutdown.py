"""Shutdown of the engine's rooms over in-memory fakes, on the autojump clock.

Shutdown time does not grow with the number of rooms (beats official runtime,
"Weak spots" 9): the engine runs N rooms (no sockets, so autojump only jumps
when every task is blocked). One room's turn is slow (it never ends by
itself), every room's ``on_cleanup`` takes one virtual second. The shutdown
must take ONE ``shutdown_timeout`` plus ONE cleanup, whatever N is: the
official runtime retires rooms one after another (N x timeout). A hanging
``on_cleanup`` is cut at ``AgentConfig.cleanup_timeout``.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio
import trio.testing

from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.room import RoomServices

from .fakes import AGENT, Adapter, FakeRestRooms, FakeTools, InstantLink

SHUTDOWN_TIMEOUT = 5.0
CLEANUP_SECONDS = 1.0
SLOW_ROOM = "room-0"


class SlowOneAdapter(Adapter):
    """Answers at once, except in the slow room, where the turn never ends."""

    def __init__(self) -> None:
        super().__init__()
        self.running: set[str] = set()
        self.cancelled: list[str] = []
        self.cleaned: list[str] = []

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.running.add(room_id)
        try:
            if room_id == SLOW_ROOM:
                await trio.sleep_forever()
            await tools.send_message("ok", [msg.sender_id])
        except trio.Cancelled:
            self.cancelled.append(room_id)
            raise
        finally:
            self.running.discard(room_id)

    async def on_cleanup(self, room_id: str) -> None:
        await trio.sleep(CLEANUP_SECONDS)
        self.cleaned.append(room_id)


async def _shutdown_duration(n_rooms: int) -> tuple[float, SlowOneAdapter, FakeRestRooms]:
    rooms = [f"room-{i}" for i in range(n_rooms)]
    rest = FakeRestRooms(rooms)
    for room_id in rooms:
        rest.rooms[room_id].add(f"hello {room_id}")
    adapter = SlowOneAdapter()
    config = AgentConfig(
        state_dir=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT,
        cleanup_timeout=30.0,
        max_parallel_joins=8,
    )
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(max_attempts=config.max_attempts),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=config,
        make_tools=lambda room_id, participants, hooks: FakeTools(rest.rooms[room_id], hooks),  # type: ignore[arg-type,return-value]
        rng=random.Random(3),
    )
    engine = AgentEngine(services, InstantLink())
    send, recv = trio.open_memory_channel[Any](16)
    async with send, trio.open_nursery() as nursery:
        await nursery.start(engine.serve, recv)
        # Ten virtual seconds: every fast room answered, the slow one hangs.
        await trio.sleep(10)
        assert adapter.running == {SLOW_ROOM}
        assert all(
            r.status[m.id] == "processed"
            for room_id, r in rest.rooms.items()
            if room_id != SLOW_ROOM
            for m in r.messages
        )
        started = trio.current_time()
        graceful = await engine.shutdown(started + SHUTDOWN_TIMEOUT)
        elapsed = trio.current_time() - started
        assert not graceful
        nursery.cancel_scope.cancel()
    return elapsed, adapter, rest


@pytest.mark.parametrize("n_rooms", [2, 200])
async def test_shutdown_takes_one_deadline_and_one_cleanup_whatever_the_room_count(
    autojump_clock: trio.testing.MockClock, n_rooms: int
) -> None:
    elapsed, adapter, rest = await _shutdown_duration(n_rooms)
    # One global deadline for the slow turn, then every cleanup concurrently:
    # 5 s + 1 s, not n_rooms x anything.
    assert SHUTDOWN_TIMEOUT + CLEANUP_SECONDS <= elapsed < SHUTDOWN_TIMEOUT + 2 * CLEANUP_SECONDS
    assert adapter.cancelled == [SLOW_ROOM]
    assert sorted(adapter.cleaned) == sorted(rest.rooms)
    # The cancelled turn is neither processed nor failed (replayed by /next later).
    slow = rest.rooms[SLOW_ROOM]
    assert [slow.status[m.id] for m in slow.messages] == ["processing"]
    assert slow.errors == {}


async def test_shutdown_duration_is_the_same_for_few_and_many_rooms(
    autojump_clock: trio.testing.MockClock,
) -> None:
    few, _, _ = await _shutdown_duration(3)
    many, _, _ = await _shutdown_duration(300)
    assert few == pytest.approx(many, abs=0.05)


# ------------------------------------------------------------------ a hanging on_cleanup
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
    rest = FakeRestRooms(rooms)
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
    engine = AgentEngine(services, InstantLink())
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
