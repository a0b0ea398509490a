"""Public types of the agent runtime: what an adapter receives and implements.

The runtime turns each platform message into an :class:`AgentInput` and hands it
to a :class:`FrameworkAdapter`. Most adapters subclass :class:`SimpleAdapter`,
which converts the history with an optional :class:`HistoryConverter` and calls
``on_message`` with the pieces spelled out.

Everything here is sans-io: plain data and protocols. The engine
(``runtime/room.py``) builds these objects; the tools layer implements
:class:`AgentToolsProtocol` and calls :class:`TurnHooks`.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    TypeVar,
    cast,
    runtime_checkable,
)

import attrs

from band_trio.errors import HistoryConversionError
from band_trio.wire.models import EventCreated, MessageSent

if TYPE_CHECKING:
    from band_trio.llm.events import Usage
    from band_trio.llm.features import AdapterFeatures, Emit
    from band_trio.runtime.roster import Roster
    from band_trio.tools.definitions import Capability, ToolCategory

__all__ = [
    "AgentInput",
    "AgentToolsProtocol",
    "FrameworkAdapter",
    "HistoryConverter",
    "HistoryItem",
    "HistoryProvider",
    "HistoryRole",
    "PlatformMessage",
    "Preprocessor",
    "SimpleAdapter",
    "ToolEffect",
    "TurnContext",
    "TurnHooks",
    "TurnLedger",
    "TurnVerdict",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
H = TypeVar("H")

HistoryRole = Literal["user", "assistant"]
"""``assistant`` is this agent's own message; everyone else (other agents too) is ``user``."""


# --------------------------------------------------------------------------- messages


@attrs.frozen
class PlatformMessage:
    """One platform message, as an adapter sees it.

    Attributes:
        id: the message id.
        room_id: the room (chat) it was posted in.
        content: the text, with ``@[[uuid]]`` mention tokens already rewritten to
            ``@handle`` (or ``@Display-Name``) using the room roster.
        sender_id: who sent it (a user uuid or an agent id).
        sender_type: ``"User"``, ``"Agent"`` or ``"System"`` (open set).
        sender_name: the sender's display name from the roster, else the name the
            platform sent with the message, else None.
        message_type: ``"text"`` for chat messages; other kinds are open strings.
        metadata: the platform metadata (mentions, delivery status, ...), with
            None-valued keys removed.
        created_at: when the platform stored it (timezone-aware), or None when
            the platform's timestamp could not be parsed.
    """

    id: str
    room_id: str
    content: str
    sender_id: str
    sender_type: str
    sender_name: str | None
    message_type: str = "text"
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    created_at: datetime | None = None

    def format_for_llm(self) -> str:
        """The message as one line for a model: ``"[<sender>]: <content>"``.

        The sender is the display name, else the sender type, else ``Unknown``.
        """
        label = self.sender_name or self.sender_type or "Unknown"
        return f"[{label}]: {self.content}"


@attrs.frozen
class HistoryItem:
    """One earlier message of the room, prepared for a history converter.

    Unlike the official SDK, ``role`` is ``"assistant"`` only for messages this
    agent sent itself. Messages from *other* agents are ``"user"`` items whose
    ``sender_name`` and ``sender_type`` say who spoke (reference runtime.md §9.19).

    Attributes:
        role: ``"assistant"`` for this agent's own messages, else ``"user"``.
        content: the text, mention tokens rewritten like :attr:`PlatformMessage.content`.
        sender_name: display name, falling back to the platform name, then the
            sender type.
        sender_type: ``"User"``, ``"Agent"``, ...
        message_type: ``"text"``, ``"tool_call"``, ``"tool_result"``, ``"thought"``, ...
        metadata: the platform metadata, None-valued keys removed.
        sender_id: the sender's id, when known.
        message_id: the platform message id, when known.
    """

    role: HistoryRole
    content: str
    sender_name: str
    sender_type: str
    message_type: str = "text"
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    sender_id: str | None = None
    message_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The item as the plain dict the official converters expect.

        Keys: ``role``, ``content``, ``sender_name``, ``sender_type``,
        ``message_type``, ``metadata``.
        """
        return {
            "role": self.role,
            "content": self.content,
            "sender_name": self.sender_name,
            "sender_type": self.sender_type,
            "message_type": self.message_type,
            "metadata": dict(self.metadata),
        }


@runtime_checkable
class HistoryConverter(Protocol[T_co]):
    """Turns raw history items into a framework's message format.

    A converter may also define ``set_agent_name(name: str) -> None``;
    :meth:`SimpleAdapter.on_started` calls it when present.
    """

    def convert(self, items: Sequence[HistoryItem]) -> T_co:
        """Convert ``items`` (oldest first) into the framework's history value."""
        ...


class HistoryProvider:
    """The raw history of a turn, converted lazily and at most once per converter.

    Args:
        raw: the history items, oldest first.
    """

    __slots__ = ("_cache", "raw")

    def __init__(self, raw: Sequence[HistoryItem] = ()) -> None:
        self.raw: tuple[HistoryItem, ...] = tuple(raw)
        self._cache: dict[int, tuple[object, object]] = {}

    def convert(self, converter: HistoryConverter[T]) -> T:
        """Convert the raw items with ``converter``, caching the result.

        A second call with the same converter object returns the same value
        without converting again.

        Raises:
            Whatever the converter raises (nothing is cached then).
        """
        key = id(converter)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is converter:
            return cast(T, hit[1])
        value = converter.convert(self.raw)
        # Keep a reference to the converter so its id cannot be reused while cached.
        self._cache[key] = (converter, value)
        return value

    def __len__(self) -> int:
        return len(self.raw)

    def __bool__(self) -> bool:
        return bool(self.raw)

    def __iter__(self) -> Iterator[HistoryItem]:
        return iter(self.raw)

    def __repr__(self) -> str:
        return f"HistoryProvider(<{len(self.raw)} items>)"


# --------------------------------------------------------------------------- tools and turns


class ToolEffect(enum.Enum):
    """What a successful platform tool call did for the current turn.

    The turn ledger uses these to judge whether a turn answered its message.
    """

    OBSERVE = "observe"
    """Read something (participants, tasks, memories): not an answer."""
    ACT = "act"
    """Durable work that counts as handling the message (add a participant, ...)."""
    REPLY = "reply"
    """A message was posted to the room."""
    DECLINE = "decline"
    """The agent decided explicitly not to answer (``band_no_reply``)."""


class TurnVerdict(enum.Enum):
    """How a finished turn is judged."""

    COMPLETE = "complete"
    MISSING_REPLY = "missing_reply"


class TurnLedger:
    """Per-turn record of tool effects, used to judge a turn (sans-io).

    A turn is complete when any ACT, REPLY or DECLINE effect was recorded, when
    the adapter called :meth:`settle`, or when a failure was already reported to
    the room (:meth:`note_reported`). Only OBSERVE effects (or nothing) mean a
    missing reply.
    """

    __slots__ = ("_effects", "_reported", "_settled")

    def __init__(self) -> None:
        self._effects: list[ToolEffect] = []
        self._settled = False
        self._reported = False

    def record_effect(self, effect: ToolEffect) -> None:
        """Record the effect of one successful tool call."""
        self._effects.append(ToolEffect(effect))

    def settle(self) -> None:
        """Declare the turn handled although no tool recorded it."""
        self._settled = True

    def note_reported(self) -> None:
        """Record that the turn's failure was already reported to the room."""
        self._reported = True

    @property
    def effects(self) -> tuple[ToolEffect, ...]:
        """Every effect recorded so far, in order."""
        return tuple(self._effects)

    @property
    def replied(self) -> bool:
        """True once a REPLY or DECLINE was recorded."""
        return any(e in (ToolEffect.REPLY, ToolEffect.DECLINE) for e in self._effects)

    @property
    def reported(self) -> bool:
        """True when a failure report was already posted for this turn."""
        return self._reported

    @property
    def verdict(self) -> TurnVerdict:
        """The judgement of the turn so far."""
        if self._settled or self._reported:
            return TurnVerdict.COMPLETE
        if any(e is not ToolEffect.OBSERVE for e in self._effects):
            return TurnVerdict.COMPLETE
        return TurnVerdict.MISSING_REPLY


@runtime_checkable
class TurnHooks(Protocol):
    """What the tools layer tells the engine during a turn (implemented by the engine)."""

    @property
    def message_id(self) -> str | None:
        """The message the turn answers, or None outside a message turn."""
        ...

    def reply_sent(self, reply_id: str) -> None:
        """Journal durably that the platform accepted reply ``reply_id``.

        Called the moment the platform accepted a message post, so a crash
        before the ``processed`` mark never yields a second reply.
        """
        ...

    def reply_intent(self, digest: str) -> None:
        """Journal durably that a reply with ``digest`` is about to be posted
        (see :func:`band_trio.runtime.replies.reply_digest`).

        Called right before the post. If the post's outcome is never learned
        (the process dies, the response is lost), the runtime looks for that
        reply on the platform before it runs the message again.
        """
        ...

    def reply_settled(self, digest: str) -> None:
        """The post of the reply with ``digest`` has a known outcome: the
        platform accepted it (after :meth:`reply_sent`) or refused it."""
        ...

    def failure_reported(self) -> None:
        """A failure report (an ``error`` event) for this turn reached the room:
        the turn is not judged a missing reply, and the runtime posts no second
        error event for it."""
        ...

    def execution_stopped(self) -> None:
        """The platform said the room's execution is stopped: end the turn cooperatively."""
        ...

    def record_effect(self, effect: ToolEffect) -> None:
        """Record what a successful tool call did (see :class:`ToolEffect`)."""
        ...


@runtime_checkable
class AgentToolsProtocol(Protocol):
    """The room-bound tools object an adapter receives in every turn.

    ``band_trio.tools.AgentTools`` implements it; ``band_trio.testing`` has a fake.
    The methods are awaitable (implement them with ``async def``); the results
    are the REST models ``MessageSent`` / ``EventCreated`` and the tools
    layer's ``ToolResult``.
    """

    def send_message(self, content: str, mentions: Sequence[str]) -> Awaitable[MessageSent | None]:
        """Post a chat message mentioning ``mentions`` (handles, names or ids).

        Returns the platform's ``MessageSent`` receipt, or None when ``content``
        is blank (nothing is posted).
        """
        ...

    def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> Awaitable[EventCreated | None]:
        """Post an event (``thought``, ``tool_call``, ``error``, ...) to the room.

        Returns the platform's ``EventCreated`` receipt, or None when ``content``
        is blank.
        """
        ...

    def execute_tool_call(
        self, name: str, args: Mapping[str, Any], *, custom_tools: Any = None
    ) -> Awaitable[Any]:
        """Run tool ``name`` with ``args`` (a custom tool of ``custom_tools``
        first, else a platform tool); errors come back as a result."""
        ...

    def get_tool_schemas(
        self,
        fmt: Literal["anthropic", "openai"],
        *,
        capabilities: Any = None,
        include_tools: Any = None,
        exclude_tools: Any = None,
        include_categories: Any = None,
        custom_tools: Any = None,
    ) -> list[dict[str, Any]]:
        """The tool definitions in an LLM provider's format: the capability
        gate, then the include/exclude/category filters, then custom tools."""
        ...


# --------------------------------------------------------------------------- adapter input


@attrs.frozen
class AgentInput:
    """Everything an adapter gets for one turn.

    Attributes:
        msg: the message to answer.
        tools: room-bound tools; the only way anything reaches the room.
        history: earlier messages of the room (only on a session bootstrap with
            context hydration on; empty otherwise).
        participants_msg: the rendered participant list, present on a room's
            first turn and whenever the roster changed since it was last delivered.
        contacts_msg: pending system lines (contact updates, hub prompt) joined
            by newlines, or None.
        is_session_bootstrap: True until a turn of this room worker committed
            its context (first turn after start or after the room was re-added).
        room_id: the room of the turn.
    """

    msg: PlatformMessage
    tools: AgentToolsProtocol
    history: HistoryProvider = attrs.field(factory=HistoryProvider)
    participants_msg: str | None = None
    contacts_msg: str | None = None
    is_session_bootstrap: bool = False
    room_id: str = attrs.field(
        default=attrs.Factory(lambda self: self.msg.room_id, takes_self=True)
    )


@attrs.frozen
class TurnContext:
    """What a :class:`Preprocessor` needs to build an :class:`AgentInput`.

    The engine builds one per turn after hydrating the room.

    Attributes:
        room_id: the room the event belongs to.
        roster: the room's participants (read only; used to rewrite mention
            tokens and to look up sender names).
        history: the turn's history (empty when not bootstrapping).
        participants_msg: see :attr:`AgentInput.participants_msg`.
        contacts_msg: see :attr:`AgentInput.contacts_msg`.
        is_session_bootstrap: see :attr:`AgentInput.is_session_bootstrap`.
        make_tools: builds the turn's room-bound tools (called only when the
            preprocessor keeps the event).
    """

    room_id: str
    roster: Roster
    make_tools: Callable[[], AgentToolsProtocol]
    history: HistoryProvider = attrs.field(factory=HistoryProvider)
    participants_msg: str | None = None
    contacts_msg: str | None = None
    is_session_bootstrap: bool = False


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class Preprocessor(Protocol):
    """Turns a room event into an adapter input, or drops it.

    ``process`` is synchronous: the engine hydrates the room (roster, history)
    before calling it, so building the input never blocks.
    """

    def process(self, ctx: TurnContext, event: object, agent_id: str) -> AgentInput | None:
        """Return the adapter input for ``event``, or None to drop it."""
        ...


@runtime_checkable
class FrameworkAdapter(Protocol):
    """The minimal adapter the runtime drives.

    ``on_event`` is called strictly one at a time per room, each call inside its
    own cancel scope (an interrupt, stop or timeout cancels it).
    """

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Called once at startup, before the socket connects."""
        ...

    async def on_event(self, inp: AgentInput) -> None:
        """Handle one turn."""
        ...

    async def on_cleanup(self, room_id: str) -> None:
        """The agent left ``room_id`` (or is shutting down): drop its state.

        Runs shielded under a deadline.
        """
        ...


class SimpleAdapter(Generic[H]):
    """Base class for most adapters: implement :meth:`on_message`.

    ``H`` is the history type ``on_message`` receives: the converter's output
    when ``history_converter`` is set, the raw :class:`HistoryProvider` otherwise
    (use ``SimpleAdapter[HistoryProvider]`` then).

    Args:
        history_converter: converts the raw history once per turn.
        emit: the event kinds (:class:`~band_trio.llm.Emit`) the adapter posts on
            its own: a member, its string value or an iterable of those.
            Omitted: every kind in :attr:`SUPPORTED_EMIT`; ``()``: none.
        capabilities: the optional tool families
            (:class:`~band_trio.tools.Capability`) to offer. Omitted: none.
        include_tools: offer only these tool names (None: no filter).
        exclude_tools: never offer these tool names (None: no filter).
        include_categories: offer only tools of these categories (None: no filter).

    Raises:
        BandConfigError: an invalid value, or an emit kind or capability the
            class does not support (``"<Class> does not support emit kind(s):
            ...; supported: ..."``, ``"<Class> does not support
            capability/-ies: ...; supported: ..."``).

    Attributes:
        agent_name: the agent's name, set by :meth:`on_started`.
        agent_description: the agent's description, set by :meth:`on_started`.
        history_converter: the converter given to the constructor.
        features: the effective :class:`~band_trio.llm.AdapterFeatures`; the
            runtime removes capabilities the deployment does not serve before
            :meth:`on_started` (:meth:`apply_effective_features`).
        judges_turns: class attribute, True: the runtime judges each message
            turn with its :class:`TurnLedger`; a turn that returns without a
            reply, a decline or other durable work ("missing reply") is reported
            in the room and marked failed. Set it to False in a subclass to opt out.
        SUPPORTED_EMIT: class attribute, the emit kinds the class can produce
            (default: none).
        SUPPORTED_CAPABILITIES: class attribute, the capabilities the class can
            serve (default: none).
    """

    judges_turns: ClassVar[bool] = True
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
    ) -> None:
        # Imported here: band_trio.llm builds on the tools layer, which builds
        # on this module.
        from band_trio.llm.features import resolve_features

        self.history_converter = history_converter
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

    async def emit_usage(self, tools: AgentToolsProtocol, usage: Usage) -> EventCreated | None:
        """Post the turn's token usage when ``Emit.USAGE`` is on (see
        :func:`band_trio.llm.emit_usage`: skipped for all-zero counts or a turn
        being cancelled; a failed post is logged, never raised)."""
        from band_trio.llm.events import emit_usage
        from band_trio.llm.features import Emit

        if not self.features.emits(Emit.USAGE):
            return None
        return await emit_usage(tools, usage)

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Store the agent's identity and pass the name to the converter.

        Subclasses that override this must call ``super().on_started(...)``.
        """
        self.agent_name = agent_name
        self.agent_description = agent_description
        set_agent_name = getattr(self.history_converter, "set_agent_name", None)
        if callable(set_agent_name):
            set_agent_name(agent_name)

    async def on_cleanup(self, room_id: str) -> None:
        """Drop per-room state. The base class keeps none."""

    async def on_event(self, inp: AgentInput) -> None:
        """Convert the history, then call :meth:`on_message`.

        Raises:
            HistoryConversionError: the history converter raised (the original
                error is the ``__cause__``); the runtime keeps the turn's
                context owed so the next attempt gets it again.
            Whatever :meth:`on_message` raises.
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
