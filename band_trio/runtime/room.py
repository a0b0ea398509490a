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
  ``GET /messages`` to step past it (reference runtime.md §9 item 2).

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

import enum
import logging
import math
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs
import trio

from band_trio.adapter.capabilities import ToolEffect
from band_trio.adapter.failures import ERROR_EVENT_TEXT, MISSING_REPLY_TEXT
from band_trio.adapter.messages import HistoryProvider, PlatformMessage
from band_trio.adapter.protocols import FrameworkAdapter, Preprocessor, TurnJudging
from band_trio.adapter.roster import Roster, render_participants_msg
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.adapter.turns import TurnContext
from band_trio.errors import (
    BandError,
    HistoryConversionError,
    InputNotAccepted,
    InvalidEventError,
    NotFoundError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.history import HistoryWindow, to_history_items
from band_trio.runtime.ledger import Attempt, Claim, ClaimsLedger, Refusal, RefusalReason
from band_trio.runtime.replies import ReplyLookupIncomplete, find_landed_reply
from band_trio.runtime.schedule import ReconcileOutcome, ReconcileSchedule
from band_trio.runtime.turn_ledger import TurnLedger, TurnVerdict
from band_trio.wire.events import (
    MessageCreated,
    ParticipantAdded,
    ParticipantRemoved,
    decode_event,
)
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

MISSING_REPLY_LABEL: Final = "turn ended without a reply"

_MAX_SYSTEM_LINES: Final = 100
"""System lines (contact broadcasts) kept for a room's next turn; oldest dropped."""

_MAX_SYNTHETIC: Final = 1000
"""Synthetic (contacts hub) messages queued in a room; oldest dropped."""

_MAX_REPLY_LOOKUPS: Final = 3
"""Failed lookups of a reply with unknown outcome before the message runs again."""

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
        self, room_id: str, participants: Sequence[ChatParticipant], hooks: _Turn
    ) -> AgentToolsProtocol: ...


@attrs.define(kw_only=True)
class RoomServices:
    """What every room of one agent shares (built once by the engine).

    Attributes:
        agent_id: the agent's id (own messages are ignored).
        rest: the REST client.
        ledger: the agent's claims ledger.
        adapter: the framework adapter.
        preprocessor: turns events into adapter inputs.
        config: the runtime knobs.
        make_tools: builds one turn's tools.
        rng: randomness for the jittered first reconcile (seedable in tests).
        hub_room_id: the contacts hub room, when there is one (no activity
            reports there).
        on_participant_added: awaited with ``(room_id, ParticipantAdded)``
            after the roster took the event (runtime.md §8.65).
        on_participant_removed: awaited with ``(room_id, ParticipantRemoved)``
            after the roster dropped the participant.
    """

    agent_id: str
    rest: Any
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


class _Outcome(enum.Enum):
    ADVANCED = "advanced"  # the message is settled; go on
    SKIPPED = "skipped"  # nothing to run for it (own, done, failed for good)
    RETRY = "retry"  # left on the platform; try again later
    PAUSED = "paused"  # the room is stopped (or fenced)


class _ReplyCheck(enum.Enum):
    LANDED = "landed"  # the reply is on the platform: ack only
    ABSENT = "absent"  # it is not: run the message
    UNKNOWN = "unknown"  # could not tell yet: try later


class _Drain(enum.Enum):
    EMPTY = "empty"
    WORK = "work"
    RETRY = "retry"
    STOPPED = "stopped"


class _Abort(enum.Enum):
    INTERRUPT = "interrupt"
    STOP = "stop"
    PLATFORM_STOP = "platform_stop"


class _Result(enum.Enum):
    SUCCESS = "success"
    MISSING_REPLY = "missing_reply"  # a judged turn that answered nothing
    DROPPED = "dropped"  # the preprocessor kept nothing for the adapter
    ERROR = "error"
    TIMEOUT = "timeout"
    NOT_ACCEPTED = "not_accepted"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"
    PLATFORM_STOPPED = "platform_stopped"


class _Kick:
    """Inbox marker that wakes the worker to look at its flags."""

    __slots__ = ()


_KICK: Final = _Kick()

InboxItem = MessageCreated | ParticipantAdded | ParticipantRemoved | _Kick


class _Turn:
    """One running turn; the :class:`~band_trio.runtime.types.TurnHooks` the tools call."""

    def __init__(
        self, room: Room, message_id: str, attempt: Attempt, *, synthetic: bool = False
    ) -> None:
        self._room = room
        self._message_id = message_id
        self.synthetic = synthetic
        self.attempt = attempt
        self.scope: trio.CancelScope | None = None
        self.aborted: _Abort | None = None
        self.ledger = TurnLedger()
        self.working_reported = False
        self.ended = trio.Event()  # the handler returned, raised or was cancelled
        self.done = trio.Event()  # the turn is over (settlement may follow)

    @property
    def message_id(self) -> str | None:
        return self._message_id

    def reply_sent(self, reply_id: str) -> None:
        ledger = self._room._svc.ledger
        if self.synthetic:
            # No platform message to answer: nothing to journal, but the post
            # is accounted for (never taken for a reply with unknown outcome).
            ledger.remember_reply(self._room.room_id, reply_id)
            return
        # Durable at once: a crash after this line never yields a second reply.
        ledger.reply_sent(self._room.room_id, self._message_id, reply_id)

    def reply_intent(self, digest: str) -> None:
        if self.synthetic:
            return
        self._room._svc.ledger.reply_intent(self._room.room_id, self._message_id, digest)

    def reply_settled(self, digest: str) -> None:
        if self.synthetic:
            return
        self._room._svc.ledger.drop_reply_intent(self._room.room_id, self._message_id, digest)

    def failure_reported(self) -> None:
        self.ledger.note_reported()

    def execution_stopped(self) -> None:
        logger.info(
            "room %s: platform says execution is stopped; ending turn for message %s",
            self._room.room_id,
            self._message_id,
        )
        self.abort(_Abort.PLATFORM_STOP)

    def record_effect(self, effect: ToolEffect) -> None:
        self.ledger.record_effect(effect)

    def abort(self, kind: _Abort) -> None:
        if self.aborted is None:
            self.aborted = kind
        if self.scope is not None:
            self.scope.cancel()


def _is_own(ev: MessageCreated, agent_id: str) -> bool:
    return ev.sender_type == "Agent" and ev.sender_id == agent_id


def _already_processed(statuses: Mapping[str, Any] | None, agent_id: str) -> bool:
    """True when the platform's delivery status says this agent processed it."""
    if not isinstance(statuses, Mapping):
        return False
    mine = statuses.get(agent_id)
    return isinstance(mine, Mapping) and mine.get("status") == "processed"


def _event_from_rest(room_id: str, msg: ChatMessage) -> MessageCreated:
    """A REST message (``/next``, ``/messages``) as the live push would carry it.

    Raises:
        InvalidEventError: the message cannot be a turn trigger.
    """
    metadata: dict[str, Any] = dict(msg.metadata or {})
    mentions = []
    for raw in metadata.get("mentions") or ():
        if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and raw["id"]:
            item = {k: v for k, v in raw.items() if v is not None}
            if not isinstance(item.get("username"), str):
                name = raw.get("handle") or raw.get("name") or raw["id"]
                item["username"] = name if isinstance(name, str) else raw["id"]
            mentions.append(item)
    metadata["mentions"] = mentions
    metadata.setdefault("status", "sent")
    payload = {
        "id": msg.id,
        "content": msg.content,
        "message_type": msg.message_type,
        "sender_id": msg.sender_id,
        "sender_type": msg.sender_type,
        "sender_name": msg.sender_name,
        "chat_room_id": msg.chat_room_id,
        "inserted_at": msg.inserted_at or "",
        "updated_at": msg.updated_at or msg.inserted_at or "",
        "metadata": metadata,
        "attachments": [dict(a.extra, **_attachment_fields(a)) for a in msg.attachments],
    }
    ev = decode_event(f"chat_room:{room_id}", "message_created", payload)
    assert isinstance(ev, MessageCreated)
    return ev


def _attachment_fields(a: Any) -> dict[str, Any]:
    fields = attrs.asdict(a, recurse=False)
    fields.pop("extra", None)
    return fields


class _Schedule:
    """When the room reconciles on its own (reference runtime.md §2.6).

    The idle timer is :class:`~band_trio.runtime.schedule.ReconcileSchedule`
    (jittered first check, doubling while empty, stopped interval). On top of
    it, a deferred message (refused claim, failed ack, non-final failure) is
    retried after a short backoff (``AgentConfig.retry_delay``, doubling up to
    the base interval)
    instead of waiting a whole idle interval.
    """

    def __init__(self, config: AgentConfig, rng: random.Random, now: float) -> None:
        self._idle = ReconcileSchedule(
            base=config.idle_resync_interval,
            maximum=config.idle_resync_max_interval,
            stopped=config.stopped_resync_interval,
            now=now,
            rng=rng.random,
        )
        self._base = config.idle_resync_interval
        self._first_retry = min(config.retry_delay, config.idle_resync_interval)
        self._retry_at = math.inf
        self._retry_delay = self._first_retry

    @property
    def due(self) -> float:
        return min(self._idle.due, self._retry_at)

    def after(self, result: _Drain, now: float) -> None:
        self._idle.completed(_OUTCOMES[result], now)
        if result is _Drain.RETRY:
            self._retry_at = now + self._retry_delay
            self._retry_delay = min(self._retry_delay * 2, self._base)
        else:
            self._retry_at = math.inf
            self._retry_delay = self._first_retry

    def note_work(self, now: float) -> None:
        self._idle.note_work(now)

    def set_stopped(self, stopped: bool, now: float) -> None:
        self._idle.set_stopped(stopped, now)
        self._retry_at = math.inf
        self._retry_delay = self._first_retry


_OUTCOMES: Final = {
    _Drain.EMPTY: ReconcileOutcome.EMPTY,
    _Drain.WORK: ReconcileOutcome.WORK,
    _Drain.RETRY: ReconcileOutcome.RETRY,
    _Drain.STOPPED: ReconcileOutcome.STOPPED,
}


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
        self._turn: _Turn | None = None
        self._schedule: _Schedule | None = None
        self._parked = trio.Event()
        self._system_lines: deque[str] = deque(maxlen=_MAX_SYSTEM_LINES)
        self._synthetic: deque[PlatformMessage] = deque(maxlen=_MAX_SYNTHETIC)
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
        self._reply_lookup_failures: dict[str, int] = {}
        self._activity_warned = False

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
        turn.abort(_Abort.INTERRUPT)
        return True

    def stop(self) -> None:
        """Pause the room: cancel the running turn (its message stays processing)
        and claim nothing new until :meth:`play` (or a probe finds work)."""
        self._stopped = True
        if self._schedule is not None:
            self._schedule.set_stopped(True, trio.current_time())
        if self._turn is not None:
            self._turn.abort(_Abort.STOP)

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
        self._schedule = _Schedule(self._svc.config, self._svc.rng, trio.current_time())
        task_status.started()
        try:
            while True:
                try:
                    await self._work()
                except Exception:
                    # Supervised (reference runtime.md §9 item 5): a bug must
                    # neither kill the agent nor leave a deaf room behind.
                    logger.exception("room %s: worker failed; restarting it", self.room_id)
                    self._resync_requested = True
                    await trio.sleep(self._svc.config.retry_delay)
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
            if _is_own(item, self._svc.agent_id):
                self._skipped += 1  # own echo: never a turn, no REST call
                return
            if self._stopped:
                return  # left on the platform; /next replays it after play
            if self._deferred:
                # An earlier message is waiting; /next order recovers this one.
                return
            outcome = await self._guarded_process(item)
            if outcome is _Outcome.RETRY:
                self._defer()

    async def _participant_callback(
        self, callback: ParticipantCallback | None, event: ParticipantAdded | ParticipantRemoved
    ) -> None:
        # After the roster update (runtime.md §8.65); bounded, and a failure
        # never reaches the worker.
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
        self._schedule.after(_Drain.RETRY, trio.current_time())

    async def _guarded_process(self, ev: MessageCreated) -> _Outcome:
        try:
            return await self._process(ev)
        except BandError as exc:
            logger.warning("room %s: message %s: %s", self.room_id, ev.id, exc)
        except Exception:
            # A bug must not kill the room: log it and retry later from /next.
            logger.exception("room %s: unexpected error on message %s", self.room_id, ev.id)
        return _Outcome.RETRY

    # ------------------------------------------------------------------ reconcile

    async def _reconcile(self) -> None:
        assert self._schedule is not None
        self._resyncs += 1
        rest = self._svc.rest
        result = _Drain.RETRY
        try:
            if self._stopped:
                probe = await rest.next_message(self.room_id)
                if probe is None or not self._runnable(probe):
                    result = _Drain.STOPPED
                    return
                # /next is gated while stopped: work there means we missed a PLAY.
                logger.info("room %s: /next has work while stopped; resuming", self.room_id)
                self._stopped = False
                self._schedule.set_stopped(False, trio.current_time())
            if self._roster_stale:
                await self._refresh_roster()
            for message_id in self._svc.ledger.pending_acks(self.room_id):
                if not await self._ack(message_id):
                    result = _Drain.RETRY
                    return
            result = await self._drain()
        except BandError as exc:
            logger.warning("room %s: reconcile failed: %s", self.room_id, exc)
        except Exception:
            logger.exception("room %s: unexpected error while reconciling", self.room_id)
        finally:
            if result is _Drain.RETRY:
                self._deferred = True
            elif result in (_Drain.EMPTY, _Drain.WORK):
                self._deferred = False
            self._schedule.after(result, trio.current_time())

    def _runnable(self, msg: ChatMessage) -> bool:
        agent_id = self._svc.agent_id
        if msg.sender_type == "Agent" and msg.sender_id == agent_id:
            return False
        return not self._svc.ledger.is_done(self.room_id, msg.id)

    async def _drain(self) -> _Drain:
        rest = self._svc.rest
        worked = False
        last_id: str | None = None
        while not self._fenced:
            if self._stopped:
                return _Drain.STOPPED
            msg: ChatMessage | None = await rest.next_message(self.room_id)
            if msg is None:
                return _Drain.WORK if worked else _Drain.EMPTY
            if msg.id == last_id:
                outcome = _Outcome.SKIPPED
            else:
                outcome = await self._process_rest(msg)
            last_id = msg.id
            if outcome is _Outcome.SKIPPED:
                # /next keeps returning its oldest actionable message; one we will
                # not run again would wedge the room. Step past it by listing.
                return await self._scan(worked)
            if outcome is _Outcome.RETRY:
                return _Drain.RETRY
            if outcome is _Outcome.PAUSED:
                return _Drain.STOPPED
            worked = True
        return _Drain.STOPPED

    async def _scan(self, worked: bool) -> _Drain:
        rest = self._svc.rest
        cursor: str | None = None
        for _ in range(_SCAN_MAX_PAGES):
            page = await rest.list_messages(
                self.room_id, sort_order="asc", limit=_SCAN_PAGE_SIZE, cursor=cursor
            )
            for msg in page.items:
                if self._fenced or self._stopped:
                    return _Drain.STOPPED
                if not self._runnable(msg):
                    continue
                outcome = await self._process_rest(msg)
                if outcome is _Outcome.RETRY:
                    return _Drain.RETRY
                if outcome is _Outcome.PAUSED:
                    return _Drain.STOPPED
                if outcome is _Outcome.ADVANCED:
                    worked = True
            cursor = page.next_cursor
            if not page.has_more or not cursor:
                break
        return _Drain.WORK if worked else _Drain.EMPTY

    async def _process_rest(self, msg: ChatMessage) -> _Outcome:
        try:
            ev = _event_from_rest(self.room_id, msg)
        except InvalidEventError as exc:
            logger.warning(
                "room %s: message %s cannot be run (%s); marking it failed",
                self.room_id,
                msg.id,
                exc.reason,
            )
            self._svc.ledger.mark_failed_final(self.room_id, msg.id)
            self._skipped += 1
            return _Outcome.SKIPPED
        return await self._process(ev)

    # ------------------------------------------------------------------ one message

    async def _process(self, ev: MessageCreated) -> _Outcome:
        svc = self._svc
        ledger = svc.ledger
        if _is_own(ev, svc.agent_id):
            self._skipped += 1
            return _Outcome.SKIPPED
        if self._stopped or self._fenced:
            return _Outcome.PAUSED
        claim = ledger.try_claim(self.room_id, ev.id)
        if isinstance(claim, Refusal):
            if claim.reason is RefusalReason.ACK_PENDING:
                # The turn already ran (a reply was journaled, or it completed):
                # only the processed mark is owed, never a second run.
                return _Outcome.ADVANCED if await self._ack(ev.id) else _Outcome.RETRY
            if claim.reason is RefusalReason.IN_FLIGHT:
                return _Outcome.RETRY
            self._skipped += 1
            return _Outcome.SKIPPED
        try:
            if _already_processed(ev.metadata.delivery_status, svc.agent_id):
                ledger.mark_completed(self.room_id, ev.id)
                self._skipped += 1
                return _Outcome.SKIPPED
            if ledger.reply_intents(self.room_id, ev.id):
                known = await self._reconcile_reply(ev)
                if known is _ReplyCheck.UNKNOWN:
                    return _Outcome.RETRY
                if known is _ReplyCheck.LANDED:
                    # An earlier post did land: the turn answered; only ack it.
                    return _Outcome.ADVANCED if await self._ack(ev.id) else _Outcome.RETRY
            attempt = ledger.record_attempt(claim)
            if attempt.exceeded:
                # The attempts were used up without a verdict (for example by
                # crashes): fail it for good rather than run it again.
                logger.warning(
                    "room %s: message %s used its %d attempts; not running it again",
                    self.room_id,
                    ev.id,
                    attempt.max_attempts,
                )
                await self._settle_failed(ev.id, "AttemptsExhausted", claimed=False)
                self._mark_failed_for_good(ev.id)
                return _Outcome.SKIPPED
            return await self._run_turn(ev, claim, attempt)
        finally:
            ledger.release(claim)

    async def _reconcile_reply(self, ev: MessageCreated) -> _ReplyCheck:
        """A reply to ``ev`` was posted without a known outcome: find out
        whether the platform stored it before the message runs again.

        LANDED: it is there, journaled as sent (the message is only acked).
        ABSENT: it is not; the intents are cleared and the message runs.
        UNKNOWN: the lookup failed; try again later. After
        ``_MAX_REPLY_LOOKUPS`` failed lookups, or when the room's context is
        too long to read, the message runs again: answering twice is better
        than never answering.
        """
        svc = self._svc
        ledger = svc.ledger
        cfg = svc.config
        digests = ledger.reply_intents(self.room_id, ev.id)
        try:
            landed = await find_landed_reply(
                svc.rest,
                room_id=self.room_id,
                agent_id=svc.agent_id,
                trigger=ev,
                digests=digests,
                known=ledger.known_replies(self.room_id),
                page_size=cfg.history_page_size,
                max_pages=_MAX_REPLY_LOOKUP_PAGES,
            )
        except BandError as exc:
            failures = self._reply_lookup_failures.get(ev.id, 0) + 1
            self._reply_lookup_failures[ev.id] = failures
            if failures < _MAX_REPLY_LOOKUPS:
                logger.warning(
                    "room %s: could not check whether a reply to %s landed (%d): %s",
                    self.room_id,
                    ev.id,
                    failures,
                    exc,
                )
                return _ReplyCheck.UNKNOWN
            logger.error(
                "room %s: gave up checking whether a reply to %s landed; running it again",
                self.room_id,
                ev.id,
            )
            landed = None
        except ReplyLookupIncomplete as exc:
            logger.error("room %s: %s; running %s again", self.room_id, exc, ev.id)
            landed = None
        self._reply_lookup_failures.pop(ev.id, None)
        if landed is None:
            ledger.clear_reply_intents(self.room_id, ev.id)
            return _ReplyCheck.ABSENT
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
        return _ReplyCheck.LANDED

    async def _run_turn(self, ev: MessageCreated, claim: Claim, attempt: Attempt) -> _Outcome:
        svc = self._svc
        ledger = svc.ledger
        rest = svc.rest
        charged = False
        try:
            # Hydrate before the claim (reference order: participants, context, processing).
            if self._roster_stale:
                await self._refresh_roster()
            history = HistoryProvider()
            if self._bootstrap and svc.config.enable_context_hydration:
                history = await self._load_history(ev.id)
            if self._stopped or self._fenced:
                return _Outcome.PAUSED
            try:
                await rest.mark_processing(self.room_id, ev.id)
            except RoomExecutionStoppedError:
                logger.info("room %s: claim of %s refused (stopped)", self.room_id, ev.id)
                return _Outcome.RETRY
            except BandError as exc:
                logger.warning("room %s: claim of %s failed: %s", self.room_id, ev.id, exc)
                return _Outcome.RETRY
            if self._stopped or self._fenced:
                # Stopped (or shutting down) while claiming: leave it processing
                # for /next to replay.
                return _Outcome.PAUSED
            turn = _Turn(self, ev.id, attempt)
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
                result, error = await self._execute(turn, ev, history)
            finally:
                self._turn = None
                turn.done.set()
            charged = result in (
                _Result.ERROR,
                _Result.TIMEOUT,
                _Result.SUCCESS,
                _Result.DROPPED,
                _Result.MISSING_REPLY,
            )
            if (
                result in (_Result.ERROR, _Result.TIMEOUT, _Result.MISSING_REPLY)
                and ledger.reply_intents(self.room_id, ev.id)
                and await self._reconcile_reply(ev) is _ReplyCheck.LANDED
            ):
                # The turn failed around a reply post with no known outcome,
                # and that reply is on the platform: the message was answered.
                # Ack it rather than fail it (and never tell the room that
                # nothing reached it).
                result, error = _Result.SUCCESS, None
            return await self._settle(turn, ev.id, result, error)
        finally:
            # Interrupts, stops, refused claims and cancellation do not use up
            # an attempt (runtime.md §8.46).
            if not charged:
                ledger.discard_attempt(claim)

    async def _execute(
        self, turn: _Turn, ev: MessageCreated, history: HistoryProvider
    ) -> tuple[_Result, Exception | None]:
        svc = self._svc
        cfg = svc.config
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
                if cfg.enable_working_state and svc.hub_room_id() != self.room_id:
                    nursery.start_soon(self._keep_working, turn)
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
                await self._report_idle()
        if scope.cancelled_caught:
            if turn.aborted is _Abort.INTERRUPT:
                return _Result.INTERRUPTED, None
            if turn.aborted is _Abort.STOP:
                return _Result.STOPPED, None
            if turn.aborted is _Abort.PLATFORM_STOP:
                return _Result.PLATFORM_STOPPED, None
            return _Result.TIMEOUT, None
        if turn.aborted is _Abort.PLATFORM_STOP and error is not None:
            return _Result.PLATFORM_STOPPED, None
        if isinstance(error, RoomExecutionStoppedError):
            return _Result.PLATFORM_STOPPED, None
        if isinstance(error, InputNotAccepted):
            return _Result.NOT_ACCEPTED, None
        if error is not None:
            return _Result.ERROR, error
        if dropped:
            return _Result.DROPPED, None
        judged = isinstance(svc.adapter, TurnJudging) and svc.adapter.judges_turns
        if judged and turn.ledger.verdict is TurnVerdict.MISSING_REPLY:
            return _Result.MISSING_REPLY, None
        return _Result.SUCCESS, None

    async def _run_synthetic(self, message: PlatformMessage) -> None:
        """One synthetic turn: no claim, no marks, no activity, not judged."""
        turn = _Turn(self, message.id, Attempt(1, 1), synthetic=True)
        self._turn = turn
        self._turns += 1
        try:
            with trio.CancelScope() as scope:
                turn.scope = scope
                if self._svc.config.turn_timeout is not None:
                    scope.deadline = trio.current_time() + self._svc.config.turn_timeout
                try:
                    await self._invoke(turn, message, HistoryProvider())
                except InputNotAccepted:
                    # Kept at the head: tried again at the next reconcile.
                    self._resync_requested = False
                    assert self._schedule is not None
                    self._schedule.after(_Drain.RETRY, trio.current_time())
                    return
                except Exception:
                    self._failures += 1
                    logger.exception("room %s: synthetic turn %s failed", self.room_id, message.id)
            if scope.cancelled_caught and turn.aborted is _Abort.STOP:
                return  # stopped: replayed after play
        finally:
            self._turn = None
            turn.done.set()
        if self._synthetic and self._synthetic[0] is message:
            self._synthetic.popleft()
            self._completed += 1

    async def _invoke(
        self, turn: _Turn, ev: MessageCreated | PlatformMessage, history: HistoryProvider
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

    def _commit(self, snapshot: Any, delivered_lines: int) -> None:
        """The commit rule (runtime.md §2.7): bootstrap over, the delivered roster
        and exactly the delivered system lines are no longer owed."""
        self._bootstrap = False
        self._roster.commit(snapshot)
        for _ in range(min(delivered_lines, len(self._system_lines))):
            self._system_lines.popleft()

    async def _keep_working(self, turn: _Turn) -> None:
        """Report ``working: true`` once the turn outlasts the grace period, then
        every keep-alive until the turn ends.

        Runs concurrently with the turn, so a slow activity endpoint never
        delays it (reference runtime.md §9 item 13). A turn that ends within
        ``working_grace`` sends no activity at all (nothing to clear). A report
        in flight is shielded (bounded by the REST activity timeout), so a room
        being cancelled never tears a pooled connection down mid-request.
        Failures are logged, never raised.
        """
        cfg = self._svc.config
        started = trio.current_time()
        if cfg.working_grace > 0:
            with trio.move_on_after(cfg.working_grace):
                await turn.ended.wait()
        while not turn.ended.is_set():
            if (
                cfg.max_working_state is not None
                and trio.current_time() - started >= cfg.max_working_state
            ):
                return
            turn.working_reported = True
            working: bool | None = None
            with trio.CancelScope(shield=True) as shield:
                shield.deadline = trio.current_time() + cfg.working_request_timeout + 1
                try:
                    working = await self._svc.rest.report_activity(self.room_id, True)
                except Exception as exc:
                    self._warn_activity(exc)
                else:
                    self._activity_warned = False
            if working is False and not turn.ended.is_set():
                # The platform echoed "not working": the execution was stopped.
                turn.execution_stopped()
                return
            with trio.move_on_after(cfg.working_keep_alive):
                await turn.ended.wait()

    async def _report_idle(self) -> None:
        # Shielded so it lands even when the turn is being cancelled; bounded.
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self._svc.config.working_request_timeout + 1):
                try:
                    await self._svc.rest.report_activity(self.room_id, False)
                except Exception as exc:
                    self._warn_activity(exc)

    def _warn_activity(self, exc: BaseException) -> None:
        if not self._activity_warned:
            self._activity_warned = True
            logger.warning("room %s: activity report failed: %r", self.room_id, exc)
        else:
            logger.debug("room %s: activity report failed: %r", self.room_id, exc)

    # ------------------------------------------------------------------ settlement

    async def _settle(
        self, turn: _Turn, message_id: str, result: _Result, error: Exception | None
    ) -> _Outcome:
        svc = self._svc
        ledger = svc.ledger
        logger.debug("room %s: turn for %s ended: %s", self.room_id, message_id, result.value)
        if result in (_Result.SUCCESS, _Result.DROPPED):
            ledger.mark_ack_pending(self.room_id, message_id)
            return _Outcome.ADVANCED if await self._ack(message_id) else _Outcome.RETRY
        if result is _Result.INTERRUPTED:
            self._interrupted += 1
            logger.info("room %s: turn for %s interrupted", self.room_id, message_id)
            # An interrupted message is consumed: marked processed, nothing posted.
            ledger.mark_ack_pending(self.room_id, message_id)
            return _Outcome.ADVANCED if await self._ack(message_id) else _Outcome.RETRY
        if result is _Result.STOPPED:
            logger.info("room %s: turn for %s stopped; left processing", self.room_id, message_id)
            return _Outcome.PAUSED
        if result is _Result.PLATFORM_STOPPED:
            return _Outcome.RETRY
        if result is _Result.MISSING_REPLY:
            # Judged (runtime.md §8.71): one error event, marked failed, not retried
            # (a retry would post the same report again).
            self._failures += 1
            logger.warning("room %s: turn for %s ended without a reply", self.room_id, message_id)
            if svc.config.report_turn_failures:
                await self._post_error_event(MISSING_REPLY_TEXT)
            await self._settle_failed(message_id, MISSING_REPLY_LABEL, claimed=True)
            self._mark_failed_for_good(message_id)
            return _Outcome.ADVANCED
        if result is _Result.NOT_ACCEPTED:
            logger.info(
                "room %s: adapter did not accept %s; retrying later", self.room_id, message_id
            )
            return _Outcome.RETRY
        # ERROR or TIMEOUT: the failure path.
        self._failures += 1
        if result is _Result.TIMEOUT:
            label = "TurnTimeout"
            logger.warning(
                "room %s: turn for %s timed out after %ss",
                self.room_id,
                message_id,
                svc.config.turn_timeout,
            )
        else:
            assert error is not None
            label = type(error).__name__
            logger.error(
                "room %s: turn for %s failed (attempt %d of %d)",
                self.room_id,
                message_id,
                turn.attempt.number,
                turn.attempt.max_attempts,
                exc_info=error,
            )
        final = turn.attempt.is_final
        await self._settle_failed(message_id, label, claimed=True)
        if not final:
            return _Outcome.RETRY
        self._mark_failed_for_good(message_id)
        if svc.config.report_turn_failures and not turn.ledger.reported:
            await self._post_error_event(ERROR_EVENT_TEXT)
        return _Outcome.ADVANCED

    def _mark_failed_for_good(self, message_id: str) -> None:
        self._failed_for_good += 1
        self._svc.ledger.mark_failed_final(self.room_id, message_id)

    async def _settle_failed(self, message_id: str, label: str, *, claimed: bool) -> None:
        rest = self._svc.rest
        try:
            if not claimed:
                await rest.mark_processing(self.room_id, message_id)
            await rest.mark_failed(self.room_id, message_id, label)
        except BandError as exc:
            logger.warning("room %s: could not mark %s failed: %s", self.room_id, message_id, exc)

    async def _post_error_event(self, text: str) -> None:
        """Post one generic ``error`` event (never the exception text)."""
        metadata = {
            "failure": {"provider": "band-runtime", "code": None, "message": text, "detail": None}
        }
        try:
            await self._svc.rest.send_event(self.room_id, text, "error", metadata)
        except BandError as exc:
            logger.warning("room %s: could not post the error event: %s", self.room_id, exc)

    async def _ack(self, message_id: str) -> bool:
        """Mark a completed message processed; True when that is settled.

        Outcomes (protocol.md §5.3): accepted → completed; not found → the
        message is gone, completed; rejected (422, no active attempt) → claim
        again and mark processed (never re-running the turn); stopped (204) or
        unconfirmed (anything else) → stays ack-pending for the next reconcile.
        """
        rest = self._svc.rest
        ledger = self._svc.ledger
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
            # Retryable failures (5xx, 429, transport) are retried at every
            # reconcile, with backoff, for as long as it takes: giving up would
            # leave the message actionable on the platform for ever.
            if exc.retryable or failures < ledger.max_attempts:
                logger.warning(
                    "room %s: processed mark for %s unconfirmed (%d): %s",
                    self.room_id,
                    message_id,
                    failures,
                    exc,
                )
                return False
            # A terminal refusal: the turn is not re-run either way; stop
            # retrying the write (runtime.md §8.33) so the room cannot wedge on it.
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
            participants = await self._svc.rest.list_participants(self.room_id)
            self._roster.replace_snapshot(participants)
        except BandError as exc:
            # Kept stale: the next turn or reconcile tries again (runtime.md §9 item 11).
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
        cfg = self._svc.config
        if cfg.max_history_messages == 0:
            return HistoryProvider()
        rest = self._svc.rest
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
