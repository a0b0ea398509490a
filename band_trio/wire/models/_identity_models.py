"""The agent's own identity: its profile and delegated tokens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = ["AgentMe", "DelegationObo", "DelegationToken", "DelegationTokenRequest"]


@request_model
@attrs.frozen(kw_only=True)
class DelegationTokenRequest:
    """Body of ``POST /delegation/token``."""

    audience: str
    message_id: str
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class AgentMe:
    """The calling agent's profile (``GET /agent/me``).

    ``feature_flags`` keys: ``ff_file_transfer``, ``ff_room_tasks`` (``False`` =
    not served; absent = the platform predates the feature).
    """

    id: str
    name: str
    handle: str
    owner_uuid: str
    inserted_at: str
    updated_at: str
    feature_flags: Mapping[str, bool]
    description: str | None = None
    avatar_url: str | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class DelegationObo:
    """On-behalf-of identity of a delegated token."""

    agent_uuid: str
    audience: str
    originator_uuid: str
    originator_handle: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class DelegationToken:
    """Answer to ``POST /delegation/token`` (not wrapped in ``data``).

    The ``repr`` never shows ``access_token``.
    """

    access_token: str = attrs.field(repr=False)
    token_type: str
    obo: DelegationObo
    expires_at: str | None = None
    extra: Mapping[str, Any] = extra_field()
