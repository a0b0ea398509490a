"""The in-memory data model of the local Band platform.

Plain mutable ``attrs`` records, owned by :class:`~band_trio.local.store.PlatformState`.
Tests may read them (``platform.state``); only the state's operations mutate them.
API keys are stored here but never shown in a ``repr``. The records are named
``...Record`` so that they never read like the SDK's own ``Agent`` or ``Room``:
they are the server's bookkeeping, not the client's view of it.
"""

from __future__ import annotations

import re
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

__all__ = [
    "JSON",
    "AgentRecord",
    "AttemptRecord",
    "BoardRecord",
    "ContactRecord",
    "ContactRequestRecord",
    "Delivery",
    "Membership",
    "Memory",
    "Message",
    "Principal",
    "Push",
    "RoomRecord",
    "StoredFile",
    "TaskAssignmentRecord",
    "TaskRecord",
    "UserRecord",
    "new_id",
    "new_key",
    "now_ts",
    "slugify",
]

JSON = dict[str, Any]
PrincipalType = Literal["User", "Agent"]


def now_ts() -> str:
    """The current time as the platform writes it: ISO-8601 UTC, microseconds, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id() -> str:
    """A fresh UUID string."""
    return str(uuid.uuid4())


def new_key(prefix: str) -> str:
    """A fresh random API key with a readable prefix."""
    return f"{prefix}_{secrets.token_urlsafe(24)}"


_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    """Lower-case, dash-separated slug of a display name (``"My Bot"`` -> ``"my-bot"``)."""
    slug = _SLUG_RE.sub("-", name.lower()).strip("-")
    return slug or "agent"


@attrs.define(eq=False)
class UserRecord:
    """A human account (authenticates with a user API key on ``/api/v1/me``)."""

    id: str
    handle: str
    first_name: str
    last_name: str
    email: str
    api_key: str = attrs.field(repr=False)
    organization_id: str | None
    inserted_at: str
    updated_at: str
    kind: PrincipalType = "User"

    @property
    def name(self) -> str:
        """Display name."""
        return f"{self.first_name} {self.last_name}".strip() or self.handle


@attrs.define(eq=False)
class AgentRecord:
    """An agent account, owned by a user; its handle is ``<owner handle>/<slug>``."""

    id: str
    name: str
    description: str
    slug: str
    handle: str
    owner_id: str
    api_key: str = attrs.field(repr=False)
    inserted_at: str
    updated_at: str
    is_global: bool = False
    listed_in_directory: bool = False
    tags: list[str] = attrs.Factory(list)
    feature_flags: dict[str, bool] = attrs.Factory(dict)
    """What ``GET /agent/me`` reports as ``feature_flags`` for this agent."""
    kind: PrincipalType = "Agent"


Principal = UserRecord | AgentRecord


@attrs.define(eq=False)
class Membership:
    """One participant of a room."""

    participant_id: str
    type: PrincipalType
    role: str
    joined_at: str
    status: str = "active"


@attrs.define(eq=False)
class AttemptRecord:
    """One processing attempt of a delivery (``processing`` while open)."""

    number: int
    status: str  # processing | success | failed
    started_at: str
    error: str | None = None
    finished_at: str | None = None
    interrupted: bool = False
    """A person interrupted the agent while this attempt was open."""


@attrs.define(eq=False)
class Delivery:
    """The per-(message, agent) delivery record behind ``metadata.delivery_status``."""

    agent_id: str
    position: int  # index in the room inbox of this agent
    status: str = "delivered"  # delivered | processing | processed | failed
    delivered_at: str = attrs.Factory(now_ts)
    processed_at: str | None = None
    attempts: list[AttemptRecord] = attrs.Factory(list)

    @property
    def active_attempt(self) -> AttemptRecord | None:
        """The open attempt, if the delivery is mid-attempt."""
        if self.attempts and self.attempts[-1].status == "processing":
            return self.attempts[-1]
        return None

    @property
    def attempt_number(self) -> int:
        """Number of the latest attempt (0 before the first claim)."""
        return self.attempts[-1].number if self.attempts else 0


@attrs.define(eq=False)
class Message:
    """A room message: text (with mentions and deliveries) or an event."""

    id: str
    seq: int
    room_id: str
    content: str
    message_type: str
    sender_id: str
    sender_type: PrincipalType
    sender_name: str
    mentions: list[JSON]
    metadata: JSON
    attachment_ids: list[str]
    inserted_at: str
    updated_at: str
    deliveries: dict[str, Delivery] = attrs.Factory(dict)


@attrs.define(eq=False)
class StoredFile:
    """An uploaded room file."""

    id: str
    room_id: str
    name: str
    content_type: str
    data: bytes = attrs.field(repr=False)
    sha256: str
    uploaded_by: str
    inserted_at: str

    def attachment_json(self) -> JSON:
        """The file as a message lists it (the ``Attachment`` shape)."""
        return {
            "id": self.id,
            "name": self.name,
            "content_type": self.content_type,
            "bytes": len(self.data),
            "sha256": self.sha256,
            "has_thumb": False,
            "expires_at": None,
        }


@attrs.define(eq=False)
class TaskAssignmentRecord:
    """One participant's progress on a task."""

    assignee_id: str
    status: str
    active_form: str
    linked_native_id: str
    updated_at: str


@attrs.define(eq=False)
class TaskRecord:
    """A task on a room's shared board."""

    id: str
    number: int
    room_id: str
    subject: str
    detail: str
    state: str
    created_by: str
    inserted_at: str
    updated_at: str
    assignments: dict[str, TaskAssignmentRecord] = attrs.Factory(dict)
    started_at: str | None = None
    completed_at: str | None = None
    superseded_by_id: str | None = None
    history: list[JSON] = attrs.Factory(list)

    def overall_status(self) -> str:
        """The server roll-up of every assignee's status."""
        statuses = [a.status for a in self.assignments.values()]
        if not statuses:
            return "pending"
        for status in ("blocked", "failed"):
            if status in statuses:
                return status
        if all(s == "completed" for s in statuses):
            return "completed"
        if "in_progress" in statuses:
            return "in_progress"
        if "in_review" in statuses:
            return "in_review"
        if "completed" in statuses:
            return "in_progress"
        return "pending"


@attrs.define(eq=False)
class BoardRecord:
    """A room's goal."""

    goal_title: str | None = None
    goal_summary: str | None = None
    created_by: str | None = None
    updated_by: str | None = None
    inserted_at: str | None = None
    updated_at: str | None = None
    history: list[JSON] = attrs.Factory(list)


@attrs.define(eq=False)
class RoomRecord:
    """A chat room with its roster, messages and per-agent indexes."""

    id: str
    title: str | None
    task_id: str | None
    type: str
    owner_id: str
    inserted_at: str
    updated_at: str
    status: str = "active"
    title_locked: bool = False
    members: dict[str, Membership] = attrs.Factory(dict)
    messages: list[Message] = attrs.Factory(list)
    by_id: dict[str, Message] = attrs.Factory(dict)
    # agent id -> messages delivered to it, oldest first (its work list)
    inbox: dict[str, list[Message]] = attrs.Factory(dict)
    # agent id -> every index below this one in its inbox is processed
    inbox_floor: dict[str, int] = attrs.Factory(dict)
    # agent id -> messages it sent plus text messages mentioning it (its context)
    context: dict[str, list[Message]] = attrs.Factory(dict)
    stopped: set[str] = attrs.Factory(set)  # agent ids whose execution is stopped here
    activity: dict[str, JSON] = attrs.Factory(dict)
    files: dict[str, StoredFile] = attrs.Factory(dict)
    tasks: list[TaskRecord] = attrs.Factory(list)
    next_task_number: int = 1
    board: BoardRecord = attrs.Factory(BoardRecord)

    def find_task(self, ref: str | int) -> TaskRecord | None:
        """A task of this room by UUID or board number (``3`` or ``"3"``)."""
        if isinstance(ref, int) or (ref.isascii() and ref.isdigit() and len(ref) <= 18):
            number = int(ref)
            for task in self.tasks:
                if task.number == number:
                    return task
            return None
        for task in self.tasks:
            if task.id == ref:
                return task
        return None


@attrs.define(eq=False)
class ContactRequestRecord:
    """A contact request between two principals."""

    id: str
    requester_id: str
    recipient_id: str
    status: str
    message: str | None
    inserted_at: str
    responded_at: str | None = None


@attrs.define(eq=False)
class ContactRecord:
    """An established (symmetric) contact between two principals."""

    id: str
    a_id: str
    b_id: str
    inserted_at: str

    def other(self, principal_id: str) -> str:
        """The id of the side that is not ``principal_id``."""
        return self.b_id if principal_id == self.a_id else self.a_id


@attrs.define(eq=False)
class Memory:
    """An agent memory."""

    id: str
    content: str
    scope: str
    system: str
    type: str
    segment: str
    thought: str | None
    subject_id: str | None
    organization_id: str | None
    source_agent_id: str | None
    metadata: JSON | None
    inserted_at: str
    updated_at: str
    seq: int
    status: str = "active"


@attrs.frozen
class Push:
    """A WebSocket push the state wants delivered: ``event`` on ``topic`` to the
    live sockets of ``principals`` that joined that topic."""

    topic: str
    event: str
    payload: JSON
    principals: frozenset[str]
