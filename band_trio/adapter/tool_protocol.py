"""What an adapter may call on the tools of a turn: :class:`AgentToolsProtocol`.

It lists every method of ``band_trio.tools.AgentTools`` an adapter may call (the
28 platform tools as Python methods, the failure report, the schemas and the
model tool-call dispatch) with their real signatures, so an adapter that calls
any of them type-checks under ``mypy --strict``. ``band_trio.testing``'s
``FakeAgentTools`` implements the same protocol.

:class:`CustomToolSet` and :class:`ToolSpec` describe what the tools need from
adapter-defined tools (``band_trio.tools.CustomTools`` implements them), so this
contract does not depend on the tools layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from band_trio.adapter.capabilities import Capability, ToolCategory, ToolEffect
from band_trio.adapter.failures import AgentFailure
from band_trio.adapter.tool_results import ToolResult
from band_trio.wire.models import ChatMessage, ChatParticipant, EventCreated, MessageSent

__all__ = ["AgentToolsProtocol", "CustomToolSet", "SchemaFormat", "ToolSpec"]

SchemaFormat = Literal["anthropic", "openai"]
"""The LLM provider formats tool schemas are rendered in."""


class ToolSpec(Protocol):
    """One offered tool, as the schemas and the dispatch see it."""

    @property
    def name(self) -> str:
        """The name the model sees."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def effect(self) -> ToolEffect:
        """What a successful call does to the turn."""
        ...

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (an ``object`` schema)."""
        ...


@runtime_checkable
class CustomToolSet(Protocol):
    """Adapter-defined tools offered after the platform tools
    (``band_trio.tools.CustomTools``)."""

    def __contains__(self, name: object) -> bool: ...

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        ...

    def definitions(self) -> Sequence[ToolSpec]:
        """Every tool, in registration order."""
        ...

    def invoke(
        self,
        definition: ToolSpec,
        args: Mapping[str, Any] | None,
        *,
        record: Callable[[ToolEffect], None] | None = None,
    ) -> Awaitable[Any]:
        """Validate ``args``, run the tool ``definition`` names, and pass its
        effect to ``record`` on success.

        Raises:
            ToolArgumentsError: the arguments fail the tool's parameters.
            Exception: whatever the tool raises.
        """
        ...


@runtime_checkable
class AgentToolsProtocol(Protocol):
    """The room-bound tools object an adapter receives in every turn.

    ``band_trio.tools.AgentTools`` implements it; ``band_trio.testing`` has a fake.
    The tool methods are awaitable (implement them with ``async def``). A
    platform refusal raises a :class:`~band_trio.errors.BandError` subclass from
    the Python methods; :meth:`execute_tool_call` never raises (but
    ``trio.Cancelled``) and returns the error as a :class:`ToolResult` instead.
    """

    @property
    def room_id(self) -> str:
        """The room this tools object is bound to."""
        ...

    @property
    def agent_id(self) -> str:
        """This agent's id."""
        ...

    def available_mention_handles(self) -> list[str]:
        """Handles of the participants a message can mention (never this agent)."""
        ...

    def send_message(
        self, content: str, mentions: Sequence[str], *, attachment_ids: Sequence[str] | None = None
    ) -> Awaitable[MessageSent | None]:
        """Post a chat message to the room, mentioning at least one participant.

        Args:
            content: the message text (``@handle`` words in it are plain text;
                who is mentioned is ``mentions``).
            mentions: who the message is for, at least one: each a participant's
                handle (``alice``, ``@alice``, ``you/helper``), display name or
                id, from the room's roster (one roster refresh is made for a
                name not in it). Use ``[msg.sender_id]`` to answer the sender.
            attachment_ids: files uploaded before, to attach.

        Returns:
            The platform's receipt, or None when ``content`` is blank or only
            whitespace (nothing is posted and the turn has not replied).

        Raises:
            BandToolError: no mention, or a participant the roster does not know.
        """
        ...

    def send_notice(self, content: str, mentions: Sequence[str]) -> Awaitable[MessageSent | None]:
        """Post a message like :meth:`send_message` that does not count as the reply."""
        ...

    def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> Awaitable[EventCreated | None]:
        """Post an event (``thought``, ``error``, ``task``, ``tool_call``, ...)."""
        ...

    def send_failure(self, failure: AgentFailure) -> Awaitable[EventCreated | None]:
        """Report ``failure`` in the room as an ``error`` event, best-effort."""
        ...

    def no_reply(self, reason: str | None = None) -> Awaitable[dict[str, str]]:
        """End the turn without posting: the latest message needs no answer."""
        ...

    def get_participants_list(self) -> Awaitable[list[ChatParticipant]]:
        """Fetch the roster from the platform and replace the snapshot with it."""
        ...

    def unprocessed_messages(self, limit: int = 100) -> Awaitable[list[ChatMessage]]:
        """The room's messages delivered to this agent and not yet processed,
        oldest first (at most ``limit``): what waits behind the turn. Not a
        tool: an adapter reads it to see a reply that arrives while its turn
        is still running."""
        ...

    def get_participants(self) -> Awaitable[list[dict[str, Any]]]:
        """List the room's participants (and refresh the roster snapshot)."""
        ...

    def lookup_peers(self, page: int = 1, page_size: int = 50) -> Awaitable[dict[str, Any]]:
        """List agents and users that could be added to this room."""
        ...

    def add_participant(self, identifier: str, role: str = "member") -> Awaitable[dict[str, Any]]:
        """Add an agent or user to the room by handle, name or id."""
        ...

    def remove_participant(self, identifier: str) -> Awaitable[dict[str, Any]]:
        """Remove a participant from the room by handle, name or id."""
        ...

    def create_chatroom(self, task_id: str | None = None) -> Awaitable[str]:
        """Create a room owned by this agent and return its id."""
        ...

    def list_contacts(self, page: int = 1, page_size: int = 50) -> Awaitable[dict[str, Any]]:
        """List this agent's contacts."""
        ...

    def add_contact(self, handle: str, message: str | None = None) -> Awaitable[dict[str, Any]]:
        """Send a contact request; the status is ``pending`` or ``approved``."""
        ...

    def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> Awaitable[dict[str, Any]]:
        """Remove a contact by handle or contact id."""
        ...

    def list_contact_requests(
        self, page: int = 1, page_size: int = 50, sent_status: str = "pending"
    ) -> Awaitable[dict[str, Any]]:
        """List received (pending) and sent contact requests."""
        ...

    def respond_contact_request(
        self, action: str, handle: str | None = None, request_id: str | None = None
    ) -> Awaitable[dict[str, Any]]:
        """Approve, reject or cancel a contact request."""
        ...

    def list_memories(
        self,
        subject_id: str | None = None,
        scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        page_size: int = 50,
        status: str | None = None,
    ) -> Awaitable[dict[str, Any]]:
        """List memories; only the filters given are sent."""
        ...

    def store_memory(
        self,
        content: str,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str,
        subject_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Awaitable[dict[str, Any]]:
        """Store a memory."""
        ...

    def get_memory(self, memory_id: str) -> Awaitable[dict[str, Any]]:
        """Read one memory."""
        ...

    def supersede_memory(self, memory_id: str) -> Awaitable[dict[str, Any]]:
        """Mark a memory superseded (soft delete)."""
        ...

    def archive_memory(self, memory_id: str) -> Awaitable[dict[str, Any]]:
        """Archive a memory (hidden, restorable by a human)."""
        ...

    def list_room_files(self, cursor: str | None = None) -> Awaitable[dict[str, Any]]:
        """List attachments of one page of the agent's room context."""
        ...

    def read_room_file(self, file_id: str) -> Awaitable[dict[str, Any]]:
        """Read a room file: small text inline, small images as image content,
        anything else described without being downloaded."""
        ...

    def send_room_file(
        self, content: str, filename: str, mentions: Sequence[str], caption: str = ""
    ) -> Awaitable[dict[str, Any]]:
        """Upload ``content`` as a text file and post it with a message."""
        ...

    def list_tasks(
        self, state: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> Awaitable[dict[str, Any]]:
        """List tasks on the room's board (active unless ``state`` says otherwise)."""
        ...

    def create_task(
        self, subject: str, detail: str | None = None, supersedes_id: str | None = None
    ) -> Awaitable[dict[str, Any]]:
        """Create a task on the room's board."""
        ...

    def get_task(self, id: str, include: str | None = None) -> Awaitable[dict[str, Any]]:
        """Read one task (by id or board number)."""
        ...

    def update_task(
        self,
        id: str,
        status: str | None = None,
        active_form: str | None = None,
        comment: str | None = None,
        subject: str | None = None,
        detail: str | None = None,
        state: str | None = None,
    ) -> Awaitable[dict[str, Any]]:
        """Update a task; only the fields given are sent."""
        ...

    def get_task_history(
        self, id: str, cursor: str | None = None, limit: int | None = None
    ) -> Awaitable[dict[str, Any]]:
        """Read a task's history, oldest first."""
        ...

    def get_board(self, include: str | None = None) -> Awaitable[dict[str, Any]]:
        """Read the room's board goal."""
        ...

    def set_board(
        self, goal_title: str | None = None, goal_summary: str | None = None
    ) -> Awaitable[dict[str, Any]]:
        """Set the room's board goal (title, summary or both)."""
        ...

    def get_tool_schemas(
        self,
        fmt: SchemaFormat,
        *,
        capabilities: Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        include_categories: Iterable[ToolCategory | str] | None = None,
        custom_tools: CustomToolSet | None = None,
    ) -> list[dict[str, Any]]:
        """The tools to offer a model, in ``"anthropic"`` or ``"openai"`` format."""
        ...

    def get_anthropic_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in Anthropic's format."""
        ...

    def get_openai_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in OpenAI's format."""
        ...

    def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> Awaitable[ToolResult]:
        """Run the tool ``name`` with ``args`` and return its result."""
        ...
