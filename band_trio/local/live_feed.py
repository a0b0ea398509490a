"""The human live feed (sans-io): what changed, for each person watching.

A person's client (the browser playground, the terminal chat) watches the
platform through one stream of feed events. :class:`LiveFeed` turns what the
platform publishes into those events: the pushes a change queued (messages,
events, delivery changes, participants, rooms) and the per-room agent state
that no push carries (working or idle, stopped, connected), found by
comparing it with what the feed saw last. Each watcher is a
:class:`FeedSubscription` with a bounded queue.

Memory bound: a subscription holds at most ``queue_size`` events. When a
reader falls that far behind, the oldest event is dropped and the next read
starts with a ``resync`` event telling the client to list the state again
(counted as ``overflows``). Every subscription also starts with ``resync``:
the client lists once the stream is open, so nothing falls between the two.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

import attrs
import trio

from band_trio.local.directory import ACTIVITY_TTL
from band_trio.local.model import JSON, Push, RoomRecord
from band_trio.local.store import PlatformState

__all__ = ["FeedEvent", "FeedStatistics", "FeedSubscription", "LiveFeed"]

DEFAULT_QUEUE_SIZE = 1000
# Delivery statuses worth telling a person about ("delivered" is the message itself).
_SETTLED = ("processing", "processed", "failed")
# Remembered delivery statuses; past this many the memory is dropped, at worst
# repeating a status a watcher already has.
_MAX_REMEMBERED_STATUSES = 50_000

_ROOM_EVENTS = {"room_added", "room_removed", "room_updated"}
_PARTICIPANT_EVENTS = {"participant_added", "participant_removed"}


@attrs.frozen
class FeedEvent:
    """One event of the feed.

    Attributes:
        type: ``message_created``, ``message_status``, ``agent_activity``,
            ``participant_added``, ``participant_removed``, ``room_added``,
            ``room_removed``, ``room_updated`` or ``resync``.
        room_id: the room it is about (None for ``resync``).
        data: the event's JSON body.
    """

    type: str
    room_id: str | None
    data: JSON

    def as_json(self) -> JSON:
        """The ``{"type", "room_id", "data"}`` document a stream sends."""
        return {"type": self.type, "room_id": self.room_id, "data": self.data}


RESYNC = FeedEvent("resync", None, {})


@attrs.frozen
class FeedStatistics:
    """Counters of the live feed."""

    subscriptions: int
    events: int
    overflows: int


class FeedSubscription:
    """One watcher: a user, optionally one room, and a bounded event queue.

    Read it with :meth:`take` after :meth:`wait`; end it with
    :meth:`LiveFeed.unsubscribe`.
    """

    def __init__(self, feed: LiveFeed, user_id: str, room_id: str | None, queue_size: int) -> None:
        self.user_id = user_id
        self.room_id = room_id
        self._feed = feed
        self._queue: deque[FeedEvent] = deque([RESYNC])
        self._queue_size = queue_size
        self._lost = False
        self._ready = trio.Event()
        self._ready.set()

    def __repr__(self) -> str:
        return f"<FeedSubscription user={self.user_id} room={self.room_id}>"

    def wants(self, room_id: str | None, audience: Iterable[str]) -> bool:
        """Whether an event about ``room_id`` for ``audience`` is for this watcher."""
        if self.room_id is not None and room_id != self.room_id:
            return False
        return self.user_id in audience

    def put(self, event: FeedEvent) -> None:
        """Queue an event; past the bound the oldest is dropped and a resync owed."""
        if len(self._queue) >= self._queue_size:
            self._queue.popleft()
            if not self._lost:
                self._lost = True
                self._feed.overflows += 1
        self._queue.append(event)
        self._ready.set()

    def take(self) -> list[FeedEvent]:
        """Every queued event, oldest first (``resync`` first after a drop)."""
        events = list(self._queue)
        self._queue.clear()
        if self._lost:
            self._lost = False
            events.insert(0, RESYNC)
        self._ready = trio.Event()
        return events

    async def wait(self) -> None:
        """Wait until :meth:`take` has something.

        Cancellation: a plain Trio wait; nothing is lost when it is cancelled.
        """
        await self._ready.wait()


class LiveFeed:
    """Turns what the platform publishes into feed events for its watchers.

    Args:
        state: the platform's state (read only).
        queue_size: events each subscription holds before dropping the oldest.
    """

    def __init__(self, state: PlatformState, *, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._state = state
        self.queue_size = queue_size
        self._subscriptions: list[FeedSubscription] = []
        # (message id, agent id) -> last delivery status told
        self._statuses: dict[tuple[str, str], str] = {}
        # (room id, agent id) -> last agent state told
        self._agents: dict[tuple[str, str], JSON] = {}
        self.events = 0
        self.overflows = 0

    def statistics(self) -> FeedStatistics:
        """A frozen snapshot of the counters."""
        return FeedStatistics(
            subscriptions=len(self._subscriptions), events=self.events, overflows=self.overflows
        )

    def subscribe(self, user_id: str, room_id: str | None = None) -> FeedSubscription:
        """A new watcher for ``user_id`` (one room, or every room of the user).

        Its first event is ``resync``.
        """
        subscription = FeedSubscription(self, user_id, room_id, self.queue_size)
        self._subscriptions.append(subscription)
        # Agent state is tracked only while somebody watches: start from what
        # is true now in the rooms this watcher adds (its resync lists them).
        for key, value in self._agent_states().items():
            self._agents.setdefault(key, value)
        return subscription

    def unsubscribe(self, subscription: FeedSubscription) -> None:
        """Forget a watcher. Idempotent."""
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
        if not self._subscriptions:
            self._statuses.clear()
            self._agents.clear()

    def publish(self, pushes: Sequence[Push]) -> None:
        """Turn the pushes of one change, and the agent state after it, into events."""
        if not self._subscriptions:
            return
        for push in pushes:
            for event in self._from_push(push):
                self._emit(event, push.principals)
        self.refresh()

    def refresh(self) -> None:
        """Compare each watched room's agent state (working, stopped, connected)
        with what was told last, and tell what changed. Call it after
        :meth:`next_expiry` seconds: a working report expires without a change."""
        if not self._subscriptions:
            return
        current = self._agent_states()
        for key, value in current.items():
            if self._agents.get(key) != value:
                room_id, agent_id = key
                room = self._state.rooms.get(room_id)
                if room is not None:
                    self._emit(
                        FeedEvent("agent_activity", room_id, {"agent_id": agent_id, **value}),
                        self._user_members(room),
                    )
        self._agents = current

    def next_expiry(self) -> float | None:
        """Seconds until the next working report of a watched room expires."""
        if not self._subscriptions:
            return None
        now = self._state.clock()
        ends = [
            report["at"] + ACTIVITY_TTL - now
            for room in self._watched_rooms()
            for report in room.activity.values()
            if now - report["at"] < ACTIVITY_TTL
        ]
        return max(0.0, min(ends)) if ends else None

    # ------------------------------------------------------------------ internals

    def _emit(self, event: FeedEvent, audience: Iterable[str]) -> None:
        audience = frozenset(audience)
        for subscription in self._subscriptions:
            if subscription.wants(event.room_id, audience):
                subscription.put(event)
                self.events += 1

    def _from_push(self, push: Push) -> list[FeedEvent]:
        kind, _, ident = push.topic.partition(":")
        payload = push.payload
        if kind == "chat_room" and push.event in ("message_created", "event_created"):
            return [FeedEvent("message_created", ident, payload)]
        if kind == "chat_room" and push.event == "message_updated":
            return self._status_changes(ident, payload)
        if kind == "room_participants" and push.event in _PARTICIPANT_EVENTS:
            return [FeedEvent(push.event, ident, {"participant": payload})]
        if kind == "user_rooms" and push.event in _ROOM_EVENTS:
            return [FeedEvent(push.event, str(payload.get("id")), {"room": payload})]
        return []

    def _status_changes(self, room_id: str, message: JSON) -> list[FeedEvent]:
        deliveries = (message.get("metadata") or {}).get("delivery_status") or {}
        if len(self._statuses) > _MAX_REMEMBERED_STATUSES:
            self._statuses.clear()
        events = []
        for agent_id, delivery in deliveries.items():
            status = delivery.get("status")
            key = (message["id"], agent_id)
            if status in _SETTLED and self._statuses.get(key) != status:
                events.append(
                    FeedEvent(
                        "message_status",
                        room_id,
                        {
                            "message_id": message["id"],
                            "agent_id": agent_id,
                            "status": status,
                            "attempt": delivery.get("current_attempt"),
                            "interrupted": self._interrupted(room_id, message["id"], agent_id),
                        },
                    )
                )
            if status is not None:
                self._statuses[key] = status
        return events

    def _interrupted(self, room_id: str, message_id: str, agent_id: str) -> bool:
        room = self._state.rooms.get(room_id)
        message = room.by_id.get(message_id) if room is not None else None
        delivery = message.deliveries.get(agent_id) if message is not None else None
        return bool(delivery and delivery.attempts and delivery.attempts[-1].interrupted)

    def _watched_rooms(self) -> list[RoomRecord]:
        users = {s.user_id for s in self._subscriptions}
        return [
            room for room in self._state.rooms.values() if any(u in room.members for u in users)
        ]

    def _agent_states(self) -> dict[tuple[str, str], JSON]:
        state = self._state
        now = state.clock()
        out: dict[tuple[str, str], JSON] = {}
        for room in self._watched_rooms():
            for agent_id in room.members:
                if agent_id not in state.agents:
                    continue
                report = room.activity.get(agent_id)
                working = report is not None and now - report["at"] < ACTIVITY_TTL
                out[(room.id, agent_id)] = {
                    "status": "working" if working else "idle",
                    "activity": dict(report["activity"]) if working and report else None,
                    "stopped": agent_id in room.stopped,
                    "connected": state.is_online(agent_id),
                }
        return out

    @staticmethod
    def _user_members(room: RoomRecord) -> list[str]:
        return [pid for pid, m in room.members.items() if m.type == "User"]
