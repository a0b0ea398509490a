"""An in-memory platform for running a whole ``Agent`` on the autojump clock.

A real agent over loopback cannot run under ``autojump_clock`` (the clock would
jump while a socket read is pending), so these fakes stand in for the REST
client and the WebSocket link behind a :class:`PlatformRuntime`. They keep only
what the tests here look at: each message's lifecycle marks, the replies, and
a log of the calls on the Trio clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from band_trio import AgentConfig, AgentSettings
from band_trio.runtime import PlatformRuntime
from band_trio.wire.models import (
    AgentMe,
    ChatMessage,
    ChatParticipant,
    ChatRoom,
    CursorPage,
    MessageSent,
    MessageStatus,
)

AGENT = "agent-1"
ROOM = "room-1"
KEY = "sk-fake-0123456789"
TS = "2026-01-01T00:00:00.000000Z"


class FakePlatform:
    """One room's messages and their lifecycle, shared by every agent run."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.status: dict[str, str] = {}
        self.marks: list[tuple[str, str]] = []  # (message id, mark), in order
        self.replies: list[str] = []
        self.calls: list[tuple[float, str]] = []

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

    def settled(self, message_id: str) -> list[str]:
        """The settling marks (processed, failed) the message received."""
        return [m for i, m in self.marks if i == message_id and m in ("processed", "failed")]


class FakeRest:
    """The REST calls an agent makes, against a :class:`FakePlatform`."""

    def __init__(self, platform: FakePlatform) -> None:
        self.p = platform
        self.closed = False

    async def _call(self, name: str) -> None:
        await trio.lowlevel.checkpoint()
        self.p.calls.append((trio.current_time(), name))

    async def get_me(self) -> AgentMe:
        await self._call("me")
        return AgentMe(
            id=AGENT,
            name="Agent",
            handle="ann/agent",
            owner_uuid="user-1",
            inserted_at=TS,
            updated_at=TS,
            feature_flags={},
            description="answers",
        )

    async def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = 50
    ) -> AsyncIterator[ChatRoom]:
        await self._call("chats")
        yield ChatRoom(id=ROOM, inserted_at=TS, updated_at=TS)

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        await self._call("next")
        pending = [m for m in self.p.messages if self.p.status[m.id] != "processed"]
        pending = [m for m in pending if self.p.status[m.id] != "failed"]
        return pending[0] if pending else None

    async def list_messages(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await self._call("list")
        return CursorPage(items=tuple(self.p.messages), has_more=False)

    async def _mark(self, message_id: str, status: str) -> MessageStatus:
        await self._call(status)
        self.p.status[message_id] = status
        self.p.marks.append((message_id, status))
        return MessageStatus(id=message_id, status=status, attempt_number=1, success=True)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        return await self._mark(message_id, "processing")

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        return await self._mark(message_id, "processed")

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        return await self._mark(message_id, "failed")

    async def send_event(
        self, chat_id: str, content: str, message_type: str, metadata: Any = None
    ) -> None:
        await self._call("event")

    async def get_context(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await self._call("context")
        return CursorPage(items=(), has_more=False)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        await self._call("participants")
        return [
            ChatParticipant(id="user-1", role="owner", status="active", type="User", name="Ann")
        ]

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await self._call("activity")
        return working

    async def send_message(
        self, chat_id: str, content: str, mentions: Any, *, attachment_ids: Any = None
    ) -> MessageSent:
        await self._call("send")
        self.p.replies.append(content)
        return MessageSent(id=f"r{len(self.p.replies)}", success=True)

    def statistics(self) -> Any:
        return ("rest", len(self.p.calls))


class FakeLink:
    """A link with nothing to push: the rooms find their work on ``/next``."""

    def __init__(self) -> None:
        self.topics: set[str] = set()

    async def serve(
        self, events: Any, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        await trio.sleep_forever()

    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        self.topics.add(topic)

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        self.topics.discard(topic)

    def statistics(self) -> Any:
        return ("link", len(self.topics))


class FakeRuntime(PlatformRuntime):
    """A :class:`PlatformRuntime` whose connections are the fakes above."""

    def __init__(self, platform: FakePlatform, config: AgentConfig) -> None:
        super().__init__(
            AgentSettings(
                agent_id=AGENT,
                api_key=KEY,
                rest_url="http://127.0.0.1:9",
                ws_url="ws://127.0.0.1:9",
            ),
            config,
        )
        self.platform = platform
        self.fake_rest = FakeRest(platform)
        self.link = FakeLink()

    @asynccontextmanager
    async def open_rest(self) -> AsyncIterator[Any]:
        try:
            yield self.fake_rest
        finally:
            self.fake_rest.closed = True

    def make_link(self) -> Any:
        return self.link
