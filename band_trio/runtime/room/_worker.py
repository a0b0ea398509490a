"""One room of a running agent: intake, turns and reconciliation (the Trio shell).

Each room the agent serves is a :class:`Room` running in its own child nursery
(``AgentEngine`` owns them). Its worker task does three jobs, strictly one
thing at a time, which is what makes a room's turns serial *by construction*
(no locks, no race between the live path and the backlog path):

* **intake** reads the room's bounded inbox (a
  :class:`~band_trio.runtime.room._inbox.Inbox`), filled by the dispatcher
  without blocking: participant events update the roster, a ``message_created``
  push runs a turn for that message (the WebSocket is the doorbell);
* **turns** run one message at a time, each inside its own cancel scope (an
  interrupt, stop, platform stop or timeout cancels exactly that scope);
* **reconciliation** reads ``GET /messages/next`` (the mailbox) at start, when
  the inbox overflowed, when a reconcile was requested (reconnect, play), after a
  deferred outcome, and on a timer with backoff. When ``/next`` is stuck on a
  message this process will never run again (failed for good), the pass pages
  ``GET /messages`` to step past it, so one poison message never wedges a room.
  Under an engine (a :class:`~band_trio.runtime.room._pacer.RoomPacer`), the
  start-up and reconnect reconciles wait for a place among the agent's bulk
  reconciles, and the timer's checks for the agent-wide idle budget; the pacer
  also keeps the room's time (an idle room waits on its inbox alone, with
  no cancel scope or deadline of its own).

The room's flags and the order of its worker's steps are its
:class:`~band_trio.runtime.core._room_machine.RoomMachine` (sans-io): the worker
tells it what happened and does what it answers, and every pacer call it asks
for is made in one place (``Room._pace``). The other decisions are made by
sans-io cores and only executed here or in the message path
(:class:`~band_trio.runtime.room._turn_shell.RoomTurns`): whether a message runs
(:mod:`~band_trio.runtime.core._admission`), what a turn's end means for its
message (:mod:`~band_trio.runtime.core._settlement`), what a reconcile pass
concludes (:mod:`~band_trio.runtime.core._reconcile_pass`) and when the next one is due
(:mod:`~band_trio.runtime.core._reconcile_timer`).

Memory bound: the inbox holds at most ``AgentConfig.inbox_size`` events. When it
is full the dispatcher does not block and does not drop silently: the room is
marked "needs reconcile", the overflow is counted in :meth:`Room.statistics`, and
the next reconcile recovers the messages from ``/next`` (and the participant
list is read again before the next turn, since participant events may have
been lost too).

Exactly-once effect comes from the :class:`~band_trio.runtime.claims.ledger.ClaimsLedger`:
a message never runs twice at once, never runs again once completed, a reply
accepted by the platform is journaled at once (so a crash before the
``processed`` mark only acks after a restart), and a message that keeps failing
is marked failed after ``AgentConfig.max_attempts`` and stepped past.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Final

import trio

from band_trio._logging import get_logger, log_context
from band_trio.adapter.failures import ERROR_EVENT_TEXT, MISSING_REPLY_TEXT
from band_trio.adapter.messages import PlatformMessage
from band_trio.errors import BandError
from band_trio.runtime.core import _admission as admission
from band_trio.runtime.core._reconcile_pass import MessageOutcome, ReconcilePass, ReconcileStep
from band_trio.runtime.core._room_machine import Pace, Step
from band_trio.runtime.core._schedule import ReconcileOutcome
from band_trio.runtime.core._settlement import Abort
from band_trio.runtime.room._inbox import Inbox, TimedOut
from band_trio.runtime.room._turn_shell import RoomTurns
from band_trio.runtime.room.services import (
    ParticipantCallback,
    RoomServices,
    RoomStatistics,
    ToolsFactory,
)
from band_trio.wire.events import MessageCreated, ParticipantAdded, ParticipantRemoved
from band_trio.wire.models import ChatMessage, ChatParticipant

__all__ = [
    "ERROR_EVENT_TEXT",
    "MISSING_REPLY_TEXT",
    "ParticipantCallback",
    "Room",
    "RoomServices",
    "RoomStatistics",
    "ToolsFactory",
]

logger = get_logger("band_trio.runtime.room")


_MAX_SYSTEM_LINES: Final = 100
"""System lines (contact broadcasts) kept for a room's next turn; oldest dropped."""

_MAX_SYNTHETIC: Final = 1000
"""Synthetic (contacts hub) messages queued in a room; oldest dropped."""

_PARTICIPANT_CALLBACK_TIMEOUT: Final = 10.0
"""Seconds a participant callback may hold its room's worker before it is cancelled."""

_SCAN_PAGE_SIZE: Final = 100
_SCAN_MAX_PAGES: Final = 50


class _Kick:
    """Inbox marker that wakes the worker to look at its flags."""

    __slots__ = ()


_KICK: Final = _Kick()

InboxItem = MessageCreated | ParticipantAdded | ParticipantRemoved | _Kick


class Room(RoomTurns):
    """One room the agent serves.

    The dispatcher talks to it only through non-blocking methods
    (:meth:`deliver`, :meth:`request_reconcile`, :meth:`interrupt`, :meth:`stop`,
    :meth:`play`, :meth:`fence`); :meth:`serve` is its worker. One message's
    way (admission, turn, settlement) is :class:`~band_trio.runtime.room._turn_shell.RoomTurns`.

    Args:
        room_id: the room.
        services: what the agent's rooms share.
    """

    # A process may hold ten thousand rooms: no per-instance __dict__.
    __slots__ = ("_capacity", "_inbox", "_kick_pending", "_pacer", "_parked", "_parked_event")

    def __init__(self, room_id: str, services: RoomServices) -> None:
        super().__init__(room_id, services)
        self._capacity = services.config.inbox_size
        self._inbox: Inbox[InboxItem] = Inbox(self._capacity)
        self._pacer = services.pacer
        self._kick_pending = False
        self._parked = False
        self._parked_event: trio.Event | None = None  # only while someone waits

    def __repr__(self) -> str:
        return f"Room({self.room_id!r})"

    # ------------------------------------------------------------------ dispatcher side

    def deliver(self, item: MessageCreated | ParticipantAdded | ParticipantRemoved) -> bool:
        """Queue a room event without blocking.

        Returns:
            False when the inbox was full: the event was not queued, the room
            is marked for a reconcile (and roster refresh) and the overflow counted.
        """
        if isinstance(item, MessageCreated):
            self._m.message_arrived(trio.current_time())
        try:
            self._inbox.put_nowait(item)
        except trio.WouldBlock:
            self._counts.overflows += 1
            self._m.overflowed()
            logger.warning(
                "room %s: inbox full (%d); %s not queued, the room will resync from /next",
                self.room_id,
                self._capacity,
                type(item).__name__,
            )
            return False
        except trio.ClosedResourceError:
            return False
        return True

    def request_reconcile(self, *, refresh_roster: bool = False) -> None:
        """Ask for a reconcile pass soon (coalesced: many requests, one reconcile)."""
        self._m.reconcile_asked(refresh_roster=refresh_roster)
        self._kick()

    def request_bulk_reconcile(self, *, refresh_roster: bool = True) -> None:
        """Owe one reconcile pass that starts after now (start-up, reconnect).

        With a pacer the reconcile waits for a place among the agent's bulk reconciles
        (the most recently active rooms first); requests made before that
        reconcile starts, or while a reconcile that will still call ``/next`` after
        now runs, are merged into it. Without a pacer this is
        :meth:`request_reconcile`. The roster is refreshed from the next room
        listing offered (:meth:`offer_roster`), or else read before the next turn.
        """
        if self._pacer is None:
            self.request_reconcile(refresh_roster=refresh_roster)
            return
        self._pace(self._m.bulk_reconcile_owed(self._pacer.epoch, refresh_roster=refresh_roster))
        self._kick()

    def _pace(self, pace: int) -> None:
        """Carry out the pacer calls the room's machine asked for (the one
        place a room talks to its pacer)."""
        pacer = self._pacer
        if not pace or pacer is None:
            return
        m = self._m
        if pace & Pace.WITHDRAW_IDLE:
            pacer.withdraw_idle(self.room_id)
        if pace & Pace.END_BULK:
            pacer.end_bulk(self.room_id)
        if pace & Pace.REQUEST_BULK:
            pacer.request_bulk(self, m.last_active)
        if pace & Pace.WANT_IDLE:
            pacer.want_idle(self, m.last_reconcile)
        if pace & Pace.WAKE:
            if math.isinf(m.wake_at):
                pacer.cancel_wake(self.room_id)
            else:
                pacer.wake_at(self, m.wake_at)
        if pace & Pace.FORGET:
            pacer.forget(self.room_id)

    def _epoch(self) -> int:
        return self._pacer.epoch if self._pacer is not None else 0

    def offer_roster(self, participants: Sequence[ChatParticipant] | None, complete: bool) -> None:
        """The roster as the room listing gave it (``include=participants``).

        A complete roster is applied by the worker before its next step and
        spares the separate ``GET /participants``; an omitted or truncated
        one leaves the roster to be read before the next turn.
        """
        if participants is not None and complete:
            # The same rows recur in many rooms (the agent's own, a user's):
            # share one object each instead of one per room.
            share = self._svc.participant_rows.share
            self._offered_roster = tuple(share(p) for p in participants)
        else:
            self._offered_roster = None
        self._m.roster_offered(participants is not None and complete)

    @property
    def last_active(self) -> float:
        """When a message last arrived or a turn last started (``-inf``: never)."""
        return self._m.last_active

    def grant_bulk(self) -> None:
        """The pacer gives this room a place for its bulk reconcile (never blocks)."""
        pace = self._m.bulk_granted()
        if pace:
            self._pace(pace)
            return
        self._kick()

    def grant_idle(self) -> None:
        """The pacer gives this room its idle reconcile (never blocks)."""
        self._m.idle_granted()
        self._kick()

    def wake_due(self) -> None:
        """The time this room asked the pacer for has come (never blocks)."""
        self._m.wake_fired()
        self._inbox.wake()

    def interrupt(self) -> bool:
        """Cancel the running turn; its message is then marked processed.

        Returns:
            True when a turn was running.
        """
        turn = self._turn
        if turn is None:
            return False
        turn.abort(Abort.INTERRUPT)
        return True

    def stop(self) -> None:
        """Pause the room: cancel the running turn (its message stays processing)
        and claim nothing new until :meth:`play` (or a probe finds work)."""
        self._m.stop(trio.current_time())
        if self._turn is not None:
            self._turn.abort(Abort.STOP)

    def play(self) -> None:
        """Resume a stopped room and reconcile at once."""
        self._m.play(trio.current_time())
        self._kick()

    def inject_system_message(self, text: str) -> None:
        """Queue a system line for the next turn's ``contacts_msg`` (delivered once,
        consumed when that turn commits its context)."""
        if self._system_lines is None:
            self._system_lines = deque(maxlen=_MAX_SYSTEM_LINES)
        if len(self._system_lines) == self._system_lines.maxlen:
            logger.warning(
                "room %s: too many pending system lines; dropping the oldest", self.room_id
            )
        self._system_lines.append(text)

    def enqueue_synthetic(self, message: PlatformMessage) -> None:
        """Queue a synthetic message (contacts hub): it runs as a turn with no
        claim, no lifecycle marks and no activity reports, and is not judged."""
        if self._synthetic is None:
            self._synthetic = deque(maxlen=_MAX_SYNTHETIC)
        if any(m.id == message.id for m in self._synthetic):
            return
        if len(self._synthetic) == self._synthetic.maxlen:
            logger.warning("room %s: synthetic queue full; dropping the oldest", self.room_id)
        self._synthetic.append(message)
        self._kick()

    def fence(self) -> None:
        """Shutdown: start no new turn (the running one may finish)."""
        self._m.fence()
        self._kick()

    @property
    def stopped(self) -> bool:
        """True while the room is paused by a ``stop`` control."""
        return self._m.stopped

    @property
    def busy(self) -> bool:
        """True while a turn is running."""
        return self._turn is not None

    async def wait_parked(self) -> None:
        """After :meth:`fence`: wait until the worker stopped between two steps
        (the running turn, if any, finished and no REST call is in flight)."""
        if self._parked:
            await trio.lowlevel.checkpoint()
            return
        if self._parked_event is None:
            self._parked_event = trio.Event()
        await self._parked_event.wait()

    async def wait_idle(self) -> None:
        """Wait until no turn is running."""
        while (turn := self._turn) is not None:
            await turn.done.wait()

    def statistics(self) -> RoomStatistics:
        """The room's counters now."""
        counts = self._counts
        return RoomStatistics(
            room_id=self.room_id,
            turns=counts.turns,
            completed=counts.completed,
            failures=counts.failures,
            failed_for_good=counts.failed_for_good,
            interrupted=counts.interrupted,
            overflows=counts.overflows,
            resyncs=counts.resyncs,
            skipped=counts.skipped,
            inbox_depth=self._inbox.depth,
            inbox_capacity=self._capacity,
            stopped=self._m.stopped,
            turn_running=self._turn is not None,
            replies_recovered=counts.replies_recovered,
        )

    def _kick(self) -> None:
        if self._kick_pending:
            return
        try:
            self._inbox.put_nowait(_KICK)
        except (trio.WouldBlock, trio.ClosedResourceError):
            # A full inbox wakes the worker anyway; the flags carry the request.
            return
        self._kick_pending = True

    # ------------------------------------------------------------------ worker

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the room until cancelled (room removed, agent shutting down).

        Cancellation: a running turn is cancelled with it; its message stays
        ``processing`` on the platform (a later ``/next`` replays it) and its
        attempt is not charged.
        """
        m = self._m
        m.start(self._config, self._svc.rng, trio.current_time())
        task_status.started()
        # The worker loop is written out here rather than in a helper
        # coroutine: an idle room's task waits with one frame less. Its
        # order of steps is the machine's (RoomMachine.next_step).
        try:
            while True:
                try:
                    step = m.next_step(synthetic_waiting=bool(self._synthetic))
                    if step is Step.PARK:
                        # Parked between steps: cancelling now interrupts no REST call.
                        self._parked = True
                        if self._parked_event is not None:
                            self._parked_event.set()
                        await trio.sleep_forever()
                    if step is Step.SYNTHETIC:
                        assert self._synthetic
                        await self._run_synthetic(self._synthetic[0])
                        self._svc.changes.notify()
                        continue
                    if self._offered_roster is not None:
                        self._apply_offered_roster()
                    if step is Step.RECONCILE:
                        await self._reconcile()
                        self._svc.changes.notify()
                        continue
                    if step is Step.ASK_BULK:
                        self._pace(m.ask_bulk())
                        continue
                    item: InboxItem | None = None
                    if self._pacer is None:
                        item = await self._next_item_alone(m.due)
                    elif (pace := m.arm(m.due, trio.current_time())) is not None:
                        # The pacer keeps every room's time: an idle room
                        # holds no cancel scope and no deadline of its own.
                        self._pace(pace)
                        got = await self._inbox.get()
                        if not isinstance(got, TimedOut):
                            item = got
                        # Not kept in the frame while the room waits for its
                        # next item: it would hold the last message for hours.
                        del got
                    else:
                        await trio.lowlevel.checkpoint()
                    if item is None:
                        self._pace(m.timer_fired(trio.current_time()))
                        continue
                    await self._on_item(item)
                    self._svc.changes.notify()
                except Exception:
                    # Supervised: a bug must neither kill the agent nor leave
                    # a deaf room behind.
                    logger.exception("room %s: worker failed; restarting it", self.room_id)
                    m.worker_failed()
                    await trio.sleep(self._config.retry_delay)
        finally:
            self._inbox.close()
            self._pace(m.stopped_serving())

    async def _next_item_alone(self, due: float) -> InboxItem | None:
        """Without a pacer: the next inbox item, or None once ``due`` has passed."""
        with trio.move_on_at(due):
            got = await self._inbox.get()
            return None if isinstance(got, TimedOut) else got
        return None

    async def _on_item(self, item: InboxItem) -> None:
        try:
            await self._handle_item(item)
        except BandError as exc:
            logger.warning("room %s: %s not handled: %s", self.room_id, type(item).__name__, exc)

    async def _handle_item(self, item: InboxItem) -> None:
        if isinstance(item, _Kick):
            self._kick_pending = False
        elif isinstance(item, ParticipantAdded):
            try:
                self._roster.apply_added(item)
            except BandError as exc:
                logger.warning("room %s: ignoring participant_added: %s", self.room_id, exc)
                return
            await self._participant_callback(self._svc.on_participant_added, item)
        elif isinstance(item, ParticipantRemoved):
            self._roster.apply_removed(item.id)
            await self._participant_callback(self._svc.on_participant_removed, item)
        elif isinstance(item, MessageCreated):
            if admission.is_own_message(item.sender_type, item.sender_id, self._svc.agent_id):
                self._counts.skipped += 1  # own echo: never a turn, no REST call
                return
            if not self._m.runs_pushed_message():
                return
            outcome = await self._guarded_process(item)
            if outcome is MessageOutcome.RETRY:
                self._m.deferred_message(trio.current_time())

    async def _participant_callback(
        self, callback: ParticipantCallback | None, event: ParticipantAdded | ParticipantRemoved
    ) -> None:
        # After the roster update (the callback sees the roster it describes);
        # bounded, and a failure never reaches the worker.
        if callback is None:
            return
        with trio.move_on_after(_PARTICIPANT_CALLBACK_TIMEOUT) as scope:
            try:
                await callback(self.room_id, event)
            except Exception:
                logger.exception(
                    "room %s: participant callback for %s failed", self.room_id, event.EVENT
                )
        if scope.cancelled_caught:
            logger.warning(
                "room %s: participant callback for %s took over %ss; cancelled",
                self.room_id,
                event.EVENT,
                _PARTICIPANT_CALLBACK_TIMEOUT,
            )

    # ------------------------------------------------------------------ reconcile

    async def _reconcile(self) -> None:
        m = self._m
        self._counts.resyncs += 1
        result = ReconcileOutcome.RETRY
        self._pace(m.reconcile_started(self._epoch()))
        try:
            if m.stopped:
                probe = await self._rest.next_message(self.room_id)
                if probe is None or not self._runnable(probe):
                    result = ReconcileOutcome.STOPPED
                    return
                # /next is gated while stopped: work there means we missed a PLAY.
                logger.info("room %s: /next has work while stopped; resuming", self.room_id)
                m.resumed_by_probe(trio.current_time())
            # The roster is not read here: it comes with the room listing, or
            # is read right before the next turn (a reconcile that finds nothing
            # needs none).
            for message_id in self._ledger.pending_acks(self.room_id):
                with log_context(message_id=message_id):
                    acked = await self._settling().ack(message_id)
                if not acked:
                    result = ReconcileOutcome.RETRY
                    return
            result = await self._reconcile_pass()
        except BandError as exc:
            logger.warning("room %s: reconcile failed: %s", self.room_id, exc)
        except Exception:
            logger.exception("room %s: unexpected error while reconciling", self.room_id)
        finally:
            self._pace(m.reconcile_finished(result, trio.current_time()))

    def _runnable(self, msg: ChatMessage) -> bool:
        if admission.is_own_message(msg.sender_type, msg.sender_id, self._svc.agent_id):
            return False
        return not self._ledger.is_done(self.room_id, msg.id)

    async def _reconcile_pass(self) -> ReconcileOutcome:
        m = self._m
        rpass = ReconcilePass()
        while not m.fenced:
            if m.stopped:
                return ReconcileOutcome.STOPPED
            m.next_asked(self._epoch())
            msg = await self._rest.next_message(self.room_id)
            if msg is None:
                return rpass.finished()
            self._pace(m.work_found())
            if rpass.is_repeat(msg.id):
                outcome = MessageOutcome.SKIPPED
            else:
                outcome = await self._process_rest(msg)
            step = rpass.after_next(msg.id, outcome)
            if step is ReconcileStep.SCAN:
                return await self._scan(rpass)
            if isinstance(step, ReconcileOutcome):
                return step
        return ReconcileOutcome.STOPPED

    async def _scan(self, rpass: ReconcilePass) -> ReconcileOutcome:
        cursor: str | None = None
        for _ in range(_SCAN_MAX_PAGES):
            page = await self._rest.list_messages(
                self.room_id, sort_order="asc", limit=_SCAN_PAGE_SIZE, cursor=cursor
            )
            for msg in page.items:
                if self._m.paused:
                    return ReconcileOutcome.STOPPED
                if not self._runnable(msg):
                    continue
                result = rpass.after_listed(await self._process_rest(msg))
                if result is not None:
                    return result
            cursor = page.next_cursor
            if not page.has_more or not cursor:
                break
        return rpass.finished()
