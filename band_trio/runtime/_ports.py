"""The seams of the runtime, typed as small protocols listing only what is used.

The engine and the dispatcher depend on these instead of on concrete classes
(or ``Any``): the link is anything that joins and leaves topics, the contact
service anything that starts, handles events and counts, and the dispatcher
routes to anything that admits, removes and finds rooms. Tests plug fakes in
here, and strict typing checks them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from band_trio.runtime.contact_events import ContactHandlerStatistics
from band_trio.runtime.room import Room
from band_trio.wire.events import ContactEvent

__all__ = ["ContactService", "EventRoutes", "TopicLink"]


class TopicLink(Protocol):
    """What the engine needs from the WebSocket link (a ``BandLink``)."""

    async def join(self, topic: str) -> None:
        """Join ``topic`` (and keep it joined across reconnects).

        Raises:
            BandError: the join failed.
        """
        ...

    async def leave(self, topic: str) -> None:
        """Leave ``topic`` (it is no longer rejoined).

        Raises:
            BandError: the leave failed.
        """
        ...


class ContactService(Protocol):
    """What the engine needs from the contact-event handler
    (a :class:`~band_trio.runtime.contact_events.ContactEventHandler`)."""

    async def start(self) -> str | None:
        """Prepare handling (find or create the hub room); returns its id, if any.

        Raises:
            BandError: preparing failed (handling retries lazily).
        """
        ...

    async def handle(self, event: ContactEvent) -> bool:
        """Handle one contact event; True when it was handled now."""
        ...

    def statistics(self) -> ContactHandlerStatistics:
        """A snapshot of the handler's counters."""
        ...


class EventRoutes(Protocol):
    """Where the dispatcher sends what it reads (the engine)."""

    def room(self, room_id: str) -> Room | None:
        """The room object for ``room_id``, else None."""
        ...

    def serving_rooms(self) -> Mapping[str, Room]:
        """The rooms being served now, by id."""
        ...

    def add_room(self, room_id: str) -> None:
        """Start serving ``room_id`` (never blocks)."""
        ...

    def remove_room(self, room_id: str) -> None:
        """Stop serving ``room_id`` (never blocks)."""
        ...

    def on_contact_event(self, event: ContactEvent) -> None:
        """Queue a contact event (never blocks)."""
        ...

    def on_reconnected(self, *, count: bool = True, lost: Sequence[str] = ()) -> None:
        """The socket came back: re-list, rejoin and reconcile (``lost``: topics
        whose rejoin the platform refused)."""
        ...

    def on_topic_lost(self, topic: str) -> None:
        """A topic ended without us leaving it."""
        ...
