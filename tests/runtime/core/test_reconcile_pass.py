"""reconcile_pass: what one reconcile pass concludes from what happened to each message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from band_trio.runtime.core._reconcile_pass import (
    MessageOutcome,
    ReconcilePass,
    ReconcileStep,
    deferred_after,
)
from band_trio.runtime.core._schedule import ReconcileOutcome

outcomes = st.sampled_from(MessageOutcome)

CONCLUSION = {
    MessageOutcome.RETRY: ReconcileOutcome.RETRY,
    MessageOutcome.PAUSED: ReconcileOutcome.STOPPED,
}


@given(st.lists(st.tuples(st.sampled_from(("a", "b", "c")), outcomes), min_size=1, max_size=12))
def test_a_pass_over_next(steps: list[tuple[str, MessageOutcome]]) -> None:
    reconcile = ReconcilePass()
    advanced = False
    for message_id, outcome in steps:
        step = reconcile.after_next(message_id, outcome)
        if outcome is MessageOutcome.ADVANCED:
            advanced = True
            assert step is ReconcileStep.CONTINUE
            continue
        if outcome is MessageOutcome.SKIPPED:
            # /next keeps offering a message that will not run: list instead.
            assert step is ReconcileStep.SCAN
        else:
            assert step is CONCLUSION[outcome]
        break
    assert reconcile.worked == advanced
    assert reconcile.finished() is (ReconcileOutcome.WORK if advanced else ReconcileOutcome.EMPTY)


@given(st.lists(st.sampled_from(("a", "b")), min_size=1, max_size=8))
def test_a_repeat_is_the_message_offered_just_before(ids: list[str]) -> None:
    reconcile = ReconcilePass()
    previous: str | None = None
    for message_id in ids:
        assert reconcile.is_repeat(message_id) == (message_id == previous)
        reconcile.after_next(message_id, MessageOutcome.ADVANCED)
        previous = message_id


@given(st.booleans(), st.lists(outcomes, max_size=12))
def test_a_scan_of_the_listing(worked_before: bool, listed: list[MessageOutcome]) -> None:
    reconcile = ReconcilePass()
    if worked_before:
        reconcile.after_next("a", MessageOutcome.ADVANCED)
    reconcile.after_next("b", MessageOutcome.SKIPPED)
    advanced = worked_before
    for outcome in listed:
        result = reconcile.after_listed(outcome)
        if outcome in CONCLUSION:
            assert result is CONCLUSION[outcome]
            break
        # Skipped messages are stepped past; the listing goes on.
        assert result is None
        advanced = advanced or outcome is MessageOutcome.ADVANCED
    assert reconcile.finished() is (ReconcileOutcome.WORK if advanced else ReconcileOutcome.EMPTY)


@given(st.sampled_from(ReconcileOutcome), st.booleans())
def test_pushes_wait_for_next_only_after_a_pass_to_retry(
    result: ReconcileOutcome, deferred: bool
) -> None:
    after = deferred_after(result, deferred)
    if result is ReconcileOutcome.RETRY:
        assert after is True
    elif result in (ReconcileOutcome.EMPTY, ReconcileOutcome.WORK):
        assert after is False
    else:
        assert after is deferred
