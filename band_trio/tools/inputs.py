"""Typed inputs of the 28 agent tools: the one source of every description.

Each class is the argument object of one tool. Field descriptions (and the class
docstring's first paragraph, via :mod:`band_trio.tools.definitions`) are exactly
what a model reads; cross-field rules live in ``__attrs_post_init__`` so a call
built in Python and a call coming from a model are checked the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from band_trio.tools._schema import arg

__all__ = [
    "AddContactInput",
    "AddParticipantInput",
    "ArchiveMemoryInput",
    "CreateChatroomInput",
    "CreateTaskInput",
    "GetBoardInput",
    "GetMemoryInput",
    "GetParticipantsInput",
    "GetTaskHistoryInput",
    "GetTaskInput",
    "ListContactRequestsInput",
    "ListContactsInput",
    "ListMemoriesInput",
    "ListRoomFilesInput",
    "ListTasksInput",
    "LookupPeersInput",
    "MemorySegment",
    "MemorySystem",
    "MemoryType",
    "NoReplyInput",
    "ReadRoomFileInput",
    "RemoveContactInput",
    "RemoveParticipantInput",
    "RespondContactRequestInput",
    "SendEventInput",
    "SendMessageInput",
    "SendRoomFileInput",
    "SetBoardInput",
    "StoreMemoryInput",
    "SupersedeMemoryInput",
    "UpdateTaskInput",
    "memory_metadata",
    "types_for_system",
]

MemorySystem = Literal["sensory", "working", "long_term"]
MemoryType = Literal["iconic", "echoic", "haptic", "episodic", "semantic", "procedural"]
MemorySegment = Literal["user", "agent", "tool", "guideline"]

_TYPES_BY_SYSTEM: dict[str, tuple[str, ...]] = {
    "sensory": ("iconic", "echoic", "haptic"),
    "working": ("episodic", "semantic", "procedural"),
    "long_term": ("episodic", "semantic", "procedural"),
}


def types_for_system(system: str) -> tuple[str, ...]:
    """The memory types allowed for a memory ``system``."""
    return _TYPES_BY_SYSTEM.get(system, ())


_METADATA_KEYS = ("tags", "references")


def memory_metadata(
    metadata: Mapping[str, Any] | None,
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """The ``tags`` and ``references`` of a memory's ``metadata`` argument.

    Raises:
        ValueError: an unknown key, or a value that is not a list of strings.
    """
    if metadata is None:
        return None, None
    unknown = sorted(str(k) for k in metadata if k not in _METADATA_KEYS)
    if unknown:
        raise ValueError(
            f"metadata: unknown key(s) {', '.join(unknown)}; only 'tags' and 'references' "
            "are accepted"
        )
    out: list[tuple[str, ...] | None] = []
    for key in _METADATA_KEYS:
        value = metadata.get(key)
        if value is None:
            out.append(None)
            continue
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise ValueError(f"metadata.{key}: must be a list of strings")
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"metadata.{key}: must be a list of strings")
        out.append(tuple(value))
    return out[0], out[1]


_MENTIONS = (
    "Who the message is addressed to: at least one participant of this room, by "
    "handle ('@alice', '@alice/helper-bot'), display name or id. Only mentioned "
    "participants are notified."
)

# ------------------------------------------------------------------------- chat


@attrs.frozen(kw_only=True)
class SendMessageInput:
    """Send a message to the room, addressed to at least one participant.

    This is the only way anything you write reaches the room: plain text in your
    answer is never delivered. Mention everyone who should act on or see the
    message. When the latest message needs no answer, call band_no_reply instead.
    """

    content: str = arg("The message text, in Markdown. Must not be blank.", visible=True)
    mentions: tuple[str, ...] = arg(_MENTIONS)


@attrs.frozen(kw_only=True)
class SendEventInput:
    """Post an event to the room: a thought, an error report or a progress note.

    Events are shown in the room but notify nobody and need no mentions. Use
    'thought' before a significant action, 'error' to report a problem and 'task'
    for progress. An event alone does not answer the message: still reply with
    band_send_message or call band_no_reply.
    """

    content: str = arg(
        "The event text. Must not be blank; over 16384 characters it is shortened "
        "around the middle.",
        visible=True,
    )
    message_type: Literal["thought", "error", "task"] = arg(
        "The kind of event: 'thought' (your reasoning), 'error' (a problem) or 'task' "
        "(progress on the work)."
    )
    metadata: Mapping[str, Any] | None = arg(
        "Optional structured data attached to the event.", default=None
    )


@attrs.frozen(kw_only=True)
class NoReplyInput:
    """End this turn without posting anything to the room.

    Call this instead of band_send_message when the latest message needs no
    answer from you: it was addressed to someone else, it is an acknowledgement
    or FYI, or it has already been answered. This completes the turn; it is not
    an error. Do not also send a message.
    """

    reason: str | None = arg(
        "Why no reply is needed. Kept in the agent's local logs only; nobody in the room sees it.",
        default=None,
    )


@attrs.frozen(kw_only=True)
class AddParticipantInput:
    """Add an agent or a user to this room.

    Find candidates first with band_lookup_peers. Once added, the participant can
    be mentioned right away in band_send_message.
    """

    identifier: str = arg(
        "Who to add: a handle ('@alice', '@alice/helper-bot'), a display name or an "
        "id, as returned by band_lookup_peers.",
        aliases=("name",),
    )
    role: Literal["owner", "admin", "member"] = arg(
        "The role the participant gets in this room.", default="member"
    )


@attrs.frozen(kw_only=True)
class RemoveParticipantInput:
    """Remove a participant from this room."""

    identifier: str = arg(
        "Who to remove: a handle, display name or id of a current participant.",
        aliases=("name",),
    )


@attrs.frozen(kw_only=True)
class LookupPeersInput:
    """List agents and users that could be added to this room.

    Current members are left out. Use it to find someone to delegate to, or to
    answer who could be brought in. Results are paged; the metadata tells how
    many pages there are.
    """

    page: int = arg("Which page of results to return, starting at 1.", default=1, minimum=1)
    page_size: int = arg("How many peers per page.", default=50, minimum=1, maximum=100)


@attrs.frozen(kw_only=True)
class GetParticipantsInput:
    """List the current participants of this room with their handles, roles and
    whether they are online."""


@attrs.frozen(kw_only=True)
class CreateChatroomInput:
    """Create a new chat room owned by you and return its id.

    You are not moved there: your tools stay bound to the current room.
    """

    task_id: str | None = arg("Optional id of a task the new room is about.", default=None)


# ----------------------------------------------------------------------- contacts


@attrs.frozen(kw_only=True)
class ListContactsInput:
    """List your contacts: the agents and users you are connected with."""

    page: int = arg("Which page of results to return, starting at 1.", default=1, minimum=1)
    page_size: int = arg("How many contacts per page.", default=50, minimum=1, maximum=100)


@attrs.frozen(kw_only=True)
class AddContactInput:
    """Send a contact request to an agent or a user.

    The result status is 'pending' until they accept, or 'approved' straight away
    when they had already asked to connect with you.
    """

    handle: str = arg(
        "The handle to connect with, for example '@john' or '@john/research-bot'.",
        visible=True,
    )
    message: str | None = arg("An optional note shown with the request.", default=None)


@attrs.frozen(kw_only=True)
class RemoveContactInput:
    """Remove a contact, by handle or by contact id (give one of them)."""

    handle: str | None = arg("The contact's handle, for example '@john'.", default=None)
    contact_id: str | None = arg(
        "The contact record id, as returned by band_list_contacts.", default=None
    )

    def __attrs_post_init__(self) -> None:
        if not self.handle and not self.contact_id:
            raise ValueError("Either handle or contact_id must be provided")


@attrs.frozen(kw_only=True)
class ListContactRequestsInput:
    """List contact requests: the ones you received (always pending) and the ones
    you sent (filtered by status)."""

    page: int = arg("Which page of results to return, starting at 1.", default=1, minimum=1)
    page_size: int = arg(
        "How many requests per page, in each direction.",
        default=50,
        minimum=1,
        maximum=100,
    )
    sent_status: Literal["pending", "approved", "rejected", "cancelled", "all"] = arg(
        "Which of the requests you sent to include, by status.", default="pending"
    )


@attrs.frozen(kw_only=True)
class RespondContactRequestInput:
    """Answer a contact request: approve or reject one you received, or cancel one
    you sent. Identify it by the other side's handle or by the request id."""

    action: Literal["approve", "reject", "cancel"] = arg(
        "'approve' or 'reject' a received request; 'cancel' a request you sent."
    )
    handle: str | None = arg(
        "The other side's handle: the requester for approve/reject, the recipient for cancel.",
        default=None,
    )
    request_id: str | None = arg(
        "The request id, as returned by band_list_contact_requests.", default=None
    )

    def __attrs_post_init__(self) -> None:
        if not self.handle and not self.request_id:
            raise ValueError("Either handle or request_id must be provided")


# ------------------------------------------------------------------------ memory


@attrs.frozen(kw_only=True)
class ListMemoriesInput:
    """List memories: your own private ones, ones about a subject (a user or an
    agent), or ones shared across your organization. All filters are optional."""

    subject_id: str | None = arg(
        "Only memories about this subject (a participant id).", default=None
    )
    scope: Literal["agent", "subject", "organization", "all"] | None = arg(
        "Only memories of this scope: 'agent' (private to you), 'subject' (about "
        "someone), 'organization' (shared) or 'all'.",
        default=None,
    )
    system: Literal["sensory", "working", "long_term"] | None = arg(
        "Only memories of this system: 'sensory', 'working' or 'long_term'.",
        default=None,
    )
    type: Literal["iconic", "echoic", "haptic", "episodic", "semantic", "procedural"] | None = arg(
        "Only memories of this type.", default=None
    )
    segment: Literal["user", "agent", "tool", "guideline"] | None = arg(
        "Only memories of this segment: 'user', 'agent', 'tool' or 'guideline'.",
        default=None,
    )
    content_query: str | None = arg("Full-text search over memory content.", default=None)
    page_size: int = arg("How many memories to return.", default=50, minimum=1, maximum=50)
    status: Literal["active", "superseded", "archived", "all"] | None = arg(
        "Only memories with this status (default: active ones).", default=None
    )


@attrs.frozen(kw_only=True)
class StoreMemoryInput:
    """Store a new memory.

    Pick the system and a type that belongs to it: sensory → iconic, echoic or
    haptic; working and long_term → episodic, semantic or procedural. Use scope
    'agent' for private notes (the safe default), 'subject' with the real id of
    the person or agent it is about, 'organization' only for knowledge the whole
    organization should share.
    """

    content: str = arg("What to remember, as a self-contained statement.", visible=True)
    system: Literal["sensory", "working", "long_term"] = arg(
        "Memory system: 'sensory' (raw impressions), 'working' (current task) or "
        "'long_term' (durable knowledge)."
    )
    type: Literal["iconic", "echoic", "haptic", "episodic", "semantic", "procedural"] = arg(
        "Memory type; must belong to the system (sensory: iconic, echoic, haptic; "
        "working and long_term: episodic, semantic, procedural)."
    )
    segment: Literal["user", "agent", "tool", "guideline"] = arg(
        "Whose information it is: 'user', 'agent', 'tool' or 'guideline'."
    )
    thought: str = arg("Why this is worth remembering.", visible=True)
    scope: Literal["agent", "subject", "organization"] = arg(
        "Who the memory is for: 'agent' (you only), 'subject' (about subject_id) or "
        "'organization' (shared)."
    )
    subject_id: str | None = arg(
        "Id of the participant the memory is about; required when scope is "
        "'subject'. Use a real id from band_get_participants or band_lookup_peers.",
        default=None,
    )
    metadata: Mapping[str, Any] | None = arg(
        "Optional extra data, an object with up to two keys: 'tags' (a list of labels "
        "that help find the memory later) and 'references' (a list of message ids, "
        "URLs, ... backing it).",
        default=None,
    )

    def __attrs_post_init__(self) -> None:
        memory_metadata(self.metadata)
        allowed = types_for_system(self.system)
        if self.type not in allowed:
            raise ValueError(
                f"type '{self.type}' is not valid for system '{self.system}'; "
                f"expected one of: {', '.join(allowed)}"
            )
        if self.scope == "subject" and not self.subject_id:
            raise ValueError(
                "scope 'subject' needs subject_id, the real id of the participant the "
                "memory is about. If you do not know it, retry with scope 'agent'; "
                "never invent an id."
            )


@attrs.frozen(kw_only=True)
class GetMemoryInput:
    """Read one memory by id."""

    memory_id: str = arg("The memory id.", resource_id=True)


@attrs.frozen(kw_only=True)
class SupersedeMemoryInput:
    """Mark a memory as superseded because it is outdated (a soft delete). Only the
    agent that stored it may do this."""

    memory_id: str = arg("The id of the memory to supersede.", resource_id=True)


@attrs.frozen(kw_only=True)
class ArchiveMemoryInput:
    """Archive a memory: hide it while keeping it; a human can restore it. Only the
    agent that stored it may do this."""

    memory_id: str = arg("The id of the memory to archive.", resource_id=True)


# ------------------------------------------------------------------------- files


@attrs.frozen(kw_only=True)
class ListRoomFilesInput:
    """List files attached to messages you sent or were mentioned in, in this room
    (including ones from before you joined). Use an id from the result with
    band_read_room_file."""

    cursor: str | None = arg(
        "Where to continue: the next_cursor of the previous call.", default=None
    )


@attrs.frozen(kw_only=True)
class ReadRoomFileInput:
    """Read a file attached in this room: small text files come back as text,
    small images as image content, anything else as a description."""

    file_id: str = arg(
        "The file id, from the latest band_list_room_files result.", resource_id=True
    )


@attrs.frozen(kw_only=True)
class SendRoomFileInput:
    """Upload text you composed as a file and share it in the room with a message.

    Like band_send_message, the message must mention at least one participant.
    """

    content: str = arg("The full text content of the file (at most 1000000 bytes).")
    filename: str = arg(
        "The file name, plain printable ASCII, for example 'report.md'.", visible=True
    )
    caption: str = arg(
        "The message text posted with the file; blank means 'Shared a file: <filename>'.",
        default="",
    )
    mentions: tuple[str, ...] = arg(_MENTIONS)


# ------------------------------------------------------------------------- tasks

_TASK_REF = "The task: its id or its board number ('12' or '#12')."


@attrs.frozen(kw_only=True)
class ListTasksInput:
    """List the shared tasks on this room's board, ordered by number. Shows active
    tasks unless a state is given."""

    state: Literal["active", "cancelled", "superseded", "archived", "all"] | None = arg(
        "Only tasks in this state (default: active).", default=None
    )
    cursor: str | None = arg(
        "Where to continue: the next_cursor of the previous call.", default=None
    )
    limit: int | None = arg("How many tasks to return.", default=None, minimum=1, maximum=100)


@attrs.frozen(kw_only=True)
class CreateTaskInput:
    """Create a shared task on this room's board. You are not assigned to it; set
    your own status on it with band_update_task."""

    subject: str = arg("A short title for the task.", visible=True)
    detail: str | None = arg("A longer description of the work.", default=None)
    supersedes_id: str | None = arg(
        "An active task this one replaces: its id or board number ('#3').",
        default=None,
    )


@attrs.frozen(kw_only=True)
class GetTaskInput:
    """Read one task of this room's board, optionally with its recent history."""

    id: str = arg(_TASK_REF, task_ref=True)
    include: Literal["history"] | None = arg(
        "Set to 'history' to include the task's recent events.", default=None
    )


@attrs.frozen(kw_only=True)
class UpdateTaskInput:
    """Update a task: set your own status or live activity line, comment, edit it,
    or change its state. Give at least one field besides id."""

    id: str = arg(_TASK_REF, task_ref=True)
    status: (
        Literal["pending", "in_progress", "blocked", "in_review", "failed", "completed"] | None
    ) = arg(
        "Your own progress on the task; your first status joins you to it.",
        default=None,
    )
    active_form: str | None = arg(
        "A live line describing what you are doing now, for example 'Drafting the summary'.",
        default=None,
    )
    comment: str | None = arg("A note to append to the task's history.", default=None)
    subject: str | None = arg("A new title for the task.", default=None)
    detail: str | None = arg("A new description for the task.", default=None)
    state: Literal["active", "cancelled", "archived"] | None = arg(
        "Change the task's lifecycle: 'cancelled', 'archived', or 'active' to un-archive.",
        default=None,
    )

    def __attrs_post_init__(self) -> None:
        fields = (
            self.status,
            self.active_form,
            self.comment,
            self.subject,
            self.detail,
            self.state,
        )
        if all(f is None for f in fields):
            raise ValueError(
                "At least one of status, active_form, comment, subject, detail, or "
                "state must be set"
            )


@attrs.frozen(kw_only=True)
class GetTaskHistoryInput:
    """Read the history of a task, oldest event first."""

    id: str = arg(_TASK_REF, task_ref=True)
    cursor: str | None = arg(
        "Where to continue: the next_cursor of the previous call.", default=None
    )
    limit: int | None = arg("How many events to return.", default=None, minimum=1, maximum=100)


@attrs.frozen(kw_only=True)
class GetBoardInput:
    """Read this room's board goal (its title and summary)."""

    include: Literal["history"] | None = arg(
        "Set to 'history' to include the goal's edit history.", default=None
    )


@attrs.frozen(kw_only=True)
class SetBoardInput:
    """Set this room's board goal. Give a title, a summary or both."""

    goal_title: str | None = arg("The goal's short title.", default=None)
    goal_summary: str | None = arg("A summary of the goal.", default=None)

    def __attrs_post_init__(self) -> None:
        if self.goal_title is None and self.goal_summary is None:
            raise ValueError("At least one of goal_title or goal_summary must be set")
