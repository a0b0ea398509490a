"""What an adapter reads: the message of a turn and the room's history.

Plain frozen data and one lazily converting history holder; sans-io.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, cast, runtime_checkable

import attrs

__all__ = [
    "HistoryConverter",
    "HistoryItem",
    "HistoryProvider",
    "HistoryRole",
    "PlatformMessage",
    "sender_label",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

HistoryRole = Literal["user", "assistant"]
"""``assistant`` is this agent's own message; everyone else (other agents too) is ``user``."""


# --------------------------------------------------------------------------- messages


def sender_label(name: str | None, handle: str | None, sender_type: str | None = None) -> str:
    """Who wrote a message, as a model is shown it.

    With a handle (unique in the room, so two participants of the same
    display name stay apart): ``"Name (@handle)"``, or ``"@handle"`` when the
    name is blank or the handle itself. Without one: the name, else the sender
    type, else ``"Unknown"``. Whitespace runs (line breaks included) become
    one space, so a name cannot start a line of its own.
    """
    bare = _flat(handle or "").lstrip("@")
    label = _flat(name or "")
    if bare:
        return f"{label} (@{bare})" if label and label.lstrip("@") != bare else f"@{bare}"
    return label or _flat(sender_type or "") or "Unknown"


def _flat(text: str) -> str:
    return " ".join(text.split())


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
        sender_handle: the sender's handle (unique in the room, without the
            leading ``@``) from the roster, or None when unknown.
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
    sender_handle: str | None = None

    def format_for_llm(self) -> str:
        """The message as one line for a model: ``"[<sender>]: <content>"``.

        The sender is :func:`sender_label` of the display name and the handle
        (``"Alice (@alice)"``), else the sender type, else ``Unknown``.
        """
        return f"[{sender_label(self.sender_name, self.sender_handle, self.sender_type)}]: {self.content}"


@attrs.frozen
class HistoryItem:
    """One earlier message of the room, prepared for a history converter.

    Unlike the official SDK, ``role`` is ``"assistant"`` only for messages this
    agent sent itself. Messages from *other* agents are ``"user"`` items whose
    ``sender_name`` and ``sender_type`` say who spoke (so a model can tell the other agents apart).

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
        sender_handle: the sender's handle (without the leading ``@``), when
            the roster knows it.
    """

    role: HistoryRole
    content: str
    sender_name: str
    sender_type: str
    message_type: str = "text"
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    sender_id: str | None = None
    message_id: str | None = None
    sender_handle: str | None = None

    @property
    def sender_label(self) -> str:
        """Who wrote it, as a model is shown it (:func:`sender_label`)."""
        return sender_label(self.sender_name, self.sender_handle, self.sender_type)

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

    A converter that needs the agent's name also implements
    :class:`NamedHistoryConverter`; :meth:`SimpleAdapter.on_started` gives it.
    """

    def convert(self, items: Sequence[HistoryItem]) -> T_co:
        """Convert ``items`` (oldest first) into the framework's history value."""
        ...


@runtime_checkable
class NamedHistoryConverter(HistoryConverter[T_co], Protocol[T_co]):
    """A history converter that is told the agent's name once, at start-up
    (to tell the agent's own messages from the others')."""

    def set_agent_name(self, name: str) -> None:
        """Remember ``name`` as this agent's name."""
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
        without converting again. Whatever the converter raises propagates,
        and nothing is cached then.
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
