"""Rooms and their participants."""

from __future__ import annotations

from collections.abc import AsyncIterator

from band_trio.wire.models import (
    ChatParticipant,
    ChatRoom,
    ChatRoomRequest,
    Page,
    ParticipantRequest,
)
from band_trio.wire.rest._client_core import API_PREFIX, MAX_PAGES, RestClientCore, path_segment

__all__ = ["RoomEndpoints"]


class RoomEndpoints(RestClientCore):
    """``/agent/chats`` and ``/agent/chats/{id}/participants``."""

    async def list_chats(
        self, *, page: int = 1, page_size: int = 100, include_participants: bool = False
    ) -> Page[ChatRoom]:
        """``GET /agent/chats`` — rooms this agent participates in.

        Args:
            page: 1-based page number.
            page_size: rows per page.
            include_participants: ask for each room's roster (first 100 rows).
        """
        path = f"{API_PREFIX}/chats"
        params = {
            "page": page,
            "page_size": page_size,
            "include": ["participants"] if include_participants else None,
        }
        return self._page(await self._request("GET", path, params=params), ChatRoom, "GET", path)

    def iter_chats(
        self,
        *,
        page_size: int = 100,
        include_participants: bool = False,
        max_pages: int = MAX_PAGES,
    ) -> AsyncIterator[ChatRoom]:
        """Every room across pages until ``total_pages`` (at most ``max_pages``).

        A missing ``total_pages`` stops after the first page, as the official
        SDK does. Rooms are de-duplicated by id (pages can shift while read).

        Args:
            page_size: rows per page.
            include_participants: ask for each room's roster (first 100 rows).
            max_pages: stop after this many pages; the default, :data:`MAX_PAGES`
                (the official SDK's cap), lists at most 5,000 rooms at 100 a
                page. An agent in more rooms passes a higher cap.
        """

        async def fetch(n: int) -> Page[ChatRoom]:
            return await self.list_chats(
                page=n, page_size=page_size, include_participants=include_participants
            )

        return self._follow_pages(fetch, lambda r: r.id, max_pages=max_pages)

    async def create_chat(
        self, *, title: str | None = None, task_id: str | None = None
    ) -> ChatRoom:
        """``POST /agent/chats`` — create a room owned by this agent (never retried
        after an ambiguous failure)."""
        path = f"{API_PREFIX}/chats"
        body = {"chat": self._body(ChatRoomRequest(title=title, task_id=task_id))}
        # Not idempotent: a repeat creates a second room.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, ChatRoom, "POST", path)

    async def get_chat(self, chat_id: str) -> ChatRoom:
        """``GET /agent/chats/{id}`` — one room this agent participates in."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}"
        return self._one(await self._request("GET", path), ChatRoom, "GET", path)

    async def update_chat(self, chat_id: str, *, title: str) -> ChatRoom:
        """``PATCH /agent/chats/{id}`` — rename a room (owner only).

        Setting a title is idempotent, so this call is retried like a PUT.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}"
        body = {"chat": self._body(ChatRoomRequest(title=title))}
        response = await self._request("PATCH", path, body=body, idempotent=True)
        return self._one(response, ChatRoom, "PATCH", path)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        """``GET /agent/chats/{id}/participants`` — the room's roster with presence."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/participants"
        payload = self._envelope(await self._request("GET", path), "GET", path)
        return list(self._items(payload["data"], ChatParticipant, "GET", path))

    async def add_participant(
        self, chat_id: str, participant_id: str, *, role: str | None = None
    ) -> ChatParticipant:
        """``POST /agent/chats/{id}/participants`` — add someone (``role``: owner,
        admin or member)."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/participants"
        body = {
            "participant": self._body(ParticipantRequest(participant_id=participant_id, role=role))
        }
        # Not idempotent: a repeat after an add that landed is refused (already
        # a participant), reporting a success as a failure.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, ChatParticipant, "POST", path)

    async def remove_participant(self, chat_id: str, participant_id: str) -> ChatParticipant:
        """``DELETE /agent/chats/{id}/participants/{pid}`` — returns the removed participant."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/participants/{path_segment(participant_id)}"
        # Not idempotent: a repeat after a removal that landed answers 404,
        # and would remove the participant again if someone re-added them.
        response = await self._request("DELETE", path, idempotent=False)
        return self._one(response, ChatParticipant, "DELETE", path)
