"""A room's task board: tasks, their history, and the room goal."""

from __future__ import annotations

from collections.abc import AsyncIterator

from band_trio.errors import BandConfigError
from band_trio.wire.models import (
    Board,
    BoardUpdateRequest,
    CursorPage,
    Task,
    TaskCreateRequest,
    TaskEvent,
    TaskUpdateRequest,
)
from band_trio.wire.rest._client_core import API_PREFIX, RestClientCore, path_segment

__all__ = ["TaskEndpoints"]


class TaskEndpoints(RestClientCore):
    """``/agent/chats/{id}/tasks...`` and ``/agent/chats/{id}/board``."""

    async def list_tasks(
        self,
        chat_id: str,
        *,
        state: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[Task]:
        """``GET /agent/chats/{id}/tasks`` — ``state``: active (default), cancelled,
        superseded, archived or all."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/tasks"
        params = {"state": state, "cursor": cursor, "limit": limit}
        return self._cursor_page(await self._request("GET", path, params=params), Task, "GET", path)

    def iter_tasks(
        self, chat_id: str, *, state: str | None = None, limit: int | None = None
    ) -> AsyncIterator[Task]:
        """Every task of :meth:`list_tasks`, across cursor pages."""

        async def fetch(cursor: str | None) -> CursorPage[Task]:
            return await self.list_tasks(chat_id, state=state, cursor=cursor, limit=limit)

        return self._follow_cursor(fetch, None)

    async def create_task(
        self,
        chat_id: str,
        subject: str,
        *,
        detail: str | None = None,
        supersedes_id: str | int | None = None,
    ) -> Task:
        """``POST /agent/chats/{id}/tasks`` — ``supersedes_id`` (UUID or board number)
        replaces an active task."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/tasks"
        request = TaskCreateRequest(
            subject=subject,
            detail=detail,
            supersedes_id=supersedes_id,
        )
        # Not idempotent: a repeat creates a second task.
        response = await self._request("POST", path, body=self._body(request), idempotent=False)
        return self._one(response, Task, "POST", path)

    async def get_task(
        self, chat_id: str, task_id: str | int, *, include_history: bool = False
    ) -> Task:
        """``GET /agent/chats/{id}/tasks/{task}`` — by UUID or board number."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/tasks/{path_segment(task_id)}"
        params = {"include": ["history"] if include_history else None}
        return self._one(await self._request("GET", path, params=params), Task, "GET", path)

    async def update_task(
        self,
        chat_id: str,
        task_id: str | int,
        *,
        active_form: str | None = None,
        comment: str | None = None,
        detail: str | None = None,
        linked_native_id: str | None = None,
        state: str | None = None,
        status: str | None = None,
        subject: str | None = None,
    ) -> Task:
        """``POST /agent/chats/{id}/tasks/{task}`` — update a task (at least one field).

        Raises:
            BandConfigError: no field given (nothing is sent).
        """
        request = TaskUpdateRequest(
            active_form=active_form,
            comment=comment,
            detail=detail,
            linked_native_id=linked_native_id,
            state=state,
            status=status,
            subject=subject,
        )
        body = self._body(request)
        if not body:
            raise BandConfigError("update_task needs at least one field to change")
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/tasks/{path_segment(task_id)}"
        # Not idempotent: a comment is appended again, and every update adds
        # an entry to the task's history.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, Task, "POST", path)

    async def get_task_history(
        self,
        chat_id: str,
        task_id: str | int,
        *,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[TaskEvent]:
        """``GET /agent/chats/{id}/tasks/{task}/history`` — oldest first."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/tasks/{path_segment(task_id)}/history"
        params = {"cursor": cursor, "limit": limit}
        return self._cursor_page(
            await self._request("GET", path, params=params), TaskEvent, "GET", path
        )

    async def get_board(self, chat_id: str, *, include_history: bool = False) -> Board:
        """``GET /agent/chats/{id}/board`` — the room goal."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/board"
        params = {"include": ["history"] if include_history else None}
        return self._one(await self._request("GET", path, params=params), Board, "GET", path)

    async def set_board(
        self, chat_id: str, *, goal_title: str | None = None, goal_summary: str | None = None
    ) -> Board:
        """``PUT /agent/chats/{id}/board`` — upsert the goal title and/or summary."""
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/board"
        body = self._body(BoardUpdateRequest(goal_title=goal_title, goal_summary=goal_summary))
        # Idempotent: an upsert of the goal fields.
        response = await self._request("PUT", path, body=body, idempotent=True)
        return self._one(response, Board, "PUT", path)
