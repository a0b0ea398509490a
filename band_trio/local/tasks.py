"""Room task board and goal (``/chats/{room}/tasks...`` and ``/chats/{room}/board``)."""

from __future__ import annotations

from band_trio.local._input import Obj, Query
from band_trio.local._paging import cursor_page
from band_trio.local.model import (
    JSON,
    Principal,
    RoomRecord,
    TaskAssignmentRecord,
    TaskRecord,
    new_id,
    now_ts,
)
from band_trio.local.refusal import invalid, not_found
from band_trio.local.store import PlatformState

__all__ = [
    "board_json",
    "create_task",
    "get_board",
    "get_task",
    "list_tasks",
    "put_board",
    "task_history",
    "task_json",
    "update_task",
]

TASK_STATES = ("active", "cancelled", "superseded", "archived")
WORK_STATUSES = ("pending", "in_progress", "blocked", "in_review", "failed", "completed")
HISTORY_EMBED = 100
MAX_SUBJECT = 200
MAX_DETAIL = 10000


def _event_json(state: PlatformState, event: JSON) -> JSON:
    return {
        "actor": state.actor_json(event["actor_id"]),
        "at": event["at"],
        "event": event["event"],
        "payload": event["payload"],
    }


def task_json(state: PlatformState, task: TaskRecord, *, include_history: bool = False) -> JSON:
    """Task."""
    out: JSON = {
        "id": task.id,
        "number": task.number,
        "chat_room_id": task.room_id,
        "subject": task.subject,
        "detail": task.detail,
        "state": task.state,
        "overall_status": task.overall_status(),
        "assignments": [
            {
                "assignee": state.actor_json(a.assignee_id),
                "status": a.status,
                "active_form": a.active_form,
                "linked_native_id": a.linked_native_id,
                "updated_at": a.updated_at,
            }
            for a in task.assignments.values()
        ],
        "created_by": state.actor_json(task.created_by),
        "inserted_at": task.inserted_at,
        "updated_at": task.updated_at,
        "started_at": task.started_at,
        "completed_at": task.completed_at,
        "superseded_by_id": task.superseded_by_id,
    }
    if include_history:
        out["history"] = [_event_json(state, e) for e in task.history[-HISTORY_EMBED:]]
        out["history_truncated"] = len(task.history) > HISTORY_EMBED
    return out


def _record(task: TaskRecord, actor_id: str, event: str, payload: JSON) -> None:
    ts = now_ts()
    task.history.append(
        {
            "seq": len(task.history) + 1,
            "actor_id": actor_id,
            "at": ts,
            "event": event,
            "payload": payload,
        }
    )
    task.updated_at = ts


def _task_or_404(room: RoomRecord, ref: str) -> TaskRecord:
    task = room.find_task(ref)
    if task is None:
        raise not_found("task")
    return task


def _push_task(state: PlatformState, room: RoomRecord, event: str, task: TaskRecord) -> None:
    payload = task_json(state, task)
    for member in room.members.values():
        if member.type == "User":
            state.queue_push(
                f"tasks:{member.participant_id}", event, payload, [member.participant_id]
            )


def list_tasks(
    state: PlatformState, actor: Principal, room_id: str, query: Query
) -> tuple[list[JSON], JSON]:
    """List tasks (``GET /chats/{room}/tasks``), ordered by number."""
    room = state.room_for(actor, room_id)
    wanted = query.str_("state", choices=(*TASK_STATES, "all"), default="active")
    limit = query.int_("limit", default=50, maximum=100)
    tasks = [t for t in room.tasks if wanted == "all" or t.state == wanted]
    page, cursor, more = cursor_page(tasks, lambda t: t.number, query.str_("cursor"), limit)
    return [task_json(state, t) for t in page], {
        "has_more": more,
        "limit": limit,
        "next_cursor": cursor,
    }


def create_task(state: PlatformState, actor: Principal, room_id: str, body: Obj) -> JSON:
    """Create a task (``POST /chats/{room}/tasks``); the creator is not auto-assigned."""
    room = state.room_for(actor, room_id)
    subject = body.req_str("subject", max_len=MAX_SUBJECT).strip()
    if not subject:
        raise invalid(body.at("subject"), "can't be blank")
    detail = body.str_("detail", max_len=MAX_DETAIL) or ""
    supersedes = body.raw("supersedes_id")
    old: TaskRecord | None = None
    if supersedes is not None:
        if isinstance(supersedes, bool) or not isinstance(supersedes, str | int):
            raise invalid(body.at("supersedes_id"), "must be a task id or number")
        old = room.find_task(supersedes)
        if old is None or old.state != "active":
            raise invalid(body.at("supersedes_id"), "must name an active task of this room")
    ts = now_ts()
    task = TaskRecord(
        id=new_id(),
        number=room.next_task_number,
        room_id=room.id,
        subject=subject,
        detail=detail,
        state="active",
        created_by=actor.id,
        inserted_at=ts,
        updated_at=ts,
    )
    room.next_task_number += 1
    room.tasks.append(task)
    _record(task, actor.id, "created", {"subject": subject, "detail": detail})
    if old is not None:
        old.state = "superseded"
        old.superseded_by_id = task.id
        _record(old, actor.id, "superseded", {"superseded_by_id": task.id})
        _push_task(state, room, "task_updated", old)
    _push_task(state, room, "task_created", task)
    return task_json(state, task)


def get_task(state: PlatformState, actor: Principal, room_id: str, ref: str, query: Query) -> JSON:
    """One task in any state (``GET /chats/{room}/tasks/{id}``); ``include=history`` embeds recent events."""
    room = state.room_for(actor, room_id)
    task = _task_or_404(room, ref)
    return task_json(state, task, include_history="history" in query.includes)


def update_task(state: PlatformState, actor: Principal, room_id: str, ref: str, body: Obj) -> JSON:
    """Update a task (``POST /chats/{room}/tasks/{id}``): the caller's own progress, notes, edits and lifecycle."""
    room = state.room_for(actor, room_id)
    task = _task_or_404(room, ref)
    fields = ("active_form", "comment", "detail", "linked_native_id", "state", "status", "subject")
    if not any(body.raw(f) is not None for f in fields):
        raise invalid("/", "at least one field is required")
    new_state = body.str_("state", choices=("cancelled", "archived", "active"))
    status = body.str_("status", choices=WORK_STATUSES)
    active_form = body.str_("active_form", max_len=500)
    comment = body.str_("comment", max_len=MAX_DETAIL)
    detail = body.str_("detail", max_len=MAX_DETAIL)
    linked = body.str_("linked_native_id", max_len=500)
    subject = body.str_("subject", max_len=MAX_SUBJECT)
    if subject is not None and not subject.strip():
        raise invalid(body.at("subject"), "can't be blank")
    work = any(v is not None for v in (status, active_form, comment, detail, linked, subject))
    if task.state == "superseded" and new_state is not None:
        raise invalid(body.at("state"), "a superseded task can't change state")
    if new_state == "active" and task.state != "active":
        if task.state != "archived":
            raise invalid(body.at("state"), f"a {task.state} task can't be made active")
        task.state = "active"
        _record(task, actor.id, "unarchived", {})
    if work and task.state != "active":
        raise invalid("/state", "the task is not active")
    ts = now_ts()
    if subject is not None or detail is not None:
        changes: JSON = {}
        if subject is not None and subject.strip() != task.subject:
            changes["subject"] = {"from": task.subject, "to": subject.strip()}
            task.subject = subject.strip()
        if detail is not None and detail != task.detail:
            changes["detail"] = {"from": task.detail, "to": detail}
            task.detail = detail
        if changes:
            _record(task, actor.id, "edited", changes)
    if status is not None or active_form is not None or linked is not None:
        assignment = task.assignments.get(actor.id)
        if assignment is None:
            assignment = TaskAssignmentRecord(actor.id, "pending", "", "", ts)
            task.assignments[actor.id] = assignment
        if status is not None and status != assignment.status:
            _record(
                task,
                actor.id,
                "status_changed",
                {"status": {"from": assignment.status, "to": status}},
            )
            assignment.status = status
        if active_form is not None:
            assignment.active_form = active_form
        if linked is not None:
            assignment.linked_native_id = linked
        assignment.updated_at = ts
    if comment is not None:
        _record(task, actor.id, "commented", {"text": comment})
    rollup = task.overall_status()
    if task.started_at is None and rollup != "pending":
        task.started_at = ts
    task.completed_at = (task.completed_at or ts) if rollup == "completed" else None
    if new_state in ("cancelled", "archived") and task.state != new_state:
        task.state = new_state
        _record(task, actor.id, new_state, {})
    task.updated_at = ts
    _push_task(state, room, "task_updated", task)
    return task_json(state, task)


def task_history(
    state: PlatformState, actor: Principal, room_id: str, ref: str, query: Query
) -> tuple[list[JSON], JSON]:
    """A task's append-only ledger, oldest first (``GET /chats/{room}/tasks/{id}/history``)."""
    room = state.room_for(actor, room_id)
    task = _task_or_404(room, ref)
    limit = query.int_("limit", default=50, maximum=100)
    page, cursor, more = cursor_page(
        task.history, lambda e: int(e["seq"]), query.str_("cursor"), limit
    )
    return [_event_json(state, e) for e in page], {
        "has_more": more,
        "limit": limit,
        "next_cursor": cursor,
    }


def board_json(state: PlatformState, room: RoomRecord, *, include_history: bool = False) -> JSON:
    """Board."""
    board = room.board
    out: JSON = {
        "chat_room_id": room.id,
        "goal_title": board.goal_title,
        "goal_summary": board.goal_summary,
        "created_by": state.actor_json(board.created_by) if board.created_by else None,
        "updated_by": state.actor_json(board.updated_by) if board.updated_by else None,
        "inserted_at": board.inserted_at,
        "updated_at": board.updated_at,
    }
    if include_history:
        out["history"] = [_event_json(state, e) for e in board.history[-HISTORY_EMBED:]]
        out["history_truncated"] = len(board.history) > HISTORY_EMBED
    return out


def get_board(state: PlatformState, actor: Principal, room_id: str, query: Query) -> JSON:
    """The room goal (``GET /chats/{room}/board``)."""
    room = state.room_for(actor, room_id)
    return board_json(state, room, include_history="history" in query.includes)


def put_board(state: PlatformState, actor: Principal, room_id: str, body: Obj) -> JSON:
    """Upsert the room goal (``PUT /chats/{room}/board``); any participant may set it."""
    room = state.room_for(actor, room_id)
    title = body.str_("goal_title", max_len=MAX_SUBJECT)
    summary = body.str_("goal_summary", max_len=MAX_DETAIL)
    if not body.has("goal_title") and not body.has("goal_summary"):
        raise invalid("/", "goal_title or goal_summary is required")
    board = room.board
    ts = now_ts()
    first = board.inserted_at is None
    changes: JSON = {}
    if body.has("goal_title") and title != board.goal_title:
        changes["goal_title"] = {"from": board.goal_title, "to": title}
        board.goal_title = title
    if body.has("goal_summary") and summary != board.goal_summary:
        changes["goal_summary"] = {"from": board.goal_summary, "to": summary}
        board.goal_summary = summary
    if first:
        board.inserted_at = ts
        board.created_by = actor.id
    if changes or first:
        board.updated_at = ts
        board.updated_by = actor.id
        board.history.append(
            {
                "actor_id": actor.id,
                "at": ts,
                "event": "goal_set" if first else "goal_edited",
                "payload": changes,
            }
        )
    return board_json(state, room)
