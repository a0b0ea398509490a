"""Carrying out what a turn's end means for its message (the Trio side of settlement).

:mod:`~band_trio.runtime.core._settlement` decides; a :class:`Settler` executes the
decision for one room: the lifecycle marks, the error event, the ledger
records, and the room's counters. ``processed`` (the ack) is the mark that
must land: :meth:`Settler.ack` retries the forms the platform accepts and
records the message completed once the mark landed, or the message is gone,
or :func:`~band_trio.runtime.core._settlement.gives_up_ack` gives it up. A
``failed`` mark that did not land for a passing reason (a stopped room, an
unreachable platform) keeps the message from being recorded failed for good:
it is settled again when it comes back. The error event is best effort: a
failure is logged, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping

from band_trio._logging import get_logger
from band_trio.errors import (
    BandError,
    NotFoundError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.runtime.claims.ledger import Attempt, ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._reconcile_pass import MessageOutcome
from band_trio.runtime.core._settlement import (
    Acknowledge,
    ErrorNotice,
    FailForGood,
    MarkFailed,
    PostErrorEvent,
    Settlement,
    TurnEnd,
    gives_up_ack,
    settle,
)
from band_trio.runtime.room._rest import RoomRest
from band_trio.runtime.room.services import RoomCounters

__all__ = ["Settler"]

# Part of the room's work: its lines go to the room's logger, where log
# filters and readers expect them.
logger = get_logger("band_trio.runtime.room")

_WORK_LIST_PAGE_SIZE = 100
_WORK_LIST_MAX_PAGES = 10


_OUTCOMES: Mapping[TurnEnd, str] = {
    TurnEnd.SUCCESS: "answered",
    TurnEnd.DROPPED: "dropped by the preprocessor",
    TurnEnd.NOT_ACCEPTED: "not accepted by the adapter; retrying later",
    TurnEnd.INTERRUPTED: "interrupted",
    TurnEnd.STOPPED: "stopped; left processing",
    TurnEnd.PLATFORM_STOPPED: "stopped by the platform",
}
"""How the one INFO line says a turn ended (the other ends are warnings or errors)."""


class Settler:
    """Settles one room's messages.

    Args:
        room_id: the room.
        rest: where the marks and events go.
        ledger: where outcomes are recorded.
        config: ``report_turn_failures`` and ``turn_timeout`` (for the log).
        counters: the room's counters (completed, failures, interrupted,
            failed for good are counted here).
        error_texts: the text of each generic error event.
    """

    def __init__(
        self,
        *,
        room_id: str,
        rest: RoomRest,
        ledger: ClaimsLedger,
        config: AgentConfig,
        counters: RoomCounters,
        error_texts: Mapping[ErrorNotice, str],
    ) -> None:
        self._room_id = room_id
        self._rest = rest
        self._ledger = ledger
        self._config = config
        self._counters = counters
        self._error_texts = error_texts

    async def settle_turn(
        self,
        message_id: str,
        end: TurnEnd,
        *,
        attempt: Attempt,
        error: Exception | None,
        failure_reported: bool,
        duration: float = 0.0,
    ) -> MessageOutcome:
        """Settle a message after its turn ended as ``end`` (after ``duration`` seconds)."""
        room_id = self._room_id
        logger.debug("room %s: turn for %s ended: %s", room_id, message_id, end.value)
        decided = settle(
            end,
            attempt=attempt,
            error_name=type(error).__name__ if error is not None else None,
            report_failures=self._config.report_turn_failures,
            failure_reported=failure_reported,
        )
        # One line per handled message: INFO when it went as asked, WARNING or
        # ERROR (with the traceback) when it did not.
        if end is TurnEnd.MISSING_REPLY:
            logger.warning(
                "room %s: message %s: turn ended without a reply after %.2f s",
                room_id,
                message_id,
                duration,
            )
        elif end is TurnEnd.TIMEOUT:
            logger.warning(
                "room %s: message %s: turn timed out after %ss",
                room_id,
                message_id,
                self._config.turn_timeout,
            )
        elif end is TurnEnd.ERROR:
            logger.error(
                "room %s: message %s: turn failed after %.2f s (attempt %d of %d)",
                room_id,
                message_id,
                duration,
                attempt.number,
                attempt.max_attempts,
                exc_info=error,
            )
        else:
            logger.info(
                "room %s: message %s %s in %.2f s",
                room_id,
                message_id,
                _OUTCOMES[end],
                duration,
            )
        return await self.carry_out(message_id, decided)

    async def carry_out(self, message_id: str, decided: Settlement) -> MessageOutcome:
        """Execute a settlement's actions in order; return the message's outcome."""
        counters = self._counters
        if decided.failure:
            counters.failures += 1
        if decided.interrupted:
            counters.interrupted += 1
        unmarked = False
        for action in decided.actions:
            if isinstance(action, Acknowledge):
                # Recorded before the write, with no await in between.
                self._ledger.mark_ack_pending(self._room_id, message_id)
                if not await self.ack(message_id):
                    return MessageOutcome.RETRY
            elif isinstance(action, MarkFailed):
                unmarked = not await self._mark_failed(
                    message_id, action.label, claim_first=action.claim_first
                )
            elif isinstance(action, FailForGood) and not unmarked:
                counters.failed_for_good += 1
                self._ledger.mark_failed_final(self._room_id, message_id)
            elif isinstance(action, PostErrorEvent):
                await self._post_error_event(self._error_texts[action.notice])
        if unmarked:
            # The platform still shows the message processing: it is not
            # failed for good until the mark lands, or it would stay
            # processing for ever. It comes back (after a play, if the room
            # was stopped) and is settled again.
            return MessageOutcome.RETRY
        return decided.outcome

    async def ack_outcome(self, message_id: str) -> MessageOutcome:
        """:meth:`ack` as the message's outcome: advanced, or retried later."""
        return MessageOutcome.ADVANCED if await self.ack(message_id) else MessageOutcome.RETRY

    async def ack(self, message_id: str) -> bool:
        """Mark a completed message processed; True when that is settled (the
        message is then recorded completed and counted).

        Outcomes: accepted → completed; not found → the message is gone,
        completed; rejected (422, no active attempt) → if the message has left
        the work list, an earlier mark whose answer was lost did land: completed;
        otherwise claim again and mark processed (never re-running the turn;
        claiming a processed message would re-open it and record a second
        attempt); stopped (204) or unconfirmed
        (anything else) → stays ack-pending for the next reconcile, until
        :func:`~band_trio.runtime.core._settlement.gives_up_ack` says otherwise.
        """
        rest = self._rest
        ledger = self._ledger
        room_id = self._room_id
        try:
            try:
                await rest.mark_processed(room_id, message_id)
            except UnprocessableEntityError:
                if await self._awaits_processing(message_id):
                    await rest.mark_processing(room_id, message_id)
                    await rest.mark_processed(room_id, message_id)
        except NotFoundError:
            logger.info("room %s: message %s is gone; counting it done", room_id, message_id)
        except RoomExecutionStoppedError:
            return False
        except BandError as exc:
            failures = ledger.note_ack_failure(room_id, message_id)
            if not gives_up_ack(
                retryable=exc.retryable, failures=failures, max_attempts=ledger.max_attempts
            ):
                logger.warning(
                    "room %s: processed mark for %s unconfirmed (%d): %s",
                    room_id,
                    message_id,
                    failures,
                    exc,
                )
                return False
            logger.error(
                "room %s: giving up the processed mark for %s after %d tries: %s",
                room_id,
                message_id,
                failures,
                exc,
            )
        ledger.mark_completed(room_id, message_id)
        self._counters.completed += 1
        return True

    async def _awaits_processing(self, message_id: str) -> bool:
        """Whether the message is still in the agent's work list (not processed).

        Pages through the work list, which holds only unprocessed messages; if
        it is too long to read to the end, answers True (claim and mark again).
        """
        cursor: str | None = None
        for _ in range(_WORK_LIST_MAX_PAGES):
            page = await self._rest.list_messages(
                self._room_id, sort_order="asc", limit=_WORK_LIST_PAGE_SIZE, cursor=cursor
            )
            if any(msg.id == message_id for msg in page.items):
                return True
            cursor = page.next_cursor
            if not page.has_more or not cursor:
                return False
        return True

    async def _mark_failed(self, message_id: str, label: str, *, claim_first: bool) -> bool:
        """Mark the message failed; False when the mark may land if tried
        again later (the room is stopped, the platform is unreachable)."""
        try:
            if claim_first:
                await self._rest.mark_processing(self._room_id, message_id)
            await self._rest.mark_failed(self._room_id, message_id, label)
        except BandError as exc:
            logger.warning("room %s: could not mark %s failed: %s", self._room_id, message_id, exc)
            return not exc.retryable
        return True

    async def _post_error_event(self, text: str) -> None:
        """Post one generic ``error`` event (never an exception's text)."""
        metadata = {
            "failure": {"provider": "band-runtime", "code": None, "message": text, "detail": None}
        }
        try:
            await self._rest.send_event(self._room_id, text, "error", metadata)
        except BandError as exc:
            logger.warning("room %s: could not post the error event: %s", self._room_id, exc)
