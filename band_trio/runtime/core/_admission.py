"""Whether a delivered or listed message runs as a turn (sans-io).

A message reaches a room by the live push, by ``/next`` or by the listing a
reconcile pass scans. Whichever path found it, the same decisions apply, in this
order, each from facts the room's Trio shell gathered:

1. :func:`before_claim`: the agent's own message is never a turn; a stopped
   or shutting-down room leaves it on the platform.
2. :func:`after_refusal`: the claims ledger refused the claim. A message whose
   turn already ran (a reply journaled, or completed but not acked) is only
   acked, never run again; one in flight elsewhere is retried later; one done
   or failed for good is skipped.
3. :func:`after_claim`: the platform's delivery status says this agent
   already processed it (recorded completed, skipped); a reply to it was
   posted with no known outcome (look it up first); otherwise run it.
4. :func:`after_reply_check`: that lookup found the reply (ack only), did not
   find it (run), or could not tell (retry later). :class:`ReplyLookups`
   bounds how long "could not tell" lasts.
5. :func:`before_run`: the attempt budget was already used up (by runs that
   crashed the process): fail it for good instead of running it.

:class:`AdmissionWalk` is that order as a state machine for one message: the
room's shell asks it for the next :class:`Admission` (an action to perform),
performs it and feeds back what it found (the ledger's answer, the lookup's
result, the attempt counted), until the walk ends in a final action. The shell
holds no order of its own; feeding the walk out of order is a bug, and
raises :class:`AdmissionOrderError`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from band_trio.runtime.core._claims import Attempt, RefusalReason

__all__ = [
    "FINAL_ACTIONS",
    "MAX_REPLY_LOOKUPS",
    "Admission",
    "AdmissionOrderError",
    "AdmissionWalk",
    "ReplyCheck",
    "ReplyLookups",
    "after_claim",
    "after_refusal",
    "after_reply_check",
    "before_claim",
    "before_run",
    "is_own_message",
    "processed_on_platform",
]

MAX_REPLY_LOOKUPS: Final = 3
"""Failed lookups of a reply with unknown outcome before the message runs again."""


class Admission(enum.Enum):
    """What the room does with a message."""

    CLAIM = "claim"
    """Nothing speaks against it yet: claim it in the ledger."""
    SKIP = "skip"
    """Never a turn (own, already done, failed for good): counted as skipped."""
    PAUSE = "pause"
    """The room is stopped or shutting down: leave it on the platform."""
    RETRY = "retry"
    """Not now (in flight elsewhere, a lookup that could not tell): retry later."""
    ACK_ONLY = "ack_only"
    """Its turn already ran: only the ``processed`` mark is owed."""
    MARK_COMPLETED = "mark_completed"
    """The platform says it is processed: record it completed, skip it."""
    CHECK_REPLY = "check_reply"
    """A reply to it was posted with no known outcome: look for it first."""
    COUNT_ATTEMPT = "count_attempt"
    """Nothing speaks against running it: count an attempt in the ledger."""
    RUN = "run"
    """The attempt is counted and within the budget: run the turn."""
    FAIL_EXHAUSTED = "fail_exhausted"
    """Its attempts were used up without a verdict: fail it for good."""


class ReplyCheck(enum.Enum):
    """What a lookup of a reply with unknown outcome found."""

    LANDED = "landed"
    """The reply is on the platform: ack only."""
    ABSENT = "absent"
    """It is not (or the lookup was given up): run the message."""
    UNKNOWN = "unknown"
    """Could not tell yet: try later."""


def is_own_message(sender_type: str, sender_id: str, agent_id: str) -> bool:
    """True for a message this agent posted (its echo is never a turn)."""
    return sender_type == "Agent" and sender_id == agent_id


def processed_on_platform(statuses: object, agent_id: str) -> bool:
    """True when a message's delivery status says this agent processed it."""
    if not isinstance(statuses, Mapping):
        return False
    mine = statuses.get(agent_id)
    return isinstance(mine, Mapping) and mine.get("status") == "processed"


def before_claim(*, own: bool, paused: bool) -> Admission:
    """The first decision, before the ledger is asked (``CLAIM``, ``SKIP``, ``PAUSE``)."""
    if own:
        return Admission.SKIP
    if paused:
        return Admission.PAUSE
    return Admission.CLAIM


def after_refusal(reason: RefusalReason) -> Admission:
    """The ledger refused the claim for ``reason`` (``ACK_ONLY``, ``RETRY``, ``SKIP``)."""
    if reason is RefusalReason.ACK_PENDING:
        return Admission.ACK_ONLY
    if reason is RefusalReason.IN_FLIGHT:
        return Admission.RETRY
    return Admission.SKIP


def after_claim(*, processed: bool, open_reply_intents: bool) -> Admission:
    """The claim is held (``MARK_COMPLETED``, ``CHECK_REPLY``, ``COUNT_ATTEMPT``).

    Args:
        processed: the delivery status says this agent processed it.
        open_reply_intents: a reply to it was posted with no known outcome.
    """
    if processed:
        return Admission.MARK_COMPLETED
    if open_reply_intents:
        return Admission.CHECK_REPLY
    return Admission.COUNT_ATTEMPT


def after_reply_check(check: ReplyCheck) -> Admission:
    """The lookup of an earlier reply ended (``RETRY``, ``ACK_ONLY``, ``COUNT_ATTEMPT``)."""
    if check is ReplyCheck.UNKNOWN:
        return Admission.RETRY
    if check is ReplyCheck.LANDED:
        return Admission.ACK_ONLY
    return Admission.COUNT_ATTEMPT


def before_run(attempt: Attempt) -> Admission:
    """The attempt was counted (``RUN`` or ``FAIL_EXHAUSTED``)."""
    return Admission.FAIL_EXHAUSTED if attempt.exceeded else Admission.RUN


FINAL_ACTIONS: Final = frozenset(
    {
        Admission.SKIP,
        Admission.PAUSE,
        Admission.RETRY,
        Admission.ACK_ONLY,
        Admission.MARK_COMPLETED,
        Admission.RUN,
        Admission.FAIL_EXHAUSTED,
    }
)
"""The actions that end a walk: the shell performs one and is done with admission."""


class AdmissionOrderError(AssertionError):
    """The shell fed an :class:`AdmissionWalk` an answer its action did not ask for."""


class AdmissionWalk:
    """One message's way through the five decisions, in their order.

    :attr:`action` is what the shell does next. The three actions that need
    an answer are ``CLAIM`` (answer with :meth:`claim_refused` or
    :meth:`claim_held`), ``CHECK_REPLY`` (:meth:`reply_checked`) and
    ``COUNT_ATTEMPT`` (:meth:`attempt_counted`); every other action is final
    (:attr:`done`). Each answer returns the next action.

    Args:
        own: the message is this agent's own.
        paused: the room is stopped or shutting down.
    """

    __slots__ = ("action",)

    def __init__(self, *, own: bool, paused: bool) -> None:
        self.action: Admission = before_claim(own=own, paused=paused)

    @property
    def done(self) -> bool:
        """True once :attr:`action` is final."""
        return self.action in FINAL_ACTIONS

    def _expect(self, action: Admission) -> None:
        if self.action is not action:
            raise AdmissionOrderError(f"the walk asked for {self.action.value}, not {action.value}")

    def claim_refused(self, reason: RefusalReason) -> Admission:
        """The ledger refused the claim (answers ``CLAIM``)."""
        self._expect(Admission.CLAIM)
        self.action = after_refusal(reason)
        return self.action

    def claim_held(self, *, processed: bool, open_reply_intents: bool) -> Admission:
        """The ledger gave the claim (answers ``CLAIM``); the facts as :func:`after_claim`."""
        self._expect(Admission.CLAIM)
        self.action = after_claim(processed=processed, open_reply_intents=open_reply_intents)
        return self.action

    def reply_checked(self, check: ReplyCheck) -> Admission:
        """The lookup of the earlier reply ended (answers ``CHECK_REPLY``)."""
        self._expect(Admission.CHECK_REPLY)
        self.action = after_reply_check(check)
        return self.action

    def attempt_counted(self, attempt: Attempt) -> Admission:
        """The ledger counted the attempt (answers ``COUNT_ATTEMPT``)."""
        self._expect(Admission.COUNT_ATTEMPT)
        self.action = before_run(attempt)
        return self.action


class ReplyLookups:
    """Failed lookups of replies with unknown outcome, per message.

    A lookup that fails (a REST error) is tried again at a later pass; after
    ``limit`` failures in a row the message runs again, since answering twice
    is better than never answering.

    Args:
        limit: failures after which the lookup is given up.
    """

    def __init__(self, limit: int = MAX_REPLY_LOOKUPS) -> None:
        self.limit = limit
        self._failures: dict[str, int] = {}

    def failures(self, message_id: str) -> int:
        """Failed lookups counted for the message now."""
        return self._failures.get(message_id, 0)

    def failed(self, message_id: str) -> ReplyCheck:
        """Count a failed lookup: ``UNKNOWN`` (try later) or, at the limit,
        ``ABSENT`` (give up, run the message; the count is forgotten)."""
        count = self._failures.get(message_id, 0) + 1
        if count < self.limit:
            self._failures[message_id] = count
            return ReplyCheck.UNKNOWN
        self._failures.pop(message_id, None)
        return ReplyCheck.ABSENT

    def settled(self, message_id: str) -> None:
        """The lookup ended with an answer: forget the failures."""
        self._failures.pop(message_id, None)

    def __len__(self) -> int:
        return len(self._failures)
