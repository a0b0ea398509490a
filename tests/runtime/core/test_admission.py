"""admission: whether a delivered or listed message runs as a turn."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from band_trio.runtime.core._admission import (
    MAX_REPLY_LOOKUPS,
    Admission,
    ReplyCheck,
    ReplyLookups,
    after_claim,
    after_refusal,
    after_reply_check,
    before_claim,
    before_run,
    is_own_message,
    processed_on_platform,
)
from band_trio.runtime.core._claims import Attempt, RefusalReason

AGENT = "agent-1"


@given(st.booleans(), st.booleans())
def test_own_messages_are_skipped_before_anything_else(own: bool, paused: bool) -> None:
    decision = before_claim(own=own, paused=paused)
    if own:
        assert decision is Admission.SKIP
    elif paused:
        assert decision is Admission.PAUSE
    else:
        assert decision is Admission.CLAIM


def test_a_refused_claim_never_runs_the_turn() -> None:
    assert after_refusal(RefusalReason.ACK_PENDING) is Admission.ACK_ONLY
    assert after_refusal(RefusalReason.IN_FLIGHT) is Admission.RETRY
    assert after_refusal(RefusalReason.COMPLETED) is Admission.SKIP
    assert after_refusal(RefusalReason.FAILED_FINAL) is Admission.SKIP


@given(st.booleans(), st.booleans())
def test_after_the_claim(processed: bool, intents: bool) -> None:
    decision = after_claim(processed=processed, open_reply_intents=intents)
    if processed:
        assert decision is Admission.MARK_COMPLETED
    elif intents:
        assert decision is Admission.CHECK_REPLY
    else:
        assert decision is Admission.COUNT_ATTEMPT


def test_after_a_reply_lookup() -> None:
    assert after_reply_check(ReplyCheck.LANDED) is Admission.ACK_ONLY
    assert after_reply_check(ReplyCheck.ABSENT) is Admission.COUNT_ATTEMPT
    assert after_reply_check(ReplyCheck.UNKNOWN) is Admission.RETRY


@given(st.integers(min_value=1, max_value=10), st.integers(min_value=1, max_value=5))
def test_a_used_up_budget_fails_instead_of_running(number: int, budget: int) -> None:
    decision = before_run(Attempt(number, budget))
    assert decision is (Admission.FAIL_EXHAUSTED if number > budget else Admission.RUN)


@given(st.sampled_from(("Agent", "User", "System")), st.sampled_from((AGENT, "agent-2", "")))
def test_own_message(sender_type: str, sender_id: str) -> None:
    assert is_own_message(sender_type, sender_id, AGENT) == (
        sender_type == "Agent" and sender_id == AGENT
    )


statuses = st.recursive(
    st.none() | st.text(max_size=3) | st.integers(),
    lambda inner: st.dictionaries(
        st.sampled_from((AGENT, "other", "status")),
        inner | st.sampled_from(("processed", "delivered")),
        max_size=3,
    ),
    max_leaves=6,
)


@given(statuses)
def test_processed_on_platform_reads_only_this_agents_status(value: Any) -> None:
    mine = value.get(AGENT) if isinstance(value, dict) else None
    expected = isinstance(mine, dict) and mine.get("status") == "processed"
    assert processed_on_platform(value, AGENT) == expected


def test_a_processed_status_of_another_agent_does_not_count() -> None:
    assert processed_on_platform({"other": {"status": "processed"}}, AGENT) is False
    assert processed_on_platform({AGENT: {"status": "processed"}}, AGENT) is True


@given(st.lists(st.sampled_from(("fail", "settle")), max_size=20))
def test_reply_lookups_give_up_after_the_limit_in_a_row(steps: list[str]) -> None:
    lookups = ReplyLookups()
    in_a_row = 0
    for step in steps:
        if step == "settle":
            lookups.settled("m")
            in_a_row = 0
            continue
        in_a_row += 1
        check = lookups.failed("m")
        if in_a_row < MAX_REPLY_LOOKUPS:
            assert check is ReplyCheck.UNKNOWN
            assert lookups.failures("m") == in_a_row
        else:
            # Given up: the message runs again, and the count starts over.
            assert check is ReplyCheck.ABSENT
            assert lookups.failures("m") == 0
            in_a_row = 0
    assert len(lookups) == (1 if in_a_row else 0)
