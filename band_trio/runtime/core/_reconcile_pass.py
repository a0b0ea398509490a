"""What one reconcile pass of a room concludes (sans-io).

A pass reads ``GET /messages/next`` (the mailbox) one message at a time. The
platform keeps answering ``/next`` with its oldest actionable message, so a
message this process will never run again (own, completed, failed for good)
would wedge the room: when ``/next`` offers such a message, or the same
message twice in a row, the pass switches to listing the room's messages in
order and steps past it. :class:`ReconcilePass` turns what happened to each
message into that decision and into the pass's :class:`ReconcileOutcome`;
the room's Trio shell does the REST calls and runs the turns.
"""

from __future__ import annotations

import enum

from band_trio.runtime.core._schedule import ReconcileOutcome

__all__ = ["MessageOutcome", "ReconcilePass", "ReconcileStep", "deferred_after"]


class MessageOutcome(enum.Enum):
    """What handling one message came to."""

    ADVANCED = "advanced"
    """The message is settled (run and acked, or failed for good): go on."""
    SKIPPED = "skipped"
    """Nothing to run for it (own, already done, failed for good)."""
    RETRY = "retry"
    """Left on the platform: try again later."""
    PAUSED = "paused"
    """The room is stopped or shutting down: left for a later pass."""


class ReconcileStep(enum.Enum):
    """What the pass does after a message from ``/next``."""

    CONTINUE = "continue"
    """Ask ``/next`` for the following message."""
    SCAN = "scan"
    """``/next`` is stuck on a message that will not run: list the room instead."""


class ReconcilePass:
    """The bookkeeping of one pass: did any turn run, which message came last.

    Use one object per pass. :meth:`is_repeat` before handling a ``/next``
    answer, :meth:`after_next` once it was handled; while scanning the
    listing, :meth:`after_listed` for every runnable message; :meth:`finished`
    when the source ran dry.
    """

    def __init__(self) -> None:
        self._worked = False
        self._last_id: str | None = None

    @property
    def worked(self) -> bool:
        """True once a message of this pass advanced."""
        return self._worked

    def is_repeat(self, message_id: str) -> bool:
        """True when ``/next`` offers the message it offered just before: it was
        handled and is still there, so handling it again cannot help."""
        return message_id == self._last_id

    def after_next(
        self, message_id: str, outcome: MessageOutcome
    ) -> ReconcileStep | ReconcileOutcome:
        """The decision after a ``/next`` message was handled (or was a repeat,
        reported as ``SKIPPED``).

        Returns:
            A :class:`ReconcileStep`, or the pass's conclusion.
        """
        self._last_id = message_id
        if outcome is MessageOutcome.SKIPPED:
            return ReconcileStep.SCAN
        if outcome is MessageOutcome.RETRY:
            return ReconcileOutcome.RETRY
        if outcome is MessageOutcome.PAUSED:
            return ReconcileOutcome.STOPPED
        self._worked = True
        return ReconcileStep.CONTINUE

    def after_listed(self, outcome: MessageOutcome) -> ReconcileOutcome | None:
        """The decision after a listed message was handled while scanning.

        Returns:
            None to go on with the listing, or the pass's conclusion.
        """
        if outcome is MessageOutcome.RETRY:
            return ReconcileOutcome.RETRY
        if outcome is MessageOutcome.PAUSED:
            return ReconcileOutcome.STOPPED
        if outcome is MessageOutcome.ADVANCED:
            self._worked = True
        return None

    def finished(self) -> ReconcileOutcome:
        """The conclusion when the source has nothing more to offer."""
        return ReconcileOutcome.WORK if self._worked else ReconcileOutcome.EMPTY


def deferred_after(result: ReconcileOutcome, deferred: bool) -> bool:
    """Whether live pushes wait for ``/next`` after a pass with ``result``.

    After a pass that must be retried, an earlier message is still waiting, so
    a newer pushed message must not overtake it: pushes are left to ``/next``
    order. A pass that emptied the mailbox (or ran work) lifts that; a stopped
    pass leaves it as it was.
    """
    if result is ReconcileOutcome.RETRY:
        return True
    if result in (ReconcileOutcome.EMPTY, ReconcileOutcome.WORK):
        return False
    return deferred
