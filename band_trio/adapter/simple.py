"""``SimpleAdapter``: the base class most adapters subclass.

It checks the adapter's feature arguments once, converts each turn's history
with an optional converter, calls :meth:`SimpleAdapter.on_message` with the
pieces spelled out, and declares every optional hook with its default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast

from band_trio.adapter.capabilities import Capability, ToolCategory
from band_trio.adapter.features import AdapterFeatures, Emit, resolve_features
from band_trio.adapter.messages import (
    HistoryConverter,
    NamedHistoryConverter,
    PlatformMessage,
)
from band_trio.adapter.prompt import PromptSettings
from band_trio.adapter.tool_events import post_thought
from band_trio.adapter.tool_offer import ToolSchema, offered_neutral_tools, offered_tool_schemas
from band_trio.adapter.tool_output import ToolOutput, run_tool_call
from band_trio.adapter.tool_protocol import AgentToolsProtocol, CustomToolSet, SchemaFormat
from band_trio.adapter.turns import AgentInput
from band_trio.adapter.usage import Usage, emit_usage
from band_trio.errors import BandConfigError, HistoryConversionError
from band_trio.wire.models import EventCreated

__all__ = ["SimpleAdapter"]

H = TypeVar("H")


class SimpleAdapter(Generic[H]):
    """Base class for most adapters: implement :meth:`on_message`.

    ``H`` is the history type ``on_message`` receives: the converter's output
    when ``history_converter`` is set, the raw :class:`HistoryProvider` otherwise
    (use ``SimpleAdapter[HistoryProvider]`` then).

    Args:
        history_converter: converts the raw history once per turn.
        emit: the event kinds (:class:`~band_trio.adapter.Emit`) the adapter posts on
            its own: a member, its string value or an iterable of those.
            Omitted: every kind in :attr:`SUPPORTED_EMIT`; ``()``: none.
        capabilities: the optional tool families
            (:class:`~band_trio.adapter.Capability`) to offer. Omitted: none.
        include_tools: offer only these tool names (None: no filter).
        exclude_tools: never offer these tool names (None: no filter).
        include_categories: offer only tools of these categories (None: no filter).
        custom_tools: typed tools of the adapter (``band_trio.CustomTools``),
            offered after the platform tools by :meth:`tool_schemas` and run by
            :meth:`run_tool_call`.
        prompt: how :attr:`system_prompt` is made (default: the rendered
            Band prompt with the adapter's capabilities).

    Raises:
        BandConfigError: an invalid value, or an emit kind or capability the
            class does not support (``"<Class> does not support emit kind(s):
            ...; supported: ..."``, ``"<Class> does not support
            capability/-ies: ...; supported: ..."``), a ``custom_tools`` that
            is not a tool set, a ``prompt`` that is not :class:`PromptSettings`.

    Attributes:
        agent_name: the agent's name, set by :meth:`on_started`.
        agent_description: the agent's description, set by :meth:`on_started`.
        history_converter: the converter given to the constructor.
        features: the effective :class:`~band_trio.adapter.AdapterFeatures`; the
            runtime removes capabilities the deployment does not serve before
            :meth:`on_started` (:meth:`apply_effective_features`).
        custom_tools: the custom tools given to the constructor.
        prompt: the prompt settings given to the constructor.
        judges_turns: class attribute, True: the runtime judges each message
            turn by the effects of its tool calls; a turn that returns without a
            reply, a decline or other durable work ("missing reply") is reported
            in the room and marked failed. Set it to False in a subclass to opt out.
        SUPPORTED_EMIT: class attribute, the emit kinds the class can produce
            (default: none).
        SUPPORTED_CAPABILITIES: class attribute, the capabilities the class can
            serve (default: none).
    """

    judges_turns: ClassVar[bool] = True
    features: AdapterFeatures = AdapterFeatures()
    custom_tools: CustomToolSet | None = None
    prompt: PromptSettings = PromptSettings()
    _system_prompt: str | None = None
    SUPPORTED_EMIT: ClassVar[frozenset[Emit]] = frozenset()
    SUPPORTED_CAPABILITIES: ClassVar[frozenset[Capability]] = frozenset()

    def __init__(
        self,
        *,
        history_converter: HistoryConverter[H] | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
        custom_tools: CustomToolSet | None = None,
        prompt: PromptSettings | None = None,
    ) -> None:
        if custom_tools is not None and not isinstance(custom_tools, CustomToolSet):
            raise BandConfigError(
                f"custom_tools must be a CustomTools; got {type(custom_tools).__name__}"
            )
        if prompt is not None and not isinstance(prompt, PromptSettings):
            raise BandConfigError(f"prompt must be a PromptSettings; got {type(prompt).__name__}")
        self.history_converter = history_converter
        self.custom_tools = custom_tools
        self.prompt = prompt if prompt is not None else PromptSettings()
        self._system_prompt: str | None = None
        self.agent_name = ""
        self.agent_description = ""
        self.features: AdapterFeatures = resolve_features(
            type(self).__name__,
            supported_emit=frozenset(self.SUPPORTED_EMIT),
            supported_capabilities=frozenset(self.SUPPORTED_CAPABILITIES),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
        )

    def apply_effective_features(self, features: AdapterFeatures) -> None:
        """Install the features the runtime settled on (called before
        :meth:`on_started`, e.g. without capabilities the deployment does not serve)."""
        self.features = features
        self._system_prompt = None

    @property
    def system_prompt(self) -> str:
        """The system prompt for the model: :attr:`prompt` rendered with the
        agent's identity and the capabilities the adapter offers (rendered
        once, again after :meth:`on_started`)."""
        if self._system_prompt is None:
            self._system_prompt = self.prompt.render(
                self.agent_name, self.agent_description, capabilities=self.features.capabilities
            )
        return self._system_prompt

    def tool_schemas(self, tools: AgentToolsProtocol, fmt: SchemaFormat) -> list[dict[str, Any]]:
        """The tools to offer this turn in ``fmt``, with the adapter's
        capabilities, filters and custom tools (see
        :func:`~band_trio.adapter.offered_tool_schemas`)."""
        return offered_tool_schemas(tools, self.features, fmt, custom_tools=self.custom_tools)

    def neutral_tools(self, tools: AgentToolsProtocol) -> list[ToolSchema]:
        """:meth:`tool_schemas` as framework-neutral
        :class:`~band_trio.adapter.ToolSchema` objects."""
        return offered_neutral_tools(tools, self.features, custom_tools=self.custom_tools)

    async def run_tool_call(
        self,
        tools: AgentToolsProtocol,
        name: str,
        args: Mapping[str, Any] | None,
        call_id: str,
    ) -> ToolOutput:
        """Run a model's tool call (platform or custom tool), posting its
        events when ``Emit.TOOL_CALLS`` is on (see
        :func:`~band_trio.adapter.run_tool_call`); never raises but
        ``trio.Cancelled``."""
        return await run_tool_call(
            tools,
            name,
            args,
            call_id,
            custom_tools=self.custom_tools,
            post_events=self.features.emits(Emit.TOOL_CALLS),
        )

    async def post_thought(self, tools: AgentToolsProtocol, text: str) -> EventCreated | None:
        """Post reasoning as a ``thought`` event when ``Emit.THOUGHTS`` is on
        (best-effort, see :func:`~band_trio.adapter.post_thought`)."""
        if not self.features.emits(Emit.THOUGHTS):
            return None
        return await post_thought(tools, text)

    async def emit_usage(self, tools: AgentToolsProtocol, usage: Usage) -> EventCreated | None:
        """Post the turn's token usage when ``Emit.USAGE`` is on (see
        :func:`band_trio.adapter.emit_usage`: skipped for all-zero counts or a turn
        being cancelled; a failed post is logged, never raised)."""
        if not self.features.emits(Emit.USAGE):
            return None
        return await emit_usage(tools, usage)

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Store the agent's identity, pass the name to the converter and
        render :attr:`system_prompt` (the features are final by now).

        Subclasses that override this must call ``super().on_started(...)``.
        """
        self.agent_name = agent_name
        self.agent_description = agent_description
        self._system_prompt = None
        if isinstance(self.history_converter, NamedHistoryConverter):
            self.history_converter.set_agent_name(agent_name)

    async def on_cleanup(self, room_id: str) -> None:
        """Drop per-room state. The base class keeps none."""

    async def cleanup_all(self) -> None:
        """The agent is stopping: drop agent-wide state (see
        :class:`~band_trio.adapter.AllRoomsCleanup`). The base class keeps none."""

    async def run_background(self) -> None:
        """Background work for the agent's lifetime (see
        :class:`~band_trio.adapter.BackgroundWork`). The base class has none
        and returns at once."""

    async def on_interrupt(self, room_id: str, mode: str) -> None:
        """An ``interrupt`` or ``stop`` signal (``mode``) reached ``room_id`` (see
        :class:`~band_trio.adapter.InterruptHandler`). The base class does nothing;
        the turn itself is cancelled by the runtime either way."""

    async def on_event(self, inp: AgentInput) -> None:
        """Convert the history, then call :meth:`on_message`.

        Raises:
            HistoryConversionError: the history converter raised (the original
                error is the ``__cause__``); the runtime keeps the turn's
                context owed so the next attempt gets it again.
            Exception: whatever :meth:`on_message` raises, unchanged.
        """
        history: H
        if self.history_converter is not None:
            try:
                history = inp.history.convert(self.history_converter)
            except Exception as exc:
                raise HistoryConversionError(type(exc).__name__) from exc
        else:
            history = cast(H, inp.history)
        await self.on_message(
            inp.msg,
            inp.tools,
            history,
            inp.participants_msg,
            inp.contacts_msg,
            is_session_bootstrap=inp.is_session_bootstrap,
            room_id=inp.room_id,
        )

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: H,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Handle one message. Subclasses must implement this.

        The only way anything reaches the room is through ``tools``
        (``send_message``, ``send_event``, tool calls).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement on_message")
