"""A room's messages, events, context and activity indicator."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

from band_trio.errors import BandProtocolError, PermissionDeniedError, RoomExecutionStoppedError
from band_trio.wire.models import (
    ActivityDetail,
    ActivityRequest,
    ActivityState,
    ChatEventRequest,
    ChatMessage,
    ChatMessageRequest,
    CursorPage,
    EventCreated,
    MentionRequest,
    MessageSent,
    MessageStatus,
)
from band_trio.wire.rest._client_core import API_PREFIX, NO_BODY, RestClientCore, path_segment

__all__ = ["MessageEndpoints"]

# The platform refuses a post to a stopped room with a 403 carrying this text.
_EXECUTION_STOPPED: Final = "execution is stopped"


class MessageEndpoints(RestClientCore):
    """``/agent/chats/{id}/messages...``, ``/events``, ``/context`` and ``/activity``."""

    async def list_messages(
        self,
        chat_id: str,
        *,
        status: str | None = None,
        cursor: str | None = None,
        sort_order: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """``GET /agent/chats/{id}/messages`` — messages delivered to this agent.

        Args:
            status: ``pending``, ``processing``, ``processed``, ``failed`` or
                ``all``; omitted = everything not processed.
            cursor: continue from a previous page's ``next_cursor``.
            sort_order: ``asc`` (default) or ``desc``.
            limit: rows per page (platform default 20, max 100).
            page: deprecated offset pagination (do not mix with ``cursor``).
            page_size: deprecated offset pagination.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/messages"
        params = {
            "status": status,
            "cursor": cursor,
            "sort_order": sort_order,
            "limit": limit,
            "page": page,
            "page_size": page_size,
        }
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, ChatMessage, "GET", path)

    def iter_messages(
        self,
        chat_id: str,
        *,
        status: str | None = None,
        sort_order: str | None = None,
        limit: int | None = 100,
        max_pages: int | None = None,
    ) -> AsyncIterator[ChatMessage]:
        """Every message of :meth:`list_messages`, following ``next_cursor`` while ``has_more``."""

        async def fetch(cursor: str | None) -> CursorPage[ChatMessage]:
            return await self.list_messages(
                chat_id, status=status, cursor=cursor, sort_order=sort_order, limit=limit
            )

        return self._follow_cursor(fetch, max_pages)

    async def send_message(
        self,
        chat_id: str,
        content: str,
        mentions: Sequence[MentionRequest],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> MessageSent:
        """``POST /agent/chats/{id}/messages`` — send a text message.

        Never re-sent after an ambiguous failure (the message may exist): a
        5xx (a 503 without ``Retry-After`` included), a 408, a timeout or a
        connection lost after sending raises :class:`~band_trio.errors.OutcomeUnknownError`.

        Args:
            chat_id: the room.
            content: the text (must contain a visible character).
            mentions: at least one; each with ``id`` or ``handle``.
            attachment_ids: ids of files uploaded to this room (at most 10).

        Raises:
            RoomExecutionStoppedError: the room's agent execution is stopped.
            UnprocessableEntityError: e.g. ``mentioned_participant_not_in_room``.
            OutcomeUnknownError: the message may have been posted anyway.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/messages"
        request = ChatMessageRequest(
            content=content,
            mentions=tuple(mentions),
            attachment_ids=tuple(attachment_ids) if attachment_ids is not None else None,
        )
        body = {"message": self._body(request)}
        try:
            # Not idempotent: a repeat posts the message twice (the platform
            # has no idempotency key). An ambiguous failure raises
            # OutcomeUnknownError; the caller looks for the post before
            # sending it again.
            response = await self._request("POST", path, body=body, idempotent=False)
        except PermissionDeniedError as exc:
            raise self._maybe_stopped(exc, chat_id) from exc
        return self._one(response, MessageSent, "POST", path)

    @staticmethod
    def _maybe_stopped(exc: PermissionDeniedError, chat_id: str) -> Exception:
        if exc.message and _EXECUTION_STOPPED in exc.message.lower():
            return RoomExecutionStoppedError(chat_id)
        return exc

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        """``GET /agent/chats/{id}/messages/next`` — the oldest actionable message.

        Returns:
            The message, or ``None`` (HTTP 204) when there is nothing to do —
            also the answer while the room's execution is stopped.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/messages/next"
        response = await self._request("GET", path)
        if response.status_code == 204:
            return None
        if response.status_code != 200:
            raise BandProtocolError(f"GET {path}: unexpected HTTP {response.status_code}")
        return self._one(response, ChatMessage, "GET", path)

    async def _mark(
        self, chat_id: str, message_id: str, which: str, body: Any, *, idempotent: bool
    ) -> MessageStatus:
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/messages/{path_segment(message_id)}/{which}"
        response = await self._request("POST", path, body=body, idempotent=idempotent)
        if response.status_code == 204:
            raise RoomExecutionStoppedError(chat_id)
        if response.status_code != 200:
            raise BandProtocolError(f"POST {path}: unexpected HTTP {response.status_code}")
        return self._one(response, MessageStatus, "POST", path)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        """``POST .../messages/{id}/processing`` — claim a message (start an attempt).

        Idempotent while the message is already processing, so it is retried
        like a GET.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
        """
        return await self._mark(chat_id, message_id, "processing", NO_BODY, idempotent=True)

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        """``POST .../messages/{id}/processed`` — complete the current attempt.

        Retried like a GET after an ambiguous failure (a 5xx, a timeout): a
        mark changes nothing twice. A repeat of a mark that landed is refused
        (422, no active attempt); the runtime then finds the message gone from
        its work list and counts it done.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
            UnprocessableEntityError: no active attempt (``details["/processing_attempt"]``).
            NotFoundError: the message is gone or not in this room.
        """
        return await self._mark(chat_id, message_id, "processed", NO_BODY, idempotent=True)

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        """``POST .../messages/{id}/failed`` — close the current attempt as failed.

        Retried like :meth:`mark_processed`.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
            UnprocessableEntityError: no active attempt.
            NotFoundError: the message is gone or not in this room.
        """
        return await self._mark(chat_id, message_id, "failed", {"error": error}, idempotent=True)

    async def send_event(
        self,
        chat_id: str,
        content: str,
        message_type: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EventCreated:
        """``POST /agent/chats/{id}/events`` — post a non-text event (never a turn).

        Args:
            chat_id: the room.
            content: human-readable text (≤ 16384 characters).
            message_type: ``tool_call``, ``tool_result``, ``thought``, ``error``,
                ``task`` or ``attention``.
            metadata: structured data (omitted when ``None``).

        Raises:
            RoomExecutionStoppedError: the room's agent execution is stopped.
            OutcomeUnknownError: the event may have been posted anyway.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/events"
        request = ChatEventRequest(content=content, message_type=message_type, metadata=metadata)
        try:
            # Not idempotent: a repeat posts the event twice.
            response = await self._request(
                "POST", path, body={"event": self._body(request)}, idempotent=False
            )
        except PermissionDeniedError as exc:
            raise self._maybe_stopped(exc, chat_id) from exc
        return self._one(response, EventCreated, "POST", path)

    async def get_context(
        self,
        chat_id: str,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """``GET /agent/chats/{id}/context`` — this agent's own messages and the text
        messages mentioning it, oldest first (``limit`` default 50, max 100)."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/context"
        params = {"cursor": cursor, "limit": limit, "page": page, "page_size": page_size}
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, ChatMessage, "GET", path)

    def iter_context(
        self, chat_id: str, *, limit: int | None = 50, max_pages: int | None = None
    ) -> AsyncIterator[ChatMessage]:
        """The whole context of a room, following ``next_cursor`` while ``has_more``."""

        async def fetch(cursor: str | None) -> CursorPage[ChatMessage]:
            return await self.get_context(chat_id, cursor=cursor, limit=limit)

        return self._follow_cursor(fetch, max_pages)

    async def report_activity(
        self, chat_id: str, working: bool, activity: ActivityDetail | None = None
    ) -> bool:
        """``POST /agent/chats/{id}/activity`` — the "working" indicator.

        Short timeout (``RestConfig.activity_timeout``) and no retries.

        Returns:
            The state in effect (``False`` after a ``working=True`` report means
            the platform stopped the execution).
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/activity"
        body = self._body(ActivityRequest(working=working, activity=activity))
        response = await self._request(
            "POST",
            path,
            body=body,
            attempt_timeout=self._config.activity_timeout,
            retry=False,
            # Idempotent (it sets a state), though never retried: a late
            # report is worthless.
            idempotent=True,
        )
        return self._one(response, ActivityState, "POST", path).working
