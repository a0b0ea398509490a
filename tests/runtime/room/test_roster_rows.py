"""Roster rows read with ``GET /participants`` are shared across rooms.

When the room listing omits or truncates a roster, the room reads it before
its turn; the rows it gets (the agent's own, a user's) are the same in many
rooms, and the rooms' rosters hold one object for each distinct row.
"""

from __future__ import annotations

import random
from typing import Any

import trio
import trio.testing

from band_trio.adapter.turns import AgentInput, TurnContext
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import Room, RoomServices
from band_trio.wire.models import ChatParticipant

from .fakes import AGENT, Adapter, FakeRestRooms, FakeTools


class RosterSeen(DefaultPreprocessor):
    """Records the roster each room's turn was given."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, tuple[ChatParticipant, ...]] = {}

    def process(self, ctx: TurnContext, event: object, agent_id: str) -> AgentInput | None:
        self.rows[ctx.room_id] = ctx.roster.participants
        return super().process(ctx, event, agent_id)


async def test_rows_read_per_room_are_one_object_across_rooms(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rest = FakeRestRooms(["room-a", "room-b"])
    for fake in rest.rooms.values():
        fake.add("hello")
    seen = RosterSeen()

    def make_tools(room_id: str, participants: Any, hooks: Any) -> Any:
        return FakeTools(rest.rooms[room_id], hooks)

    services = RoomServices(
        agent_id=AGENT,
        rest=rest,  # type: ignore[arg-type]
        ledger=ClaimsLedger.in_memory(),
        adapter=Adapter(),
        preprocessor=seen,
        config=AgentConfig(state_dir=None, enable_context_hydration=False),
        make_tools=make_tools,
        rng=random.Random(7),
    )
    rooms = [Room(room_id, services) for room_id in rest.rooms]
    async with trio.open_nursery() as nursery:
        for room in rooms:
            await nursery.start(room.serve)
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    assert [rest.rooms[r].chat for r in rest.rooms] == [["ok"], ["ok"]]
    first, second = seen.rows["room-a"], seen.rows["room-b"]
    assert [p.id for p in first] == [p.id for p in second] == ["user-1"]
    assert first[0] is second[0]
