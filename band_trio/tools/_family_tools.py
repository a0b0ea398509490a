"""The delegated families of the turn's tools: contacts, memories, room files,
tasks and the board.

Each public method is one platform tool, a few lines that hand the call to the
family's REST work (:mod:`~band_trio.tools.contact_tools`,
:mod:`~band_trio.tools.memory_tools`, :mod:`~band_trio.tools.room_file_tools`,
:mod:`~band_trio.tools.task_tools`), documented where an adapter calls it:
:class:`~band_trio.tools.AgentTools` inherits them. The room-file post
(``send_room_file``) is a message post and lives with the posts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from band_trio.adapter.tool_results import to_jsonable
from band_trio.tools._tools_core import ToolsCore, platform_tool

__all__ = ["FamilyTools"]


class FamilyTools(ToolsCore):
    """The contact, memory, room-file, task and board tools of a turn."""

    # -------------------------------------------------------------- contacts

    @platform_tool("band_list_contacts")
    async def list_contacts(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """List this agent's contacts."""
        result = await self._rest.list_contacts(page=page, page_size=page_size)
        return {"data": to_jsonable(result.items), "metadata": to_jsonable(result.meta)}

    @platform_tool("band_add_contact")
    async def add_contact(self, handle: str, message: str | None = None) -> dict[str, Any]:
        """Send a contact request; the status is ``pending`` or ``approved``."""
        return await self._contacts.add_contact(handle, message)

    @platform_tool("band_remove_contact")
    async def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Remove a contact by handle or contact id.

        Raises:
            BandToolError: neither ``handle`` nor ``contact_id`` was given.
        """
        return await self._contacts.remove_contact(handle, contact_id)

    @platform_tool("band_list_contact_requests")
    async def list_contact_requests(
        self, page: int = 1, page_size: int = 50, sent_status: str = "pending"
    ) -> dict[str, Any]:
        """List received (pending) and sent contact requests."""
        result = await self._rest.list_contact_requests(
            page=page, page_size=page_size, sent_status=sent_status
        )
        return {
            "data": {
                "received": to_jsonable(result.received),
                "sent": to_jsonable(result.sent),
            },
            "metadata": to_jsonable(result.meta),
        }

    @platform_tool("band_respond_contact_request")
    async def respond_contact_request(
        self, action: str, handle: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """Approve, reject or cancel a contact request.

        Raises:
            BandToolError: an unknown action, or neither ``handle`` nor
                ``request_id`` was given.
        """
        return await self._contacts.respond_contact_request(action, handle, request_id)

    # -------------------------------------------------------------- memories

    @platform_tool("band_list_memories")
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
        """List memories; only the filters given are sent.

        ``scope="organization"`` lists the organization's shared memories (from
        every agent of the organization, ``memory_scope=org``); any other scope
        lists this agent's own memories.

        Raises:
            BandToolError: organization memories for an agent without an
                organization.
        """
        return await self._memories.list_memories(
            subject_id=subject_id,
            scope=scope,
            system=system,
            type=type,
            segment=segment,
            content_query=content_query,
            page_size=page_size,
            status=status,
        )

    @platform_tool("band_store_memory")
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
        """Store a memory.

        ``metadata`` may carry ``tags`` and ``references`` (lists of strings).

        Raises:
            BandToolError: ``type`` does not belong to ``system``, a subject memory
                without ``subject_id``, bad ``metadata``, or an organization memory
                for an agent without an organization.
        """
        return await self._memories.store_memory(
            content=content,
            system=system,
            type=type,
            segment=segment,
            thought=thought,
            scope=scope,
            subject_id=subject_id,
            metadata=metadata,
        )

    @platform_tool("band_get_memory")
    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        """Read one memory."""
        return await self._memories.get_memory(memory_id=memory_id)

    @platform_tool("band_supersede_memory")
    async def supersede_memory(self, memory_id: str) -> dict[str, Any]:
        """Mark a memory superseded (soft delete)."""
        return await self._memories.supersede_memory(memory_id=memory_id)

    @platform_tool("band_archive_memory")
    async def archive_memory(self, memory_id: str) -> dict[str, Any]:
        """Archive a memory (hidden, restorable by a human)."""
        return await self._memories.archive_memory(memory_id=memory_id)

    # ----------------------------------------------------------------- files

    @platform_tool("band_list_room_files")
    async def list_room_files(self, cursor: str | None = None) -> dict[str, Any]:
        """List attachments of one page of the agent's room context."""
        return await self._files.list_room_files(cursor=cursor)

    @platform_tool("band_read_room_file")
    async def read_room_file(self, file_id: str) -> dict[str, Any]:
        """Read a room file: small text inline, small images as image content,
        anything else described without being downloaded.

        Raises:
            BandToolError: the file is unknown, expired or not downloadable.
        """
        return await self._files.read_room_file(file_id=file_id)

    # ----------------------------------------------------------------- tasks

    @platform_tool("band_list_tasks")
    async def list_tasks(
        self, state: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """List tasks on the room's board (active unless ``state`` says otherwise)."""
        return await self._tasks.list_tasks(state=state, cursor=cursor, limit=limit)

    @platform_tool("band_create_task")
    async def create_task(
        self, subject: str, detail: str | None = None, supersedes_id: str | None = None
    ) -> dict[str, Any]:
        """Create a task on the room's board."""
        return await self._tasks.create_task(
            subject=subject, detail=detail, supersedes_id=supersedes_id
        )

    @platform_tool("band_get_task")
    async def get_task(self, id: str, include: str | None = None) -> dict[str, Any]:
        """Read one task (by id or board number)."""
        return await self._tasks.get_task(id=id, include=include)

    @platform_tool("band_update_task")
    async def update_task(
        self,
        id: str,
        status: str | None = None,
        active_form: str | None = None,
        comment: str | None = None,
        subject: str | None = None,
        detail: str | None = None,
        state: str | None = None,
    ) -> dict[str, Any]:
        """Update a task; only the fields given are sent.

        Raises:
            BandToolError: no field besides ``id`` was given.
        """
        return await self._tasks.update_task(
            id=id,
            status=status,
            active_form=active_form,
            comment=comment,
            subject=subject,
            detail=detail,
            state=state,
        )

    @platform_tool("band_get_task_history")
    async def get_task_history(
        self, id: str, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """Read a task's history, oldest first."""
        return await self._tasks.get_task_history(id=id, cursor=cursor, limit=limit)

    @platform_tool("band_get_board")
    async def get_board(self, include: str | None = None) -> dict[str, Any]:
        """Read the room's board goal."""
        return await self._tasks.get_board(include=include)

    @platform_tool("band_set_board")
    async def set_board(
        self, goal_title: str | None = None, goal_summary: str | None = None
    ) -> dict[str, Any]:
        """Set the room's board goal (title, summary or both).

        Raises:
            BandToolError: neither field was given.
        """
        return await self._tasks.set_board(goal_title=goal_title, goal_summary=goal_summary)
