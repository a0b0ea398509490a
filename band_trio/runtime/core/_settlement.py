"""What the end of a turn means for its message (sans-io).

A turn ends in one of the :class:`TurnEnd` kinds, told apart by
:func:`classify_turn_end` from what the room's Trio shell observed (was the
turn's scope cancelled, and why; did the adapter raise, and what; did the
preprocessor keep anything; did a judged turn answer). :func:`settle` then
says what is owed on the platform and in the ledger, as an ordered tuple of
actions the shell executes, and what the room does next:

* a completed, dropped or interrupted turn is acked (an interrupted message is
  consumed: marked processed, nothing posted);
* a turn stopped by the room's ``stop`` stays ``processing`` (replayed after
  ``play``); one the platform stopped, or whose input the adapter did not
  accept, is retried later; neither uses up an attempt;
* a failed or timed-out turn is marked failed; it is retried while attempts
  remain, and after the last one failed for good with one generic error event
  (unless the turn already reported its failure itself);
* a judged turn that answered nothing is failed for good at once, after one
  error event saying so: a retry would only post the same report again.

:func:`gives_up_ack` is the rule for a ``processed`` mark that keeps failing.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from band_trio.adapter.failures import MISSING_REPLY_LABEL
from band_trio.errors import InputNotAccepted, RoomExecutionStoppedError
from band_trio.runtime.core._claims import Attempt
from band_trio.runtime.core._reconcile_pass import MessageOutcome

__all__ = [
    "EXHAUSTED_LABEL",
    "MISSING_REPLY_LABEL",
    "TIMEOUT_LABEL",
    "Abort",
    "Acknowledge",
    "ErrorNotice",
    "FailForGood",
    "MarkFailed",
    "PostErrorEvent",
    "Settlement",
    "SettlementAction",
    "TurnEnd",
    "charges_attempt",
    "classify_turn_end",
    "gives_up_ack",
    "may_have_replied",
    "settle",
    "settle_exhausted",
]

TIMEOUT_LABEL: Final = "TurnTimeout"
"""The failed mark's label for a turn that outlived ``AgentConfig.turn_timeout``."""

EXHAUSTED_LABEL: Final = "AttemptsExhausted"
"""The failed mark's label for a message whose attempts were used up unseen."""


class Abort(enum.Enum):
    """Why a running turn's scope was cancelled on purpose."""

    INTERRUPT = "interrupt"
    STOP = "stop"
    PLATFORM_STOP = "platform_stop"


class TurnEnd(enum.Enum):
    """How a turn ended."""

    SUCCESS = "success"
    MISSING_REPLY = "missing_reply"
    """A judged turn that answered nothing."""
    DROPPED = "dropped"
    """The preprocessor kept nothing for the adapter."""
    ERROR = "error"
    TIMEOUT = "timeout"
    NOT_ACCEPTED = "not_accepted"
    """The adapter did not accept the input (yet)."""
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"
    PLATFORM_STOPPED = "platform_stopped"


_CHARGED: Final = frozenset(
    {TurnEnd.ERROR, TurnEnd.TIMEOUT, TurnEnd.SUCCESS, TurnEnd.DROPPED, TurnEnd.MISSING_REPLY}
)
_MAY_HAVE_REPLIED: Final = frozenset({TurnEnd.ERROR, TurnEnd.TIMEOUT, TurnEnd.MISSING_REPLY})


def classify_turn_end(
    *,
    cancelled: bool,
    aborted: Abort | None,
    error: BaseException | None,
    dropped: bool,
    missing_reply: bool,
) -> TurnEnd:
    """How a turn ended, from what was observed.

    Args:
        cancelled: the turn's cancel scope caught its cancellation.
        aborted: why the turn was cancelled on purpose, if it was; a
            cancellation with no reason is the turn timeout.
        error: what the adapter raised, if anything.
        dropped: the preprocessor kept nothing, the adapter was not called.
        missing_reply: the adapter judges turns and judged this one unanswered.
    """
    if cancelled:
        if aborted is Abort.INTERRUPT:
            return TurnEnd.INTERRUPTED
        if aborted is Abort.STOP:
            return TurnEnd.STOPPED
        if aborted is Abort.PLATFORM_STOP:
            return TurnEnd.PLATFORM_STOPPED
        return TurnEnd.TIMEOUT
    if aborted is Abort.PLATFORM_STOP and error is not None:
        # The failure followed the platform's stop: the stop is the cause.
        return TurnEnd.PLATFORM_STOPPED
    if isinstance(error, RoomExecutionStoppedError):
        return TurnEnd.PLATFORM_STOPPED
    if isinstance(error, InputNotAccepted):
        return TurnEnd.NOT_ACCEPTED
    if error is not None:
        return TurnEnd.ERROR
    if dropped:
        return TurnEnd.DROPPED
    if missing_reply:
        return TurnEnd.MISSING_REPLY
    return TurnEnd.SUCCESS


def charges_attempt(end: TurnEnd) -> bool:
    """True when the turn used up one of the message's attempts.

    Interrupts, stops, a platform stop and an input the adapter did not
    accept do not: the message was not given a fair run.
    """
    return end in _CHARGED


def may_have_replied(end: TurnEnd) -> bool:
    """True when a turn that ended so may still have answered through a post
    with no known outcome: look for that reply before failing the message."""
    return end in _MAY_HAVE_REPLIED


class ErrorNotice(enum.Enum):
    """Which generic error event a room posts (never an exception's text)."""

    TURN_FAILED = "turn_failed"
    """The message failed for the last time."""
    MISSING_REPLY = "missing_reply"
    """A judged turn ended without a reply, a decline or durable work."""


@attrs.frozen
class Acknowledge:
    """Record the message ack-pending, then mark it processed. When the mark
    does not land the message is retried later (only the mark, never the turn)."""


@attrs.frozen
class MarkFailed:
    """Mark the message failed on the platform with ``label``; claim it first
    when no claim is active (``claim_first``)."""

    label: str
    claim_first: bool = False


@attrs.frozen
class FailForGood:
    """Record the message failed for good: it never runs again."""


@attrs.frozen
class PostErrorEvent:
    """Post one generic error event to the room."""

    notice: ErrorNotice


SettlementAction = Acknowledge | MarkFailed | FailForGood | PostErrorEvent


@attrs.frozen
class Settlement:
    """What is owed after a turn, in order, and what the room does next.

    Attributes:
        actions: to execute in order.
        outcome: the message's outcome once the actions ran; an
            :class:`Acknowledge` that does not land makes it ``RETRY``.
        failure: the turn counts as a failed turn.
        interrupted: the turn counts as interrupted.
    """

    actions: tuple[SettlementAction, ...]
    outcome: MessageOutcome
    failure: bool = False
    interrupted: bool = False


def settle(
    end: TurnEnd,
    *,
    attempt: Attempt,
    error_name: str | None = None,
    report_failures: bool,
    failure_reported: bool,
) -> Settlement:
    """What the end of a turn means for its message.

    Args:
        end: how the turn ended.
        attempt: the attempt the turn used.
        error_name: the name of the adapter's error (the failed mark's label)
            when ``end`` is ``ERROR``.
        report_failures: ``AgentConfig.report_turn_failures``.
        failure_reported: the turn already reported its failure to the room.
    """
    if end in (TurnEnd.SUCCESS, TurnEnd.DROPPED):
        return Settlement((Acknowledge(),), MessageOutcome.ADVANCED)
    if end is TurnEnd.INTERRUPTED:
        return Settlement((Acknowledge(),), MessageOutcome.ADVANCED, interrupted=True)
    if end is TurnEnd.STOPPED:
        return Settlement((), MessageOutcome.PAUSED)
    if end in (TurnEnd.PLATFORM_STOPPED, TurnEnd.NOT_ACCEPTED):
        return Settlement((), MessageOutcome.RETRY)
    if end is TurnEnd.MISSING_REPLY:
        notice = (PostErrorEvent(ErrorNotice.MISSING_REPLY),) if report_failures else ()
        return Settlement(
            (*notice, MarkFailed(MISSING_REPLY_LABEL), FailForGood()),
            MessageOutcome.ADVANCED,
            failure=True,
        )
    # ERROR or TIMEOUT: the failure path.
    label = TIMEOUT_LABEL if end is TurnEnd.TIMEOUT else (error_name or "Exception")
    if not attempt.is_final:
        return Settlement((MarkFailed(label),), MessageOutcome.RETRY, failure=True)
    notice = (
        (PostErrorEvent(ErrorNotice.TURN_FAILED),)
        if report_failures and not failure_reported
        else ()
    )
    return Settlement(
        (MarkFailed(label), FailForGood(), *notice), MessageOutcome.ADVANCED, failure=True
    )


def settle_exhausted() -> Settlement:
    """A message whose attempts were used up without a verdict (for example by
    runs that crashed the process): failed for good without running it."""
    return Settlement(
        (MarkFailed(EXHAUSTED_LABEL, claim_first=True), FailForGood()), MessageOutcome.SKIPPED
    )


def gives_up_ack(*, retryable: bool, failures: int, max_attempts: int) -> bool:
    """True when a failing ``processed`` mark is given up (the message is then
    recorded completed; its turn is never run again either way).

    Retryable failures (5xx, 429, transport) are retried for as long as it
    takes: giving up would leave the message actionable on the platform for
    ever. A terminal refusal is given up after ``max_attempts``, so the room
    cannot wedge on it.
    """
    return not retryable and failures >= max_attempts
