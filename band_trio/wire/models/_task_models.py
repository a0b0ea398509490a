"""A room's task board: tasks, their history, and the room goal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.models._model_base import extra_field, request_model

__all__ = [
    "Board",
    "BoardEvent",
    "BoardUpdateRequest",
    "Task",
    "TaskActor",
    "TaskAssignment",
    "TaskCreateRequest",
    "TaskEvent",
    "TaskUpdateRequest",
]


@request_model
@attrs.frozen(kw_only=True)
class TaskCreateRequest:
    """Body of ``POST /chats/{id}/tasks``; ``supersedes_id`` is a UUID or a board number."""

    subject: str
    detail: str | None = None
    supersedes_id: str | int | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class TaskUpdateRequest:
    """Body of ``POST /chats/{id}/tasks/{task}``: every field optional, at least one set."""

    active_form: str | None = None
    comment: str | None = None
    detail: str | None = None
    linked_native_id: str | None = None
    state: str | None = None
    status: str | None = None
    subject: str | None = None
    extra: Mapping[str, Any] = extra_field()


@request_model
@attrs.frozen(kw_only=True)
class BoardUpdateRequest:
    """Body of ``PUT /chats/{id}/board``."""

    goal_title: str | None = None
    goal_summary: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class TaskActor:
    """Who did something on the task board."""

    id: str
    name: str
    type: str
    handle: str | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class TaskAssignment:
    """One participant's progress on a task."""

    assignee: TaskActor
    status: str
    active_form: str
    linked_native_id: str
    updated_at: str
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class TaskEvent:
    """One entry of a task's append-only history."""

    actor: TaskActor
    at: str
    event: str
    payload: Mapping[str, Any]
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Task:
    """A task on a room's shared board."""

    id: str
    number: int
    chat_room_id: str
    subject: str
    detail: str
    state: str
    overall_status: str
    assignments: tuple[TaskAssignment, ...]
    created_by: TaskActor
    inserted_at: str
    updated_at: str
    started_at: str | None = None
    completed_at: str | None = None
    superseded_by_id: str | None = None
    history: tuple[TaskEvent, ...] | None = None
    history_truncated: bool | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class BoardEvent:
    """One entry of the board goal's audit history."""

    actor: TaskActor
    at: str
    event: str
    payload: Mapping[str, Any]
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Board:
    """A room's goal (``GET|PUT /chats/{id}/board``)."""

    chat_room_id: str
    goal_title: str | None = None
    goal_summary: str | None = None
    created_by: TaskActor | None = None
    updated_by: TaskActor | None = None
    inserted_at: str | None = None
    updated_at: str | None = None
    history: tuple[BoardEvent, ...] | None = None
    history_truncated: bool | None = None
    extra: Mapping[str, Any] = extra_field()
