"""What one turn is made of: the adapter's input, the preprocessor's context and
the hooks through which the tools tell the runtime what happened (sans-io)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import attrs

from band_trio.adapter.capabilities import ToolEffect
from band_trio.adapter.messages import HistoryProvider, PlatformMessage
from band_trio.adapter.roster import Roster
from band_trio.adapter.tool_protocol import AgentToolsProtocol

__all__ = ["AgentInput", "TurnContext", "TurnHooks"]


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
        (see :func:`band_trio.runtime.room.replies.reply_digest`).

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
