"""``MemoryTools``: the memory tools of an agent (agent-level, not tied to a room).

``AgentTools`` exposes them to adapters and models; this class holds their REST
calls and argument checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from band_trio.adapter.tool_results import to_jsonable
from band_trio.errors import BandToolError, UnprocessableEntityError
from band_trio.tools._schema import check_resource_id
from band_trio.tools.inputs import memory_metadata, types_for_system
from band_trio.tools.settled_writes import WriteLocks, collect, create_once
from band_trio.tools.unsure_posts import DEFAULT_UNSURE_POST_POLICY, UnsurePostPolicy, settle_write
from band_trio.wire.models import AgentMemory
from band_trio.wire.rest import RestClient

__all__ = ["MemoryTools"]

_ORG_SCOPE_HINT = (
    'scope="organization" was rejected: the agent\'s owner does not belong to an '
    'organization. Retry with scope="agent" instead.'
)


class MemoryTools:
    """The memory tools, on the agent's REST client.

    A write whose outcome is unknown is settled inside the call
    (:mod:`band_trio.tools.settled_writes`): a stored memory is found among
    the agent's memories with the same content that were not there before
    the write; a transition is read back from the memory's status.

    Args:
        rest: the REST client.
        policy: how long and how often an unknown outcome is looked up.
        locks: the agent's creation locks (default: this object's own).
    """

    def __init__(
        self,
        rest: RestClient,
        *,
        policy: UnsurePostPolicy = DEFAULT_UNSURE_POST_POLICY,
        locks: WriteLocks | None = None,
    ) -> None:
        self._rest = rest
        self._policy = policy
        self._locks = locks if locks is not None else WriteLocks()

    async def list_memories(
        self,
        subject_id: str | None = None,
        scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        page_size: int = 50,
        status: str | None = None,
    ) -> dict[str, Any]:
        """The ``band_list_memories`` tool (see :meth:`AgentTools.list_memories`)."""
        try:
            result = await self._rest.list_memories(
                limit=page_size,
                subject_id=subject_id,
                scope=scope,
                memory_scope="org" if scope == "organization" else None,
                system=system,
                type=type,
                segment=segment,
                content_query=content_query,
                status=status,
            )
        except UnprocessableEntityError as exc:
            if exc.code == "org_scope_requires_organization":
                raise BandToolError(_ORG_SCOPE_HINT) from exc
            raise
        metadata = {
            "has_more": result.has_more,
            "limit": result.limit,
            "next_cursor": result.next_cursor,
        }
        return {"data": to_jsonable(result.items), "metadata": metadata}

    async def store_memory(
        self,
        content: str,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str,
        subject_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``band_store_memory`` tool (see :meth:`AgentTools.store_memory`)."""
        try:
            tags, references = memory_metadata(metadata)
        except ValueError as exc:
            raise BandToolError(str(exc)) from None
        allowed = types_for_system(system)
        if type not in allowed:
            raise BandToolError(
                f"type '{type}' is not valid for system '{system}'; expected one of: "
                f"{', '.join(allowed) or '(unknown system)'}"
            )
        if scope == "subject" and not subject_id:
            raise BandToolError(
                "scope 'subject' needs subject_id; retry with scope 'agent' if you do "
                "not know the subject's id"
            )
        wanted = content.strip()

        async def alike() -> list[AgentMemory]:
            memories = self._rest.iter_memories(
                limit=100,
                status="active",
                scope=scope,
                subject_id=subject_id,
                system=system,
                type=type,
                segment=segment,
            )
            return await collect(memories, lambda m: m.content.strip() == wanted)

        try:
            memory = await create_once(
                lambda: self._rest.create_memory(
                    content,
                    system=system,
                    type=type,
                    segment=segment,
                    thought=thought,
                    scope=scope,
                    subject_id=subject_id,
                    tags=tags,
                    references=references,
                ),
                existing=alike,
                key_of=lambda m: m.id,
                policy=self._policy,
                locks=self._locks,
                lock_key=("memory", scope, subject_id, system, type, segment, wanted),
                what="memory",
            )
        except UnprocessableEntityError as exc:
            if exc.code == "org_scope_requires_organization":
                raise BandToolError(_ORG_SCOPE_HINT) from exc
            raise
        return dict(to_jsonable(memory))

    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        """The ``band_get_memory`` tool (see :meth:`AgentTools.get_memory`)."""
        return dict(
            to_jsonable(await self._rest.get_memory(check_resource_id(memory_id, "memory_id")))
        )

    async def supersede_memory(self, memory_id: str) -> dict[str, Any]:
        """The ``band_supersede_memory`` tool (see :meth:`AgentTools.supersede_memory`)."""
        memory_id = check_resource_id(memory_id, "memory_id")
        memory = await settle_write(
            lambda: self._rest.supersede_memory(memory_id),
            verify=lambda: self._in_status(memory_id, "superseded"),
            policy=self._policy,
            what="memory supersession",
        )
        return dict(to_jsonable(memory))

    async def archive_memory(self, memory_id: str) -> dict[str, Any]:
        """The ``band_archive_memory`` tool (see :meth:`AgentTools.archive_memory`)."""
        memory_id = check_resource_id(memory_id, "memory_id")
        memory = await settle_write(
            lambda: self._rest.archive_memory(memory_id),
            verify=lambda: self._in_status(memory_id, "archived"),
            policy=self._policy,
            what="memory archival",
        )
        return dict(to_jsonable(memory))

    async def _in_status(self, memory_id: str, status: str) -> AgentMemory | None:
        """The memory when the platform shows it in ``status`` (the
        transition took effect), else None."""
        memory = await self._rest.get_memory(memory_id)
        return memory if memory.status == status else None
