"""``TaskTools``: the task-board tools of one room.

``AgentTools`` exposes them to adapters and models; this class holds their REST
calls and argument checks.
"""

from __future__ import annotations

from typing import Any

from band_trio.adapter.tool_results import to_jsonable
from band_trio.errors import BandToolError
from band_trio.tools._schema import check_resource_id
from band_trio.wire.rest import RestClient

__all__ = ["TaskTools"]


def _task_ref(value: str) -> str:
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.startswith("#"):
        text = text[1:]
    return check_resource_id(text, "task id")


class TaskTools:
    """The task tools of one room, on the agent's REST client.

    Args:
        rest: the REST client.
        room_id: the room whose board the tools act on.
    """

    def __init__(self, rest: RestClient, room_id: str) -> None:
        self._rest = rest
        self._room_id = room_id

    async def list_tasks(
        self, state: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """The ``band_list_tasks`` tool (see :meth:`AgentTools.list_tasks`)."""
        page = await self._rest.list_tasks(self._room_id, state=state, cursor=cursor, limit=limit)
        return {
            "data": to_jsonable(page.items),
            "metadata": {
                "has_more": page.has_more,
                "limit": page.limit,
                "next_cursor": page.next_cursor,
            },
        }

    async def create_task(
        self, subject: str, detail: str | None = None, supersedes_id: str | None = None
    ) -> dict[str, Any]:
        """The ``band_create_task`` tool (see :meth:`AgentTools.create_task`)."""
        if supersedes_id is not None:
            supersedes_id = _task_ref(supersedes_id)
        task = await self._rest.create_task(
            self._room_id, subject, detail=detail, supersedes_id=supersedes_id
        )
        return dict(to_jsonable(task))

    async def get_task(self, id: str, include: str | None = None) -> dict[str, Any]:
        """The ``band_get_task`` tool (see :meth:`AgentTools.get_task`)."""
        task = await self._rest.get_task(
            self._room_id, _task_ref(id), include_history=include == "history"
        )
        return dict(to_jsonable(task))

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
        """The ``band_update_task`` tool (see :meth:`AgentTools.update_task`)."""
        fields = {
            "status": status,
            "active_form": active_form,
            "comment": comment,
            "subject": subject,
            "detail": detail,
            "state": state,
        }
        sent = {k: v for k, v in fields.items() if v is not None}
        if not sent:
            raise BandToolError(
                "At least one of status, active_form, comment, subject, detail, or "
                "state must be set"
            )
        task = await self._rest.update_task(self._room_id, _task_ref(id), **sent)
        return dict(to_jsonable(task))

    async def get_task_history(
        self, id: str, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """The ``band_get_task_history`` tool (see :meth:`AgentTools.get_task_history`)."""
        page = await self._rest.get_task_history(
            self._room_id, _task_ref(id), cursor=cursor, limit=limit
        )
        return {
            "data": to_jsonable(page.items),
            "metadata": {
                "has_more": page.has_more,
                "limit": page.limit,
                "next_cursor": page.next_cursor,
            },
        }

    async def get_board(self, include: str | None = None) -> dict[str, Any]:
        """The ``band_get_board`` tool (see :meth:`AgentTools.get_board`)."""
        return dict(
            to_jsonable(
                await self._rest.get_board(self._room_id, include_history=include == "history")
            )
        )

    async def set_board(
        self, goal_title: str | None = None, goal_summary: str | None = None
    ) -> dict[str, Any]:
        """The ``band_set_board`` tool (see :meth:`AgentTools.set_board`)."""
        if goal_title is None and goal_summary is None:
            raise BandToolError("At least one of goal_title or goal_summary must be set")
        board = await self._rest.set_board(
            self._room_id, goal_title=goal_title, goal_summary=goal_summary
        )
        return dict(to_jsonable(board))
