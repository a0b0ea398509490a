"""``FakeAgentTools``: the real :class:`band_trio.tools.AgentTools` over an
in-memory platform, for adapter unit tests.

Unlike the official SDK's fake (tools and adapters, "Weak spots" 20) it is not blind: it
*is* ``AgentTools``, posting to an in-memory REST client instead of the platform.
Mentions resolve against the participants you give it, model tool calls are
validated, gated and dispatched by ``AgentTools`` itself, the schemas are the real
schemas, and results and errors are the real ones, so the fake cannot drift from
the tools it stands for. What it adds: every call is recorded, any tool can be
scripted to fail and a send can be held, the platform tools beyond posting, the
roster and room creation answer canned results, and without a roster any mention
is accepted.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import attrs
import trio

from band_trio.adapter import (
    AgentToolsProtocol,
    CustomToolSet,
    ToolEffect,
    ToolResult,
    ToolSpec,
    TurnHooks,
    to_jsonable,
)
from band_trio.errors import BandError, InternalServerError
from band_trio.testing._memory_rest import MemoryRest, SentEvent, SentMessage
from band_trio.tools import TOOL_DEFINITIONS, AgentTools, Capability, get_tool_definition
from band_trio.wire.models import ChatMessage, ChatParticipant, EventCreated, MessageSent

if TYPE_CHECKING:
    from band_trio.wire import RestClient

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


# Inside a recorded tool method: a tool another one runs (the roster read of
# get_participants) is part of that call, recorded and failed once.
_IN_TOOL: ContextVar[bool] = ContextVar("band_trio_fake_in_tool", default=False)
# Inside execute_tool_call: a scripted failure is what the model sees.
_IN_MODEL_CALL: ContextVar[bool] = ContextVar("band_trio_fake_in_model_call", default=False)

# The tools the in-memory platform serves through AgentTools itself; every
# other platform tool answers its canned result (``tool_results``).
_SERVED = frozenset(
    {"send_message", "send_event", "no_reply", "get_participants", "create_chatroom"}
)


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


@attrs.define(eq=False)
class _Hold:
    matching: str
    error: BaseException | None
    claimed: bool = False
    started: trio.Event = attrs.Factory(trio.Event)
    release: trio.Event = attrs.Factory(trio.Event)


@attrs.define(eq=False)
class _Recorder:
    """The turn hooks the fake gives AgentTools: it keeps the replies, effects
    and failure reports of the turn and passes every call on to the test's hooks."""

    hooks: TurnHooks | None
    replies: list[str] = attrs.Factory(list)
    effects: list[ToolEffect] = attrs.Factory(list)
    failures_reported: int = 0

    @property
    def message_id(self) -> str | None:
        return None if self.hooks is None else self.hooks.message_id

    def reply_sent(self, reply_id: str) -> None:
        self.replies.append(reply_id)
        if self.hooks is not None:
            self.hooks.reply_sent(reply_id)

    def reply_intent(self, digest: str) -> None:
        if self.hooks is not None:
            self.hooks.reply_intent(digest)

    def reply_settled(self, digest: str) -> None:
        if self.hooks is not None:
            self.hooks.reply_settled(digest)

    def failure_reported(self) -> None:
        self.failures_reported += 1
        if self.hooks is not None:
            self.hooks.failure_reported()

    def execution_stopped(self) -> None:
        if self.hooks is not None:
            self.hooks.execution_stopped()

    def record_effect(self, effect: ToolEffect) -> None:
        self.effects.append(effect)
        if self.hooks is not None:
            self.hooks.record_effect(effect)


@attrs.frozen
class _ScriptedCustomTools:
    """Custom tools whose calls fail first as the fake was scripted to."""

    tools: CustomToolSet
    fake: FakeAgentTools

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def get(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def definitions(self) -> Sequence[ToolSpec]:
        return self.tools.definitions()

    async def invoke(
        self,
        definition: ToolSpec,
        args: Mapping[str, Any] | None,
        *,
        record: Callable[[ToolEffect], None] | None = None,
    ) -> Any:
        self.fake._fail_if_scripted(definition.name)
        return await self.tools.invoke(definition, args, record=record)


class FakeAgentTools(AgentTools):
    """:class:`~band_trio.tools.AgentTools` over an in-memory platform: records
    everything, posts nothing. Satisfies ``AgentToolsProtocol``.

    Args:
        participants: the room roster. When given, mentions must resolve against
            it exactly as with the real tools; when empty, any non-blank mention
            string is accepted.
        agent_id: this agent's id (never a valid mention).
        room_id: the room id reported by the fake.
        hooks: optional turn hooks to forward replies and effects to.
        capabilities: the capabilities the agent offers, as for ``AgentTools``:
            the default for :meth:`get_tool_schemas`, and only their tools run
            through :meth:`execute_tool_call`.
        tool_results: canned successful results by tool name for the tools the
            in-memory platform does not serve (default ``{"status": "ok"}``);
            a callable is called with the tool's arguments. A canned
            ``band_get_participants`` result replaces the roster's, a canned
            string ``band_create_chatroom`` result the fresh room id.
        custom_tools: custom tools, run for real by :meth:`execute_tool_call`.

    The posts (messages, notices, events, failure reports), ``band_no_reply``,
    the participant reads and ``band_create_chatroom`` run ``AgentTools``' own
    code; the messages and events posted land in :attr:`messages_sent` and
    :attr:`events_sent`.

    Scripting failures: :meth:`fail_next` makes the next call of a tool (by tool
    name, e.g. ``"band_send_message"``) raise the given error; through
    :meth:`execute_tool_call` it becomes the error result ``AgentTools`` gives
    for it.
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
        roster = list(participants)
        self._platform = MemoryRest([room_id], agent_id=agent_id, participants=roster)
        self._recorder = _Recorder(hooks)
        self._any_mention = not roster
        self.capabilities = capabilities
        self.tool_results: dict[str, Any] = dict(tool_results or {})
        self.custom_tools = custom_tools
        self.calls: list[RecordedCall] = []
        self._failures: dict[str, list[BaseException]] = {}
        self._holds: list[_Hold] = []
        self._changed = trio.Event()
        super().__init__(
            rest=cast("RestClient", self._platform),
            room_id=room_id,
            agent_id=agent_id,
            participants=roster,
            hooks=self._recorder,
            capabilities=capabilities,
            custom_tools=self._scripted(custom_tools),
        )

    # ------------------------------------------------------------- what it did

    @property
    def hooks(self) -> TurnHooks | None:
        """The turn hooks replies, effects and failure reports are passed on to."""
        return self._recorder.hooks

    @hooks.setter
    def hooks(self, hooks: TurnHooks | None) -> None:
        self._recorder.hooks = hooks

    @property
    def messages_sent(self) -> list[SentMessage]:
        """The messages posted (replies and notices), in order."""
        return self._platform.messages_sent

    @property
    def events_sent(self) -> list[SentEvent]:
        """The events posted, in order."""
        return self._platform.events_sent

    @property
    def replies(self) -> list[str]:
        """The ids of the messages that count as the turn's reply (no notices)."""
        return self._recorder.replies

    @property
    def effects(self) -> list[ToolEffect]:  # type: ignore[override]
        """The effects of the successful tool calls, in order (a list, which
        the fake's users compare with lists; ``AgentTools`` gives a tuple)."""
        return self._recorder.effects

    @property
    def failures_reported(self) -> int:
        """How many failure reports :meth:`send_failure` posted."""
        return self._recorder.failures_reported

    # ------------------------------------------------------------- scripting

    def fail_next(self, tool_name: str, error: BaseException, *, times: int = 1) -> None:
        """Make the next ``times`` calls of ``tool_name`` (a tool's name, or
        ``"unprocessed_messages"``) raise ``error``.

        Through :meth:`execute_tool_call` the error becomes the error result
        ``AgentTools`` gives for it, except that an error which is no
        :class:`~band_trio.errors.BandError` stands for the platform failing
        the call (an HTTP 500 carrying its text) where ``AgentTools`` would
        report an internal error of its own without the text.
        """
        if (
            get_tool_definition(tool_name) is None
            and tool_name != "unprocessed_messages"
            and not (self.custom_tools and tool_name in self.custom_tools)
        ):
            raise ValueError(f"unknown tool {tool_name!r}")
        self._failures.setdefault(tool_name, []).extend([error] * times)

    def _fail_if_scripted(self, tool_name: str) -> None:
        queue = self._failures.get(tool_name)
        if not queue:
            return
        error = queue.pop(0)
        if (
            _IN_MODEL_CALL.get()
            and not isinstance(error, BandError)
            and get_tool_definition(tool_name) is not None
        ):
            raise InternalServerError(500, message=str(error)) from error
        raise error

    def _scripted(self, custom_tools: CustomToolSet | None) -> CustomToolSet | None:
        return None if custom_tools is None else _ScriptedCustomTools(custom_tools, self)

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

    async def _wait_if_held(self, content: str) -> None:
        hold = next((h for h in self._holds if not h.claimed and h.matching in str(content)), None)
        if hold is None:
            return
        hold.claimed = True
        hold.started.set()
        await hold.release.wait()
        if hold.error is not None:
            raise hold.error

    @asynccontextmanager
    async def _tool_call(
        self, method: str, tool_name: str, args: Mapping[str, Any]
    ) -> AsyncIterator[None]:
        """One recorded call of ``method``: logged, failed if scripted, and the
        waiters told once it succeeded."""
        await trio.lowlevel.checkpoint()
        if _IN_TOOL.get():
            yield
            return
        self.calls.append(RecordedCall(method, dict(args)))
        self._fail_if_scripted(tool_name)
        token = _IN_TOOL.set(True)
        try:
            yield
        finally:
            _IN_TOOL.reset(token)
        self._touch()

    def _canned(self, tool_name: str, args: Mapping[str, Any]) -> Any:
        value = self.tool_results.get(tool_name, {"status": "ok"})
        if callable(value):
            value = value(**args)
        return to_jsonable(value)

    def _resolve_now(self, wanted: Sequence[str]) -> list[ChatParticipant]:
        # Without a roster the fake takes any non-blank mention as a
        # participant of that id; with one, AgentTools resolves.
        named = [m for m in wanted if isinstance(m, str) and m.strip().lstrip("@")]
        if self._any_mention and named:
            return [
                ChatParticipant(id=m, role="member", status="active", type="User", name=m)
                for m in dict.fromkeys(named)
            ]
        return super()._resolve_now(wanted)

    # ------------------------------------------------------------- served tools

    async def send_message(
        self,
        content: str,
        mentions: Sequence[str],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> MessageSent | None:
        """:meth:`AgentTools.send_message`, recorded; the message lands in
        :attr:`messages_sent`."""
        args = {"content": content, "mentions": list(mentions)}
        async with self._tool_call("send_message", "band_send_message", args):
            await self._wait_if_held(content)
            return await super().send_message(content, mentions, attachment_ids=attachment_ids)

    async def send_notice(self, content: str, mentions: Sequence[str]) -> MessageSent | None:
        """:meth:`AgentTools.send_notice`, recorded: no effect, not a reply."""
        args = {"content": content, "mentions": list(mentions)}
        async with self._tool_call("send_notice", "band_send_message", args):
            await self._wait_if_held(content)
            return await super().send_notice(content, mentions)

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> EventCreated | None:
        """:meth:`AgentTools.send_event`, recorded; the event lands in :attr:`events_sent`."""
        args = {"content": content, "message_type": message_type, "metadata": metadata}
        async with self._tool_call("send_event", "band_send_event", args):
            return await super().send_event(content, message_type, metadata)

    async def no_reply(self, reason: str | None = None) -> dict[str, str]:
        """:meth:`AgentTools.no_reply`, recorded: a DECLINE effect."""
        async with self._tool_call("no_reply", "band_no_reply", {"reason": reason}):
            return await super().no_reply(reason)

    async def get_participants_list(self) -> list[ChatParticipant]:
        """The participants given to the fake (recorded)."""
        async with self._tool_call("get_participants_list", "band_get_participants", {}):
            return await super().get_participants_list()

    async def get_participants(self) -> list[dict[str, Any]]:
        """The canned ``band_get_participants`` result if there is one, else
        :meth:`AgentTools.get_participants` over the participants given."""
        async with self._tool_call("get_participants", "band_get_participants", {}):
            if "band_get_participants" not in self.tool_results:
                return await super().get_participants()
            value = self._canned("band_get_participants", {})
            self._record(ToolEffect.OBSERVE)
            return list(value) if isinstance(value, list) else [value]

    async def unprocessed_messages(self, limit: int = 100) -> list[ChatMessage]:
        """:meth:`AgentTools.unprocessed_messages`, recorded: the messages
        :meth:`deliver` put in the room and nothing processed yet."""
        async with self._tool_call(
            "unprocessed_messages", "unprocessed_messages", {"limit": limit}
        ):
            return await super().unprocessed_messages(limit)

    async def create_chatroom(self, task_id: str | None = None) -> str:
        """The canned ``band_create_chatroom`` result when it is a string, else
        a fresh room id from :meth:`AgentTools.create_chatroom`."""
        async with self._tool_call("create_chatroom", "band_create_chatroom", {"task_id": task_id}):
            value = self._canned("band_create_chatroom", {"task_id": task_id})
            if not isinstance(value, str):
                return await super().create_chatroom(task_id)
            self._record(ToolEffect.ACT)
            return value

    async def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> ToolResult:
        """:meth:`AgentTools.execute_tool_call`, recorded under the tool name
        (the Python method it runs is recorded after it). Never raises but
        ``trio.Cancelled``."""
        await trio.lowlevel.checkpoint()
        self.calls.append(RecordedCall(str(name), dict(args) if isinstance(args, Mapping) else {}))
        token = _IN_MODEL_CALL.set(True)
        try:
            result = await super().execute_tool_call(
                name, args, custom_tools=self._scripted(custom_tools)
            )
        finally:
            _IN_MODEL_CALL.reset(token)
        if not result.is_error:
            self._touch()
        return result

    def deliver(self, content: str) -> str:
        """Put a message from the room's user (``user-1``, the owner, unless
        ``participants`` says otherwise) in the room, waiting behind the turn
        for :meth:`unprocessed_messages`; its id."""
        return self._platform.add(content)

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


def _canned_tool(method: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The fake's ``method``: the canned result of its tool, recorded, with the
    tool's effect; the signature is ``AgentTools``' own."""
    real = getattr(AgentTools, method)
    signature = inspect.signature(real)
    definition = get_tool_definition(f"band_{method}")
    assert definition is not None

    async def canned(self: FakeAgentTools, /, *args: Any, **kwargs: Any) -> dict[str, Any]:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        given = {k: v for k, v in bound.arguments.items() if k != "self"}
        async with self._tool_call(method, definition.name, given):
            value = self._canned(definition.name, given)
            self._record(definition.effect)
        return value if isinstance(value, dict) else {"result": value}

    functools.update_wrapper(canned, real)
    canned.__module__ = __name__
    canned.__qualname__ = f"FakeAgentTools.{method}"
    canned.__doc__ = f"The canned result of ``{definition.name}`` (``tool_results``), recorded."
    return canned


for _definition in TOOL_DEFINITIONS:
    _method = _definition.name.removeprefix("band_")
    if _method not in _SERVED:
        setattr(FakeAgentTools, _method, _canned_tool(_method))


def _conforms(tools: FakeAgentTools) -> AgentToolsProtocol:
    # Static check (mypy): the fake satisfies the engine's protocol.
    return tools
