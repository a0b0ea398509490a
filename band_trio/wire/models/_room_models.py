"""Rooms and their participants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = [
    "AgentChatRoomListItem",
    "ChatParticipant",
    "ChatParticipantDetails",
    "ChatRoom",
    "ChatRoomRequest",
    "ParticipantRequest",
]


@request_model
@attrs.frozen(kw_only=True)
class ChatRoomRequest:
    """Body of ``POST /chats`` and ``PATCH /chats/{id}`` (inside ``{"chat": ...}``)."""

    title: str | None = None
    task_id: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ParticipantRequest:
    """Body of ``POST /chats/{id}/participants`` (inside ``{"participant": ...}``)."""

    participant_id: str
    role: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ChatParticipant:
    """A room participant (``GET /chats/{id}/participants`` and friends).

    ``role`` ∈ owner, admin, member; ``status`` (membership) ∈ active,
    inactive, blocked; ``type`` ∈ User, Agent. ``handle`` is a user's username
    or an agent's ``owner/slug``.
    """

    id: str
    role: str
    status: str
    type: str
    name: str | None = None
    handle: str | None = None
    online: bool | None = None
    avatar_url: str | None = None
    description: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ChatParticipantDetails:
    """A participant as the human roster lists it (``GET /me/chats/{id}/participants``)."""

    id: str
    name: str
    role: str | None = None
    status: str | None = None
    type: str | None = None
    handle: str | None = None
    online: bool | None = None
    avatar_url: str | None = None
    description: str | None = None
    is_external: bool | None = None
    connection_status: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ChatRoom:
    """A chat room.

    The three roster fields are set only by ``GET /agent/chats?include=participants``
    (and only where the agent may read the roster); they are ``None`` otherwise.
    """

    id: str
    inserted_at: str
    updated_at: str
    title: str | None = None
    task_id: str | None = None
    participants: tuple[ChatParticipant, ...] | None = None
    participant_count: int | None = None
    participants_truncated: bool | None = None
    extra: Mapping[str, Any] = extra_field()


AgentChatRoomListItem = ChatRoom
"""A row of ``GET /agent/chats``: the same shape as :class:`ChatRoom`."""
