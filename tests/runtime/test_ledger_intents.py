"""Reply intents in the claims ledger: durable, dropped one by one or all at
once, and gone when the message is completed or failed for good."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from band_trio.runtime.ledger import KNOWN_REPLIES_PER_ROOM, Claim, ClaimsLedger, MessageState

R = "room-1"


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
