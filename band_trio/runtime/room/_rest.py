"""The REST calls the room runtime makes, as the protocols it depends on.

The runtime does not depend on the concrete REST client: a room needs a
handful of endpoints, and the test fakes implement exactly those. Declaring
them here (on the consumer's side) keeps strict typing meaningful where a fake
plugs in, and states what a room may do to the platform.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

from band_trio.wire.models import ChatMessage, ChatParticipant, ChatRoom, CursorPage

__all__ = ["RoomRest", "RuntimeRest"]


class RoomRest(Protocol):
    """The REST endpoints one room uses.

    Return values the room ignores (the lifecycle marks, the event post) are
    typed ``object``: any implementation's answer fits.
    """

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        """The oldest message this agent still has to act on, or None."""
        ...

    async def list_messages(
        self,
        chat_id: str,
        *,
        cursor: str | None = None,
        sort_order: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """One page of the room's messages (the reconcile pass steps past a stuck ``/next``)."""
        ...

    async def mark_processing(self, chat_id: str, message_id: str) -> object:
        """Claim a message on the platform."""
        ...

    async def mark_processed(self, chat_id: str, message_id: str) -> object:
        """Mark a claimed message done."""
        ...

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> object:
        """Mark a claimed message failed with a short label."""
        ...

    async def send_event(
        self,
        chat_id: str,
        content: str,
        message_type: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> object:
        """Post an event (the room posts only ``error`` events itself)."""
        ...

    async def get_context(
        self,
        chat_id: str,
        *,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """One page of the agent's context in the room, oldest first."""
        ...

    async def list_participants(self, chat_id: str) -> Sequence[ChatParticipant]:
        """The room's participants."""
        ...

    async def report_activity(self, chat_id: str, working: bool) -> bool:
        """Report whether the agent is working; returns the state in effect."""
        ...


class RuntimeRest(RoomRest, Protocol):
    """What the rooms of one agent share: the room's endpoints, plus the
    listing of the agent's rooms the engine reads at start."""

    def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = ...
    ) -> AsyncIterator[ChatRoom]:
        """Every room the agent is in, up to ``max_pages`` pages (with each
        room's roster, up to the listing's row cap, when ``include_participants``)."""
        ...
