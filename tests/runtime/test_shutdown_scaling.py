"""Shutdown time does not grow with the number of rooms (issue 3 item 9, beats
runtime.md §9 item 9), on the autojump clock.

The engine runs N rooms over in-memory fakes (no sockets, so autojump only
jumps when every task is blocked). One room's turn is slow (it never ends by
itself), every room's ``on_cleanup`` takes one virtual second. The shutdown
must take ONE ``shutdown_timeout`` plus ONE cleanup, whatever N is: the
official runtime retires rooms one after another (N x timeout).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.ledger import ClaimsLedger
from band_trio.runtime.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import RoomServices
from band_trio.wire.models import ChatRoom

from .test_room_timing import AGENT, TS, Adapter, FakeRest, FakeTools

SHUTDOWN_TIMEOUT = 5.0
CLEANUP_SECONDS = 1.0
SLOW_ROOM = "room-0"


class ManyRoomsRest:
    """One :class:`FakeRest` per room, routed by the ``chat_id`` argument."""

    def __init__(self, rooms: list[str]) -> None:
        self.rooms = {room_id: FakeRest() for room_id in rooms}

    async def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = 50
    ) -> AsyncIterator[ChatRoom]:
        for room_id in self.rooms:
            await trio.lowlevel.checkpoint()
            yield ChatRoom(id=room_id, inserted_at=TS, updated_at=TS)

    def __getattr__(self, name: str) -> Any:
        async def routed(chat_id: str, *args: Any, **kwargs: Any) -> Any:
            return await getattr(self.rooms[chat_id], name)(chat_id, *args, **kwargs)

        return routed


class Link:
    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()


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


async def _shutdown_duration(n_rooms: int) -> tuple[float, SlowOneAdapter, ManyRoomsRest]:
    rooms = [f"room-{i}" for i in range(n_rooms)]
    rest = ManyRoomsRest(rooms)
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
    engine = AgentEngine(services, Link())
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
