"""``MemoryRest``: the agent's REST client, in memory, on the Trio clock.

One room's messages and their lifecycle marks, the posts made to it, the room
listing and a log of every call with its (virtual) time. No sockets, so the
autojump clock can jump while a caller waits on it. It serves
:class:`~band_trio.testing.FakeAgentTools` (the real ``AgentTools`` posts
through it) and the runtime's own tests (a room or a whole agent runs on it).

It answers what the platform would for the calls it knows (the reference:
docs/reference/protocol.rst): ``/next`` gives the oldest message not yet
processed (a failed one is still actionable), the work list without a status
holds the messages not processed, a mention is kept as the participant id it
names. The room's context reads empty.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import attrs
import trio

from band_trio.errors import InternalServerError, RoomExecutionStoppedError
from band_trio.wire.models import (
    AgentMe,
    ChatMessage,
    ChatParticipant,
    ChatRoom,
    CursorPage,
    EventCreated,
    MentionRequest,
    MessageSent,
    MessageStatus,
    Recipient,
)

__all__ = ["TIMESTAMP", "USER", "MemoryRest", "SentEvent", "SentMessage"]

TIMESTAMP = "2026-01-01T00:00:00.000000Z"
"""The time stamp of everything the fake creates."""

USER = ChatParticipant(id="user-1", role="owner", status="active", type="User", name="Ann")
"""The room's one user: the sender of :meth:`MemoryRest.add`'s messages."""


@attrs.frozen
class SentMessage:
    """A message the fake accepted."""

    id: str
    content: str
    mentions: tuple[str, ...]
    """Resolved participant ids (raw mention strings when no roster was given)."""


@attrs.frozen
class SentEvent:
    """An event the fake accepted."""

    id: str
    content: str
    message_type: str
    metadata: Mapping[str, Any] | None


class MemoryRest:
    """The REST calls of an agent in one room, in memory.

    Args:
        chats: the room ids the room listing (:meth:`iter_chats`) returns.
        agent_id: the agent whose client this is (mentioned by :meth:`add`).
        participants: the room's roster; default: :data:`USER`.

    Attributes:
        messages: the messages delivered to the agent, oldest first.
        status: each message's lifecycle status by id.
        marks: every lifecycle mark made, as ``(message id, status)``.
        errors: the errors given with ``failed`` marks, by message id.
        messages_sent: the messages the agent posted.
        events_sent: the events the agent posted.
        calls: every call, as ``(trio.current_time(), name)``.
        gated: the room's execution is stopped: ``/next`` finds nothing and a
            claim is refused.
        refuse_processing: how many more claims to answer with HTTP 500.
    """

    def __init__(
        self,
        chats: Sequence[str] = (),
        *,
        agent_id: str = "agent-1",
        participants: Sequence[ChatParticipant] = (USER,),
    ) -> None:
        self.chats = list(chats)
        self.agent_id = agent_id
        self.participants = list(participants)
        self.messages: list[ChatMessage] = []
        self.status: dict[str, str] = {}
        self.marks: list[tuple[str, str]] = []
        self.errors: dict[str, list[str]] = {}
        self.messages_sent: list[SentMessage] = []
        self.events_sent: list[SentEvent] = []
        self.calls: list[tuple[float, str]] = []
        self.gated = False
        self.refuse_processing = 0
        self._ids = itertools.count(1)

    # ---------------------------------------------------------------- test side

    def add(self, text: str) -> str:
        """Deliver a message from :data:`USER` mentioning the agent; its id."""
        mid = f"m{len(self.messages) + 1}"
        self.messages.append(
            ChatMessage(
                id=mid,
                content=text,
                message_type="text",
                sender_id=USER.id,
                sender_type="User",
                sender_name=USER.name,
                inserted_at=TIMESTAMP,
                updated_at=TIMESTAMP,
                metadata={"mentions": [{"id": self.agent_id, "handle": "ann/agent"}]},
            )
        )
        self.status[mid] = "delivered"
        return mid

    def settled(self, message_id: str) -> list[str]:
        """The settling marks (processed, failed) the message received, in order."""
        return [m for i, m in self.marks if i == message_id and m in ("processed", "failed")]

    def times(self, name: str) -> list[float]:
        """When the calls named ``name`` were made."""
        return [t for t, n in self.calls if n == name]

    def log(self, name: str) -> None:
        """Log a call named ``name`` now."""
        self.calls.append((trio.current_time(), name))

    @property
    def chat(self) -> list[str]:
        """The contents of the messages posted, in order."""
        return [m.content for m in self.messages_sent]

    async def _call(self, name: str) -> None:
        await trio.lowlevel.checkpoint()
        self.log(name)

    # ---------------------------------------------------------------- the client

    async def get_me(self) -> AgentMe:
        await self._call("me")
        return AgentMe(
            id=self.agent_id,
            name="Agent",
            handle="ann/agent",
            owner_uuid=USER.id,
            inserted_at=TIMESTAMP,
            updated_at=TIMESTAMP,
            feature_flags={},
            description="answers",
        )

    async def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = 50
    ) -> AsyncIterator[ChatRoom]:
        await self._call("chats")
        for room_id in list(self.chats):
            await trio.lowlevel.checkpoint()
            yield ChatRoom(id=room_id, inserted_at=TIMESTAMP, updated_at=TIMESTAMP)

    def _actionable(self) -> list[ChatMessage]:
        return [m for m in self.messages if self.status[m.id] != "processed"]

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        await self._call("next")
        if self.gated:
            return None
        pending = self._actionable()
        return pending[0] if pending else None

    async def list_messages(
        self, chat_id: str, *, status: str | None = None, **_: Any
    ) -> CursorPage[ChatMessage]:
        await self._call("list")
        if status is None:
            items = self._actionable()
        else:
            items = [m for m in self.messages if status in ("all", self.status[m.id])]
        return CursorPage(items=tuple(items), has_more=False)

    def _mark(self, message_id: str, status: str) -> MessageStatus:
        self.status[message_id] = status
        self.marks.append((message_id, status))
        return MessageStatus(id=message_id, status=status, attempt_number=1, success=True)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        await self._call("processing")
        if self.gated:
            raise RoomExecutionStoppedError(chat_id)
        if self.refuse_processing:
            self.refuse_processing -= 1
            raise InternalServerError(500)
        return self._mark(message_id, "processing")

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        await self._call("processed")
        return self._mark(message_id, "processed")

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        await self._call("failed")
        self.errors.setdefault(message_id, []).append(error)
        return self._mark(message_id, "failed")

    async def send_message(
        self, chat_id: str, content: str, mentions: Sequence[MentionRequest], **_: Any
    ) -> MessageSent:
        await self._call("send")
        ids = tuple(m.id or m.handle or "" for m in mentions)
        sent = SentMessage(id=f"msg-{next(self._ids)}", content=content, mentions=ids)
        self.messages_sent.append(sent)
        return MessageSent(
            id=sent.id,
            success=True,
            recipients=tuple(
                Recipient(id=i, handle=m.handle) for i, m in zip(ids, mentions, strict=True)
            ),
        )

    async def send_event(
        self, chat_id: str, content: str, message_type: str, metadata: Any = None
    ) -> EventCreated:
        await self._call("event")
        event = SentEvent(
            id=f"evt-{next(self._ids)}",
            content=content,
            message_type=message_type,
            metadata=metadata,
        )
        self.events_sent.append(event)
        return EventCreated(id=event.id, message_type=message_type, success=True)

    async def get_context(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await self._call("context")
        return CursorPage(items=(), has_more=False)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        await self._call("participants")
        return list(self.participants)

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await self._call("activity")
        return working

    async def create_chat(self, *, task_id: str | None = None) -> ChatRoom:
        await self._call("create_chat")
        return ChatRoom(id=f"room-{next(self._ids)}", inserted_at=TIMESTAMP, updated_at=TIMESTAMP)

    def statistics(self) -> tuple[str, int]:
        """A stand-in for the client's statistics: the number of calls made."""
        return ("rest", len(self.calls))
