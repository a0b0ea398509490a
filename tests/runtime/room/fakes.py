"""In-memory fakes of the Trio shell's collaborators, on the Trio clock.

:class:`FakeRest` is the one fake of the REST client (the calls a room and the
engine's room listing make): no sockets, so the autojump clock can jump while a
room waits on it, and every call is logged with its (virtual) time.
:class:`FakeRestRooms` routes the calls of several rooms to one
:class:`FakeRest` each. :class:`InstantLink` joins and leaves topics at once.
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
from band_trio.errors import InternalServerError, RoomExecutionStoppedError
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import Room, RoomServices
from band_trio.runtime.state_changes import StateChanges
from band_trio.wire.models import ChatMessage, ChatParticipant, ChatRoom, CursorPage, MessageStatus

AGENT = "agent-1"
ROOM = "room-1"
TS = "2026-01-01T00:00:00.000000Z"


class FakeRest:
    """The REST calls of one room, in memory, with a call log on the Trio clock.

    ``chats`` is what the room listing (``iter_chats``) returns: the engine
    tests list rooms through it; a room alone never lists.
    """

    def __init__(self, chats: Sequence[str] = ()) -> None:
        self.chats = list(chats)
        self.messages: list[ChatMessage] = []
        self.status: dict[str, str] = {}
        self.errors: dict[str, list[str]] = {}
        self.events: list[tuple[str, str]] = []
        self.replies: list[str] = []
        self.calls: list[tuple[float, str]] = []
        self.gated = False
        self.refuse_processing = 0

    def add(self, text: str) -> str:
        mid = f"m{len(self.messages) + 1}"
        self.messages.append(
            ChatMessage(
                id=mid,
                content=text,
                message_type="text",
                sender_id="user-1",
                sender_type="User",
                sender_name="Ann",
                inserted_at=TS,
                updated_at=TS,
                metadata={"mentions": [{"id": AGENT, "handle": "ann/agent"}]},
            )
        )
        self.status[mid] = "delivered"
        return mid

    async def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = 50
    ) -> AsyncIterator[ChatRoom]:
        for room_id in self.chats:
            await trio.lowlevel.checkpoint()
            yield ChatRoom(id=room_id, inserted_at=TS, updated_at=TS)

    def _log(self, name: str) -> None:
        self.calls.append((trio.current_time(), name))

    def times(self, name: str) -> list[float]:
        return [t for t, n in self.calls if n == name]

    def _actionable(self) -> list[ChatMessage]:
        return [m for m in self.messages if self.status[m.id] != "processed"]

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        await trio.lowlevel.checkpoint()
        self._log("next")
        if self.gated:
            return None
        pending = self._actionable()
        return pending[0] if pending else None

    async def list_messages(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await trio.lowlevel.checkpoint()
        self._log("list")
        return CursorPage(items=tuple(self._actionable()), has_more=False)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("processing")
        if self.gated:
            raise RoomExecutionStoppedError(chat_id)
        if self.refuse_processing:
            self.refuse_processing -= 1
            raise InternalServerError(500)
        self.status[message_id] = "processing"
        return MessageStatus(id=message_id, status="processing", attempt_number=1, success=True)

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("processed")
        self.status[message_id] = "processed"
        return MessageStatus(id=message_id, status="processed", attempt_number=1, success=True)

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("failed")
        self.status[message_id] = "failed"
        self.errors.setdefault(message_id, []).append(error)
        return MessageStatus(id=message_id, status="failed", attempt_number=1, success=True)

    async def send_event(
        self, chat_id: str, content: str, message_type: str, metadata: Any = None
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.events.append((message_type, content))

    async def get_context(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await trio.lowlevel.checkpoint()
        return CursorPage(items=(), has_more=False)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        await trio.lowlevel.checkpoint()
        return [
            ChatParticipant(id="user-1", role="owner", status="active", type="User", name="Ann")
        ]

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await trio.lowlevel.checkpoint()
        return working


class FakeTools:
    def __init__(self, rest: FakeRest, hooks: TurnHooks) -> None:
        self._rest = rest
        self._hooks = hooks

    async def send_message(self, content: str, mentions: Sequence[str]) -> Any:
        await trio.lowlevel.checkpoint()
        self._rest.replies.append(content)
        self._hooks.reply_sent(f"r{len(self._rest.replies)}")
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
    rest: FakeRest, adapter: Adapter, *, changes: StateChanges | None = None, **config: Any
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
    """The REST calls of several rooms: one :class:`FakeRest` per room, routed by
    the ``chat_id`` argument; the room listing returns every room."""

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


class InstantLink:
    """A link whose joins and leaves succeed at once."""

    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
