"""``TaskTools``: the task-board tools of one room.

``AgentTools`` exposes them to adapters and models; this class holds their REST
calls and argument checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from band_trio.adapter.tool_results import to_jsonable
from band_trio.errors import BandToolError
from band_trio.tools._schema import check_resource_id
from band_trio.tools.settled_writes import WriteLocks, collect, create_once, read_patiently
from band_trio.tools.unsure_posts import DEFAULT_UNSURE_POST_POLICY, UnsurePostPolicy, settle_write
from band_trio.wire.models import Task, TaskEvent
from band_trio.wire.rest import RestClient

__all__ = ["TaskTools"]


def _task_ref(value: str) -> str:
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.startswith("#"):
        text = text[1:]
    return check_resource_id(text, "task id")


def _comment_key(event: TaskEvent) -> tuple[str, str, str]:
    return (event.at, event.actor.id, str(event.payload.get("text")))


def _comments(task: Task, author_id: str, text: str) -> set[tuple[str, str, str]]:
    """The task's recent comments by ``author_id`` saying ``text``."""
    return {
        _comment_key(e)
        for e in task.history or ()
        if e.event == "commented" and e.actor.id == author_id and e.payload.get("text") == text
    }


def _shows(task: Task, sent: Mapping[str, str], author_id: str) -> bool:
    """Whether the task holds every value of an update (the comment aside)."""
    mine = next((a for a in task.assignments if a.assignee.id == author_id), None)
    for field, value in sent.items():
        if field == "subject":
            held: str | None = task.subject.strip()
            value = value.strip()
        elif field in ("detail", "state"):
            held = getattr(task, field)
        elif field in ("status", "active_form"):
            held = getattr(mine, field) if mine is not None else None
        else:
            continue
        if held != value:
            return False
    return True


class TaskTools:
    """The task tools of one room, on the agent's REST client.

    A write whose outcome is unknown is settled inside the call
    (:mod:`band_trio.tools.settled_writes`): a created task is found among
    the agent's tasks with the same subject that were not there before the
    write; an update is read back from the task.

    Args:
        rest: the REST client.
        room_id: the room whose board the tools act on.
        agent_id: this agent's id (the author of its tasks and updates).
        policy: how long and how often an unknown outcome is looked up.
        locks: the agent's creation locks (default: this object's own).
    """

    def __init__(
        self,
        rest: RestClient,
        room_id: str,
        *,
        agent_id: str,
        policy: UnsurePostPolicy = DEFAULT_UNSURE_POST_POLICY,
        locks: WriteLocks | None = None,
    ) -> None:
        self._rest = rest
        self._room_id = room_id
        self._agent_id = agent_id
        self._policy = policy
        self._locks = locks if locks is not None else WriteLocks()

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
        wanted = subject.strip() if isinstance(subject, str) else subject

        async def alike() -> list[Task]:
            return await collect(
                self._rest.iter_tasks(self._room_id, state="all", limit=100),
                lambda t: t.created_by.id == self._agent_id and t.subject.strip() == wanted,
            )

        task = await create_once(
            lambda: self._rest.create_task(
                self._room_id, subject, detail=detail, supersedes_id=supersedes_id
            ),
            existing=alike,
            key_of=lambda t: t.id,
            policy=self._policy,
            locks=self._locks,
            lock_key=("task", self._room_id, wanted),
            what="task",
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
        ref = _task_ref(id)
        before: set[tuple[str, str, str]] = set()
        if comment is not None:
            # A comment is appended again by a repeat: the task's recent
            # comments before the write tell a new one from an old one.
            task = await read_patiently(
                lambda: self._rest.get_task(self._room_id, ref, include_history=True),
                policy=self._policy,
                what="task",
            )
            before = _comments(task, self._agent_id, comment)

        async def applied() -> Task | None:
            task = await self._rest.get_task(
                self._room_id, ref, include_history=comment is not None
            )
            if not _shows(task, sent, self._agent_id):
                return None
            if comment is not None and not _comments(task, self._agent_id, comment) - before:
                return None
            return task

        task = await settle_write(
            lambda: self._rest.update_task(self._room_id, ref, **sent),
            verify=applied,
            policy=self._policy,
            what="task update",
        )
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
