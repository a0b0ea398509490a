"""The agent's memories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = ["AgentMemory", "AgentMemoryCreateRequest", "MemoryMetadataRequest"]


@request_model
@attrs.frozen(kw_only=True)
class MemoryMetadataRequest:
    """``metadata`` of a memory to create."""

    tags: tuple[str, ...] | None = None
    references: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class AgentMemoryCreateRequest:
    """Body of ``POST /memories`` (inside ``{"memory": ...}``).

    ``system`` ∈ sensory, working, long_term; ``type`` must fit it (sensory:
    iconic, echoic, haptic; otherwise episodic, semantic, procedural);
    ``segment`` ∈ user, agent, tool, guideline; ``scope`` ∈ agent, subject,
    organization (default: subject when ``subject_id`` is set, else agent).
    """

    content: str
    system: str
    type: str
    segment: str
    thought: str
    scope: str | None = None
    subject_id: str | None = None
    metadata: MemoryMetadataRequest | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class AgentMemory:
    """A memory (``/agent/memories``)."""

    id: str
    content: str
    inserted_at: str
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
    extra: Mapping[str, Any] = extra_field()
