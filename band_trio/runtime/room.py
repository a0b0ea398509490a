"""One room of a running agent: intake, turns and reconciliation (the Trio shell).

Each room the agent serves is a :class:`Room` running in its own child nursery
(``AgentEngine`` owns them). Its worker task does three jobs, strictly one
thing at a time, which is what makes a room's turns serial *by construction*
(no locks, no race between the live path and the backlog path):

* **intake** reads the room's bounded inbox, filled by the dispatcher with
  ``send_nowait``: participant events update the roster, a ``message_created``
  push runs a turn for that message (the WebSocket is the doorbell);
* **turns** run one message at a time, each inside its own cancel scope (an
  interrupt, stop, platform stop or timeout cancels exactly that scope);
* **reconciliation** drains ``GET /messages/next`` (the mailbox) at start, when
  the inbox overflowed, when a resync was requested (reconnect, play), after a
  deferred outcome, and on a timer with backoff. When ``/next`` is stuck on a
  message this process will never run again (failed for good), the drain pages
  ``GET /messages`` to step past it, so one poison message never wedges a room.

The decisions are made by sans-io cores and only executed here: whether a
message runs (:mod:`~band_trio.runtime.admission`), what a turn's end means
for its message (:mod:`~band_trio.runtime.settlement`), what a reconcile pass
concludes (:mod:`~band_trio.runtime.drain`) and when the next one is due
(:mod:`~band_trio.runtime.drain_schedule`).

Memory bound: the inbox holds at most ``AgentConfig.inbox_size`` events. When it
is full the dispatcher does not block and does not drop silently: the room is
marked "needs resync", the overflow is counted in :meth:`Room.statistics`, and
the next reconcile recovers the messages from ``/next`` (and re-reads the
participant list, since participant events may have been lost too).

Exactly-once effect comes from the :class:`~band_trio.runtime.ledger.ClaimsLedger`:
a message never runs twice at once, never runs again once completed, a reply
accepted by the platform is journaled at once (so a crash before the
``processed`` mark only acks after a restart), and a message that keeps failing
is marked failed after ``AgentConfig.max_attempts`` and stepped past.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

import attrs
import trio

from band_trio.errors import (
    BandError,
    HistoryConversionError,
    InputNotAccepted,
    InvalidEventError,
    NotFoundError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.runtime import admission, settlement
from band_trio.runtime.activity import ActivityReporter
from band_trio.runtime.admission import Admission, ReplyCheck, ReplyLookups
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.drain import DrainPass, DrainStep, MessageOutcome, deferred_after
from band_trio.runtime.drain_schedule import DrainSchedule
from band_trio.runtime.history import HistoryWindow, to_history_items
from band_trio.runtime.ledger import Attempt, Claim, ClaimsLedger, Refusal
from band_trio.runtime.replies import ReplyLookupIncomplete, find_landed_reply
from band_trio.runtime.rest_messages import event_from_rest
from band_trio.runtime.room_rest import RoomRest, RuntimeRest
from band_trio.runtime.roster import Roster, RosterSnapshot, render_participants_msg
from band_trio.runtime.running_turn import RunningTurn
from band_trio.runtime.schedule import ReconcileOutcome
from band_trio.runtime.settlement import (
    Abort,
    Acknowledge,
    ErrorNotice,
    FailForGood,
    MarkFailed,
    PostErrorEvent,
    Settlement,
    TurnEnd,
)
from band_trio.runtime.types import (
    AgentToolsProtocol,
    FrameworkAdapter,
    HistoryProvider,
    PlatformMessage,
    Preprocessor,
    TurnContext,
    TurnVerdict,
)
from band_trio.wire.events import MessageCreated, ParticipantAdded, ParticipantRemoved
from band_trio.wire.models import ChatMessage, ChatParticipant

__all__ = [
    "ERROR_EVENT_TEXT",
    "MISSING_REPLY_TEXT",
    "Room",
    "RoomServices",
    "RoomStatistics",
    "ToolsFactory",
]

logger = logging.getLogger("band_trio.runtime.room")

ERROR_EVENT_TEXT: Final = "Internal error while processing message; see agent logs."
"""The one generic text posted to a room when a message fails for the last time."""

MISSING_REPLY_TEXT: Final = (
    "The agent ended its turn without replying or calling band_no_reply, "
    "so nothing reached the room."
)
"""Posted when a judged turn ended without a reply, a decline or durable work."""

_MAX_SYSTEM_LINES: Final = 100
"""System lines (contact broadcasts) kept for a room's next turn; oldest dropped."""

_MAX_SYNTHETIC: Final = 1000
"""Synthetic (contacts hub) messages queued in a room; oldest dropped."""

_MAX_REPLY_LOOKUP_PAGES: Final = 100
"""Context pages read at most to find a reply with unknown outcome."""

_PARTICIPANT_CALLBACK_TIMEOUT: Final = 10.0
"""Seconds a participant callback may hold its room's worker before it is cancelled."""

ParticipantCallback = Callable[[str, Any], Awaitable[None]]
"""``on_participant_added`` / ``on_participant_removed``: ``(room_id, event)``."""

_SCAN_PAGE_SIZE: Final = 100
_SCAN_MAX_PAGES: Final = 50


class ToolsFactory(Protocol):
    """Builds the room-bound tools of one turn."""

    def __call__(
        self, room_id: str, participants: Sequence[ChatParticipant], hooks: RunningTurn
    ) -> AgentToolsProtocol: ...


@attrs.define(kw_only=True)
class RoomServices:
    """What every room of one agent shares (built once by the engine).

    Attributes:
        agent_id: the agent's id (own messages are ignored).
        rest: the REST endpoints the rooms (and the engine's room listing) use.
        ledger: the agent's claims ledger.
        adapter: the framework adapter.
        preprocessor: turns events into adapter inputs.
        config: the runtime knobs.
        make_tools: builds one turn's tools.
        rng: randomness for the jittered first reconcile (seedable in tests).
        hub_room_id: the contacts hub room, when there is one (no activity
            reports there).
        on_participant_added: awaited with ``(room_id, ParticipantAdded)``
            after the roster took the event, so the callback sees the new
            participant in the room's roster.
        on_participant_removed: awaited with ``(room_id, ParticipantRemoved)``
            after the roster dropped the participant.
    """

    agent_id: str
    rest: RuntimeRest
    ledger: ClaimsLedger
    adapter: FrameworkAdapter
    preprocessor: Preprocessor
    config: AgentConfig
    make_tools: ToolsFactory
    rng: random.Random = attrs.field(factory=random.Random)
    hub_room_id: Callable[[], str | None] = lambda: None
    on_participant_added: ParticipantCallback | None = None
    on_participant_removed: ParticipantCallback | None = None


@attrs.frozen
class RoomStatistics:
    """A snapshot of one room's counters.

    Attributes:
        room_id: the room.
        turns: turns started (the adapter was called or about to be).
        completed: turns whose message ended processed.
        failures: turns that failed (adapter raised, timed out).
        failed_for_good: messages marked failed after their last attempt.
        interrupted: turns cancelled by an interrupt.
        overflows: events the dispatcher could not queue (the room resynced instead).
        resyncs: reconcile passes (``/next`` drains) run.
        skipped: messages not run (own, duplicate, already processed, failed for good).
        inbox_depth: events waiting in the inbox now.
        inbox_capacity: the inbox bound.
        stopped: the room is paused by a ``stop`` control.
        turn_running: a turn is in progress now.
        replies_recovered: messages found already answered on the platform after
            a reply post with no known outcome (acked, not run again).
    """

    room_id: str
    turns: int
    completed: int
    failures: int
    failed_for_good: int
    interrupted: int
    overflows: int
    resyncs: int
    skipped: int
    inbox_depth: int
    inbox_capacity: int
    stopped: bool
    turn_running: bool
    replies_recovered: int = 0


_ERROR_TEXTS: Final = {
    ErrorNotice.TURN_FAILED: ERROR_EVENT_TEXT,
    ErrorNotice.MISSING_REPLY: MISSING_REPLY_TEXT,
}


class _Kick:
    """Inbox marker that wakes the worker to look at its flags."""

    __slots__ = ()


_KICK: Final = _Kick()

InboxItem = MessageCreated | ParticipantAdded | ParticipantRemoved | _Kick


class Room:
    """One room the agent serves.

    The dispatcher talks to it only through non-blocking methods
    (:meth:`deliver`, :meth:`request_resync`, :meth:`interrupt`, :meth:`stop`,
    :meth:`play`, :meth:`fence`); :meth:`serve` is its worker.

    Args:
        room_id: the room.
        services: what the agent's rooms share.
    """

    def __init__(self, room_id: str, services: RoomServices) -> None:
        self.room_id = room_id
        self._svc = services
        self._rest: RoomRest = services.rest
        self._ledger = services.ledger
        self._config = services.config
        self._capacity = services.config.inbox_size
        self._inbox_send, self._inbox_recv = trio.open_memory_channel[InboxItem](self._capacity)
        self._roster = Roster()
        self._roster_stale = True
        self._resync_requested = True  # the startup drain
        self._kick_pending = False
        self._deferred = False
        self._stopped = False
        self._fenced = False
        self._bootstrap = True
        self._turn: RunningTurn | None = None
        self._schedule: DrainSchedule | None = None
        self._parked = trio.Event()
        self._system_lines: deque[str] = deque(maxlen=_MAX_SYSTEM_LINES)
        self._synthetic: deque[PlatformMessage] = deque(maxlen=_MAX_SYNTHETIC)
        self._reply_lookups = ReplyLookups()
        self._activity = ActivityReporter(room_id, services.rest, services.config)
        # counters
        self._turns = 0
        self._completed = 0
        self._failures = 0
        self._failed_for_good = 0
        self._interrupted = 0
        self._overflows = 0
        self._resyncs = 0
        self._skipped = 0
        self._replies_recovered = 0

    def __repr__(self) -> str:
        return f"Room({self.room_id!r})"

    # ------------------------------------------------------------------ dispatcher side

    def deliver(self, item: MessageCreated | ParticipantAdded | ParticipantRemoved) -> bool:
        """Queue a room event without blocking.

        Returns:
            False when the inbox was full: the event was not queued, the room
            is marked for resync (and roster refresh) and the overflow counted.
        """
        try:
            self._inbox_send.send_nowait(item)
        except trio.WouldBlock:
            self._overflows += 1
            self._resync_requested = True
            self._roster_stale = True
            logger.warning(
                "room %s: inbox full (%d); %s not queued, the room will resync from /next",
                self.room_id,
                self._capacity,
                type(item).__name__,
            )
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    def request_resync(self, *, refresh_roster: bool = False) -> None:
        """Ask for a ``/next`` drain soon (coalesced: many requests, one drain)."""
        self._resync_requested = True
        if refresh_roster:
            self._roster_stale = True
        self._kick()

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
        self._stopped = True
        if self._schedule is not None:
            self._schedule.set_stopped(True, trio.current_time())
        if self._turn is not None:
            self._turn.abort(Abort.STOP)

    def play(self) -> None:
        """Resume a stopped room and drain ``/next`` at once."""
        self._stopped = False
        self._deferred = False
        if self._schedule is not None:
            self._schedule.set_stopped(False, trio.current_time())
        self.request_resync()

    def inject_system_message(self, text: str) -> None:
        """Queue a system line for the next turn's ``contacts_msg`` (delivered once,
        consumed when that turn commits its context)."""
        if len(self._system_lines) == self._system_lines.maxlen:
            logger.warning(
                "room %s: too many pending system lines; dropping the oldest", self.room_id
            )
        self._system_lines.append(text)

    def enqueue_synthetic(self, message: PlatformMessage) -> None:
        """Queue a synthetic message (contacts hub): it runs as a turn with no
        claim, no lifecycle marks and no activity reports, and is not judged."""
        if any(m.id == message.id for m in self._synthetic):
            return
        if len(self._synthetic) == self._synthetic.maxlen:
            logger.warning("room %s: synthetic queue full; dropping the oldest", self.room_id)
        self._synthetic.append(message)
        self._kick()

    def fence(self) -> None:
        """Shutdown: start no new turn (the running one may finish)."""
        self._fenced = True
        self._kick()

    @property
    def stopped(self) -> bool:
        """True while the room is paused by a ``stop`` control."""
        return self._stopped

    @property
    def busy(self) -> bool:
        """True while a turn is running."""
        return self._turn is not None

    async def wait_parked(self) -> None:
        """After :meth:`fence`: wait until the worker stopped between two steps
        (the running turn, if any, finished and no REST call is in flight)."""
        await self._parked.wait()

    async def wait_idle(self) -> None:
        """Wait until no turn is running."""
        while (turn := self._turn) is not None:
            await turn.done.wait()

    def statistics(self) -> RoomStatistics:
        """The room's counters now."""
        return RoomStatistics(
            room_id=self.room_id,
            turns=self._turns,
            completed=self._completed,
            failures=self._failures,
            failed_for_good=self._failed_for_good,
            interrupted=self._interrupted,
            overflows=self._overflows,
            resyncs=self._resyncs,
            skipped=self._skipped,
            inbox_depth=self._inbox_send.statistics().current_buffer_used,
            inbox_capacity=self._capacity,
            stopped=self._stopped,
            turn_running=self._turn is not None,
            replies_recovered=self._replies_recovered,
        )

    def _kick(self) -> None:
        if self._kick_pending:
            return
        try:
            self._inbox_send.send_nowait(_KICK)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
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
        self._schedule = DrainSchedule(self._config, self._svc.rng, trio.current_time())
        task_status.started()
        try:
            while True:
                try:
                    await self._work()
                except Exception:
                    # Supervised: a bug must neither kill the agent nor leave
                    # a deaf room behind.
                    logger.exception("room %s: worker failed; restarting it", self.room_id)
                    self._resync_requested = True
                    await trio.sleep(self._config.retry_delay)
        finally:
            self._inbox_send.close()

    async def _work(self) -> None:
        assert self._schedule is not None
        while True:
            if self._fenced:
                # Parked between steps: cancelling now interrupts no REST call.
                self._parked.set()
                await trio.sleep_forever()
            if self._synthetic and not self._stopped:
                await self._run_synthetic(self._synthetic[0])
                continue
            if self._resync_requested:
                self._resync_requested = False
                await self._reconcile()
                continue
            item: InboxItem | None = None
            with trio.move_on_at(self._schedule.due):
                item = await self._inbox_recv.receive()
            if item is None:
                self._resync_requested = True  # the periodic reconcile is due
                continue
            await self._on_item(item)

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
                self._skipped += 1  # own echo: never a turn, no REST call
                return
            if self._stopped:
                return  # left on the platform; /next replays it after play
            if self._deferred:
                # An earlier message is waiting; /next order recovers this one.
                return
            outcome = await self._guarded_process(item)
            if outcome is MessageOutcome.RETRY:
                self._defer()

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

    def _defer(self) -> None:
        assert self._schedule is not None
        self._deferred = True
        self._schedule.after(ReconcileOutcome.RETRY, trio.current_time())

    async def _guarded_process(self, ev: MessageCreated) -> MessageOutcome:
        try:
            return await self._process(ev)
        except BandError as exc:
            logger.warning("room %s: message %s: %s", self.room_id, ev.id, exc)
        except Exception:
            # A bug must not kill the room: log it and retry later from /next.
            logger.exception("room %s: unexpected error on message %s", self.room_id, ev.id)
        return MessageOutcome.RETRY

    # ------------------------------------------------------------------ reconcile

    async def _reconcile(self) -> None:
        assert self._schedule is not None
        self._resyncs += 1
        result = ReconcileOutcome.RETRY
        try:
            if self._stopped:
                probe = await self._rest.next_message(self.room_id)
                if probe is None or not self._runnable(probe):
                    result = ReconcileOutcome.STOPPED
                    return
                # /next is gated while stopped: work there means we missed a PLAY.
                logger.info("room %s: /next has work while stopped; resuming", self.room_id)
                self._stopped = False
                self._schedule.set_stopped(False, trio.current_time())
            if self._roster_stale:
                await self._refresh_roster()
            for message_id in self._ledger.pending_acks(self.room_id):
                if not await self._ack(message_id):
                    result = ReconcileOutcome.RETRY
                    return
            result = await self._drain()
        except BandError as exc:
            logger.warning("room %s: reconcile failed: %s", self.room_id, exc)
        except Exception:
            logger.exception("room %s: unexpected error while reconciling", self.room_id)
        finally:
            self._deferred = deferred_after(result, self._deferred)
            self._schedule.after(result, trio.current_time())

    def _runnable(self, msg: ChatMessage) -> bool:
        if admission.is_own_message(msg.sender_type, msg.sender_id, self._svc.agent_id):
            return False
        return not self._ledger.is_done(self.room_id, msg.id)

    async def _drain(self) -> ReconcileOutcome:
        drain = DrainPass()
        while not self._fenced:
            if self._stopped:
                return ReconcileOutcome.STOPPED
            msg = await self._rest.next_message(self.room_id)
            if msg is None:
                return drain.finished()
            if drain.is_repeat(msg.id):
                outcome = MessageOutcome.SKIPPED
            else:
                outcome = await self._process_rest(msg)
            step = drain.after_next(msg.id, outcome)
            if step is DrainStep.SCAN:
                return await self._scan(drain)
            if isinstance(step, ReconcileOutcome):
                return step
        return ReconcileOutcome.STOPPED

    async def _scan(self, drain: DrainPass) -> ReconcileOutcome:
        cursor: str | None = None
        for _ in range(_SCAN_MAX_PAGES):
            page = await self._rest.list_messages(
                self.room_id, sort_order="asc", limit=_SCAN_PAGE_SIZE, cursor=cursor
            )
            for msg in page.items:
                if self._fenced or self._stopped:
                    return ReconcileOutcome.STOPPED
                if not self._runnable(msg):
                    continue
                result = drain.after_listed(await self._process_rest(msg))
                if result is not None:
                    return result
            cursor = page.next_cursor
            if not page.has_more or not cursor:
                break
        return drain.finished()

    async def _process_rest(self, msg: ChatMessage) -> MessageOutcome:
        try:
            ev = event_from_rest(self.room_id, msg)
        except InvalidEventError as exc:
            logger.warning(
                "room %s: message %s cannot be run (%s); marking it failed",
                self.room_id,
                msg.id,
                exc.reason,
            )
            self._ledger.mark_failed_final(self.room_id, msg.id)
            self._skipped += 1
            return MessageOutcome.SKIPPED
        return await self._process(ev)

    # ------------------------------------------------------------------ one message

    async def _process(self, ev: MessageCreated) -> MessageOutcome:
        ledger = self._ledger
        decision = admission.before_claim(
            own=admission.is_own_message(ev.sender_type, ev.sender_id, self._svc.agent_id),
            paused=self._stopped or self._fenced,
        )
        if decision is Admission.SKIP:
            self._skipped += 1
            return MessageOutcome.SKIPPED
        if decision is Admission.PAUSE:
            return MessageOutcome.PAUSED
        claim = ledger.try_claim(self.room_id, ev.id)
        if isinstance(claim, Refusal):
            decision = admission.after_refusal(claim.reason)
            if decision is Admission.ACK_ONLY:
                # The turn already ran (a reply was journaled, or it completed):
                # only the processed mark is owed, never a second run.
                return await self._ack_outcome(ev.id)
            if decision is Admission.RETRY:
                return MessageOutcome.RETRY
            self._skipped += 1
            return MessageOutcome.SKIPPED
        try:
            decision = admission.after_claim(
                processed=admission.processed_on_platform(
                    ev.metadata.delivery_status, self._svc.agent_id
                ),
                open_reply_intents=bool(ledger.reply_intents(self.room_id, ev.id)),
            )
            if decision is Admission.MARK_COMPLETED:
                ledger.mark_completed(self.room_id, ev.id)
                self._skipped += 1
                return MessageOutcome.SKIPPED
            if decision is Admission.CHECK_REPLY:
                decision = admission.after_reply_check(await self._reconcile_reply(ev))
                if decision is Admission.RETRY:
                    return MessageOutcome.RETRY
                if decision is Admission.ACK_ONLY:
                    # An earlier post did land: the turn answered; only ack it.
                    return await self._ack_outcome(ev.id)
            attempt = ledger.record_attempt(claim)
            if admission.before_run(attempt) is Admission.FAIL_EXHAUSTED:
                logger.warning(
                    "room %s: message %s used its %d attempts; not running it again",
                    self.room_id,
                    ev.id,
                    attempt.max_attempts,
                )
                return await self._carry_out(ev.id, settlement.settle_exhausted())
            return await self._run_turn(ev, claim, attempt)
        finally:
            ledger.release(claim)

    async def _reconcile_reply(self, ev: MessageCreated) -> ReplyCheck:
        """A reply to ``ev`` was posted without a known outcome: find out
        whether the platform stored it before the message runs again.

        LANDED: it is there, journaled as sent (the message is only acked).
        ABSENT: it is not; the intents are cleared and the message runs.
        UNKNOWN: the lookup failed; try again later. After a few failed
        lookups (:class:`~band_trio.runtime.admission.ReplyLookups`), or when
        the room's context is too long to read, the message runs again:
        answering twice is better than never answering.
        """
        ledger = self._ledger
        digests = ledger.reply_intents(self.room_id, ev.id)
        try:
            landed = await find_landed_reply(
                self._rest,
                room_id=self.room_id,
                agent_id=self._svc.agent_id,
                trigger=ev,
                digests=digests,
                known=ledger.known_replies(self.room_id),
                page_size=self._config.history_page_size,
                max_pages=_MAX_REPLY_LOOKUP_PAGES,
            )
        except BandError as exc:
            if self._reply_lookups.failed(ev.id) is ReplyCheck.UNKNOWN:
                logger.warning(
                    "room %s: could not check whether a reply to %s landed (%d): %s",
                    self.room_id,
                    ev.id,
                    self._reply_lookups.failures(ev.id),
                    exc,
                )
                return ReplyCheck.UNKNOWN
            logger.error(
                "room %s: gave up checking whether a reply to %s landed; running it again",
                self.room_id,
                ev.id,
            )
            landed = None
        except ReplyLookupIncomplete as exc:
            logger.error("room %s: %s; running %s again", self.room_id, exc, ev.id)
            landed = None
        self._reply_lookups.settled(ev.id)
        if landed is None:
            ledger.clear_reply_intents(self.room_id, ev.id)
            return ReplyCheck.ABSENT
        logger.info(
            "room %s: the reply to %s had landed (%s); acking without a second run",
            self.room_id,
            ev.id,
            landed,
        )
        # Journaled, hence accounted for: never the lost reply of another message.
        ledger.reply_sent(self.room_id, ev.id, landed)
        ledger.clear_reply_intents(self.room_id, ev.id)
        self._replies_recovered += 1
        return ReplyCheck.LANDED

    async def _run_turn(self, ev: MessageCreated, claim: Claim, attempt: Attempt) -> MessageOutcome:
        ledger = self._ledger
        charged = False
        try:
            # Hydrate before the claim (the official order: participants,
            # context, then the processing mark).
            if self._roster_stale:
                await self._refresh_roster()
            history = HistoryProvider()
            if self._bootstrap and self._config.enable_context_hydration:
                history = await self._load_history(ev.id)
            if self._stopped or self._fenced:
                return MessageOutcome.PAUSED
            try:
                await self._rest.mark_processing(self.room_id, ev.id)
            except RoomExecutionStoppedError:
                logger.info("room %s: claim of %s refused (stopped)", self.room_id, ev.id)
                return MessageOutcome.RETRY
            except BandError as exc:
                logger.warning("room %s: claim of %s failed: %s", self.room_id, ev.id, exc)
                return MessageOutcome.RETRY
            if self._stopped or self._fenced:
                # Stopped (or shutting down) while claiming: leave it processing
                # for /next to replay.
                return MessageOutcome.PAUSED
            turn = RunningTurn(
                room_id=self.room_id, message_id=ev.id, attempt=attempt, ledger=ledger
            )
            self._turn = turn
            self._turns += 1
            logger.debug(
                "room %s: turn for %s (attempt %d of %d)",
                self.room_id,
                ev.id,
                attempt.number,
                attempt.max_attempts,
            )
            assert self._schedule is not None
            self._schedule.note_work(trio.current_time())
            try:
                end, error = await self._execute(turn, ev, history)
            finally:
                self._turn = None
                turn.done.set()
            charged = settlement.charges_attempt(end)
            if (
                settlement.may_have_replied(end)
                and ledger.reply_intents(self.room_id, ev.id)
                and await self._reconcile_reply(ev) is ReplyCheck.LANDED
            ):
                # The turn failed around a reply post with no known outcome,
                # and that reply is on the platform: the message was answered.
                # Ack it rather than fail it (and never tell the room that
                # nothing reached it).
                end, error = TurnEnd.SUCCESS, None
            return await self._settle(turn, ev.id, end, error)
        finally:
            # Interrupts, stops, refused claims and cancellation do not use up
            # an attempt: the message was not given a fair run.
            if not charged:
                ledger.discard_attempt(claim)

    async def _execute(
        self, turn: RunningTurn, ev: MessageCreated, history: HistoryProvider
    ) -> tuple[TurnEnd, Exception | None]:
        cfg = self._config
        error: Exception | None = None
        dropped = False
        scope = trio.CancelScope()
        turn.scope = scope
        if cfg.turn_timeout is not None:
            scope.deadline = trio.current_time() + cfg.turn_timeout
        if turn.aborted is not None:
            scope.cancel()
        try:
            # The activity reporter lives outside the turn's cancel scope: an
            # interrupt or timeout ends the handler at once, while a report in
            # flight completes (bounded by the REST client's activity timeout)
            # instead of being torn down mid-request.
            async with trio.open_nursery() as nursery:
                if cfg.enable_working_state and self._svc.hub_room_id() != self.room_id:
                    nursery.start_soon(self._activity.keep_working, turn)
                try:
                    with scope:
                        try:
                            dropped = not await self._invoke(turn, ev, history)
                        except Exception as exc:
                            error = exc
                finally:
                    turn.ended.set()
        finally:
            if turn.working_reported:
                await self._activity.report_idle()
        end = settlement.classify_turn_end(
            cancelled=scope.cancelled_caught,
            aborted=turn.aborted,
            error=error,
            dropped=dropped,
            missing_reply=getattr(self._svc.adapter, "judges_turns", False)
            and turn.ledger.verdict is TurnVerdict.MISSING_REPLY,
        )
        return end, (error if end is TurnEnd.ERROR else None)

    async def _run_synthetic(self, message: PlatformMessage) -> None:
        """One synthetic turn: no claim, no marks, no activity, not judged."""
        turn = RunningTurn(
            room_id=self.room_id,
            message_id=message.id,
            attempt=Attempt(1, 1),
            ledger=self._ledger,
            synthetic=True,
        )
        self._turn = turn
        self._turns += 1
        try:
            with trio.CancelScope() as scope:
                turn.scope = scope
                if self._config.turn_timeout is not None:
                    scope.deadline = trio.current_time() + self._config.turn_timeout
                try:
                    await self._invoke(turn, message, HistoryProvider())
                except InputNotAccepted:
                    # Kept at the head: tried again at the next reconcile.
                    self._resync_requested = False
                    assert self._schedule is not None
                    self._schedule.after(ReconcileOutcome.RETRY, trio.current_time())
                    return
                except Exception:
                    self._failures += 1
                    logger.exception("room %s: synthetic turn %s failed", self.room_id, message.id)
            if scope.cancelled_caught and turn.aborted is Abort.STOP:
                return  # stopped: replayed after play
        finally:
            self._turn = None
            turn.done.set()
        if self._synthetic and self._synthetic[0] is message:
            self._synthetic.popleft()
            self._completed += 1

    async def _invoke(
        self, turn: RunningTurn, ev: MessageCreated | PlatformMessage, history: HistoryProvider
    ) -> bool:
        svc = self._svc
        roster = self._roster
        participants_msg = render_participants_msg(roster) if roster.changed else None
        snapshot = roster.snapshot()
        lines = list(self._system_lines)
        contacts_msg = "\n".join(lines) if lines else None

        def make_tools() -> AgentToolsProtocol:
            return svc.make_tools(self.room_id, roster.participants, turn)

        ctx = TurnContext(
            room_id=self.room_id,
            roster=roster,
            make_tools=make_tools,
            history=history,
            participants_msg=participants_msg,
            contacts_msg=contacts_msg,
            is_session_bootstrap=self._bootstrap,
        )
        inp = svc.preprocessor.process(ctx, ev, svc.agent_id)
        if inp is None:
            return False
        try:
            await svc.adapter.on_event(inp)
        except (InputNotAccepted, HistoryConversionError):
            # Context stays owed: the next attempt is a bootstrap again.
            raise
        except Exception:
            self._commit(snapshot, len(lines))
            raise
        self._commit(snapshot, len(lines))
        return True

    def _commit(self, snapshot: RosterSnapshot, delivered_lines: int) -> None:
        """The commit rule: once the adapter took a turn, the bootstrap is
        over, and the delivered roster and exactly the delivered system lines
        are no longer owed (lines queued during the turn stay for the next)."""
        self._bootstrap = False
        self._roster.commit(snapshot)
        for _ in range(min(delivered_lines, len(self._system_lines))):
            self._system_lines.popleft()

    # ------------------------------------------------------------------ settlement

    async def _settle(
        self, turn: RunningTurn, message_id: str, end: TurnEnd, error: Exception | None
    ) -> MessageOutcome:
        logger.debug("room %s: turn for %s ended: %s", self.room_id, message_id, end.value)
        decided = settlement.settle(
            end,
            attempt=turn.attempt,
            error_name=type(error).__name__ if error is not None else None,
            report_failures=self._config.report_turn_failures,
            failure_reported=turn.ledger.reported,
        )
        if end is TurnEnd.INTERRUPTED:
            logger.info("room %s: turn for %s interrupted", self.room_id, message_id)
        elif end is TurnEnd.STOPPED:
            logger.info("room %s: turn for %s stopped; left processing", self.room_id, message_id)
        elif end is TurnEnd.NOT_ACCEPTED:
            logger.info(
                "room %s: adapter did not accept %s; retrying later", self.room_id, message_id
            )
        elif end is TurnEnd.MISSING_REPLY:
            logger.warning("room %s: turn for %s ended without a reply", self.room_id, message_id)
        elif end is TurnEnd.TIMEOUT:
            logger.warning(
                "room %s: turn for %s timed out after %ss",
                self.room_id,
                message_id,
                self._config.turn_timeout,
            )
        elif end is TurnEnd.ERROR:
            logger.error(
                "room %s: turn for %s failed (attempt %d of %d)",
                self.room_id,
                message_id,
                turn.attempt.number,
                turn.attempt.max_attempts,
                exc_info=error,
            )
        return await self._carry_out(message_id, decided)

    async def _carry_out(self, message_id: str, decided: Settlement) -> MessageOutcome:
        """Execute a settlement's actions in order; return the message's outcome."""
        if decided.failure:
            self._failures += 1
        if decided.interrupted:
            self._interrupted += 1
        for action in decided.actions:
            if isinstance(action, Acknowledge):
                # Recorded before the write, with no await in between.
                self._ledger.mark_ack_pending(self.room_id, message_id)
                if not await self._ack(message_id):
                    return MessageOutcome.RETRY
            elif isinstance(action, MarkFailed):
                await self._mark_failed(message_id, action.label, claim_first=action.claim_first)
            elif isinstance(action, FailForGood):
                self._failed_for_good += 1
                self._ledger.mark_failed_final(self.room_id, message_id)
            elif isinstance(action, PostErrorEvent):
                await self._post_error_event(_ERROR_TEXTS[action.notice])
        return decided.outcome

    async def _mark_failed(self, message_id: str, label: str, *, claim_first: bool) -> None:
        try:
            if claim_first:
                await self._rest.mark_processing(self.room_id, message_id)
            await self._rest.mark_failed(self.room_id, message_id, label)
        except BandError as exc:
            logger.warning("room %s: could not mark %s failed: %s", self.room_id, message_id, exc)

    async def _post_error_event(self, text: str) -> None:
        """Post one generic ``error`` event (never the exception text)."""
        metadata = {
            "failure": {"provider": "band-runtime", "code": None, "message": text, "detail": None}
        }
        try:
            await self._rest.send_event(self.room_id, text, "error", metadata)
        except BandError as exc:
            logger.warning("room %s: could not post the error event: %s", self.room_id, exc)

    async def _ack_outcome(self, message_id: str) -> MessageOutcome:
        return MessageOutcome.ADVANCED if await self._ack(message_id) else MessageOutcome.RETRY

    async def _ack(self, message_id: str) -> bool:
        """Mark a completed message processed; True when that is settled.

        Outcomes: accepted → completed; not found → the message is gone,
        completed; rejected (422, no active attempt) → claim again and mark
        processed (never re-running the turn); stopped (204) or unconfirmed
        (anything else) → stays ack-pending for the next reconcile, until
        :func:`~band_trio.runtime.settlement.gives_up_ack` says otherwise.
        """
        rest = self._rest
        ledger = self._ledger
        try:
            try:
                await rest.mark_processed(self.room_id, message_id)
            except UnprocessableEntityError:
                await rest.mark_processing(self.room_id, message_id)
                await rest.mark_processed(self.room_id, message_id)
        except NotFoundError:
            logger.info("room %s: message %s is gone; counting it done", self.room_id, message_id)
        except RoomExecutionStoppedError:
            return False
        except BandError as exc:
            failures = ledger.note_ack_failure(self.room_id, message_id)
            if not settlement.gives_up_ack(
                retryable=exc.retryable, failures=failures, max_attempts=ledger.max_attempts
            ):
                logger.warning(
                    "room %s: processed mark for %s unconfirmed (%d): %s",
                    self.room_id,
                    message_id,
                    failures,
                    exc,
                )
                return False
            logger.error(
                "room %s: giving up the processed mark for %s after %d tries: %s",
                self.room_id,
                message_id,
                failures,
                exc,
            )
        ledger.mark_completed(self.room_id, message_id)
        self._completed += 1
        return True

    # ------------------------------------------------------------------ hydration

    async def _refresh_roster(self) -> None:
        try:
            participants = await self._rest.list_participants(self.room_id)
            self._roster.replace_snapshot(participants)
        except BandError as exc:
            # Kept stale: the next turn or reconcile tries again, so one failed
            # read never leaves a room with no roster for good.
            logger.warning("room %s: could not load participants: %s", self.room_id, exc)
            return
        self._roster_stale = False

    async def _load_history(self, trigger_id: str) -> HistoryProvider:
        """The newest context messages strictly before the trigger, oldest first.

        The context endpoint pages oldest first, so pages are read in order up
        to the trigger while a sliding window keeps only the newest
        ``max_history_messages`` (bounded memory). A failure yields an empty
        history (a warning is logged) and the turn goes on.
        """
        cfg = self._config
        if cfg.max_history_messages == 0:
            return HistoryProvider()
        rest = self._rest
        window = HistoryWindow(trigger_id=trigger_id, limit=cfg.max_history_messages)
        try:
            page = await rest.get_context(self.room_id, limit=cfg.history_page_size)
            window.feed_forward(page.items)
            pages = 1
            while (
                page.has_more
                and page.next_cursor
                and not window.trigger_seen
                and pages < cfg.max_history_pages
            ):
                page = await rest.get_context(
                    self.room_id, cursor=page.next_cursor, limit=cfg.history_page_size
                )
                window.feed_forward(page.items)
                pages += 1
        except BandError as exc:
            logger.warning("room %s: could not load history: %s", self.room_id, exc)
            return HistoryProvider()
        items = to_history_items(window.messages(), self._roster, agent_id=self._svc.agent_id)
        return HistoryProvider(items)
