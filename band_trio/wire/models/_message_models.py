"""Messages, events, attachments and the activity indicator of a room."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = [
    "ActivityDetail",
    "ActivityRequest",
    "ActivityState",
    "Attachment",
    "ChatEventRequest",
    "ChatMessage",
    "ChatMessageRequest",
    "EventCreated",
    "MentionRequest",
    "MessageSent",
    "MessageStatus",
    "Recipient",
]


@request_model
@attrs.frozen(kw_only=True)
class MentionRequest:
    """One mention of a message to send: ``id`` wins over ``handle`` when both are set.

    ``kind`` is ``"mention"`` (delivers; the platform default) or
    ``"reference"`` (names without delivering); leave it ``None`` to omit it —
    the platform rejects an explicit null.
    """

    id: str | None = None
    handle: str | None = None
    name: str | None = None
    kind: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ChatMessageRequest:
    """Body of ``POST /chats/{id}/messages`` (inside ``{"message": ...}``)."""

    content: str
    mentions: tuple[MentionRequest, ...]
    attachment_ids: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ChatEventRequest:
    """Body of ``POST /chats/{id}/events`` (inside ``{"event": ...}``).

    ``message_type`` is one of ``tool_call``, ``tool_result``, ``thought``,
    ``error``, ``task``, ``attention``.
    """

    content: str
    message_type: str
    metadata: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ActivityDetail:
    """What the agent is doing: ``kind`` ∈ reasoning, tool_call, memory, permission.

    ``name`` is required by the platform when ``kind`` is ``tool_call``.
    """

    kind: str
    name: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ActivityRequest:
    """Body of ``POST /chats/{id}/activity``."""

    working: bool
    activity: ActivityDetail | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Attachment:
    """A room file (``PUT /chats/{id}/files``; also on messages)."""

    id: str
    name: str
    content_type: str
    bytes: int
    sha256: str
    has_thumb: bool
    expires_at: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ChatMessage:
    """A message as REST returns it (``/messages``, ``/messages/next``, ``/context``).

    ``metadata`` is the platform's free-form object (``mentions``,
    ``delivery_status``, ``status``, ``delegation``, ...), kept as sent.
    """

    id: str
    content: str
    message_type: str
    sender_id: str
    sender_type: str
    sender_name: str | None = None
    chat_room_id: str | None = None
    inserted_at: str | None = None
    updated_at: str | None = None
    metadata: Mapping[str, Any] | None = None
    attachments: tuple[Attachment, ...] = ()
    extra: Mapping[str, Any] = extra_field()

    @property
    def mentions(self) -> tuple[Mapping[str, Any], ...]:
        """``metadata.mentions`` as a tuple of mappings (empty when absent or malformed)."""
        raw = (self.metadata or {}).get("mentions")
        if not isinstance(raw, list | tuple):
            return ()
        return tuple(m for m in raw if isinstance(m, Mapping))

    @property
    def delivery_status(self) -> Mapping[str, Any] | None:
        """``metadata.delivery_status`` when it is an object, else ``None``."""
        raw = (self.metadata or {}).get("delivery_status")
        return raw if isinstance(raw, Mapping) else None


@attrs.frozen(kw_only=True)
class Recipient:
    """A mention-kind recipient of a sent message. No ``handle`` = unconfirmed."""

    id: str
    handle: str | None = None
    name: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class MessageSent:
    """Answer to ``POST /chats/{id}/messages``."""

    id: str
    success: bool
    recipients: tuple[Recipient, ...] = ()
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class MessageStatus:
    """Answer to the lifecycle marks (``/processing``, ``/processed``, ``/failed``)."""

    id: str
    status: str
    attempt_number: int
    success: bool
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class EventCreated:
    """Answer to ``POST /chats/{id}/events``."""

    id: str
    message_type: str
    success: bool
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ActivityState:
    """Answer to ``POST /chats/{id}/activity``: the state in effect."""

    working: bool
    extra: Mapping[str, Any] = extra_field()
