"""The agent's memories."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from band_trio.wire.models import (
    AgentMemory,
    AgentMemoryCreateRequest,
    CursorPage,
    MemoryMetadataRequest,
)
from band_trio.wire.rest._client_core import API_PREFIX, RestClientCore, path_segment

__all__ = ["MemoryEndpoints"]


class MemoryEndpoints(RestClientCore):
    """``/agent/memories...``."""

    async def list_memories(
        self,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
        subject_id: str | None = None,
        scope: str | None = None,
        memory_scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        status: str | None = None,
    ) -> CursorPage[AgentMemory]:
        """``GET /agent/memories`` — this agent's memories, filtered.

        ``memory_scope`` says whose memories: ``me`` (the default: this agent's
        own, any scope) or ``org`` (its organisation's shared ones). ``scope``
        is the category (``agent``, ``subject``, ``organization``, ``all``;
        subject memories need ``subject_id``); ``content_query`` is a
        full-text search; ``status`` is ``active``, ``superseded``,
        ``archived`` or ``all``; ``limit`` 1..100 (the platform's default 20).

        ``has_more`` is ``False`` and ``limit`` ``None`` when the platform sent
        no cursor metadata (offset pagination); the raw metadata is in ``meta``.
        """
        path = f"{API_PREFIX}/memories"
        params = {
            "cursor": cursor,
            "limit": limit,
            "page": page,
            "page_size": page_size,
            "subject_id": subject_id,
            "scope": scope,
            "memory_scope": memory_scope,
            "system": system,
            "type": type,
            "segment": segment,
            "content_query": content_query,
            "status": status,
        }
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, AgentMemory, "GET", path, strict_meta=False)

    def iter_memories(
        self,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
        subject_id: str | None = None,
        scope: str | None = None,
        memory_scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        status: str | None = None,
    ) -> AsyncIterator[AgentMemory]:
        """Every memory matching the filters of :meth:`list_memories`, across cursor pages."""

        async def fetch(cursor: str | None) -> CursorPage[AgentMemory]:
            return await self.list_memories(
                cursor=cursor,
                limit=limit,
                subject_id=subject_id,
                scope=scope,
                memory_scope=memory_scope,
                system=system,
                type=type,
                segment=segment,
                content_query=content_query,
                status=status,
            )

        return self._follow_cursor(fetch, max_pages)

    async def create_memory(
        self,
        content: str,
        *,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str | None = None,
        subject_id: str | None = None,
        tags: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
    ) -> AgentMemory:
        """``POST /agent/memories`` — store a memory.

        The platform checks the combination: ``type`` must fit ``system``
        (``sensory``: ``iconic``, ``echoic`` or ``haptic``; ``working`` and
        ``long_term``: ``episodic``, ``semantic`` or ``procedural``);
        ``segment`` is ``user``, ``agent``, ``tool`` or ``guideline``; the scope
        defaults to ``subject`` when ``subject_id`` is given, else ``agent``.
        """
        metadata = None
        if tags is not None or references is not None:
            metadata = MemoryMetadataRequest(
                tags=tuple(tags) if tags is not None else None,
                references=tuple(references) if references is not None else None,
            )
        request = AgentMemoryCreateRequest(
            content=content,
            system=system,
            type=type,
            segment=segment,
            thought=thought,
            scope=scope,
            subject_id=subject_id,
            metadata=metadata,
        )
        path = f"{API_PREFIX}/memories"
        # Not idempotent: a repeat stores a second memory.
        response = await self._request(
            "POST", path, body={"memory": self._body(request)}, idempotent=False
        )
        return self._one(response, AgentMemory, "POST", path)

    async def get_memory(self, memory_id: str) -> AgentMemory:
        """``GET /agent/memories/{id}``."""
        path = f"{API_PREFIX}/memories/{path_segment(memory_id)}"
        return self._one(await self._request("GET", path), AgentMemory, "GET", path)

    async def supersede_memory(self, memory_id: str) -> AgentMemory:
        """``POST /agent/memories/{id}/supersede`` — soft delete (source agent only)."""
        path = f"{API_PREFIX}/memories/{path_segment(memory_id)}/supersede"
        # Not repeated blindly: a person may restore the memory meanwhile, and
        # a repeat would undo that.
        response = await self._request("POST", path, idempotent=False)
        return self._one(response, AgentMemory, "POST", path)

    async def archive_memory(self, memory_id: str) -> AgentMemory:
        """``POST /agent/memories/{id}/archive`` — hide (source agent only)."""
        path = f"{API_PREFIX}/memories/{path_segment(memory_id)}/archive"
        # Not repeated blindly: a person may restore the memory meanwhile, and
        # a repeat would undo that.
        response = await self._request("POST", path, idempotent=False)
        return self._one(response, AgentMemory, "POST", path)
