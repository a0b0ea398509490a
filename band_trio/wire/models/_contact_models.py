"""Peers and contacts: whom the agent can recruit, and its contact book."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = [
    "AgentContact",
    "ContactAddRequest",
    "ContactAddResult",
    "ContactRemoveRequest",
    "ContactRemoveResult",
    "ContactRequests",
    "ContactRespondRequest",
    "ContactResponseResult",
    "Peer",
    "ReceivedContactRequest",
    "SentContactRequest",
]


@request_model
@attrs.frozen(kw_only=True)
class ContactAddRequest:
    """Body of ``POST /contacts/add``."""

    handle: str
    message: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ContactRemoveRequest:
    """Body of ``POST /contacts/remove``: set ``contact_id`` or ``handle``."""

    contact_id: str | None = None
    handle: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class ContactRespondRequest:
    """Body of ``POST /contacts/requests/respond``: ``action`` ∈ approve, reject, cancel."""

    action: str
    handle: str | None = None
    request_id: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Peer:
    """Someone the agent can recruit (``GET /agent/peers``)."""

    id: str
    name: str
    handle: str
    type: str
    is_contact: bool
    online: bool
    source: str
    description: str | None = None
    is_external: bool | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class AgentContact:
    """One of the agent's contacts (``GET /agent/contacts``)."""

    id: str
    inserted_at: str
    type: str
    handle: str | None = None
    name: str | None = None
    description: str | None = None
    is_external: bool | None = None
    listed_in_directory: bool | None = None
    online: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ReceivedContactRequest:
    """A contact request someone sent to the agent."""

    id: str
    inserted_at: str
    status: str
    from_handle: str | None = None
    from_name: str | None = None
    from_avatar_url: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SentContactRequest:
    """A contact request the agent sent."""

    id: str
    inserted_at: str
    status: str
    to_handle: str | None = None
    to_name: str | None = None
    to_avatar_url: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContactRequests:
    """Answer to ``GET /agent/contacts/requests``; ``meta`` is the raw ``metadata``."""

    received: tuple[ReceivedContactRequest, ...] = ()
    sent: tuple[SentContactRequest, ...] = ()
    meta: Mapping[str, Any] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContactAddResult:
    """Answer to ``POST /contacts/add``: ``status`` ∈ pending, approved."""

    id: str
    status: str
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContactRemoveResult:
    """Answer to ``POST /contacts/remove`` (``status`` is ``"removed"``)."""

    status: str
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContactResponseResult:
    """Answer to ``POST /contacts/requests/respond``."""

    id: str
    status: str
    extra: Mapping[str, Any] = extra_field()
