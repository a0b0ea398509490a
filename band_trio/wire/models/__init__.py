"""REST models of the Band agent API, one module per subject.

Every model is an ``attrs`` frozen, keyword-only class structured and
unstructured by the wire layer's one converter (see
:func:`band_trio.wire.structure` and :func:`band_trio.wire.unstructure`):

* **Response models** keep every key the platform sent that they do not declare
  in ``extra``, so forward-compatible fields are never lost. Declared optional
  fields default to ``None``; enums are open (plain strings); timestamps stay
  ISO-8601 strings exactly as the platform wrote them.
* **Request models** (``...Request``) unstructure *omitting* every field that is
  ``None`` ("not set"), recursively, as the platform expects of request
  bodies; it rejects some explicit nulls (mention ``kind``,
  ``attachment_ids``). Anything in a request's ``extra`` is sent as is, flat.

Lists arrive as tuples so models stay hashable-ish and immutable.

Modules: ``_identity_models``, ``_room_models``, ``_message_models``,
``_task_models``, ``_contact_models``, ``_memory_models``, ``_human_api_models``
(the human ``/api/v1/me`` shapes), ``_pages`` and ``_model_base`` (what they
share).
"""

from __future__ import annotations

from band_trio._generated_source import forget_generated_source
from band_trio.wire.models._contact_models import (
    AgentContact,
    ContactAddRequest,
    ContactAddResult,
    ContactRemoveRequest,
    ContactRemoveResult,
    ContactRequests,
    ContactRespondRequest,
    ContactResponseResult,
    Peer,
    ReceivedContactRequest,
    SentContactRequest,
)
from band_trio.wire.models._human_api_models import (
    Contact,
    ContactRequest,
    MyAgent,
    RegisteredAgent,
    ResolvedEntity,
    UserDetails,
    UserMemory,
)
from band_trio.wire.models._identity_models import (
    AgentMe,
    DelegationObo,
    DelegationToken,
    DelegationTokenRequest,
)
from band_trio.wire.models._memory_models import (
    AgentMemory,
    AgentMemoryCreateRequest,
    MemoryMetadataRequest,
)
from band_trio.wire.models._message_models import (
    ActivityDetail,
    ActivityRequest,
    ActivityState,
    Attachment,
    ChatEventRequest,
    ChatMessage,
    ChatMessageRequest,
    EventCreated,
    MentionRequest,
    MessageSent,
    MessageStatus,
    Recipient,
)
from band_trio.wire.models._model_base import is_request_model
from band_trio.wire.models._pages import (
    CursorPage,
    Page,
    PageMeta,
)
from band_trio.wire.models._room_models import (
    AgentChatRoomListItem,
    ChatParticipant,
    ChatParticipantDetails,
    ChatRoom,
    ChatRoomRequest,
    ParticipantRequest,
)
from band_trio.wire.models._task_models import (
    Board,
    BoardEvent,
    BoardUpdateRequest,
    Task,
    TaskActor,
    TaskAssignment,
    TaskCreateRequest,
    TaskEvent,
    TaskUpdateRequest,
)

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

# Drops the cached source of every submodule's generated methods too.
forget_generated_source(__name__)
