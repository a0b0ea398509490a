"""``FakeAgentTools``: an in-memory stand-in for :class:`band_trio.tools.AgentTools`
for adapter unit tests.

Unlike the official SDK's fake (tools and adapters, "Weak spots" 20) it is not blind:
mentions resolve against the participants you give it, tool calls are validated
against the real tool definitions, the schemas are the real schemas, and results
and errors have the real :class:`~band_trio.tools.ToolResult` shape. Every call is
recorded and any tool can be scripted to fail.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from band_trio._logging import get_logger
from band_trio.adapter import (
    AgentFailure,
    AgentToolsProtocol,
    CustomToolSet,
    Roster,
    ToolEffect,
    ToolErrorKind,
    ToolResult,
    TurnHooks,
    available_handles,
    is_visible,
    resolve_mention,
    to_jsonable,
    truncate_event_content,
)
from band_trio.errors import (
    BandToolError,
    RoomExecutionStoppedError,
    ToolArgumentsError,
    UnknownParticipantError,
)
from band_trio.tools._schema import validate_params
from band_trio.tools.definitions import (
    DEFAULT_CAPABILITIES,
    Capability,
    SchemaFormat,
    ToolCategory,
    get_tool_definition,
    offered_schemas,
)
from band_trio.wire.models import ChatParticipant, EventCreated, MessageSent, Recipient

logger = get_logger(__name__)

__all__ = ["FakeAgentTools", "RecordedCall", "SentEvent", "SentMessage", "reported_failures"]


def reported_failures(tools: FakeAgentTools) -> list[SentEvent]:
    """The failure reports a turn posted: ``error`` events carrying ``failure``
    metadata (other error events are left out)."""
    return [
        e
        for e in tools.events_sent
        if e.message_type == "error"
        and isinstance(e.metadata, Mapping)
        and isinstance(e.metadata.get("failure"), Mapping)
    ]


_EVENT_TYPES = frozenset({"tool_call", "tool_result", "thought", "error", "task", "attention"})


@attrs.frozen
class RecordedCall:
    """One call made on the fake: a Python method or a model tool call.

    Attributes:
        name: the tool name (``band_send_message``) for tool calls, the method
            name (``send_message``) for Python calls.
        args: the arguments as given.
    """

    name: str
    args: Mapping[str, Any]


@attrs.frozen
class SentMessage:
    """A message the fake accepted."""

    id: str
    content: str
    mentions: tuple[str, ...]
    """Resolved participant ids (raw mention strings when no roster was given)."""


@attrs.frozen
class SentEvent:
    """An event the fake accepted."""

    id: str
    content: str
    message_type: str
    metadata: Mapping[str, Any] | None


@attrs.define(eq=False)
class _Hold:
    matching: str
    error: BaseException | None
    claimed: bool = False
    started: trio.Event = attrs.Factory(trio.Event)
    release: trio.Event = attrs.Factory(trio.Event)


class FakeAgentTools:
    """Records everything, posts nothing. Satisfies ``AgentToolsProtocol``.

    Args:
        participants: the room roster. When given, mentions must resolve against
            it exactly as with the real tools; when empty, any non-blank mention
            string is accepted.
        agent_id: this agent's id (never a valid mention).
        room_id: the room id reported by the fake.
        hooks: optional turn hooks to forward replies and effects to.
        capabilities: default capabilities for :meth:`get_tool_schemas`.
        tool_results: canned successful results by tool name for tools the fake
            does not implement (default ``{"status": "ok"}``).
        custom_tools: custom tools, run for real by :meth:`execute_tool_call`.

    Scripting failures: :meth:`fail_next` makes the next call of a tool (by tool
    name, e.g. ``"band_send_message"``) raise the given error; through
    :meth:`execute_tool_call` it becomes an error result like the real one.
    """

    def __init__(
        self,
        *,
        participants: Sequence[ChatParticipant] = (),
        agent_id: str = "agent-fake",
        room_id: str = "room-fake",
        hooks: TurnHooks | None = None,
        capabilities: frozenset[Capability] | None = None,
        tool_results: Mapping[str, Any] | None = None,
        custom_tools: CustomToolSet | None = None,
    ) -> None:
        self.participants = list(participants)
        self.agent_id = agent_id
        self.room_id = room_id
        self.hooks = hooks
        self.capabilities = capabilities
        self.tool_results: dict[str, Any] = dict(tool_results or {})
        self.custom_tools = custom_tools
        self.offered_tools: frozenset[str] | None = None
        self.calls: list[RecordedCall] = []
        self.messages_sent: list[SentMessage] = []
        self.events_sent: list[SentEvent] = []
        self.effects: list[ToolEffect] = []
        self.replies: list[str] = []
        self.failures_reported = 0
        self._failures: dict[str, list[BaseException]] = {}
        self._holds: list[_Hold] = []
        self._ids = itertools.count(1)
        self._changed = trio.Event()

    # ------------------------------------------------------------- scripting

    def fail_next(self, tool_name: str, error: BaseException, *, times: int = 1) -> None:
        """Make the next ``times`` calls of ``tool_name`` raise ``error``."""
        if get_tool_definition(tool_name) is None and not (
            self.custom_tools and tool_name in self.custom_tools
        ):
            raise ValueError(f"unknown tool {tool_name!r}")
        self._failures.setdefault(tool_name, []).extend([error] * times)

    def _maybe_fail(self, tool_name: str) -> None:
        queue = self._failures.get(tool_name)
        if queue:
            raise queue.pop(0)

    def _record(self, effect: ToolEffect) -> None:
        self.effects.append(effect)
        if self.hooks is not None:
            self.hooks.record_effect(effect)

    def _touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    @asynccontextmanager
    async def hold_message(
        self, matching: str, error: BaseException | None = None
    ) -> AsyncIterator[None]:
        """Park the next send whose content contains ``matching``.

        Entering waits until the adapter starts that send; the send stays parked
        while the block runs (cancel the turn here to test a send cut short),
        then lands when the block exits, or raises ``error`` if given.
        """
        hold = _Hold(matching=matching, error=error)
        self._holds.append(hold)
        try:
            await hold.started.wait()
            yield
        finally:
            hold.release.set()
            self._holds.remove(hold)

    # ------------------------------------------------------------- python API

    def available_mention_handles(self) -> list[str]:
        """Handles a message may mention (never this agent)."""
        return available_handles(self.participants, agent_id=self.agent_id)

    def _resolve(self, mentions: Iterable[str]) -> tuple[str, ...]:
        wanted = [mentions] if isinstance(mentions, str) else list(mentions)
        out: list[str] = []
        if self.participants:
            roster = Roster(self.participants)
            for m in wanted:
                try:
                    p = resolve_mention(m, roster, agent_id=self.agent_id)
                except UnknownParticipantError as exc:
                    raise BandToolError(str(exc)) from None
                if p.id == self.agent_id:
                    raise BandToolError(f"{m!r} is you; mention the participants you address")
                if p.id not in out:
                    out.append(p.id)
        else:
            out = [m for m in wanted if isinstance(m, str) and m.strip().lstrip("@")]
        if not out:
            handles = self.available_mention_handles()
            hint = (
                f" Available handles: {', '.join('@' + h for h in handles)}. Use participant "
                "handles from the list."
                if handles
                else ""
            )
            raise BandToolError(f"At least one mention is required.{hint}")
        return tuple(out)

    async def send_message(
        self,
        content: str,
        mentions: Sequence[str],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> MessageSent | None:
        """Like :meth:`AgentTools.send_message`, recorded in ``messages_sent``."""
        return await self._send(content, mentions, reply=True)

    async def send_notice(self, content: str, mentions: Sequence[str]) -> MessageSent | None:
        """Like :meth:`send_message` but no effect is recorded and no reply journaled."""
        return await self._send(content, mentions, reply=False)

    async def _send(
        self, content: str, mentions: Sequence[str], *, reply: bool
    ) -> MessageSent | None:
        await trio.lowlevel.checkpoint()
        self.calls.append(
            RecordedCall(
                "send_message" if reply else "send_notice",
                {"content": content, "mentions": list(mentions)},
            )
        )
        self._maybe_fail("band_send_message")
        hold = next((h for h in self._holds if not h.claimed and h.matching in str(content)), None)
        if hold is not None:
            hold.claimed = True
            hold.started.set()
            await hold.release.wait()
            if hold.error is not None:
                raise hold.error
        if not isinstance(content, str) or not is_visible(content):
            return None
        ids = self._resolve(mentions)
        message = SentMessage(id=f"msg-{next(self._ids)}", content=content, mentions=ids)
        self.messages_sent.append(message)
        if reply:
            self.replies.append(message.id)
            if self.hooks is not None:
                self.hooks.reply_sent(message.id)
            self._record(ToolEffect.REPLY)
        self._touch()
        by_id = {p.id: p for p in self.participants}
        return MessageSent(
            id=message.id,
            success=True,
            recipients=tuple(
                Recipient(id=i, handle=by_id[i].handle if i in by_id else None) for i in ids
            ),
        )

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> EventCreated | None:
        """Like :meth:`AgentTools.send_event`, recorded in ``events_sent``."""
        await trio.lowlevel.checkpoint()
        self.calls.append(
            RecordedCall(
                "send_event",
                {"content": content, "message_type": message_type, "metadata": metadata},
            )
        )
        self._maybe_fail("band_send_event")
        if message_type not in _EVENT_TYPES:
            raise BandToolError(f"message_type {message_type!r} is not an event type")
        if not isinstance(content, str) or not is_visible(content):
            return None
        event = SentEvent(
            id=f"evt-{next(self._ids)}",
            content=truncate_event_content(content),
            message_type=message_type,
            metadata=None if metadata is None else dict(metadata),
        )
        self.events_sent.append(event)
        self._record(ToolEffect.OBSERVE)
        self._touch()
        return EventCreated(id=event.id, message_type=message_type, success=True)

    async def send_failure(self, failure: AgentFailure) -> EventCreated | None:
        """Like :meth:`AgentTools.send_failure`: the ``error`` event of a failure
        report (see :func:`reported_failures`), and the turn is told."""
        try:
            sent = await self.send_event(failure.content, "error", failure.metadata())
        except RoomExecutionStoppedError:
            raise
        except Exception as exc:
            logger.warning(
                "room %s: could not post the %s failure report: %r",
                self.room_id,
                failure.provider,
                exc,
            )
            return None
        if sent is not None:
            self.failures_reported += 1
            if self.hooks is not None:
                self.hooks.failure_reported()
        return sent

    # ------------------------------------------------------------- platform tools

    async def _call_tool(self, method: str, kwargs: dict[str, Any]) -> Any:
        # A platform tool called as a Python method: recorded under the method
        # name; scripted failures, canned results and effects as for a model call.
        await trio.lowlevel.checkpoint()
        self.calls.append(RecordedCall(method, dict(kwargs)))
        definition = get_tool_definition(f"band_{method}")
        assert definition is not None
        value = await self._run(definition.name, kwargs, definition.effect)
        self._touch()
        return value

    async def _call_dict_tool(self, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        value = await self._call_tool(method, kwargs)
        return value if isinstance(value, dict) else {"result": value}

    async def no_reply(self, reason: str | None = None) -> dict[str, str]:
        """Like :meth:`AgentTools.no_reply`: records a DECLINE effect."""
        value = await self._call_tool("no_reply", {"reason": reason})
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    async def get_participants_list(self) -> list[ChatParticipant]:
        """The participants given to the fake (recorded, no canned result)."""
        await trio.lowlevel.checkpoint()
        self.calls.append(RecordedCall("get_participants_list", {}))
        self._maybe_fail("band_get_participants")
        return list(self.participants)

    async def get_participants(self) -> list[dict[str, Any]]:
        """The canned ``band_get_participants`` result, else the participants
        given to the fake as ``{id, name, handle, type}`` dicts."""
        if "band_get_participants" in self.tool_results:
            value = await self._call_tool("get_participants", {})
            return list(value) if isinstance(value, list) else [value]
        await self._call_tool("get_participants", {})
        return [
            {"id": p.id, "name": p.name, "handle": p.handle, "type": p.type}
            for p in self.participants
        ]

    async def lookup_peers(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """Canned result of ``band_lookup_peers``."""
        return await self._call_dict_tool("lookup_peers", {"page": page, "page_size": page_size})

    async def add_participant(self, identifier: str, role: str = "member") -> dict[str, Any]:
        """Canned result of ``band_add_participant``; records an ACT effect."""
        return await self._call_dict_tool(
            "add_participant", {"identifier": identifier, "role": role}
        )

    async def remove_participant(self, identifier: str) -> dict[str, Any]:
        """Canned result of ``band_remove_participant``; records an ACT effect."""
        return await self._call_dict_tool("remove_participant", {"identifier": identifier})

    async def create_chatroom(self, task_id: str | None = None) -> str:
        """The canned ``band_create_chatroom`` result when it is a string, else a
        fresh fake room id."""
        value = await self._call_tool("create_chatroom", {"task_id": task_id})
        return value if isinstance(value, str) else f"room-{next(self._ids)}"

    async def list_contacts(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """Canned result of ``band_list_contacts``."""
        return await self._call_dict_tool("list_contacts", {"page": page, "page_size": page_size})

    async def add_contact(self, handle: str, message: str | None = None) -> dict[str, Any]:
        """Canned result of ``band_add_contact``."""
        return await self._call_dict_tool("add_contact", {"handle": handle, "message": message})

    async def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_remove_contact``."""
        return await self._call_dict_tool(
            "remove_contact", {"handle": handle, "contact_id": contact_id}
        )

    async def list_contact_requests(
        self, page: int = 1, page_size: int = 50, sent_status: str = "pending"
    ) -> dict[str, Any]:
        """Canned result of ``band_list_contact_requests``."""
        return await self._call_dict_tool(
            "list_contact_requests",
            {"page": page, "page_size": page_size, "sent_status": sent_status},
        )

    async def respond_contact_request(
        self, action: str, handle: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_respond_contact_request``."""
        return await self._call_dict_tool(
            "respond_contact_request",
            {"action": action, "handle": handle, "request_id": request_id},
        )

    async def list_memories(
        self,
        subject_id: str | None = None,
        scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        page_size: int = 50,
        status: str | None = None,
    ) -> dict[str, Any]:
        """Canned result of ``band_list_memories``."""
        return await self._call_dict_tool(
            "list_memories",
            {
                "subject_id": subject_id,
                "scope": scope,
                "system": system,
                "type": type,
                "segment": segment,
                "content_query": content_query,
                "page_size": page_size,
                "status": status,
            },
        )

    async def store_memory(
        self,
        content: str,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str,
        subject_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Canned result of ``band_store_memory``."""
        return await self._call_dict_tool(
            "store_memory",
            {
                "content": content,
                "system": system,
                "type": type,
                "segment": segment,
                "thought": thought,
                "scope": scope,
                "subject_id": subject_id,
                "metadata": metadata,
            },
        )

    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        """Canned result of ``band_get_memory``."""
        return await self._call_dict_tool("get_memory", {"memory_id": memory_id})

    async def supersede_memory(self, memory_id: str) -> dict[str, Any]:
        """Canned result of ``band_supersede_memory``."""
        return await self._call_dict_tool("supersede_memory", {"memory_id": memory_id})

    async def archive_memory(self, memory_id: str) -> dict[str, Any]:
        """Canned result of ``band_archive_memory``."""
        return await self._call_dict_tool("archive_memory", {"memory_id": memory_id})

    async def list_room_files(self, cursor: str | None = None) -> dict[str, Any]:
        """Canned result of ``band_list_room_files``."""
        return await self._call_dict_tool("list_room_files", {"cursor": cursor})

    async def read_room_file(self, file_id: str) -> dict[str, Any]:
        """Canned result of ``band_read_room_file``."""
        return await self._call_dict_tool("read_room_file", {"file_id": file_id})

    async def send_room_file(
        self,
        content: str,
        filename: str,
        mentions: Sequence[str],
        caption: str = "",
    ) -> dict[str, Any]:
        """Canned result of ``band_send_room_file``; records a REPLY effect."""
        return await self._call_dict_tool(
            "send_room_file",
            {
                "content": content,
                "filename": filename,
                "mentions": list(mentions),
                "caption": caption,
            },
        )

    async def list_tasks(
        self, state: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_list_tasks``."""
        return await self._call_dict_tool(
            "list_tasks", {"state": state, "cursor": cursor, "limit": limit}
        )

    async def create_task(
        self, subject: str, detail: str | None = None, supersedes_id: str | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_create_task``."""
        return await self._call_dict_tool(
            "create_task", {"subject": subject, "detail": detail, "supersedes_id": supersedes_id}
        )

    async def get_task(self, id: str, include: str | None = None) -> dict[str, Any]:
        """Canned result of ``band_get_task``."""
        return await self._call_dict_tool("get_task", {"id": id, "include": include})

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
        """Canned result of ``band_update_task``."""
        return await self._call_dict_tool(
            "update_task",
            {
                "id": id,
                "status": status,
                "active_form": active_form,
                "comment": comment,
                "subject": subject,
                "detail": detail,
                "state": state,
            },
        )

    async def get_task_history(
        self, id: str, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_get_task_history``."""
        return await self._call_dict_tool(
            "get_task_history", {"id": id, "cursor": cursor, "limit": limit}
        )

    async def get_board(self, include: str | None = None) -> dict[str, Any]:
        """Canned result of ``band_get_board``."""
        return await self._call_dict_tool("get_board", {"include": include})

    async def set_board(
        self, goal_title: str | None = None, goal_summary: str | None = None
    ) -> dict[str, Any]:
        """Canned result of ``band_set_board``."""
        return await self._call_dict_tool(
            "set_board", {"goal_title": goal_title, "goal_summary": goal_summary}
        )

    # ------------------------------------------------------------- model API

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
        """The real schemas (see :func:`band_trio.tools.get_tool_schemas`).

        As with the real tools, the platform tools returned become the only ones
        :meth:`execute_tool_call` accepts.
        """
        if capabilities is None:
            capabilities = (
                self.capabilities if self.capabilities is not None else DEFAULT_CAPABILITIES
            )
        schemas, offered = offered_schemas(
            fmt,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools if custom_tools is not None else self.custom_tools,
        )
        self.offered_tools = (self.offered_tools or frozenset()) | offered
        return schemas

    def get_anthropic_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in Anthropic's format."""
        return self.get_tool_schemas("anthropic", **kwargs)

    def get_openai_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in OpenAI's format."""
        return self.get_tool_schemas("openai", **kwargs)

    async def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> ToolResult:
        """Validate like the real dispatcher, then run the fake.

        ``band_send_message``, ``band_send_event`` and ``band_no_reply`` behave
        like the Python methods; any other platform tool returns its canned
        result from ``tool_results``. Never raises but ``trio.Cancelled``.
        """
        await trio.lowlevel.checkpoint()
        self.calls.append(RecordedCall(str(name), dict(args) if isinstance(args, Mapping) else {}))
        custom = custom_tools if custom_tools is not None else self.custom_tools
        definition = get_tool_definition(name) if isinstance(name, str) else None
        if definition is None and custom is not None and isinstance(name, str) and name in custom:
            custom_def = custom.get(name)
            assert custom_def is not None
            try:
                self._maybe_fail(name)
                value = await custom.invoke(custom_def, args, record=self._record)
            except ToolArgumentsError as exc:
                return ToolResult.error(name, ToolErrorKind.INVALID_ARGUMENTS, str(exc))
            except Exception as exc:
                return ToolResult.error(
                    name, ToolErrorKind.TOOL_ERROR, f"Error executing {name}: {exc}"
                )
            self._touch()
            return ToolResult.ok(name, value)
        if definition is None:
            return ToolResult.error(str(name), ToolErrorKind.UNKNOWN_TOOL, f"Unknown tool: {name}")
        if self.offered_tools is not None and definition.name not in self.offered_tools:
            return ToolResult.error(
                name,
                ToolErrorKind.NOT_OFFERED,
                f"Error executing {name}: this tool is not available to you here; use only "
                "the tools you were given.",
            )
        try:
            kwargs = validate_params(definition.name, definition.params, args)
            if definition.input_model is not None:
                try:
                    definition.input_model(**kwargs)
                except ValueError as exc:
                    raise ToolArgumentsError(definition.name, (str(exc),)) from None
            value = await self._run(definition.name, kwargs, definition.effect)
        except ToolArgumentsError as exc:
            return ToolResult.error(name, ToolErrorKind.INVALID_ARGUMENTS, str(exc))
        except (BandToolError, UnknownParticipantError) as exc:
            return ToolResult.error(
                name, ToolErrorKind.TOOL_ERROR, f"Error executing {name}: {exc}"
            )
        except Exception as exc:
            return ToolResult.error(
                name, ToolErrorKind.PLATFORM_ERROR, f"Error executing {name}: {exc}"
            )
        self._touch()
        return ToolResult.ok(name, value)

    async def _run(self, name: str, kwargs: dict[str, Any], effect: ToolEffect) -> Any:
        if name == "band_send_message":
            return await self.send_message(kwargs["content"], kwargs["mentions"])
        if name == "band_send_event":
            return await self.send_event(
                kwargs["content"], kwargs["message_type"], kwargs.get("metadata")
            )
        self._maybe_fail(name)
        if name == "band_no_reply":
            value: Any = {"status": "no_reply"}
        else:
            value = self.tool_results.get(name, {"status": "ok"})
            if callable(value):
                value = value(**kwargs)
        self._record(effect)
        return to_jsonable(value)

    # ------------------------------------------------------------- assertions

    @property
    def chat(self) -> list[str]:
        """The contents of the messages sent, in order."""
        return [m.content for m in self.messages_sent]

    def tool_calls(self, name: str | None = None) -> list[RecordedCall]:
        """Recorded calls, optionally only those named ``name``."""
        return [c for c in self.calls if name is None or c.name == name]

    def assert_message_sent(
        self,
        content: str | None = None,
        *,
        mentions: Sequence[str] | None = None,
        count: int | None = None,
    ) -> None:
        """Assert messages were sent (containing ``content``, to ``mentions`` ids)."""
        matching = [
            m
            for m in self.messages_sent
            if (content is None or content in m.content)
            and (mentions is None or set(mentions) <= set(m.mentions))
        ]
        if count is None:
            assert matching, f"no message matching {content!r}; sent: {self.chat!r}"
        else:
            assert len(matching) == count, (
                f"expected {count} message(s) matching {content!r}, got {len(matching)}"
            )

    def assert_no_messages_sent(self) -> None:
        """Assert nothing was sent."""
        assert not self.messages_sent, f"messages were sent: {self.chat!r}"

    def assert_event_sent(
        self, message_type: str | None = None, *, count: int | None = None
    ) -> None:
        """Assert events were sent (of ``message_type``)."""
        matching = [
            e for e in self.events_sent if message_type is None or e.message_type == message_type
        ]
        if count is None:
            assert matching, f"no {message_type or ''} event sent"
        else:
            assert len(matching) == count, (
                f"expected {count} {message_type or ''} event(s), got {len(matching)}"
            )

    async def wait_until(self, condition: Callable[[FakeAgentTools], bool]) -> None:
        """Wait until ``condition(self)`` holds (re-checked after every recorded send).

        Put a ``trio.fail_after`` around it.
        """
        while not condition(self):
            await self._changed.wait()

    async def wait_until_said(self, fragment: str, times: int = 1) -> None:
        """Wait until ``times`` messages containing ``fragment`` were sent."""
        await self.wait_until(lambda t: sum(fragment in c for c in t.chat) >= times)


def _conforms(tools: FakeAgentTools) -> AgentToolsProtocol:
    # Static check (mypy): the fake satisfies the engine's protocol.
    return tools
