"""ClaimsLedger: claims, attempts, outcomes, bounds, survival across restarts, and
reply intents (durable, dropped one by one or all at once, gone when the
message is completed or failed for good).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from band_trio.errors import AgentAlreadyRunningError, BandConfigError, LocalProtocolError
from band_trio.runtime.claims.ledger import (
    KNOWN_REPLIES_PER_ROOM,
    Claim,
    ClaimsLedger,
    MessageState,
    Refusal,
    RefusalReason,
)
from band_trio.runtime.config import AgentConfig

R = "room-1"


def test_claim_is_exclusive_until_released() -> None:
    # The live and /next paths never run one id at once (official runtime, "Testable behaviours"
    # 36).
    ledger = ClaimsLedger.in_memory()
    claim = ledger.try_claim(R, "m1")
    assert isinstance(claim, Claim)
    again = ledger.try_claim(R, "m1")
    assert again == Refusal(R, "m1", RefusalReason.IN_FLIGHT)
    assert isinstance(ledger.try_claim(R, "m2"), Claim)
    assert isinstance(ledger.try_claim("room-2", "m1"), Claim)
    assert ledger.release(claim) is True
    assert ledger.release(claim) is False  # idempotent
    assert isinstance(ledger.try_claim(R, "m1"), Claim)


def test_stale_claim_cannot_release_a_newer_one() -> None:
    ledger = ClaimsLedger.in_memory()
    old = ledger.try_claim(R, "m1")
    assert isinstance(old, Claim)
    ledger.release(old)
    new = ledger.try_claim(R, "m1")
    assert isinstance(new, Claim)
    assert ledger.release(old) is False
    assert ledger.holds(new)
    with pytest.raises(LocalProtocolError):
        ledger.record_attempt(old)


def test_completed_is_never_claimed_again() -> None:
    # A processed message delivered again is not re-run (official runtime, "Testable behaviours"
    # 34).
    ledger = ClaimsLedger.in_memory()
    claim = ledger.try_claim(R, "m1")
    assert isinstance(claim, Claim)
    ledger.record_attempt(claim)
    ledger.mark_ack_pending(R, "m1")
    ledger.mark_completed(R, "m1")
    ledger.release(claim)
    assert ledger.try_claim(R, "m1") == Refusal(R, "m1", RefusalReason.COMPLETED)
    assert ledger.is_done(R, "m1")
    assert ledger.attempts(R, "m1") == 0


def test_ack_pending_means_ack_only() -> None:
    # A refused `processed` write is retried as an ack only (official runtime, "Testable
    # behaviours" 32).
    ledger = ClaimsLedger.in_memory()
    claim = ledger.try_claim(R, "m1")
    assert isinstance(claim, Claim)
    ledger.record_attempt(claim)
    ledger.mark_ack_pending(R, "m1")
    assert ledger.pending_acks(R) == []  # the running turn still holds it
    ledger.release(claim)
    assert ledger.pending_acks(R) == ["m1"]
    assert ledger.try_claim(R, "m1") == Refusal(R, "m1", RefusalReason.ACK_PENDING)
    assert not ledger.is_done(R, "m1")


def test_ack_failures_are_counted_until_given_up() -> None:
    # After the ack budget the message counts as completed anyway (official runtime, "Testable
    # behaviours" 33).
    ledger = ClaimsLedger.in_memory(max_attempts=2)
    ledger.mark_ack_pending(R, "m1")
    assert ledger.note_ack_failure(R, "m1") == 1
    assert ledger.note_ack_failure(R, "m1") == 2
    ledger.mark_completed(R, "m1")
    assert ledger.pending_acks(R) == []
    assert ledger.state(R, "m1") is MessageState.COMPLETED


def test_attempt_budget_and_final_failure() -> None:
    # A failing message runs at most max_attempts times (official runtime, "Testable behaviours"
    # 45).
    ledger = ClaimsLedger.in_memory(max_attempts=3)
    numbers = []
    for _ in range(3):
        claim = ledger.try_claim(R, "m1")
        assert isinstance(claim, Claim)
        attempt = ledger.record_attempt(claim)
        numbers.append((attempt.number, attempt.is_final, attempt.exceeded))
        ledger.release(claim)
    assert numbers == [(1, False, False), (2, False, False), (3, True, False)]
    ledger.mark_failed_final(R, "m1")
    assert ledger.try_claim(R, "m1") == Refusal(R, "m1", RefusalReason.FAILED_FINAL)
    assert ledger.is_failed_final(R, "m1")


def test_discarded_attempts_do_not_count() -> None:
    # Interrupted or stopped turns are not charged (official runtime, "Testable behaviours" 46).
    ledger = ClaimsLedger.in_memory(max_attempts=1)
    for _ in range(5):
        claim = ledger.try_claim(R, "m1")
        assert isinstance(claim, Claim)
        assert ledger.record_attempt(claim).number == 1
        assert ledger.discard_attempt(claim) == 0
        ledger.release(claim)
    assert ledger.attempts(R, "m1") == 0


def test_exceeded_after_crashes(tmp_path: Path) -> None:
    # A message that kills the process is still bounded: attempts are durable.
    path = tmp_path / "ledger.sqlite3"
    for expected in (1, 2):
        ledger = ClaimsLedger.open(path, max_attempts=2)
        claim = ledger.try_claim(R, "poison")
        assert isinstance(claim, Claim)
        assert ledger.record_attempt(claim).number == expected
        ledger.close()  # "crash": nothing settled
    ledger = ClaimsLedger.open(path, max_attempts=2)
    claim = ledger.try_claim(R, "poison")
    assert isinstance(claim, Claim)
    assert ledger.record_attempt(claim).exceeded


def test_reply_journal_survives_restart_as_ack_only(tmp_path: Path) -> None:
    # DESIGN.md rule 2: killed between the reply and the `processed` mark,
    # the agent only acks after a restart and never replies twice.
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    claim = ledger.try_claim(R, "m1")
    assert isinstance(claim, Claim)
    ledger.record_attempt(claim)
    ledger.reply_sent(R, "m1", "reply-1")
    ledger.close()  # killed: claim never released, nothing marked

    ledger = ClaimsLedger.open(path)
    assert ledger.state(R, "m1") is MessageState.REPLY_SENT
    assert ledger.try_claim(R, "m1") == Refusal(R, "m1", RefusalReason.ACK_PENDING)
    assert ledger.pending_acks(R) == ["m1"]
    assert ledger.replies(R, "m1") == ("reply-1",)
    ledger.mark_completed(R, "m1")
    ledger.close()

    ledger = ClaimsLedger.open(path)
    assert ledger.state(R, "m1") is MessageState.COMPLETED
    assert ledger.pending_acks(R) == []
    assert ledger.replies(R, "m1") == ()
    ledger.close()


def test_states_survive_restart(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "ledger.sqlite3"
    with ClaimsLedger.open(path) as ledger:
        assert ledger.durable
        ledger.mark_ack_pending(R, "acked-later")
        ledger.mark_completed(R, "done")
        ledger.mark_failed_final(R, "poison")
    with ClaimsLedger.open(path) as ledger:
        assert ledger.state(R, "acked-later") is MessageState.ACK_PENDING
        assert ledger.state(R, "done") is MessageState.COMPLETED
        assert ledger.state(R, "poison") is MessageState.FAILED_FINAL
        assert ledger.state(R, "other") is MessageState.NEW
        # In-flight claims are memory only: a new process may claim anything NEW.
        assert isinstance(ledger.try_claim(R, "other"), Claim)


def test_in_memory_forgets_everything() -> None:
    ledger = ClaimsLedger.in_memory()
    assert not ledger.durable
    ledger.mark_completed(R, "m1")
    ledger.close()
    assert ClaimsLedger.in_memory().state(R, "m1") is MessageState.NEW


def test_completed_lru_is_bounded_per_room_and_refreshed_by_lookup(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ClaimsLedger.open(path, completed_per_room=2) as ledger:
        ledger.mark_completed(R, "a")
        ledger.mark_completed(R, "b")
        assert ledger.state(R, "a") is MessageState.COMPLETED  # refresh a
        ledger.mark_completed(R, "c")  # evicts b, the least recently used
        ledger.mark_completed("room-2", "x")  # other rooms have their own bound
        assert ledger.state(R, "b") is MessageState.NEW
        assert ledger.statistics().completed == 3
    with ClaimsLedger.open(path, completed_per_room=2) as ledger:
        assert [ledger.state(R, m) for m in "abc"] == [
            MessageState.COMPLETED,
            MessageState.NEW,
            MessageState.COMPLETED,
        ]
        assert ledger.state("room-2", "x") is MessageState.COMPLETED


def test_failed_is_bounded_oldest_first() -> None:
    ledger = ClaimsLedger.in_memory(failed_per_room=2)
    for m in ("a", "b", "c"):
        ledger.mark_failed_final(R, m)
    assert [ledger.is_failed_final(R, m) for m in "abc"] == [False, True, True]


def test_forget_room_keeps_acks_replies_and_failures(tmp_path: Path) -> None:
    # A released room drops its completed cache but keeps ack-pending (official runtime,
    # "Testable behaviours" 75).
    path = tmp_path / "ledger.sqlite3"
    with ClaimsLedger.open(path) as ledger:
        ledger.mark_completed(R, "done")
        ledger.mark_ack_pending(R, "ack")
        ledger.reply_sent(R, "replied", "r1")
        ledger.mark_failed_final(R, "poison")
        claim = ledger.try_claim(R, "tried")
        assert isinstance(claim, Claim)
        ledger.record_attempt(claim)
        ledger.release(claim)
        ledger.forget_room(R)
        assert ledger.state(R, "done") is MessageState.NEW
    with ClaimsLedger.open(path) as ledger:
        assert ledger.state(R, "done") is MessageState.NEW
        assert sorted(ledger.pending_acks(R)) == ["ack", "replied"]
        assert ledger.is_failed_final(R, "poison")
        assert ledger.attempts(R, "tried") == 1


def test_pending_acks_oldest_first() -> None:
    ledger = ClaimsLedger.in_memory()
    for m in ("m3", "m1", "m2"):
        ledger.mark_ack_pending(R, m)
    ledger.mark_ack_pending("room-2", "zz")
    assert ledger.pending_acks(R) == ["m3", "m1", "m2"]


def test_completed_wins_over_failed_and_acks() -> None:
    ledger = ClaimsLedger.in_memory()
    ledger.mark_completed(R, "m1")
    ledger.mark_failed_final(R, "m1")
    ledger.mark_ack_pending(R, "m1")
    assert ledger.state(R, "m1") is MessageState.COMPLETED
    assert ledger.pending_acks(R) == []


def test_for_config_picks_file_or_memory(tmp_path: Path) -> None:
    durable = ClaimsLedger.for_config(AgentConfig(state_dir=tmp_path, max_attempts=5), "agent")
    assert durable.durable
    assert durable.max_attempts == 5
    durable.close()
    assert (tmp_path / "ledger.sqlite3").exists()
    memory = ClaimsLedger.for_config(AgentConfig(state_dir=None), "agent")
    assert not memory.durable
    memory.close()


def test_unusable_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BandConfigError, match="claims ledger"):
        ClaimsLedger.open(bad)
    with pytest.raises(BandConfigError):
        ClaimsLedger.open(tmp_path / "not-a-db" / "ledger.sqlite3")  # parent is a file


def test_write_failures_keep_working_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    # Make every write fail: another connection holds the write lock.
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("PRAGMA busy_timeout=0")
    blocker.execute("BEGIN IMMEDIATE")
    ledger._db.execute("PRAGMA busy_timeout=0")
    ledger.mark_completed(R, "m1")
    assert ledger.state(R, "m1") is MessageState.COMPLETED
    assert ledger.statistics().write_errors == 1
    blocker.execute("ROLLBACK")
    blocker.close()
    ledger.close()


def test_closed_ledger_refuses_writes() -> None:
    ledger = ClaimsLedger.in_memory()
    ledger.close()
    ledger.close()
    with pytest.raises(LocalProtocolError):
        ledger.mark_completed(R, "m1")


# --------------------------------------------------------------------------- stateful model

ROOMS = ("r1", "r2")
MESSAGES = ("m1", "m2", "m3", "m4")
BOUND = 2
MAX_ATTEMPTS = 2

rooms = st.sampled_from(ROOMS)
messages = st.sampled_from(MESSAGES)


class _Model:
    """The ledger's rules, written as plainly as possible."""

    def __init__(self) -> None:
        self.in_flight: set[tuple[str, str]] = set()
        self.attempts: dict[tuple[str, str], int] = {}
        self.replies: dict[tuple[str, str], list[str]] = {}
        self.acks: set[tuple[str, str]] = set()
        self.completed: dict[str, OrderedDict[str, None]] = {r: OrderedDict() for r in ROOMS}
        self.failed: dict[str, OrderedDict[str, None]] = {r: OrderedDict() for r in ROOMS}

    def state(self, room: str, msg: str, *, touch: bool = True) -> MessageState:
        if msg in self.completed[room]:
            if touch:
                self.completed[room].move_to_end(msg)
            return MessageState.COMPLETED
        if msg in self.failed[room]:
            return MessageState.FAILED_FINAL
        if (room, msg) in self.acks:
            return MessageState.ACK_PENDING
        if self.replies.get((room, msg)):
            return MessageState.REPLY_SENT
        return MessageState.NEW

    def final(self, room: str, msg: str) -> bool:
        return msg in self.completed[room] or msg in self.failed[room]

    def clear(self, key: tuple[str, str]) -> None:
        self.attempts.pop(key, None)
        self.replies.pop(key, None)
        self.acks.discard(key)

    @staticmethod
    def add(table: OrderedDict[str, None], msg: str) -> None:
        table[msg] = None
        table.move_to_end(msg)
        while len(table) > BOUND:
            table.popitem(last=False)


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ledger-"))
        self.path = self.dir / "ledger.sqlite3"
        self.ledger = self._open()
        self.model = _Model()
        self.claims: dict[tuple[str, str], Claim] = {}
        self.stale: list[Claim] = []

    def _open(self) -> ClaimsLedger:
        return ClaimsLedger.open(
            self.path,
            max_attempts=MAX_ATTEMPTS,
            completed_per_room=BOUND,
            failed_per_room=BOUND,
        )

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(room=rooms, msg=messages)
    def claim(self, room: str, msg: str) -> None:
        key = (room, msg)
        result = self.ledger.try_claim(room, msg)
        if key in self.model.in_flight:
            assert result == Refusal(room, msg, RefusalReason.IN_FLIGHT)
            return
        state = self.model.state(room, msg)  # a lookup refreshes recency, as in the ledger
        if state is MessageState.COMPLETED:
            assert result == Refusal(room, msg, RefusalReason.COMPLETED)
        elif state is MessageState.FAILED_FINAL:
            assert result == Refusal(room, msg, RefusalReason.FAILED_FINAL)
        elif state in (MessageState.ACK_PENDING, MessageState.REPLY_SENT):
            assert result == Refusal(room, msg, RefusalReason.ACK_PENDING)
        else:
            assert isinstance(result, Claim)
            self.model.in_flight.add(key)
            self.claims[key] = result

    @precondition(lambda self: bool(self.claims))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.claims)))
        claim = self.claims.pop(key)
        assert self.ledger.release(claim) is True
        self.model.in_flight.discard(key)
        self.stale.append(claim)

    @precondition(lambda self: bool(self.stale))
    @rule(data=st.data())
    def release_stale(self, data: st.DataObject) -> None:
        claim = data.draw(st.sampled_from(self.stale))
        assert self.ledger.release(claim) is False

    @precondition(lambda self: bool(self.claims))
    @rule(data=st.data())
    def record_attempt(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.claims)))
        attempt = self.ledger.record_attempt(self.claims[key])
        self.model.attempts[key] = self.model.attempts.get(key, 0) + 1
        assert attempt.number == self.model.attempts[key]
        assert attempt.is_final == (attempt.number >= MAX_ATTEMPTS)
        assert attempt.exceeded == (attempt.number > MAX_ATTEMPTS)

    @precondition(lambda self: bool(self.claims))
    @rule(data=st.data())
    def discard_attempt(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.claims)))
        left = self.ledger.discard_attempt(self.claims[key])
        count = max(0, self.model.attempts.get(key, 0) - 1)
        if count:
            self.model.attempts[key] = count
        else:
            self.model.attempts.pop(key, None)
        assert left == count

    @rule(room=rooms, msg=messages, reply=st.sampled_from(("x", "y")))
    def reply_sent(self, room: str, msg: str, reply: str) -> None:
        self.ledger.reply_sent(room, msg, reply)
        replies = self.model.replies.setdefault((room, msg), [])
        if reply not in replies:
            replies.append(reply)

    @rule(room=rooms, msg=messages)
    def ack_pending(self, room: str, msg: str) -> None:
        self.ledger.mark_ack_pending(room, msg)
        if not self.model.final(room, msg):
            self.model.acks.add((room, msg))

    @rule(room=rooms, msg=messages)
    def completed(self, room: str, msg: str) -> None:
        self.ledger.mark_completed(room, msg)
        self.model.clear((room, msg))
        self.model.failed[room].pop(msg, None)
        self.model.add(self.model.completed[room], msg)

    @rule(room=rooms, msg=messages)
    def failed(self, room: str, msg: str) -> None:
        self.ledger.mark_failed_final(room, msg)
        if msg not in self.model.completed[room]:
            self.model.clear((room, msg))
            self.model.add(self.model.failed[room], msg)

    @rule(room=rooms)
    def forget_room(self, room: str) -> None:
        self.ledger.forget_room(room)
        self.model.completed[room].clear()

    @rule()
    def restart(self) -> None:
        self.ledger.close()
        self.ledger = self._open()
        self.model.in_flight.clear()
        self.stale.extend(self.claims.values())
        self.claims.clear()

    @invariant()
    def agrees_with_model(self) -> None:
        for room in ROOMS:
            for msg in MESSAGES:
                assert self.ledger.state(room, msg) is self.model.state(room, msg), (room, msg)
                assert self.ledger.attempts(room, msg) == self.model.attempts.get((room, msg), 0)
                assert self.ledger.is_in_flight(room, msg) == ((room, msg) in self.model.in_flight)
            expected_acks = sorted(
                msg
                for msg in MESSAGES
                if (room, msg) not in self.model.in_flight
                and self.model.state(room, msg, touch=False)
                in (MessageState.ACK_PENDING, MessageState.REPLY_SENT)
            )
            assert sorted(self.ledger.pending_acks(room)) == expected_acks
            assert len(self.model.completed[room]) <= BOUND


LedgerMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
test_ledger_matches_model = LedgerMachine.TestCase


def test_exclusive_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    # A second instance on the same state is refused (official runtime,
    # "Testable behaviours" 3, in spirit).
    path = tmp_path / "ledger.sqlite3"
    first = ClaimsLedger.open(path, exclusive=True)
    with pytest.raises(AgentAlreadyRunningError, match="in use"):
        ClaimsLedger.open(path, exclusive=True)
    with pytest.raises(AgentAlreadyRunningError):
        ClaimsLedger.for_config(AgentConfig(state_dir=tmp_path), "a", exclusive=True)
    first.close()
    second = ClaimsLedger.open(path, exclusive=True)  # released by close()
    second.close()


def test_exclusive_lock_across_processes(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "ledger.sqlite3"
    code = (
        "import sys\n"
        "from band_trio.runtime.claims.ledger import ClaimsLedger\n"
        "from band_trio.errors import AgentAlreadyRunningError\n"
        "try:\n"
        "    ClaimsLedger.open(sys.argv[1], exclusive=True)\n"
        "except AgentAlreadyRunningError:\n"
        "    sys.exit(7)\n"
    )
    with ClaimsLedger.open(path, exclusive=True):
        done = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60, check=False)
        assert done.returncode == 7
    done = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60, check=False)
    assert done.returncode == 0


# ------------------------------------------------------------------ reply intents


def test_intents_survive_a_restart_and_do_not_change_the_state(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    claim = ledger.try_claim(R, "m1")
    assert isinstance(claim, Claim)
    ledger.reply_intent(R, "m1", "d1")
    ledger.reply_intent(R, "m1", "d2")
    ledger.reply_intent(R, "m1", "d1")  # idempotent
    ledger.close()  # killed mid-post

    ledger = ClaimsLedger.open(path)
    assert ledger.reply_intents(R, "m1") == ("d1", "d2")
    # An open intent alone does not make the message "replied": it may run
    # again once the lookup found nothing.
    assert ledger.state(R, "m1") is MessageState.NEW
    assert isinstance(ledger.try_claim(R, "m1"), Claim)
    ledger.drop_reply_intent(R, "m1", "d1")
    ledger.drop_reply_intent(R, "m1", "unknown")
    ledger.close()

    ledger = ClaimsLedger.open(path)
    assert ledger.reply_intents(R, "m1") == ("d2",)
    ledger.clear_reply_intents(R, "m1")
    ledger.close()

    ledger = ClaimsLedger.open(path)
    assert ledger.reply_intents(R, "m1") == ()
    ledger.close()


def test_completing_or_failing_a_message_forgets_its_intents(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    ledger.reply_intent(R, "done", "d")
    ledger.reply_intent(R, "failed", "d")
    ledger.reply_intent(R, "other", "d")
    ledger.mark_completed(R, "done")
    ledger.mark_failed_final(R, "failed")
    assert ledger.reply_intents(R, "done") == ()
    assert ledger.reply_intents(R, "failed") == ()
    ledger.close()

    ledger = ClaimsLedger.open(path)
    assert ledger.reply_intents(R, "done") == ()
    assert ledger.reply_intents(R, "failed") == ()
    assert ledger.reply_intents(R, "other") == ("d",)
    ledger.close()
    rows = sqlite3.connect(path).execute("SELECT room_id, message_id FROM intents").fetchall()
    assert rows == [(R, "other")]


def test_a_ledger_file_from_before_intents_opens_and_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    ledger.reply_sent(R, "m1", "reply-1")
    ledger.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE intents")
    db.commit()
    db.close()

    ledger = ClaimsLedger.open(path)
    assert ledger.replies(R, "m1") == ("reply-1",)
    ledger.reply_intent(R, "m2", "d")
    ledger.close()
    ledger = ClaimsLedger.open(path)
    assert ledger.reply_intents(R, "m2") == ("d",)
    ledger.close()


def test_in_memory_intents_work_without_a_file() -> None:
    ledger = ClaimsLedger.in_memory()
    ledger.reply_intent(R, "m1", "d")
    assert ledger.reply_intents(R, "m1") == ("d",)
    ledger.clear_reply_intents(R, "m1")
    assert ledger.reply_intents(R, "m1") == ()


def test_known_replies_survive_completion_and_restart_and_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = ClaimsLedger.open(path)
    for i in range(KNOWN_REPLIES_PER_ROOM + 5):
        ledger.reply_sent(R, f"m{i}", f"reply-{i}")
        ledger.mark_completed(R, f"m{i}")  # the journaled reply goes; known stays
    ledger.remember_reply(R, "synthetic-reply")
    ledger.remember_reply("room-2", "other-room")
    assert ledger.replies(R, "m0") == ()
    ledger.close()

    ledger = ClaimsLedger.open(path)
    known = ledger.known_replies(R)
    assert len(known) == KNOWN_REPLIES_PER_ROOM
    assert "synthetic-reply" in known
    assert f"reply-{KNOWN_REPLIES_PER_ROOM + 4}" in known
    # The oldest were forgotten first, in the file too.
    assert {"reply-0", "reply-5"}.isdisjoint(known)
    assert ledger.known_replies("room-2") == frozenset({"other-room"})
    ledger.close()
    rows = sqlite3.connect(path).execute(
        "SELECT COUNT(*) FROM known_replies WHERE room_id = ?", (R,)
    )
    assert rows.fetchone()[0] == KNOWN_REPLIES_PER_ROOM
