"""In-memory fakes of the Trio shell's collaborators, on the Trio clock.

:class:`~band_trio.testing._memory_rest.MemoryRest` is the one fake of the
REST client (the calls a room and the engine's room listing make).
:class:`FakeTools` posts a room's replies through it; :class:`FakeRestRooms`
routes the calls of several rooms to one ``MemoryRest`` each.
:class:`InstantLink` joins and leaves topics at once.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import trio

from band_trio.adapter import (
    AgentToolsProtocol,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
    ToolEffect,
    TurnHooks,
)
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import Room, RoomServices
from band_trio.runtime.state_changes import StateChanges
from band_trio.testing._memory_rest import TIMESTAMP, MemoryRest
from band_trio.wire.models import ChatRoom, MentionRequest

AGENT = "agent-1"
ROOM = "room-1"
TS = TIMESTAMP


class FakeTools:
    """Tools that only reply: the message is posted through the REST fake."""

    def __init__(self, rest: MemoryRest, hooks: TurnHooks) -> None:
        self._rest = rest
        self._hooks = hooks

    async def send_message(self, content: str, mentions: Sequence[str]) -> Any:
        sent = await self._rest.send_message(
            ROOM, content, [MentionRequest(id=m) for m in mentions]
        )
        self._hooks.reply_sent(sent.id)
        self._hooks.record_effect(ToolEffect.REPLY)

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> Any:
        return None

    async def execute_tool_call(self, name: str, args: Mapping[str, Any]) -> Any:
        return None

    def get_tool_schemas(self, fmt: Any, *, capabilities: Any = None) -> list[dict[str, Any]]:
        return []


class Adapter(SimpleAdapter[HistoryProvider]):
    def __init__(self, hang: bool = False) -> None:
        super().__init__()
        self.hang = hang
        self.seen: list[str] = []

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
        self.seen.append(msg.id)
        if self.hang:
            await trio.sleep_forever()
        await tools.send_message("ok", [msg.sender_id])


def make_room(
    rest: MemoryRest, adapter: Adapter, *, changes: StateChanges | None = None, **config: Any
) -> Room:
    """A room on ``rest`` (``config`` overrides the test defaults); ``changes``
    is the notifier its services share (a fresh one when None)."""
    values: dict[str, Any] = {
        "state_dir": None,
        "idle_resync_interval": 10.0,
        "idle_resync_max_interval": 40.0,
        "retry_delay": 1.0,
    }
    values.update(config)
    cfg = AgentConfig(**values)
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(max_attempts=cfg.max_attempts),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=cfg,
        make_tools=lambda room_id, participants, hooks: FakeTools(rest, hooks),  # type: ignore[arg-type,return-value]
        rng=random.Random(7),
        changes=changes if changes is not None else StateChanges(),
    )
    return Room(ROOM, services)


class FakeRestRooms:
    """The REST calls of several rooms: one ``MemoryRest`` per room, routed by
    the ``chat_id`` argument; the room listing returns every room."""

    def __init__(self, rooms: list[str]) -> None:
        self.rooms = {room_id: MemoryRest(agent_id=AGENT) for room_id in rooms}

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


class InstantLink:
    """A link whose joins and leaves succeed at once."""

    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
