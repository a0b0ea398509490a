"""settlement: how a turn ended, and what that means for its message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from band_trio.errors import InputNotAccepted, InternalServerError, RoomExecutionStoppedError
from band_trio.runtime.core._claims import Attempt
from band_trio.runtime.core._reconcile_pass import MessageOutcome
from band_trio.runtime.core._settlement import (
    EXHAUSTED_LABEL,
    MISSING_REPLY_LABEL,
    TIMEOUT_LABEL,
    Abort,
    Acknowledge,
    ErrorNotice,
    FailForGood,
    MarkFailed,
    PostErrorEvent,
    TurnEnd,
    charges_attempt,
    classify_turn_end,
    gives_up_ack,
    may_have_replied,
    settle,
    settle_exhausted,
)

ERRORS = (
    None,
    ValueError("boom"),
    RoomExecutionStoppedError("room-1"),
    InputNotAccepted("later"),
    InternalServerError(500),
)
aborts = st.sampled_from((None, *Abort))
errors = st.sampled_from(ERRORS)
ends = st.sampled_from(TurnEnd)
attempts = st.integers(min_value=1, max_value=5).flatmap(
    lambda budget: st.builds(Attempt, st.integers(min_value=1, max_value=budget), st.just(budget))
)

CANCELLED = {
    Abort.INTERRUPT: TurnEnd.INTERRUPTED,
    Abort.STOP: TurnEnd.STOPPED,
    Abort.PLATFORM_STOP: TurnEnd.PLATFORM_STOPPED,
    None: TurnEnd.TIMEOUT,
}


@given(aborts, errors, st.booleans(), st.booleans())
def test_a_cancelled_turn_ends_as_its_abort_or_timed_out(
    aborted: Abort | None, error: Exception | None, dropped: bool, missing: bool
) -> None:
    end = classify_turn_end(
        cancelled=True, aborted=aborted, error=error, dropped=dropped, missing_reply=missing
    )
    assert end is CANCELLED[aborted]


@given(aborts, errors, st.booleans(), st.booleans())
def test_a_turn_that_returned_or_raised(
    aborted: Abort | None, error: Exception | None, dropped: bool, missing: bool
) -> None:
    end = classify_turn_end(
        cancelled=False, aborted=aborted, error=error, dropped=dropped, missing_reply=missing
    )
    if error is not None and (
        aborted is Abort.PLATFORM_STOP or isinstance(error, RoomExecutionStoppedError)
    ):
        assert end is TurnEnd.PLATFORM_STOPPED
    elif isinstance(error, InputNotAccepted):
        assert end is TurnEnd.NOT_ACCEPTED
    elif error is not None:
        assert end is TurnEnd.ERROR
    elif dropped:
        assert end is TurnEnd.DROPPED
    elif missing:
        assert end is TurnEnd.MISSING_REPLY
    else:
        assert end is TurnEnd.SUCCESS


def test_which_ends_use_up_an_attempt_or_may_hide_a_reply() -> None:
    charged = {e for e in TurnEnd if charges_attempt(e)}
    assert charged == {
        TurnEnd.SUCCESS,
        TurnEnd.DROPPED,
        TurnEnd.ERROR,
        TurnEnd.TIMEOUT,
        TurnEnd.MISSING_REPLY,
    }
    assert {e for e in TurnEnd if may_have_replied(e)} == {
        TurnEnd.ERROR,
        TurnEnd.TIMEOUT,
        TurnEnd.MISSING_REPLY,
    }


@given(ends, attempts, st.booleans(), st.booleans())
def test_settlement_properties(
    end: TurnEnd, attempt: Attempt, report: bool, reported: bool
) -> None:
    decided = settle(
        end,
        attempt=attempt,
        error_name="ValueError",
        report_failures=report,
        failure_reported=reported,
    )
    kinds = [type(a) for a in decided.actions]
    # Acked exactly when the message was answered, consumed or dropped; the
    # ack is then the only action, and the message advances once it lands.
    if end in (TurnEnd.SUCCESS, TurnEnd.DROPPED, TurnEnd.INTERRUPTED):
        assert decided.actions == (Acknowledge(),)
        assert decided.outcome is MessageOutcome.ADVANCED
    else:
        assert Acknowledge not in kinds
    # A turn that was not given a fair run never fails its message.
    if not charges_attempt(end):
        assert MarkFailed not in kinds
        assert FailForGood not in kinds
    assert decided.failure == (end in (TurnEnd.ERROR, TurnEnd.TIMEOUT, TurnEnd.MISSING_REPLY))
    assert decided.interrupted == (end is TurnEnd.INTERRUPTED)
    # Failed for good exactly after the last attempt (at once when judged
    # unanswered), and then the room moves on.
    final = end is TurnEnd.MISSING_REPLY or (
        end in (TurnEnd.ERROR, TurnEnd.TIMEOUT) and attempt.is_final
    )
    assert (FailForGood in kinds) == final
    if final:
        assert decided.outcome is MessageOutcome.ADVANCED
        assert kinds.index(MarkFailed) < kinds.index(FailForGood)
    elif decided.failure:
        assert decided.actions == (
            MarkFailed(TIMEOUT_LABEL if end is TurnEnd.TIMEOUT else "ValueError"),
        )
        assert decided.outcome is MessageOutcome.RETRY
    # At most one error event, never when reporting is off.
    events = [a for a in decided.actions if isinstance(a, PostErrorEvent)]
    assert len(events) <= 1
    if events:
        assert report
    if end is TurnEnd.MISSING_REPLY:
        assert events == ([PostErrorEvent(ErrorNotice.MISSING_REPLY)] if report else [])
        # The room is told before the message is marked failed.
        assert kinds[0] is (PostErrorEvent if report else MarkFailed)
        assert MarkFailed(MISSING_REPLY_LABEL) in decided.actions
    elif final:
        expected = [PostErrorEvent(ErrorNotice.TURN_FAILED)] if report and not reported else []
        assert events == expected
        if events:
            assert decided.actions[-1] == events[0]
    else:
        assert events == []


def test_stops_pause_or_retry_without_any_mark() -> None:
    one = Attempt(1, 3)
    for end, outcome in (
        (TurnEnd.STOPPED, MessageOutcome.PAUSED),
        (TurnEnd.PLATFORM_STOPPED, MessageOutcome.RETRY),
        (TurnEnd.NOT_ACCEPTED, MessageOutcome.RETRY),
    ):
        decided = settle(end, attempt=one, report_failures=True, failure_reported=False)
        assert decided.actions == ()
        assert decided.outcome is outcome


def test_exhausted_attempts_claim_then_fail_for_good_without_running() -> None:
    decided = settle_exhausted()
    assert decided.actions == (MarkFailed(EXHAUSTED_LABEL, claim_first=True), FailForGood())
    assert decided.outcome is MessageOutcome.SKIPPED
    assert not decided.failure


@given(st.booleans(), st.integers(min_value=1, max_value=10), st.integers(min_value=1, max_value=5))
def test_only_a_terminal_ack_failure_is_given_up_after_its_budget(
    retryable: bool, failures: int, budget: int
) -> None:
    gave_up = gives_up_ack(retryable=retryable, failures=failures, max_attempts=budget)
    assert gave_up == (not retryable and failures >= budget)
