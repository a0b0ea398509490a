"""The default preprocessor: a room event in, an adapter input (or nothing) out.

Sans-io and synchronous: the engine hydrates the room (roster, history) before
calling it and passes everything in a :class:`~band_trio.adapter.TurnContext`.
Behaviour follows the official SDK's (official runtime, "Default preprocessor").

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from band_trio._logging import get_logger
from band_trio.adapter.messages import PlatformMessage
from band_trio.adapter.roster import rewrite_mention_tokens
from band_trio.adapter.turns import AgentInput, TurnContext
from band_trio.runtime.core._history import clean_metadata, parse_timestamp
from band_trio.wire import unstructure
from band_trio.wire.events import MessageCreated, MessageUpdated
from band_trio.wire.models import ChatMessage

__all__ = ["DefaultPreprocessor", "is_own_message", "platform_message"]

logger = get_logger("band_trio.runtime.preprocessor")


def is_own_message(sender_type: str, sender_id: str, *, agent_id: str) -> bool:
    """True for a message this agent sent itself (exact, case-sensitive match)."""
    return sender_type == "Agent" and sender_id == agent_id


def _metadata_dict(event: MessageCreated | MessageUpdated | ChatMessage) -> dict[str, Any]:
    raw: Any = event.metadata if isinstance(event, ChatMessage) else unstructure(event.metadata)
    return clean_metadata(raw if isinstance(raw, Mapping) else None)


def platform_message(
    event: MessageCreated | MessageUpdated | ChatMessage, ctx: TurnContext
) -> PlatformMessage:
    """The :class:`PlatformMessage` an adapter sees for a message event.

    ``content`` has mention tokens rewritten with ``ctx.roster``; ``sender_name``
    is the roster's name for the sender, else the name the platform sent;
    ``sender_handle`` is the roster's handle for the sender (None when unknown);
    ``metadata`` drops None-valued keys; ``created_at`` is parsed from
    ``inserted_at`` (None when missing or invalid).
    """
    if isinstance(event, ChatMessage):
        room_id = ctx.room_id or (event.chat_room_id or "")
    else:
        room_id = event.room_id
    known = ctx.roster.get(event.sender_id)
    sender_name = (known.name if known is not None else None) or event.sender_name
    return PlatformMessage(
        id=event.id,
        room_id=room_id,
        content=rewrite_mention_tokens(event.content, ctx.roster),
        sender_id=event.sender_id,
        sender_type=event.sender_type,
        sender_name=sender_name,
        sender_handle=known.handle if known is not None else None,
        message_type=event.message_type or "text",
        metadata=_metadata_dict(event),
        created_at=parse_timestamp(event.inserted_at),
    )


class DefaultPreprocessor:
    """Builds the :class:`AgentInput` for message events; drops everything else.

    Drops (returns None), and nothing else:

    * any event that is not a message (participant, room, contact, reconnect
      events, ...);
    * a message without a room id (logged as an error);
    * this agent's own messages (``sender_type == "Agent"`` and
      ``sender_id == agent_id``).

    It does not filter by mention, message type or sender kind: the platform
    delivers only messages addressed to the agent.

    Accepts ``MessageCreated`` / ``MessageUpdated`` events, REST
    ``ChatMessage`` rows (the ``/messages/next`` backlog path) and ready-made
    :class:`PlatformMessage` objects (synthetic hub messages), which pass
    through unchanged.
    """

    def process(self, ctx: TurnContext, event: object, agent_id: str) -> AgentInput | None:
        """Return the adapter input for ``event``, or None to drop it."""
        msg: PlatformMessage
        if isinstance(event, PlatformMessage):
            # Already prepared (a synthetic hub message, a re-queued input).
            if is_own_message(event.sender_type, event.sender_id, agent_id=agent_id):
                return None
            msg = event
        elif isinstance(event, MessageCreated | MessageUpdated | ChatMessage):
            if is_own_message(event.sender_type, event.sender_id, agent_id=agent_id):
                return None
            msg = platform_message(event, ctx)
        else:
            return None
        if not msg.room_id:
            logger.error("dropping message %s: it has no room id", msg.id)
            return None
        return AgentInput(
            msg=msg,
            tools=ctx.make_tools(),
            history=ctx.history,
            participants_msg=ctx.participants_msg,
            contacts_msg=ctx.contacts_msg,
            is_session_bootstrap=ctx.is_session_bootstrap,
            room_id=msg.room_id,
        )
