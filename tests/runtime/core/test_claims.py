"""ClaimsState: the ledger's pure claims state, and the journal entries it emits."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from band_trio.errors import BandConfigError, LocalProtocolError
from band_trio.runtime.claims._journal import ClaimsJournal
from band_trio.runtime.core._claims import (
    KNOWN_REPLIES_PER_ROOM,
    Change,
    Claim,
    ClaimsState,
    JournalEntry,
    MessageState,
    Refusal,
    RefusalReason,
)

ROOMS = ("r1", "r2")
MESSAGES = ("m0", "m1", "m2", "m3")
BOUND = 2
MAX_ATTEMPTS = 2

rooms = st.sampled_from(ROOMS)
messages = st.sampled_from(MESSAGES)


def small_state() -> ClaimsState:
    return ClaimsState(max_attempts=MAX_ATTEMPTS, completed_per_room=BOUND, failed_per_room=BOUND)


def test_bounds_below_one_are_refused() -> None:
    for bounds in ({"max_attempts": 0}, {"completed_per_room": 0}, {"failed_per_room": 0}):
        with pytest.raises(BandConfigError):
            ClaimsState(**bounds)


def test_claims_and_queries_are_not_durable_changes() -> None:
    state = ClaimsState()
    claim = state.try_claim("r", "m")
    assert isinstance(claim, Claim)
    assert state.try_claim("r", "m") == Refusal("r", "m", RefusalReason.IN_FLIGHT)
    state.note_ack_failure("r", "m")
    state.release(claim)
    state.pending_acks("r")
    state.known_replies("r")
    assert state.state("r", "m") is MessageState.NEW
    assert state.take_changes() == []


def test_a_lookup_touches_a_completed_message_only_when_it_is_not_the_newest() -> None:
    state = ClaimsState()
    state.mark_completed("r", "a")
    state.mark_completed("r", "b")
    state.take_changes()
    assert state.state("r", "b") is MessageState.COMPLETED
    assert state.take_changes() == []
    assert state.state("r", "a") is MessageState.COMPLETED
    assert state.take_changes() == [JournalEntry(Change.COMPLETED_TOUCHED, "r", "a")]


def test_a_reply_is_journaled_and_known_at_once() -> None:
    state = ClaimsState()
    state.reply_sent("r", "m", "reply-1")
    assert state.take_changes() == [
        JournalEntry(Change.REPLY_SENT, "r", "m", "reply-1"),
        JournalEntry(Change.REPLY_KNOWN, "r", "reply-1"),
    ]
    state.reply_sent("r", "m", "reply-1")  # the same reply again: nothing new
    assert state.take_changes() == []
    assert state.state("r", "m") is MessageState.REPLY_SENT
    assert state.known_replies("r") == {"reply-1"}


def test_a_claim_must_be_held_to_count_an_attempt() -> None:
    state = ClaimsState()
    claim = state.try_claim("r", "m")
    assert isinstance(claim, Claim)
    state.release(claim)
    with pytest.raises(LocalProtocolError):
        state.record_attempt(claim)
    with pytest.raises(LocalProtocolError):
        state.discard_attempt(claim)


@given(st.lists(st.text(min_size=1, max_size=4), unique=True, max_size=KNOWN_REPLIES_PER_ROOM + 40))
def test_known_replies_keep_the_newest_within_their_bound(ids: list[str]) -> None:
    state = ClaimsState()
    for reply_id in ids:
        state.remember_reply("r", reply_id)
    kept = ids[-KNOWN_REPLIES_PER_ROOM:]
    assert state.known_replies("r") == set(kept)
    changes = state.take_changes()
    assert [e.item for e in changes if e.change is Change.REPLY_KNOWN] == ids
    forgotten = [e.item for e in changes if e.change is Change.REPLY_FORGOTTEN]
    assert forgotten == ids[: len(ids) - len(kept)]


def test_remembering_a_known_reply_again_changes_nothing() -> None:
    state = ClaimsState()
    state.remember_reply("r", "a")
    state.take_changes()
    state.remember_reply("r", "a")
    assert state.take_changes() == []


@given(st.lists(st.tuples(messages, st.booleans()), max_size=30))
def test_completed_and_failed_stay_within_their_bounds(steps: list[tuple[str, bool]]) -> None:
    state = small_state()
    completed: list[str] = []  # least recently used first
    failed: list[str] = []
    for msg, complete in steps:
        if complete:
            state.mark_completed("r", msg)
            if msg in failed:
                failed.remove(msg)
            if msg in completed:
                completed.remove(msg)
            completed = [*completed, msg][-BOUND:]
        else:
            state.mark_failed_final("r", msg)
            if msg not in completed:
                if msg in failed:
                    failed.remove(msg)
                failed = [*failed, msg][-BOUND:]
        counts = state.counts()
        assert (counts.completed, counts.failed_final) == (len(completed), len(failed))
    for msg in MESSAGES:
        assert state.is_failed_final("r", msg) == (msg in failed)


@given(st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=4))
def test_attempts_count_up_and_back(runs: int, budget: int) -> None:
    state = ClaimsState(max_attempts=budget)
    claim = state.try_claim("r", "m")
    assert isinstance(claim, Claim)
    for number in range(1, runs + 1):
        attempt = state.record_attempt(claim)
        assert attempt.number == number
        assert attempt.is_final == (number >= budget)
        assert attempt.exceeded == (number > budget)
    assert state.discard_attempt(claim) == runs - 1
    assert state.attempts("r", "m") == runs - 1


class ClaimsRoundTrip(RuleBasedStateMachine):
    """Every durable change goes through the journal entries: a state loaded
    from a journal that recorded them answers like the live one."""

    def __init__(self) -> None:
        super().__init__()
        self.state = small_state()
        self.journal = ClaimsJournal.in_memory()
        self.claims: dict[tuple[str, str], Claim] = {}

    def teardown(self) -> None:
        self.journal.close()

    def _flush(self) -> None:
        self.journal.write(self.state.take_changes())

    @rule(room=rooms, msg=messages)
    def claim(self, room: str, msg: str) -> None:
        result = self.state.try_claim(room, msg)
        if (room, msg) in self.claims:
            assert result == Refusal(room, msg, RefusalReason.IN_FLIGHT)
        elif isinstance(result, Claim):
            self.claims[(room, msg)] = result
        self._flush()

    @precondition(lambda self: bool(self.claims))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.claims)))
        assert self.state.release(self.claims.pop(key)) is True

    @precondition(lambda self: bool(self.claims))
    @rule(data=st.data(), discard=st.booleans())
    def attempt(self, data: st.DataObject, discard: bool) -> None:
        claim = self.claims[data.draw(st.sampled_from(sorted(self.claims)))]
        if discard:
            self.state.discard_attempt(claim)
        else:
            self.state.record_attempt(claim)
        self._flush()

    @rule(room=rooms, msg=messages, reply=st.sampled_from(("x", "y")))
    def reply_sent(self, room: str, msg: str, reply: str) -> None:
        self.state.reply_sent(room, msg, reply)
        self._flush()

    @rule(room=rooms, reply=st.sampled_from(("s1", "s2")))
    def remember_reply(self, room: str, reply: str) -> None:
        self.state.remember_reply(room, reply)
        self._flush()

    @rule(room=rooms, msg=messages, digest=st.sampled_from(("d1", "d2")), drop=st.booleans())
    def intent(self, room: str, msg: str, digest: str, drop: bool) -> None:
        if drop:
            self.state.drop_reply_intent(room, msg, digest)
        else:
            self.state.reply_intent(room, msg, digest)
        self._flush()

    @rule(room=rooms, msg=messages)
    def clear_intents(self, room: str, msg: str) -> None:
        self.state.clear_reply_intents(room, msg)
        self._flush()

    @rule(room=rooms, msg=messages)
    def ack_pending(self, room: str, msg: str) -> None:
        self.state.mark_ack_pending(room, msg)
        self._flush()

    @rule(room=rooms, msg=messages)
    def completed(self, room: str, msg: str) -> None:
        self.state.mark_completed(room, msg)
        assert self.state.replies(room, msg) == ()
        assert self.state.reply_intents(room, msg) == ()
        assert self.state.attempts(room, msg) == 0
        self._flush()

    @rule(room=rooms, msg=messages)
    def failed(self, room: str, msg: str) -> None:
        before = self.state.state(room, msg)
        self.state.mark_failed_final(room, msg)
        after = self.state.state(room, msg)
        assert after is (
            MessageState.COMPLETED
            if before is MessageState.COMPLETED
            else MessageState.FAILED_FINAL
        )
        self._flush()

    @rule(room=rooms)
    def forget_room(self, room: str) -> None:
        self.state.forget_room(room)
        self._flush()

    @invariant()
    def a_loaded_state_answers_alike(self) -> None:
        loaded = small_state()
        self.journal.load(loaded)
        # The recency order survives too: one more completion evicts the same
        # message from a copy of the live state and from the loaded one.
        for room in ROOMS:
            probe, reloaded = copy.deepcopy(self.state), small_state()
            self.journal.load(reloaded)
            probe.mark_completed(room, "probe")
            reloaded.mark_completed(room, "probe")
            for msg in MESSAGES:
                assert reloaded.state(room, msg) is probe.state(room, msg), (room, msg)
        for room in ROOMS:
            assert loaded.known_replies(room) == self.state.known_replies(room)
            for msg in MESSAGES:
                assert loaded.attempts(room, msg) == self.state.attempts(room, msg)
                assert loaded.replies(room, msg) == self.state.replies(room, msg)
                assert loaded.reply_intents(room, msg) == self.state.reply_intents(room, msg)
                assert loaded.is_failed_final(room, msg) == self.state.is_failed_final(room, msg)
                # Both lookups refresh recency the same way; the live one's
                # touches are journaled like every other change.
                assert loaded.state(room, msg) is self.state.state(room, msg), (room, msg)
            self._flush()
            held = {m for (r, m) in self.claims if r == room}
            assert sorted(loaded.pending_acks(room)) == sorted(
                set(self.state.pending_acks(room))
                | {
                    m
                    for m in held
                    if self.state.state(room, m)
                    in (MessageState.ACK_PENDING, MessageState.REPLY_SENT)
                }
            )
            self._flush()
        live, restored = self.state.counts(), loaded.counts()
        assert restored.in_flight == 0
        assert (restored.tracked_attempts, restored.reply_sent, restored.ack_pending) == (
            live.tracked_attempts,
            live.reply_sent,
            live.ack_pending,
        )
        assert (restored.completed, restored.failed_final) == (live.completed, live.failed_final)


ClaimsRoundTrip.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_claims_round_trip_through_the_journal = ClaimsRoundTrip.TestCase
