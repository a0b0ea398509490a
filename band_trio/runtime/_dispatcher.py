"""The dispatcher: routes every link event, and never blocks doing it.

Agent-level events are handled here (room added / removed / deleted, control
signals, reconnects); room events go to that room's bounded inbox with
``Room.deliver``, which never blocks (a full inbox marks the room for a reconcile, see
:mod:`band_trio.runtime.room`). Anything slow (joining rooms, listing rooms after
a reconnect) is started as a task in the engine's nursery, so one slow room or a
slow REST call never stalls intake for the others (official runtime, "Weak
spots" 4).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from band_trio._logging import get_logger
from band_trio.runtime._control import ControlHandler
from band_trio.runtime._ports import EventRoutes
from band_trio.wire.events import (
    AgentControl,
    ContactAdded,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
    MessageCreated,
    ParticipantAdded,
    ParticipantRemoved,
    RoomAdded,
    RoomDeleted,
    RoomRemoved,
    Supersede,
)
from band_trio.wire.link import EventRejected, LinkEvent, LinkReconnected, TopicLost

__all__ = ["Dispatcher"]

logger = get_logger("band_trio.runtime.dispatcher")


class Dispatcher:
    """Reads the link's event channel and routes each event.

    Args:
        engine: the room manager (the engine).
        control: applies ``agent.control`` signals.
        changed: called after every event is routed (the agent's state may
            have changed: waiters re-check their predicates).
    """

    def __init__(
        self,
        engine: EventRoutes,
        control: ControlHandler,
        *,
        changed: Callable[[], None] | None = None,
    ) -> None:
        self._engine = engine
        self._control = control
        self._changed = changed
        self.events = 0
        self.unrouted = 0
        self.rejected = 0
        self.ignored = 0

    async def run(self, events: trio.MemoryReceiveChannel[LinkEvent]) -> None:
        """Route events until the channel closes or the task is cancelled."""
        async with events:
            async for event in events:
                self.dispatch(event)

    def dispatch(self, event: object) -> None:
        """Route one event now. Never blocks and never raises."""
        self.events += 1
        try:
            self._route(event)
        except Exception:
            logger.exception("error while routing %s", type(event).__name__)
        if self._changed is not None:
            self._changed()

    def _route(self, event: object) -> None:
        engine = self._engine
        if isinstance(event, MessageCreated | ParticipantAdded | ParticipantRemoved):
            room = engine.room(event.room_id)
            if room is None:
                self.unrouted += 1
                logger.debug(
                    "dropping %s for room %s the agent does not serve",
                    type(event).__name__,
                    event.room_id,
                )
                return
            room.deliver(event)
        elif isinstance(event, AgentControl):
            self._control.apply(event, engine.serving_rooms())
        elif isinstance(event, RoomAdded):
            engine.add_room(event.id)
        elif isinstance(event, RoomRemoved):
            engine.remove_room(event.id)
        elif isinstance(event, RoomDeleted):
            engine.remove_room(event.room_id)
        elif isinstance(
            event, ContactRequestReceived | ContactRequestUpdated | ContactAdded | ContactRemoved
        ):
            engine.on_contact_event(event)
        elif isinstance(event, LinkReconnected):
            engine.on_reconnected(lost=event.lost)
        elif isinstance(event, TopicLost):
            engine.on_topic_lost(event.topic)
        elif isinstance(event, EventRejected):
            self.rejected += 1
        elif isinstance(event, Supersede):
            # The link ends the run with SupersededError when it is terminal.
            logger.warning("supersede received: %s", event.reason)
        else:
            # message_updated, event_created, room_updated, tasks: not used here.
            self.ignored += 1
            logger.debug("ignoring %s", type(event).__name__)
