"""``AgentEngine``: the rooms of a running agent (admission, removal, reconnect, shutdown).

The engine owns one nursery. In it run the dispatcher (reading the link's
events) and one task per room. A room's task joins the room's two topics
(bounded parallelism with a :class:`trio.CapacityLimiter`, retried with backoff
when a join fails), then serves the :class:`~band_trio.runtime.room.Room`
until the room is removed or the agent shuts down, and finally runs
``adapter.on_cleanup(room_id)`` exactly once, shielded under
``AgentConfig.cleanup_timeout``.

Shutdown (:meth:`AgentEngine.shutdown`) fences every room at once (no new
turn starts anywhere), waits for running turns under ONE global deadline, then
cancels what is left; every room's cleanup runs concurrently, so the time a
shutdown takes does not grow with the number of rooms.

Scale: rosters come with the room listing (``include=participants``), so
start-up and reconnect cost one listing plus one ``GET /messages/next`` per
room; a roster that is truncated or omitted is read right before the room's
next turn. Joins are bounded by ``max_parallel_joins``; each room's reconcile
starts as soon as the room is joined, bounded by ``max_parallel_drains``
(:class:`~band_trio.runtime.room._pacer.RoomPacer`, the most recently active rooms
first after a reconnect). A reconnect owes each room ONE reconcile: requests made
before that reconcile runs are merged, and the re-listing that follows only
admits, retires and refreshes rosters. Idle reconciles of all rooms share one
budget (``idle_reconcile_rate`` calls per second, stalest room first).

When the adapter implements :class:`~band_trio.adapter.InterruptHandler`
(``SimpleAdapter`` does, with a no-op default), its ``on_interrupt(room_id,
mode)`` is called once for every room an applied ``interrupt`` or ``stop``
signal reached. The dispatcher only queues the call (bounded, never
blocking); a small pool of tasks runs the calls concurrently, each under
``_INTERRUPT_HOOK_TIMEOUT``, so a slow hook neither holds later signals nor
other rooms' hooks. Errors are logged and swallowed.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from functools import partial

import attrs
import trio

from band_trio._logging import get_logger, log_context
from band_trio.adapter.messages import PlatformMessage
from band_trio.adapter.protocols import InterruptHandler
from band_trio.errors import BandError
from band_trio.runtime._control import ControlHandler
from band_trio.runtime._dispatcher import Dispatcher
from band_trio.runtime._ports import ContactService, TopicLink
from band_trio.runtime.contact_events import ContactHandlerStatistics
from band_trio.runtime.room import Room, RoomServices, RoomStatistics
from band_trio.runtime.room._pacer import RoomPacer
from band_trio.wire.events import ContactEvent
from band_trio.wire.link import LinkEvent, room_topics
from band_trio.wire.models import ChatRoom

__all__ = ["AgentEngine", "EngineStatistics"]

logger = get_logger("band_trio.runtime.engine")

_LEAVE_TIMEOUT = 5.0
_ROOM_LISTING_MAX_PAGES = 1000
"""Pages of the room listing read at most (100 rooms a page: 100,000 rooms).
The REST client's default cap, the official SDK's 50 pages, would leave an
agent in more than 5,000 rooms deaf in the others."""
_CONTACT_BUFFER = 256
"""Contact events waiting for the contact handler (beyond it they are dropped, counted)."""
_MAX_HELD_SYNTHETIC = 1000
_INTERRUPT_BUFFER = 256
"""``on_interrupt`` calls waiting to run (beyond it they are dropped, logged)."""
_INTERRUPT_WORKERS = 8
"""``on_interrupt`` calls that may run at once (for different signals or rooms)."""
_INTERRUPT_HOOK_TIMEOUT = 2.0
"""Seconds one ``on_interrupt`` call may take before it is cancelled."""


@attrs.frozen
class EngineStatistics:
    """Counters of the engine (see ``Agent.statistics`` for the public record)."""

    rooms: tuple[RoomStatistics, ...]
    joining: int
    reconnects: int
    events: int
    unrouted: int
    rejected: int
    control_applied: int
    control_duplicates: int
    join_failures: int


@attrs.define(eq=False)
class _RoomSlot:
    room: Room
    generation: int
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    settled: bool = False
    # Made only while someone waits for the join to settle (start-up): an
    # agent may hold ten thousand rooms, and an Event each would stay.
    settled_event: trio.Event | None = None
    serving: bool = False
    removed: bool = False
    readd: bool = False

    def settle(self) -> None:
        self.settled = True
        if self.settled_event is not None:
            self.settled_event.set()
            self.settled_event = None

    async def wait_settled(self) -> None:
        if self.settled:
            await trio.lowlevel.checkpoint()
            return
        if self.settled_event is None:
            self.settled_event = trio.Event()
        await self.settled_event.wait()


class AgentEngine:
    """Runs the rooms of one agent.

    Args:
        services: what every room shares (REST client, ledger, adapter, ...).
        link: the agent's :class:`~band_trio.wire.link.BandLink` (for joins and leaves).
    """

    def __init__(self, services: RoomServices, link: TopicLink) -> None:
        if services.pacer is None:
            services = attrs.evolve(services, pacer=RoomPacer(services.config))
        assert services.pacer is not None
        self._pacer: RoomPacer = services.pacer
        self._svc = services
        self._link = link
        self._config = services.config
        self._rooms: dict[str, _RoomSlot] = {}
        self._limiter = trio.CapacityLimiter(self._config.max_parallel_joins)
        self._nursery: trio.Nursery | None = None
        self._accepting = True
        self._generation = 0
        self._relisting = False
        self._relist_again = False
        self._lost_rooms: set[str] = set()
        self._rejoining: set[str] = set()
        """Agent-level topics being joined again (one task each)."""
        self._reconnected = trio.Event()
        """Set at the next reconnect (then replaced): wakes rooms waiting to retry a join."""
        self._reconnects = 0
        self._join_failures = 0
        self.rooms_removed = 0
        """Rooms removed so far (a running count)."""
        self._all_done = trio.Event()
        self._all_done.set()
        # Forcing (cancellation, a second signal) gives every cleanup still to
        # run one absolute deadline; the scopes below are tightened to it.
        self._forced_deadline: float | None = None
        self._drain_scope: trio.CancelScope | None = None
        self._cleanup_scopes: set[trio.CancelScope] = set()
        self._held_synthetic: dict[str, list[PlatformMessage]] = {}
        self._contacts: ContactService | None = None
        self._contact_send, self._contact_recv = trio.open_memory_channel[ContactEvent](
            _CONTACT_BUFFER
        )
        self._contact_overflows = 0
        adapter = services.adapter
        self._on_interrupt: Callable[[str, str], Awaitable[None]] | None = (
            adapter.on_interrupt if isinstance(adapter, InterruptHandler) else None
        )
        self._interrupt_send, self._interrupt_recv = trio.open_memory_channel[tuple[str, str]](
            _INTERRUPT_BUFFER
        )
        self.control = ControlHandler(
            agent_id=services.agent_id,
            dedupe_size=self._config.control_dedupe_size,
            notify=self._queue_interrupt if self._on_interrupt is not None else None,
        )
        self._changes = services.changes
        self.dispatcher = Dispatcher(self, self.control, changed=self._changes.notify)

    # ------------------------------------------------------------------ queries

    def room(self, room_id: str) -> Room | None:
        """The room object for ``room_id`` (joining or serving), else None."""
        slot = self._rooms.get(room_id)
        if slot is None or slot.removed:
            return None
        return slot.room

    def serving_rooms(self) -> Mapping[str, Room]:
        """The rooms being served now, by id."""
        return {rid: s.room for rid, s in self._rooms.items() if s.serving and not s.removed}

    def bulk_reconciles_settled(self) -> bool:
        """No start-up or reconnect reconcile is waiting or running (cheap).

        Once :meth:`serve` has started, every room listed at start-up has
        joined (or is retrying) and asked for its reconcile, so this turning true
        means start-up has settled; an added room or a reconnect makes it
        false again until their reconciles are done.
        """
        bulk = self._pacer.bulk
        return not bulk.waiting and not bulk.running

    @property
    def reconcile_epoch(self) -> int:
        """Bumped by every reconnect (or lost room topic) that reconciles the rooms again."""
        return self._pacer.epoch

    def statistics(self) -> EngineStatistics:
        """The engine's counters now."""
        d = self.dispatcher
        return EngineStatistics(
            rooms=tuple(s.room.statistics() for s in self._rooms.values() if s.serving),
            joining=sum(1 for s in self._rooms.values() if not s.serving and not s.removed),
            reconnects=self._reconnects,
            events=d.events,
            unrouted=d.unrouted,
            rejected=d.rejected,
            control_applied=self.control.applied,
            control_duplicates=self.control.duplicates,
            join_failures=self._join_failures,
        )

    # ------------------------------------------------------------------ serve

    async def serve(
        self,
        events: trio.MemoryReceiveChannel[LinkEvent],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Route events and run rooms until cancelled.

        ``task_status.started()`` is called once the existing rooms are listed
        and their joins settled (joined, or the first attempt failed and a
        retry is scheduled).
        """
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self._on_interrupt is not None:
                for _ in range(_INTERRUPT_WORKERS):
                    nursery.start_soon(self._interrupt_worker, self._on_interrupt)
            nursery.start_soon(self.dispatcher.run, events)
            nursery.start_soon(self._pacer.run)
            try:
                listed = await self._list_rooms()
            except BandError as exc:
                # Start anyway and keep trying in the background: a platform
                # hiccup at start-up must not keep the agent down.
                logger.warning("could not list rooms at startup: %s; retrying", exc)
                nursery.start_soon(self._relist, True)
            else:
                self._admit_listed(listed)
                # This task lives as long as the agent: the listing (rows,
                # rosters, decoded strings) must not stay alive in its frame.
                del listed
            await self._wait_rooms_settled()
            task_status.started()

    async def _wait_rooms_settled(self) -> None:
        # Its own frame: a loop variable left in serve()'s frame would keep
        # the last room alive after it has left.
        for slot in list(self._rooms.values()):
            await slot.wait_settled()

    def _admit_listed(self, listed: list[ChatRoom]) -> None:
        for chat in listed:
            self.add_room(chat.id, listed=chat)

    async def _list_rooms(self) -> list[ChatRoom]:
        rooms: list[ChatRoom] = []
        listing = self._svc.rest.iter_chats(
            include_participants=True, max_pages=_ROOM_LISTING_MAX_PAGES
        )
        async for chat in listing:
            rooms.append(chat)
        return rooms

    # ------------------------------------------------------------------ admission

    def add_room(self, room_id: str, *, listed: ChatRoom | None = None) -> None:
        """Start serving ``room_id`` (idempotent; never blocks).

        Args:
            room_id: the room.
            listed: the room's row of the room listing, when it came from one
                (its roster, if complete, spares a ``GET /participants``).
        """
        if not self._accepting or self._nursery is None:
            return
        slot = self._rooms.get(room_id)
        if slot is not None:
            if slot.removed:
                slot.readd = True  # start afresh once the old one is cleaned up
            elif listed is not None:
                _offer_listed_roster(slot.room, listed)
            return
        self._generation += 1
        self._svc.ledger.serve_room(room_id)
        room = Room(room_id, self._svc)
        if listed is not None:
            _offer_listed_roster(room, listed)
        slot = _RoomSlot(room=room, generation=self._generation)
        self._rooms[room_id] = slot
        for message in self._held_synthetic.pop(room_id, ()):
            slot.room.enqueue_synthetic(message)
        self._all_done = trio.Event()
        # Every record of the room's work (its turns, REST calls, cleanup)
        # carries its id: the task starts with a copy of this context, so
        # nothing has to hold the id for the task's lifetime.
        with log_context(room_id=room_id):
            self._nursery.start_soon(self._run_room, slot, name=f"room {room_id}")
        self._changes.notify()

    def remove_room(self, room_id: str) -> None:
        """Stop serving ``room_id``: cancel its turn, then clean up once (never blocks)."""
        slot = self._rooms.get(room_id)
        if slot is None:
            return
        slot.readd = False
        if slot.removed:
            return
        slot.removed = True
        self.rooms_removed += 1
        logger.info("room %s removed; leaving it", room_id)
        slot.room.fence()
        slot.scope.cancel()
        self._changes.notify()

    async def _run_room(self, slot: _RoomSlot) -> None:
        room = slot.room
        room_id = room.room_id
        served = False
        joined = False
        try:
            with slot.scope:
                await self._join_with_retries(slot)
                joined = True
                slot.settle()
                slot.serving = True
                served = True
                self._changes.notify()
                await room.serve()
        finally:
            slot.settle()
            slot.serving = False
            with trio.CancelScope(shield=True):
                if served:
                    await self._cleanup_room(room_id)
                if joined and slot.removed and self._accepting:
                    with trio.move_on_after(_LEAVE_TIMEOUT):
                        await self._leave(room_id)
            if self._rooms.get(room_id) is slot:
                del self._rooms[room_id]
                if slot.removed and not (slot.readd and self._accepting):
                    # Left for good (a shutdown leaves its rooms served).
                    self._svc.ledger.release_room(room_id)
            if not self._rooms:
                self._all_done.set()
            if slot.readd and self._accepting:
                self.add_room(room_id)
            self._changes.notify()

    async def _cleanup_room(self, room_id: str) -> None:
        with self._bounded_cleanup(self._config.cleanup_timeout) as scope:
            try:
                await self._svc.adapter.on_cleanup(room_id)
            except Exception:
                logger.exception("room %s: on_cleanup failed", room_id)
        if scope.cancelled_caught:
            logger.warning(
                "room %s: on_cleanup did not finish within %ss",
                room_id,
                self._config.cleanup_timeout,
            )

    async def _join_with_retries(self, slot: _RoomSlot) -> None:
        """Join the room, retrying until joined (see :meth:`_until_joined`;
        the room's removal cancels it). Startup does not wait for the retries."""
        room_id = slot.room.room_id

        async def join() -> None:
            try:
                async with self._limiter:
                    await self._join(room_id)
            except BandError:
                self._join_failures += 1
                self._changes.notify()
                slot.settle()
                raise

        await self._until_joined(f"room {room_id}", join)
        logger.info("room %s: joined", room_id)

    async def _until_joined(self, what: str, join: Callable[[], Awaitable[None]]) -> None:
        """Call ``join`` until it does not raise :class:`BandError`: at once, after
        each of ``join_retry_delays``, then every ``idle_resync_interval`` or at
        the next reconnect, whichever comes first. A failure is a warning while
        the delays last, an error once they are spent, then quiet."""
        delays = (0.0, *self._config.join_retry_delays)
        every = self._config.idle_resync_interval
        for attempt in itertools.count(1):
            if attempt <= len(delays):
                await trio.sleep(delays[attempt - 1])
            else:
                with trio.move_on_after(every):
                    await self._reconnected.wait()
            try:
                await join()
            except BandError as exc:
                if attempt < len(delays):
                    logger.warning("%s: join attempt %d failed: %s", what, attempt, exc)
                elif attempt == len(delays):
                    logger.error(
                        "%s: join attempt %d failed: %s; retrying every %g s and at each reconnect",
                        what,
                        attempt,
                        exc,
                        every,
                    )
                else:
                    logger.debug("%s: join attempt %d failed: %s", what, attempt, exc)
                continue
            return

    async def _join(self, room_id: str) -> None:
        chat_topic, participants_topic = room_topics(room_id)
        await self._link.join(chat_topic)
        try:
            await self._link.join(participants_topic)
        except BaseException:
            # Roll the first join back so a retry starts clean.
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(_LEAVE_TIMEOUT),
                contextlib.suppress(BandError),
            ):
                await self._link.leave(chat_topic)
            raise

    async def _leave(self, room_id: str) -> None:
        for topic in room_topics(room_id):
            try:
                await self._link.leave(topic)
            except BandError as exc:
                logger.debug("room %s: leaving %s failed: %s", room_id, topic, exc)

    # ------------------------------------------------------------------ reconnect

    def on_reconnected(self, *, count: bool = True, lost: Sequence[str] = ()) -> None:
        """The socket came back: reconcile once per room (the most
        recently active first), re-list rooms, rejoin, refresh rosters.

        Args:
            count: count it as a reconnect (not when a single topic was lost).
            lost: topics whose rejoin on the new socket the platform refused:
                recovered as :meth:`on_topic_lost` recovers one.
        """
        if count:
            self._reconnects += 1
            self._reconnected.set()
            self._reconnected = trio.Event()
        if not self._accepting or self._nursery is None:
            return
        if lost:
            logger.warning("%d topic(s) not rejoined after the reconnect; recovering", len(lost))
            for topic in lost:
                self._recover_topic(topic)
        # Owed at once, not only after the (possibly slow) re-listing below:
        # messages missed meanwhile are reconciled now, and a turn starting
        # before the listing arrives reads the roster first (participants
        # may have changed while the socket was down).
        self._pacer.next_epoch()
        serving = [s.room for s in self._rooms.values() if s.serving and not s.removed]
        serving.sort(key=lambda room: room.last_active, reverse=True)
        for room in serving:
            room.request_bulk_reconcile(refresh_roster=True)
        self._request_relist()

    def _request_relist(self) -> None:
        """Re-list the rooms now, or once more after the re-listing in progress."""
        if self._nursery is None:
            return
        if self._relisting:
            self._relist_again = True
            return
        self._nursery.start_soon(self._relist, False)

    async def _relist(self, retry_until_listed: bool) -> None:
        self._relisting = True
        delays = iter(self._config.join_retry_delays)
        try:
            while self._accepting:
                self._relist_again = False
                generation = self._generation
                try:
                    listed: dict[str, ChatRoom] | None = {
                        chat.id: chat for chat in await self._list_rooms()
                    }
                except BandError as exc:
                    logger.warning("could not re-list rooms: %s", exc)
                    listed = None
                if listed is not None:
                    for room_id, slot in list(self._rooms.items()):
                        # A room admitted while we listed may be missing from the list.
                        if room_id not in listed and slot.generation <= generation:
                            self.remove_room(room_id)
                    for room_id, chat in listed.items():
                        # New rooms are admitted (and reconcile once joined);
                        # rooms already served take the listed roster.
                        self.add_room(room_id, listed=chat)
                lost, self._lost_rooms = self._lost_rooms, set()
                rejoined: list[Room] = []
                for room_id, slot in list(self._rooms.items()):
                    if slot.serving and not slot.removed:
                        # A topic whose rejoin was refused is joined again here
                        # (a no-op for topics the link still holds).
                        await self._ensure_joined(room_id)
                        if room_id in lost:
                            rejoined.append(slot.room)
                if rejoined:
                    # Pushes to a room between losing its topic and joining it
                    # again are missed: it owes one more reconcile.
                    self._pacer.next_epoch()
                    for room in rejoined:
                        room.request_bulk_reconcile(refresh_roster=False)
                if listed is None and retry_until_listed:
                    delay = next(delays, self._config.idle_resync_interval)
                    await trio.sleep(delay)
                    continue
                if not self._relist_again:
                    return
        finally:
            self._relisting = False

    async def _ensure_joined(self, room_id: str) -> None:
        try:
            async with self._limiter:
                await self._join(room_id)
        except BandError as exc:
            self._join_failures += 1
            self._changes.notify()
            logger.warning("room %s: rejoin failed: %s", room_id, exc)

    def on_topic_lost(self, topic: str) -> None:
        """A topic ended without us leaving it (``phx_close``, a refused rejoin).

        An agent-level topic (``agent_control:``, ``agent_rooms:``, ``agent_contacts:``) is joined
        again with backoff; for rooms, the re-listing below rejoins the rooms
        the agent is still in and retires the others. Either way the rooms are
        re-listed and reconciled, since pushes may have been missed.
        """
        logger.warning("topic %s lost; recovering", topic)
        if not self._accepting or self._nursery is None:
            return
        self._recover_topic(topic)
        self.on_reconnected(count=False)

    def _recover_topic(self, topic: str) -> None:
        """Rejoin an agent-level topic with backoff; mark a room's topic lost
        (the re-listing rejoins it and the room reconciles once more)."""
        assert self._nursery is not None
        room_id = topic.partition(":")[2]
        if room_id in self._rooms and topic in room_topics(room_id):
            self._lost_rooms.add(room_id)
        if (
            topic.startswith(("agent_control:", "agent_rooms:", "agent_contacts:"))
            and topic not in self._rejoining
        ):
            self._rejoining.add(topic)
            self._nursery.start_soon(self._rejoin_topic, topic)

    async def _rejoin_topic(self, topic: str) -> None:
        """Join an agent-level topic again until it is joined (without it the
        agent hears no control signal, room or contact event again)."""
        try:
            await self._until_joined(topic, partial(self._link.join, topic))
        finally:
            self._rejoining.discard(topic)
        logger.info("%s joined again", topic)
        if topic.startswith("agent_rooms:"):
            # Rooms added or removed before the topic was back went unheard.
            self._request_relist()

    # ------------------------------------------------------------------ contacts (RoomSink)

    def active_room_ids(self) -> list[str]:
        """The rooms being served now (``RoomSink``)."""
        return list(self.serving_rooms())

    def inject_system_message(self, room_id: str, text: str) -> None:
        """Queue ``text`` as ``contacts_msg`` for the room's next turn (``RoomSink``)."""
        room = self.room(room_id)
        if room is not None:
            room.inject_system_message(text)

    def enqueue_synthetic(self, room_id: str, message: PlatformMessage) -> None:
        """Queue a synthetic hub message; held until the room is served (``RoomSink``)."""
        room = self.room(room_id)
        if room is not None:
            room.enqueue_synthetic(message)
            return
        held = self._held_synthetic.setdefault(room_id, [])
        if len(held) >= _MAX_HELD_SYNTHETIC:
            logger.warning(
                "room %s: too many held synthetic messages; dropping the oldest", room_id
            )
            del held[0]
        held.append(message)

    def start_contacts(self, handler: ContactService) -> None:
        """Hand contact events to ``handler`` (a ``ContactEventHandler``), in order,
        in a task of the engine's nursery."""
        assert self._nursery is not None
        self._contacts = handler
        self._nursery.start_soon(self._contacts_loop, handler)

    def contact_statistics(self) -> ContactHandlerStatistics | None:
        """The contact handler's counters (``ContactHandlerStatistics``), or None."""
        return None if self._contacts is None else self._contacts.statistics()

    def on_contact_event(self, event: ContactEvent) -> None:
        """Queue a contact event for the handler (never blocks)."""
        if self._contacts is None:
            return
        try:
            self._contact_send.send_nowait(event)
        except trio.WouldBlock:
            self._contact_overflows += 1
            logger.warning("contact handler is behind; dropped %s", type(event).__name__)

    async def _contacts_loop(self, handler: ContactService) -> None:
        try:
            await handler.start()
        except BandError as exc:
            # The handler retries lazily on the first event.
            logger.warning("contact handling: could not prepare the hub room: %s", exc)
        async for event in self._contact_recv:
            await handler.handle(event)
            self._changes.notify()

    # ------------------------------------------------------------------ on_interrupt

    def _queue_interrupt(self, room_id: str, mode: str) -> None:
        try:
            self._interrupt_send.send_nowait((room_id, mode))
        except trio.WouldBlock:
            logger.warning(
                "on_interrupt is behind; not calling it for %s in room %s", mode, room_id
            )

    async def _interrupt_worker(self, hook: Callable[[str, str], Awaitable[None]]) -> None:
        async for room_id, mode in self._interrupt_recv:
            with trio.move_on_after(_INTERRUPT_HOOK_TIMEOUT) as scope:
                try:
                    await hook(room_id, mode)
                except Exception:
                    logger.exception("adapter on_interrupt failed for room %s", room_id)
            self._changes.notify()
            if scope.cancelled_caught:
                logger.warning(
                    "adapter on_interrupt(%s) for room %s took over %ss; cancelled",
                    mode,
                    room_id,
                    _INTERRUPT_HOOK_TIMEOUT,
                )

    # ------------------------------------------------------------------ shutdown

    def fence(self) -> None:
        """Stop taking work everywhere at once: no room is added, no turn starts."""
        self._accepting = False
        for slot in self._rooms.values():
            slot.room.fence()

    async def shutdown(self, deadline: float) -> bool:
        """Fence, let running turns finish until ``deadline``, then cancel every room.

        Each room's ``on_cleanup`` runs concurrently (shielded, bounded by
        ``cleanup_timeout``); this returns once they all ran. :meth:`force`,
        before or during the call, ends the wait for running turns at once and
        puts every cleanup under its one short deadline.

        Returns:
            True when every running turn finished before the deadline.
        """
        self.fence()
        graceful = True
        with trio.move_on_at(deadline) as scope:
            self._drain_scope = scope
            if self._forced_deadline is not None:
                scope.cancel()
            for slot in list(self._rooms.values()):
                if slot.serving:
                    await slot.room.wait_parked()
        self._drain_scope = None
        if scope.cancelled_caught:
            graceful = False
            if self._forced_deadline is None:
                logger.warning("shutdown deadline reached; cancelling the turns still running")
        for slot in list(self._rooms.values()):
            slot.scope.cancel()
        # The cleanups are bounded on their own; the margin covers the
        # shielded "idle" report of a cancelled turn before its room's cleanup.
        with self._bounded_cleanup(self._config.cleanup_timeout + 1.0):
            await self._all_done.wait()
        return graceful

    def force(self) -> None:
        """Cancellation means now: stop waiting for running turns and cancel them.

        Never blocks. Every room is fenced and cancelled at once (a cancelled
        turn's message stays ``processing`` on the platform and runs again
        after a restart; its attempt is not charged), and every room's
        ``on_cleanup`` still to run or running gets ONE deadline,
        ``cleanup_timeout`` from now. Idempotent: a second call changes nothing.
        """
        self.fence()
        if self._forced_deadline is None:
            self._forced_deadline = trio.current_time() + self._config.cleanup_timeout
            logger.info("cancelling the running turns now")
        for scope in self._cleanup_scopes:
            scope.deadline = min(scope.deadline, self._forced_deadline)
        if self._drain_scope is not None:
            self._drain_scope.cancel()
        for slot in list(self._rooms.values()):
            slot.scope.cancel()

    @property
    def forced_deadline(self) -> float | None:
        """The one cleanup deadline set by :meth:`force`, or None."""
        return self._forced_deadline

    @contextlib.contextmanager
    def _bounded_cleanup(self, timeout: float) -> Iterator[trio.CancelScope]:
        """A scope ending ``timeout`` from now, or at the forced deadline if sooner."""
        deadline = trio.current_time() + timeout
        if self._forced_deadline is not None:
            deadline = min(deadline, self._forced_deadline)
        with trio.CancelScope(deadline=deadline) as scope:
            self._cleanup_scopes.add(scope)
            try:
                yield scope
            finally:
                self._cleanup_scopes.discard(scope)


def _offer_listed_roster(room: Room, chat: ChatRoom) -> None:
    # Complete only when the listing carried the roster and did not cut it
    # at its row cap.
    complete = chat.participants is not None and chat.participants_truncated is not True
    room.offer_roster(chat.participants, complete)
