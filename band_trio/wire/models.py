"""REST models of the Band agent API (protocol.md §4.6).

Every model is an ``attrs`` frozen, keyword-only class structured and
unstructured by the one shared converter (:mod:`band_trio.wire.converter`):

* **Response models** keep every key the platform sent that they do not declare
  in ``extra``, so forward-compatible fields are never lost. Declared optional
  fields default to ``None``; enums are open (plain strings); timestamps stay
  ISO-8601 strings exactly as the platform wrote them.
* **Request models** (``...Request``) unstructure *omitting* every field that is
  ``None`` ("not set"), recursively, as protocol.md §4.1 asks; the platform
  rejects some explicit nulls (mention ``kind``, ``attachment_ids``). Anything
  in a request's ``extra`` is sent as is, flat.

Lists arrive as tuples so models stay hashable-ish and immutable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from band_trio._generated_source import forget_generated_source
from band_trio.wire._converter import converter

__all__ = [
    "ActivityDetail",
    "ActivityRequest",
    "ActivityState",
    "AgentChatRoomListItem",
    "AgentContact",
    "AgentMe",
    "AgentMemory",
    "AgentMemoryCreateRequest",
    "Attachment",
    "Board",
    "BoardEvent",
    "BoardUpdateRequest",
    "ChatEventRequest",
    "ChatMessage",
    "ChatMessageRequest",
    "ChatParticipant",
    "ChatParticipantDetails",
    "ChatRoom",
    "ChatRoomRequest",
    "Contact",
    "ContactAddRequest",
    "ContactAddResult",
    "ContactRemoveRequest",
    "ContactRemoveResult",
    "ContactRequest",
    "ContactRequests",
    "ContactRespondRequest",
    "ContactResponseResult",
    "CursorPage",
    "DelegationObo",
    "DelegationToken",
    "DelegationTokenRequest",
    "EventCreated",
    "MemoryMetadataRequest",
    "MentionRequest",
    "MessageSent",
    "MessageStatus",
    "MyAgent",
    "Page",
    "PageMeta",
    "ParticipantRequest",
    "Peer",
    "ReceivedContactRequest",
    "Recipient",
    "RegisteredAgent",
    "ResolvedEntity",
    "SentContactRequest",
    "Task",
    "TaskActor",
    "TaskAssignment",
    "TaskCreateRequest",
    "TaskEvent",
    "TaskUpdateRequest",
    "UserDetails",
    "UserMemory",
    "is_request_model",
]

T = TypeVar("T")
_C = TypeVar("_C", bound=type)


def _extra() -> Any:
    """The ``extra`` field every model has: unknown keys, never compared loosely."""
    return attrs.field(factory=dict, repr=False)


# --------------------------------------------------------------------------- #
# Request models: None means "not set" and is omitted from the JSON body.
# --------------------------------------------------------------------------- #

_REQUEST_TYPES: set[type] = set()


def _request(cls: _C) -> _C:
    _REQUEST_TYPES.add(cls)
    return cls


def is_request_model(cls: Any) -> bool:
    """True for the request classes whose ``None`` fields are omitted on the wire."""
    return cls in _REQUEST_TYPES


def _request_unstructure_factory(cls: type, conv: cattrs.Converter) -> Callable[[Any], Any]:
    # Nested values (mentions, metadata) go back through the converter, so a
    # request inside a request also drops its unset fields.
    base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, conv, _cattrs_use_linecache=False, extra=override(omit=True)
    )

    def unstructure(obj: Any) -> dict[str, Any]:
        out = {k: v for k, v in base(obj).items() if v is not None}
        for key, value in obj.extra.items():
            out.setdefault(key, value)
        return out

    return unstructure


@_request
@attrs.frozen(kw_only=True)
class MentionRequest:
    """One mention of a message to send: ``id`` wins over ``handle`` when both are set.

    ``kind`` is ``"mention"`` (delivers; the platform default) or
    ``"reference"`` (names without delivering); leave it ``None`` to omit it —
    the platform rejects an explicit null.
    """

    id: str | None = None
    handle: str | None = None
    name: str | None = None
    kind: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ChatMessageRequest:
    """Body of ``POST /chats/{id}/messages`` (inside ``{"message": ...}``)."""

    content: str
    mentions: tuple[MentionRequest, ...]
    attachment_ids: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ChatEventRequest:
    """Body of ``POST /chats/{id}/events`` (inside ``{"event": ...}``).

    ``message_type`` is one of ``tool_call``, ``tool_result``, ``thought``,
    ``error``, ``task``, ``attention``.
    """

    content: str
    message_type: str
    metadata: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ChatRoomRequest:
    """Body of ``POST /chats`` and ``PATCH /chats/{id}`` (inside ``{"chat": ...}``)."""

    title: str | None = None
    task_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ParticipantRequest:
    """Body of ``POST /chats/{id}/participants`` (inside ``{"participant": ...}``)."""

    participant_id: str
    role: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ActivityDetail:
    """What the agent is doing: ``kind`` ∈ reasoning, tool_call, memory, permission.

    ``name`` is required by the platform when ``kind`` is ``tool_call``.
    """

    kind: str
    name: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ActivityRequest:
    """Body of ``POST /chats/{id}/activity``."""

    working: bool
    activity: ActivityDetail | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class TaskCreateRequest:
    """Body of ``POST /chats/{id}/tasks``; ``supersedes_id`` is a UUID or a board number."""

    subject: str
    detail: str | None = None
    supersedes_id: str | int | None = None
    extra: Mapping[str, Any] = _extra()


@_request
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
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class BoardUpdateRequest:
    """Body of ``PUT /chats/{id}/board``."""

    goal_title: str | None = None
    goal_summary: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ContactAddRequest:
    """Body of ``POST /contacts/add``."""

    handle: str
    message: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ContactRemoveRequest:
    """Body of ``POST /contacts/remove``: set ``contact_id`` or ``handle``."""

    contact_id: str | None = None
    handle: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class ContactRespondRequest:
    """Body of ``POST /contacts/requests/respond``: ``action`` ∈ approve, reject, cancel."""

    action: str
    handle: str | None = None
    request_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class MemoryMetadataRequest:
    """``metadata`` of a memory to create."""

    tags: tuple[str, ...] | None = None
    references: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class AgentMemoryCreateRequest:
    """Body of ``POST /memories`` (inside ``{"memory": ...}``), protocol.md §4.4 #34.

    ``system`` ∈ sensory, working, long_term; ``type`` must fit it (sensory:
    iconic, echoic, haptic; otherwise episodic, semantic, procedural);
    ``segment`` ∈ user, agent, tool, guideline; ``scope`` ∈ agent, subject,
    organization (default: subject when ``subject_id`` is set, else agent).
    """

    content: str
    system: str
    type: str
    segment: str
    thought: str
    scope: str | None = None
    subject_id: str | None = None
    metadata: MemoryMetadataRequest | None = None
    extra: Mapping[str, Any] = _extra()


@_request
@attrs.frozen(kw_only=True)
class DelegationTokenRequest:
    """Body of ``POST /delegation/token``."""

    audience: str
    message_id: str
    extra: Mapping[str, Any] = _extra()


converter.register_unstructure_hook_factory(is_request_model, _request_unstructure_factory)


# --------------------------------------------------------------------------- #
# Response models.
# --------------------------------------------------------------------------- #


@attrs.frozen(kw_only=True)
class AgentMe:
    """The calling agent's profile (``GET /agent/me``).

    ``feature_flags`` keys: ``ff_file_transfer``, ``ff_room_tasks`` (``False`` =
    not served; absent = the platform predates the feature).
    """

    id: str
    name: str
    handle: str
    owner_uuid: str
    inserted_at: str
    updated_at: str
    feature_flags: Mapping[str, bool]
    description: str | None = None
    avatar_url: str | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ChatParticipant:
    """A room participant (``GET /chats/{id}/participants`` and friends).

    ``role`` ∈ owner, admin, member; ``status`` (membership) ∈ active,
    inactive, blocked; ``type`` ∈ User, Agent. ``handle`` is a user's username
    or an agent's ``owner/slug``.
    """

    id: str
    role: str
    status: str
    type: str
    name: str | None = None
    handle: str | None = None
    online: bool | None = None
    avatar_url: str | None = None
    description: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ChatParticipantDetails:
    """A participant as the human roster lists it (``GET /me/chats/{id}/participants``)."""

    id: str
    name: str
    role: str | None = None
    status: str | None = None
    type: str | None = None
    handle: str | None = None
    online: bool | None = None
    avatar_url: str | None = None
    description: str | None = None
    is_external: bool | None = None
    connection_status: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ChatRoom:
    """A chat room.

    The three roster fields are set only by ``GET /agent/chats?include=participants``
    (and only where the agent may read the roster); they are ``None`` otherwise.
    """

    id: str
    inserted_at: str
    updated_at: str
    title: str | None = None
    task_id: str | None = None
    participants: tuple[ChatParticipant, ...] | None = None
    participant_count: int | None = None
    participants_truncated: bool | None = None
    extra: Mapping[str, Any] = _extra()


AgentChatRoomListItem = ChatRoom
"""A row of ``GET /agent/chats``: the same shape as :class:`ChatRoom`."""


@attrs.frozen(kw_only=True)
class Peer:
    """Someone the agent can recruit (``GET /agent/peers``)."""

    id: str
    name: str
    handle: str
    type: str
    is_contact: bool
    online: bool
    source: str
    description: str | None = None
    is_external: bool | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Attachment:
    """A room file (``PUT /chats/{id}/files``; also on messages)."""

    id: str
    name: str
    content_type: str
    bytes: int
    sha256: str
    has_thumb: bool
    expires_at: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ChatMessage:
    """A message as REST returns it (``/messages``, ``/messages/next``, ``/context``).

    ``metadata`` is the platform's free-form object (``mentions``,
    ``delivery_status``, ``status``, ``delegation``, ...), kept as sent.
    """

    id: str
    content: str
    message_type: str
    sender_id: str
    sender_type: str
    sender_name: str | None = None
    chat_room_id: str | None = None
    inserted_at: str | None = None
    updated_at: str | None = None
    metadata: Mapping[str, Any] | None = None
    attachments: tuple[Attachment, ...] = ()
    extra: Mapping[str, Any] = _extra()

    @property
    def mentions(self) -> tuple[Mapping[str, Any], ...]:
        """``metadata.mentions`` as a tuple of mappings (empty when absent or malformed)."""
        raw = (self.metadata or {}).get("mentions")
        if not isinstance(raw, list | tuple):
            return ()
        return tuple(m for m in raw if isinstance(m, Mapping))

    @property
    def delivery_status(self) -> Mapping[str, Any] | None:
        """``metadata.delivery_status`` when it is an object, else ``None``."""
        raw = (self.metadata or {}).get("delivery_status")
        return raw if isinstance(raw, Mapping) else None


@attrs.frozen(kw_only=True)
class Recipient:
    """A mention-kind recipient of a sent message. No ``handle`` = unconfirmed."""

    id: str
    handle: str | None = None
    name: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MessageSent:
    """Answer to ``POST /chats/{id}/messages``."""

    id: str
    success: bool
    recipients: tuple[Recipient, ...] = ()
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MessageStatus:
    """Answer to the lifecycle marks (``/processing``, ``/processed``, ``/failed``)."""

    id: str
    status: str
    attempt_number: int
    success: bool
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class EventCreated:
    """Answer to ``POST /chats/{id}/events``."""

    id: str
    message_type: str
    success: bool
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ActivityState:
    """Answer to ``POST /chats/{id}/activity``: the state in effect."""

    working: bool
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TaskActor:
    """Who did something on the task board."""

    id: str
    name: str
    type: str
    handle: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TaskAssignment:
    """One participant's progress on a task."""

    assignee: TaskActor
    status: str
    active_form: str
    linked_native_id: str
    updated_at: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TaskEvent:
    """One entry of a task's append-only history."""

    actor: TaskActor
    at: str
    event: str
    payload: Mapping[str, Any]
    extra: Mapping[str, Any] = _extra()


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
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class BoardEvent:
    """One entry of the board goal's audit history."""

    actor: TaskActor
    at: str
    event: str
    payload: Mapping[str, Any]
    extra: Mapping[str, Any] = _extra()


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
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class AgentContact:
    """One of the agent's contacts (``GET /agent/contacts``)."""

    id: str
    inserted_at: str
    type: str
    handle: str | None = None
    name: str | None = None
    description: str | None = None
    is_external: bool | None = None
    listed_in_directory: bool | None = None
    online: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReceivedContactRequest:
    """A contact request someone sent to the agent."""

    id: str
    inserted_at: str
    status: str
    from_handle: str | None = None
    from_name: str | None = None
    from_avatar_url: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SentContactRequest:
    """A contact request the agent sent."""

    id: str
    inserted_at: str
    status: str
    to_handle: str | None = None
    to_name: str | None = None
    to_avatar_url: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ContactRequests:
    """Answer to ``GET /agent/contacts/requests``; ``meta`` is the raw ``metadata``."""

    received: tuple[ReceivedContactRequest, ...] = ()
    sent: tuple[SentContactRequest, ...] = ()
    meta: Mapping[str, Any] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ContactAddResult:
    """Answer to ``POST /contacts/add``: ``status`` ∈ pending, approved."""

    id: str
    status: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ContactRemoveResult:
    """Answer to ``POST /contacts/remove`` (``status`` is ``"removed"``)."""

    status: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ContactResponseResult:
    """Answer to ``POST /contacts/requests/respond``."""

    id: str
    status: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class AgentMemory:
    """A memory (``/agent/memories``)."""

    id: str
    content: str
    inserted_at: str
    scope: str
    segment: str
    system: str
    type: str
    status: str | None = None
    subject_id: str | None = None
    organization_id: str | None = None
    source_agent_id: str | None = None
    thought: str | None = None
    metadata: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class DelegationObo:
    """On-behalf-of identity of a delegated token."""

    agent_uuid: str
    audience: str
    originator_uuid: str
    originator_handle: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class DelegationToken:
    """Answer to ``POST /delegation/token`` (not wrapped in ``data``).

    The ``repr`` never shows ``access_token``.
    """

    access_token: str = attrs.field(repr=False)
    token_type: str
    obo: DelegationObo
    expires_at: str | None = None
    extra: Mapping[str, Any] = _extra()


# --------------------------------------------------------------------------- #
# Human-side shapes (brief; used by the local platform's tests and the demo).
# --------------------------------------------------------------------------- #


@attrs.frozen(kw_only=True)
class UserDetails:
    """``GET /me/profile``."""

    id: str
    email: str
    handle: str
    role: str
    first_name: str | None = None
    last_name: str | None = None
    listed_in_directory: bool | None = None
    local_credential_required: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ResolvedEntity:
    """``POST /me/contacts/resolve``."""

    type: str
    handle: str | None = None
    name: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MyAgent:
    """A row of ``GET /me/agents``."""

    id: str
    name: str
    is_external: bool
    inserted_at: str
    updated_at: str
    description: str | None = None
    model_type: str | None = None
    slug: str | None = None
    system_prompt_id: str | None = None
    registry_access: str | None = None
    shared_with_organization: bool | None = None
    listed_in_directory: bool | None = None
    tags: tuple[str, ...] | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RegisteredAgent:
    """``data.agent`` of ``POST /me/agents/register`` (the key comes separately)."""

    id: str
    name: str
    owner_id: str
    inserted_at: str
    description: str | None = None
    avatar_url: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ContactRequest:
    """A contact request as the human API shows it."""

    id: str
    inserted_at: str
    requester_id: str
    recipient_id: str
    status: str
    message: str | None = None
    requester: Mapping[str, Any] | None = None
    recipient: Mapping[str, Any] | None = None
    requester_type: str | None = None
    recipient_type: str | None = None
    responded_at: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Contact:
    """A contact as the human API shows it."""

    id: str
    contact_id: str
    contact_type: str
    inserted_at: str
    online: bool
    status: str
    source: str | None = None
    user: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class UserMemory:
    """A memory as the human API shows it."""

    id: str
    content: str
    inserted_at: str
    updated_at: str
    scope: str
    segment: str
    system: str
    type: str
    status: str | None = None
    subject_id: str | None = None
    organization_id: str | None = None
    source_agent_id: str | None = None
    thought: str | None = None
    metadata: Mapping[str, Any] | None = None
    chat_room_id: str | None = None
    chat_room_title: str | None = None
    chat_room_status: str | None = None
    chat_room_type: str | None = None
    source_agent_name: str | None = None
    subject_name: str | None = None
    subject_type: str | None = None
    extra: Mapping[str, Any] = _extra()


# --------------------------------------------------------------------------- #
# Pages.
# --------------------------------------------------------------------------- #


@attrs.frozen(kw_only=True)
class PageMeta:
    """Offset pagination metadata (chats, peers, contacts). Every field is optional."""

    page: int | None = None
    page_size: int | None = None
    total_count: int | None = None
    total_pages: int | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Page(Generic[T]):
    """One page of an offset-paginated list.

    Iterating a page iterates its items.
    """

    items: tuple[T, ...]
    meta: PageMeta = attrs.field(factory=PageMeta)

    @property
    def has_next(self) -> bool:
        """True when ``meta`` says a later page exists (missing ``total_pages``: no)."""
        page, total = self.meta.page, self.meta.total_pages
        return page is not None and total is not None and page < total

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@attrs.frozen(kw_only=True)
class CursorPage(Generic[T]):
    """One page of a cursor-paginated list.

    Follow ``next_cursor`` while ``has_more``. ``limit`` is ``None`` only where
    the platform does not require it (memories). ``meta`` is the raw
    ``metadata`` object (``status_filter``, deprecated offset fields, ...).
    """

    items: tuple[T, ...]
    has_more: bool = False
    limit: int | None = None
    next_cursor: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


forget_generated_source(__name__)
