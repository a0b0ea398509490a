"""AdmissionWalk: the order of one message's admission, against a reference model.

The reference model is the order written out as one straight function of
every fact the shell could find (the docstring of ``_admission`` in prose);
the walk must ask for exactly the facts that order needs, in that order, and
end in the same final action.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.runtime.core._admission import (
    FINAL_ACTIONS,
    Admission,
    AdmissionOrderError,
    AdmissionWalk,
    ReplyCheck,
)
from band_trio.runtime.core._claims import Attempt, RefusalReason
from band_trio.runtime.core._room_machine import RoomMachine


@attrs.frozen
class Facts:
    """Everything the shell could find for one message."""

    own: bool
    paused: bool
    refusal: RefusalReason | None
    processed: bool
    open_reply_intents: bool
    check: ReplyCheck
    attempt: Attempt


facts = st.builds(
    Facts,
    own=st.booleans(),
    paused=st.booleans(),
    refusal=st.none() | st.sampled_from(RefusalReason),
    processed=st.booleans(),
    open_reply_intents=st.booleans(),
    check=st.sampled_from(ReplyCheck),
    attempt=st.builds(
        Attempt, st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=4)
    ),
)


def reference(f: Facts) -> tuple[list[str], Admission]:
    """The facts consulted, in order, and the final action."""
    asked: list[str] = []
    if f.own:
        return asked, Admission.SKIP
    if f.paused:
        return asked, Admission.PAUSE
    asked.append("claim")
    if f.refusal is RefusalReason.ACK_PENDING:
        return asked, Admission.ACK_ONLY
    if f.refusal is RefusalReason.IN_FLIGHT:
        return asked, Admission.RETRY
    if f.refusal is not None:
        return asked, Admission.SKIP
    if f.processed:
        return asked, Admission.MARK_COMPLETED
    if f.open_reply_intents:
        asked.append("check_reply")
        if f.check is ReplyCheck.UNKNOWN:
            return asked, Admission.RETRY
        if f.check is ReplyCheck.LANDED:
            return asked, Admission.ACK_ONLY
    asked.append("count_attempt")
    if f.attempt.number > f.attempt.max_attempts:
        return asked, Admission.FAIL_EXHAUSTED
    return asked, Admission.RUN


def drive(walk: AdmissionWalk, f: Facts) -> list[str]:
    """Feed the walk as the room's shell does; the actions it asked for."""
    asked: list[str] = []
    while not walk.done:
        asked.append(walk.action.value)
        if walk.action is Admission.CLAIM:
            if f.refusal is not None:
                walk.claim_refused(f.refusal)
            else:
                walk.claim_held(processed=f.processed, open_reply_intents=f.open_reply_intents)
        elif walk.action is Admission.CHECK_REPLY:
            walk.reply_checked(f.check)
        elif walk.action is Admission.COUNT_ATTEMPT:
            walk.attempt_counted(f.attempt)
        else:  # pragma: no cover - a non-final action the shell cannot answer
            pytest.fail(f"the walk asked for {walk.action} and is not done")
    return asked


@given(facts)
def test_the_walk_follows_the_reference_order(f: Facts) -> None:
    walk = AdmissionWalk(own=f.own, paused=f.paused)
    asked = drive(walk, f)
    expected_asked, expected_final = reference(f)
    assert asked == expected_asked
    assert walk.action is expected_final
    assert walk.action in FINAL_ACTIONS


@given(facts, st.booleans(), st.booleans())
def test_the_room_machine_starts_walks_from_its_state(
    f: Facts, stopped: bool, fenced: bool
) -> None:
    m = RoomMachine(paced=True)
    if stopped:
        m.stop(0.0)
    if fenced:
        m.fence()
    walk = m.admit(own=f.own)
    drive(walk, f)
    assert walk.action is reference(attrs.evolve(f, paused=stopped or fenced))[1]


@given(facts)
def test_an_answer_the_walk_did_not_ask_for_is_refused(f: Facts) -> None:
    walk = AdmissionWalk(own=f.own, paused=f.paused)
    drive(walk, f)
    # A finished walk takes no more answers, and none of them changes it.
    final = walk.action
    with pytest.raises(AdmissionOrderError):
        walk.claim_held(processed=False, open_reply_intents=False)
    with pytest.raises(AdmissionOrderError):
        walk.reply_checked(ReplyCheck.ABSENT)
    with pytest.raises(AdmissionOrderError):
        walk.attempt_counted(f.attempt)
    assert walk.action is final


def test_the_attempt_is_not_counted_before_the_claim() -> None:
    walk = AdmissionWalk(own=False, paused=False)
    assert walk.action is Admission.CLAIM
    with pytest.raises(AdmissionOrderError):
        walk.attempt_counted(Attempt(1, 3))
    with pytest.raises(AdmissionOrderError):
        walk.reply_checked(ReplyCheck.LANDED)
    assert walk.action is Admission.CLAIM
