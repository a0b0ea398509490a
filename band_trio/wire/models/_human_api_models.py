"""Shapes of the human API (``/api/v1/me``), as a person's client sees them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field

__all__ = [
    "Contact",
    "ContactRequest",
    "MyAgent",
    "RegisteredAgent",
    "ResolvedEntity",
    "UserDetails",
    "UserMemory",
]


@attrs.frozen(kw_only=True)
class UserDetails:
    """``GET /me/profile``."""

    id: str
    email: str
    handle: str
    role: str
    first_name: str | None = None
    last_name: str | None = None
    listed_in_directory: bool | None = None
    local_credential_required: bool | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ResolvedEntity:
    """``POST /me/contacts/resolve``."""

    type: str
    handle: str | None = None
    name: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class MyAgent:
    """A row of ``GET /me/agents``."""

    id: str
    name: str
    is_external: bool
    inserted_at: str
    updated_at: str
    description: str | None = None
    model_type: str | None = None
    slug: str | None = None
    system_prompt_id: str | None = None
    registry_access: str | None = None
    shared_with_organization: bool | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class RegisteredAgent:
    """``data.agent`` of ``POST /me/agents/register`` (the key comes separately)."""

    id: str
    name: str
    owner_id: str
    inserted_at: str
    description: str | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContactRequest:
    """A contact request as the human API shows it."""

    id: str
    inserted_at: str
    requester_id: str
    recipient_id: str
    status: str
    message: str | None = None
    requester: Mapping[str, Any] | None = None
    recipient: Mapping[str, Any] | None = None
    requester_type: str | None = None
    recipient_type: str | None = None
    responded_at: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Contact:
    """A contact as the human API shows it."""

    id: str
    contact_id: str
    contact_type: str
    inserted_at: str
    online: bool
    status: str
    source: str | None = None
    user: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class UserMemory:
    """A memory as the human API shows it."""

    id: str
    content: str
    inserted_at: str
    updated_at: str
    scope: str
    segment: str
    system: str
    type: str
    status: str | None = None
    subject_id: str | None = None
    organization_id: str | None = None
    source_agent_id: str | None = None
    thought: str | None = None
    metadata: Mapping[str, Any] | None = None
    chat_room_id: str | None = None
    chat_room_title: str | None = None
    chat_room_status: str | None = None
    chat_room_type: str | None = None
    source_agent_name: str | None = None
    subject_name: str | None = None
    subject_type: str | None = None
    extra: Mapping[str, Any] = extra_field()
