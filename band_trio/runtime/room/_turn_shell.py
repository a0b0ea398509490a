"""One message's way through a room: admission, claim, turn and settlement (the Trio shell).

:class:`RoomTurns` is the half of a :class:`~band_trio.runtime.room.Room`
that handles one message at a time: whether it runs (the
:class:`~band_trio.runtime.core._admission.AdmissionWalk` the room machine
starts names each step, in its order: claim, a lookup of an earlier reply,
count the attempt; this shell performs them and feeds back what it found),
the roster and
history a turn starts from, the turn itself in its own cancel scope, and what
its end means (:mod:`~band_trio.runtime.core._settlement`, carried out by a
:class:`~band_trio.runtime.room._settler.Settler`). Synthetic messages (the contacts
hub) run here too, with no claim and no marks.

The room's flags are its :class:`~band_trio.runtime.core._room_machine.RoomMachine`;
this shell reads them (stopped, fenced, the roster owed) and tells it when a
turn starts and ends. The worker, the inbox and the reconcile passes are the
:class:`~band_trio.runtime.room.Room` built on this class.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

import trio

from band_trio._logging import get_logger, log_context
from band_trio._tracing import span
from band_trio.adapter.failures import ERROR_EVENT_TEXT, MISSING_REPLY_TEXT
from band_trio.adapter.messages import HistoryProvider, PlatformMessage
from band_trio.adapter.protocols import TurnJudging
from band_trio.adapter.roster import Roster, RosterSnapshot, render_participants_msg
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.adapter.turns import TurnContext
from band_trio.errors import (
    BandError,
    HistoryConversionError,
    InputNotAccepted,
    InvalidEventError,
    RoomExecutionStoppedError,
)
from band_trio.runtime.claims.ledger import Attempt, Claim, Refusal
from band_trio.runtime.core import _admission as admission
from band_trio.runtime.core import _settlement as settlement
from band_trio.runtime.core._admission import Admission, ReplyCheck
from band_trio.runtime.core._reconcile_pass import MessageOutcome
from band_trio.runtime.core._rest_messages import event_from_rest
from band_trio.runtime.core._room_machine import RoomMachine
from band_trio.runtime.core._settlement import Abort, ErrorNotice, TurnEnd
from band_trio.runtime.core._turn_effects import TurnVerdict
from band_trio.runtime.room._activity import ActivityReporter
from band_trio.runtime.room._hydration import load_history
from band_trio.runtime.room._reply_recovery import ReplyRecovery, post_lookup
from band_trio.runtime.room._rest import RoomRest
from band_trio.runtime.room._running_turn import RunningTurn
from band_trio.runtime.room._settler import Settler
from band_trio.runtime.room.services import RoomCounters, RoomServices
from band_trio.wire.events import MessageCreated
from band_trio.wire.models import ChatMessage, ChatParticipant

__all__ = ["RoomTurns"]

logger = get_logger("band_trio.runtime.room")

_ERROR_TEXTS: Final = {
    ErrorNotice.TURN_FAILED: ERROR_EVENT_TEXT,
    ErrorNotice.MISSING_REPLY: MISSING_REPLY_TEXT,
}


class RoomTurns:
    """The turns of one room, one message at a time.

    Args:
        room_id: the room.
        services: what the agent's rooms share.
    """

    # A process may hold ten thousand rooms: no per-instance __dict__.
    __slots__ = (
        "_activity",
        "_bootstrap",
        "_config",
        "_counts",
        "_ledger",
        "_m",
        "_offered_roster",
        "_replies",
        "_rest",
        "_roster",
        "_svc",
        "_synthetic",
        "_system_lines",
        "_turn",
        "room_id",
    )

    def __init__(self, room_id: str, services: RoomServices) -> None:
        self.room_id = room_id
        self._svc = services
        self._rest: RoomRest = services.rest
        self._ledger = services.ledger
        self._config = services.config
        self._m = RoomMachine(paced=services.pacer is not None)
        self._roster = Roster()
        self._offered_roster: Sequence[ChatParticipant] | None = None
        self._bootstrap = True
        self._turn: RunningTurn | None = None
        # Everything below is created on first use, and the helpers are
        # dropped again once the room is idle with nothing for them to
        # remember: an agent may hold ten thousand rooms, most of them idle,
        # and each object an idle room keeps costs memory and lengthens
        # every full garbage collection.
        self._system_lines: deque[str] | None = None
        self._synthetic: deque[PlatformMessage] | None = None
        self._replies: ReplyRecovery | None = None
        self._activity: ActivityReporter | None = None
        self._counts = RoomCounters()

    def _recovery(self) -> ReplyRecovery:
        if self._replies is None:
            svc = self._svc
            self._replies = ReplyRecovery(
                room_id=self.room_id,
                agent_id=svc.agent_id,
                rest=svc.rest,
                ledger=svc.ledger,
                page_size=svc.config.history_page_size,
            )
        return self._replies

    def _reply_owed(self, message_id: str) -> bool:
        """True when a reply to the message was posted with no known outcome."""
        return bool(self._ledger.reply_intents(self.room_id, message_id))

    async def _check_reply(self, ev: MessageCreated) -> ReplyCheck:
        recovery = self._recovery()
        try:
            result = await recovery.check(ev)
        finally:
            # Kept only while a failed lookup is being retried: a room that
            # idles after its turns holds no recovery helper.
            if recovery.idle and self._replies is recovery:
                self._replies = None
        if result is ReplyCheck.LANDED:
            self._counts.replies_recovered += 1
        return result

    def _reporter(self) -> ActivityReporter:
        if self._activity is None:
            self._activity = ActivityReporter(self.room_id, self._svc.rest, self._config)
        return self._activity

    def _settling(self) -> Settler:
        # Stateless: made for each use rather than kept by a room that may
        # idle for hours after its turn.
        return Settler(
            room_id=self.room_id,
            rest=self._rest,
            ledger=self._ledger,
            config=self._config,
            counters=self._counts,
            error_texts=_ERROR_TEXTS,
        )

    def _apply_offered_roster(self) -> None:
        offered, self._offered_roster = self._offered_roster, None
        if offered is None:
            return
        try:
            self._roster.replace_snapshot(offered)
        except BandError as exc:
            logger.warning("room %s: ignoring the listed roster: %s", self.room_id, exc)
            self._m.roster_read(ok=False)
            return
        self._m.roster_read(ok=True)

    async def _guarded_process(self, ev: MessageCreated) -> MessageOutcome:
        try:
            return await self._process(ev)
        except BandError as exc:
            logger.warning("room %s: message %s: %s", self.room_id, ev.id, exc)
        except Exception:
            # A bug must not kill the room: log it and retry later from /next.
            logger.exception("room %s: unexpected error on message %s", self.room_id, ev.id)
        return MessageOutcome.RETRY

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
            self._counts.skipped += 1
            return MessageOutcome.SKIPPED
        return await self._process(ev)

    # ------------------------------------------------------------------ one message

    async def _process(self, ev: MessageCreated) -> MessageOutcome:
        # Every record logged while this message is handled (the claim, the
        # turn, its tool and REST calls, the settlement) carries its id.
        with log_context(message_id=ev.id):
            return await self._process_message(ev)

    async def _process_message(self, ev: MessageCreated) -> MessageOutcome:
        # The order of the steps is the machine's: this shell performs each
        # action the walk names and feeds back what it found.
        ledger = self._ledger
        walk = self._m.admit(
            own=admission.is_own_message(ev.sender_type, ev.sender_id, self._svc.agent_id)
        )
        claim: Claim | None = None
        attempt: Attempt | None = None
        try:
            while not walk.done:
                if walk.action is Admission.CLAIM:
                    answer = ledger.try_claim(self.room_id, ev.id)
                    if isinstance(answer, Refusal):
                        walk.claim_refused(answer.reason)
                        continue
                    claim = answer
                    walk.claim_held(
                        processed=admission.processed_on_platform(
                            ev.metadata.delivery_status, self._svc.agent_id
                        ),
                        open_reply_intents=self._reply_owed(ev.id),
                    )
                elif walk.action is Admission.CHECK_REPLY:
                    walk.reply_checked(await self._check_reply(ev))
                else:
                    assert walk.action is Admission.COUNT_ATTEMPT
                    assert claim is not None
                    attempt = ledger.record_attempt(claim)
                    walk.attempt_counted(attempt)
            return await self._admitted(walk.action, ev, claim, attempt)
        finally:
            if claim is not None:
                ledger.release(claim)

    async def _admitted(
        self,
        action: Admission,
        ev: MessageCreated,
        claim: Claim | None,
        attempt: Attempt | None,
    ) -> MessageOutcome:
        """Perform the walk's final action."""
        if action is Admission.RUN:
            assert claim is not None
            assert attempt is not None
            return await self._run_turn(ev, claim, attempt)
        if action is Admission.ACK_ONLY:
            # The turn already ran (a reply was journaled, it completed, or
            # an earlier post did land): only the processed mark is owed,
            # never a second run.
            return await self._settling().ack_outcome(ev.id)
        if action is Admission.MARK_COMPLETED:
            self._ledger.mark_completed(self.room_id, ev.id)
        elif action is Admission.FAIL_EXHAUSTED:
            assert attempt is not None
            logger.warning(
                "room %s: message %s used its %d attempts; not running it again",
                self.room_id,
                ev.id,
                attempt.max_attempts,
            )
            return await self._settling().carry_out(ev.id, settlement.settle_exhausted())
        elif action is Admission.PAUSE:
            return MessageOutcome.PAUSED
        elif action is Admission.RETRY:
            return MessageOutcome.RETRY
        self._counts.skipped += 1
        return MessageOutcome.SKIPPED

    async def _run_turn(self, ev: MessageCreated, claim: Claim, attempt: Attempt) -> MessageOutcome:
        # With tracing on, the turn is one span; its REST and tool calls
        # (made in this task or in tasks it starts) are its children.
        with span("band.turn", {"band.turn.attempt": attempt.number}):
            return await self._run_claimed_turn(ev, claim, attempt)

    async def _run_claimed_turn(
        self, ev: MessageCreated, claim: Claim, attempt: Attempt
    ) -> MessageOutcome:
        ledger = self._ledger
        charged = False
        try:
            # Hydrate before the claim (the official order: participants,
            # context, then the processing mark).
            if self._offered_roster is not None:
                self._apply_offered_roster()
            if self._m.roster_stale:
                await self._refresh_roster()
            history = HistoryProvider()
            if self._bootstrap and self._config.enable_context_hydration:
                # Bounded across rooms: when a thousand rooms start at once,
                # the ones not reading wait before holding any history.
                async with self._svc.history_loads:
                    history = await load_history(
                        self._rest,
                        room_id=self.room_id,
                        trigger_id=ev.id,
                        roster=self._roster,
                        agent_id=self._svc.agent_id,
                        config=self._config,
                    )
            if self._m.paused:
                return MessageOutcome.PAUSED
            try:
                await self._rest.mark_processing(self.room_id, ev.id)
            except RoomExecutionStoppedError:
                logger.info("room %s: claim of %s refused (stopped)", self.room_id, ev.id)
                return MessageOutcome.RETRY
            except BandError as exc:
                logger.warning("room %s: claim of %s failed: %s", self.room_id, ev.id, exc)
                return MessageOutcome.RETRY
            if self._m.paused:
                # Stopped (or shutting down) while claiming: leave it processing
                # for /next to replay.
                return MessageOutcome.PAUSED
            lookup = post_lookup(self._svc, self.room_id, ev)
            turn = RunningTurn(self.room_id, ev.id, attempt, ledger, find_post=lookup)
            self._turn = turn
            self._counts.turns += 1
            now = trio.current_time()
            self._m.turn_started(now)
            self._svc.changes.notify()
            logger.debug(
                "room %s: turn for %s (attempt %d of %d)",
                self.room_id,
                ev.id,
                attempt.number,
                attempt.max_attempts,
            )
            started = now
            try:
                end, error = await self._execute(turn, ev, history)
            finally:
                self._turn = None
                self._m.turn_ended()
                turn.done.set()
            duration = trio.current_time() - started
            self._svc.turn_durations.record(duration)
            charged = settlement.charges_attempt(end)
            if (
                settlement.may_have_replied(end)
                and self._reply_owed(ev.id)
                and await self._check_reply(ev) is ReplyCheck.LANDED
            ):
                # The turn failed around a reply post with no known outcome,
                # and that reply is on the platform: the message was answered.
                # Ack it rather than fail it (and never tell the room that
                # nothing reached it).
                end, error = TurnEnd.SUCCESS, None
            return await self._settling().settle_turn(
                ev.id,
                end,
                attempt=attempt,
                error=error,
                failure_reported=turn.effects.reported,
                duration=duration,
            )
        finally:
            # Interrupts, stops, refused claims and cancellation do not use up
            # an attempt: the message was not given a fair run.
            if not charged:
                ledger.discard_attempt(claim)
            self._svc.changes.notify()  # the turn ended and settled

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
                    nursery.start_soon(self._reporter().keep_working, turn)
                try:
                    with scope:
                        try:
                            dropped = not await self._invoke(turn, ev, history)
                        except Exception as exc:
                            error = exc
                finally:
                    turn.ended.set()
        finally:
            try:
                if turn.working_reported:
                    await self._reporter().report_idle()
            finally:
                # A reporter with no failure streak to remember is no
                # different from a new one: the idle room does not keep it.
                if self._activity is not None and not self._activity.warned:
                    self._activity = None
        end = settlement.classify_turn_end(
            cancelled=scope.cancelled_caught,
            aborted=turn.aborted,
            error=error,
            dropped=dropped,
            missing_reply=isinstance(self._svc.adapter, TurnJudging)
            and self._svc.adapter.judges_turns
            and turn.effects.verdict is TurnVerdict.MISSING_REPLY,
        )
        return end, (error if end is TurnEnd.ERROR else None)

    async def _run_synthetic(self, message: PlatformMessage) -> None:
        """One synthetic turn: no claim, no marks, no activity, not judged."""
        with log_context(message_id=message.id):
            await self._run_synthetic_turn(message)

    async def _run_synthetic_turn(self, message: PlatformMessage) -> None:
        turn = RunningTurn(
            room_id=self.room_id,
            message_id=message.id,
            attempt=Attempt(1, 1),
            ledger=self._ledger,
            synthetic=True,
        )
        self._turn = turn
        self._m.turn_started(None)
        self._counts.turns += 1
        self._svc.changes.notify()
        try:
            with trio.CancelScope() as scope:
                turn.scope = scope
                if self._config.turn_timeout is not None:
                    scope.deadline = trio.current_time() + self._config.turn_timeout
                try:
                    await self._invoke(turn, message, HistoryProvider())
                except InputNotAccepted:
                    # Kept at the head: tried again at the next reconcile.
                    self._m.synthetic_refused(trio.current_time())
                    return
                except Exception:
                    self._counts.failures += 1
                    logger.exception("room %s: synthetic turn %s failed", self.room_id, message.id)
            if scope.cancelled_caught and turn.aborted is Abort.STOP:
                return  # stopped: replayed after play
        finally:
            self._turn = None
            self._m.turn_ended()
            turn.done.set()
        if self._synthetic and self._synthetic[0] is message:
            self._synthetic.popleft()
            self._counts.completed += 1

    async def _invoke(
        self, turn: RunningTurn, ev: MessageCreated | PlatformMessage, history: HistoryProvider
    ) -> bool:
        svc = self._svc
        roster = self._roster
        participants_msg = render_participants_msg(roster) if roster.changed else None
        snapshot = roster.snapshot()
        lines = list(self._system_lines or ())
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
        pending = self._system_lines
        if pending is not None:
            for _ in range(min(delivered_lines, len(pending))):
                pending.popleft()

    # ------------------------------------------------------------------ hydration

    async def _refresh_roster(self) -> None:
        try:
            participants = await self._rest.list_participants(self.room_id)
            # Identical rows (the agent's own, a user's) are shared across rooms.
            share = self._svc.participant_rows.share
            self._roster.replace_snapshot([share(p) for p in participants])
        except BandError as exc:
            # Kept stale: the next turn or reconcile tries again, so one failed
            # read never leaves a room with no roster for good.
            logger.warning("room %s: could not load participants: %s", self.room_id, exc)
            return
        self._m.roster_read(ok=True)
