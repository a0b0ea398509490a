"""The ledger file does not keep its largest size: the WAL is cut back after
each checkpoint, and free pages go back to the file system."""

from __future__ import annotations

from pathlib import Path

from band_trio.runtime.claims._journal import ClaimsJournal
from band_trio.runtime.claims.ledger import ClaimsLedger

R = "room-1"


def test_a_new_ledger_file_caps_its_wal_and_vacuums_incrementally(tmp_path: Path) -> None:
    journal = ClaimsJournal.open(tmp_path / "ledger.sqlite3")
    try:
        db = journal.connection
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        assert db.execute("PRAGMA journal_size_limit").fetchone()[0] == 1024 * 1024
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 256
    finally:
        journal.close()


def test_freed_pages_go_back_to_the_file_system(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ClaimsLedger.open(path, completed_per_room=100_000) as ledger:
        journal = ledger._journal
        db = journal.connection
        for n in range(3000):
            ledger.mark_completed(R, f"message-{n:05d}-" + "x" * 120)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        full = path.stat().st_size
        ledger.forget_room(R)  # deletes every completed row of the room
        assert db.execute("PRAGMA freelist_count").fetchone()[0] >= 64
        assert journal.compact() >= 64
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert path.stat().st_size < full / 4
        assert journal.compact() == 0  # nothing left to give back


def test_compaction_runs_by_itself_as_writes_go_on(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ClaimsLedger.open(path, completed_per_room=100_000) as ledger:
        db = ledger._journal.connection
        for n in range(1500):  # one write each
            ledger.mark_completed("big", f"m{n}-" + "y" * 200)
        ledger.forget_room("big")
        freed = db.execute("PRAGMA freelist_count").fetchone()[0]
        assert freed >= 64
        # Small writes go on; the thousandth write since the last check gives
        # the free pages back (small rows reuse only a few of them).
        writes = 1501
        while writes % 1000:
            ledger.mark_completed("small", f"s{writes}")
            writes += 1
        assert db.execute("PRAGMA freelist_count").fetchone()[0] < 8
