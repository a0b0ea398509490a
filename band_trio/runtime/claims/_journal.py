"""The claims ledger's SQLite journal: durability, the state-dir lock, write failures.

With a file, every change of the claims state is written to SQLite (WAL
journal) before the ledger call returns, so a process killed at any point
finds the same states when it opens the file again. ``synchronous`` is NORMAL
by default: this survives the process being killed, which is the failure that
matters here; ``FULL`` survives power loss too (one fsync per write).

Each write is one small local transaction (tens of microseconds), cheaper
than a thread hop, so the journal is synchronous on purpose: no change can be
interrupted half way by a Trio cancellation.

If a write fails (disk full, read-only file), the journal logs it (the first
time at error level), counts it, and the ledger keeps working from memory:
answering messages matters more than durability.
"""

from __future__ import annotations

import errno
import itertools
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Final, Literal

from band_trio._logging import get_logger
from band_trio.errors import AgentAlreadyRunningError, BandConfigError, LocalProtocolError
from band_trio.runtime.core._claims import Change, ClaimsState, JournalEntry

__all__ = ["ClaimsJournal"]

logger = get_logger("band_trio.runtime.ledger")

_SCHEMA_VERSION: Final = 1
_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS attempts (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, count INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS replies (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, reply_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id, reply_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS acks (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS completed (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS failed (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS known_replies (
        room_id TEXT NOT NULL, reply_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, reply_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS intents (
        room_id TEXT NOT NULL, message_id TEXT NOT NULL, digest TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (room_id, message_id, digest)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS released_rooms (
        room_id TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID""",
)

_WAL_CHECKPOINT_PAGES: Final = 256
"""Pages (4 KiB by default) written to the WAL before it is checkpointed."""
_WAL_SIZE_LIMIT: Final = 1024 * 1024
"""Bytes the WAL file is cut back to after a checkpoint."""
_COMPACT_EVERY: Final = 1000
"""Transactions between two checks of the free pages (see :meth:`ClaimsJournal.compact`)."""
_COMPACT_FREE_PAGES: Final = 64
"""Free pages that make :meth:`ClaimsJournal.compact` give space back."""

_PROGRESS_TABLES: Final = ("attempts", "acks", "replies", "intents")
"""What a message that completed or failed for good no longer needs."""
_CACHE_TABLES: Final = ("completed", "failed", "known_replies", "released_rooms")
"""What a released room dropped by the bound of released caches leaves."""

Statement = tuple[str, tuple[object, ...]]


def _acquire_lock(file: Path) -> IO[bytes]:
    """Take the advisory lock ``<file>.lock`` (non-blocking)."""
    lock_path = file.with_name(file.name + ".lock")
    try:
        lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = open(lock_path, "a+b")  # noqa: SIM115 - held until close()
    except OSError as exc:
        raise BandConfigError(f"cannot open the ledger lock {str(lock_path)!r}: {exc}") from exc
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt  # exists on Windows only

            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl  # exists on POSIX only

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise AgentAlreadyRunningError(
            f"the claims ledger at {str(file)!r} is in use by another agent instance"
        ) from None
    except OSError as exc:
        handle.close()
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            raise AgentAlreadyRunningError(
                f"the claims ledger at {str(file)!r} is in use by another agent instance"
            ) from None
        raise BandConfigError(f"cannot lock {str(lock_path)!r}: {exc}") from exc
    return handle


class ClaimsJournal:
    """Where the claims state is kept: a SQLite database (a file, or memory).

    Build it with :meth:`open` or :meth:`in_memory`; :meth:`load` fills a
    fresh :class:`~band_trio.runtime.core._claims.ClaimsState` from it, and
    :meth:`write` records the state's changes, one transaction per call.
    Not thread-safe: use it from one thread.

    Args:
        connection: an autocommit connection (``isolation_level=None``).
        durable: True when the database is a file that survives the process.
        lock: the advisory lock held while open, if any (released by :meth:`close`).

    Raises:
        sqlite3.DatabaseError: the database is a ledger of an unknown version.
    """

    def __init__(
        self, connection: sqlite3.Connection, *, durable: bool, lock: IO[bytes] | None = None
    ) -> None:
        self.connection = connection
        self.durable = durable
        self.write_errors = 0
        self._lock = lock
        self._closed = False
        self._seq: Iterator[int] = itertools.count(1)
        self._writes = 0
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, _SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"unknown ledger schema version {version}")
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")

    @classmethod
    def open(
        cls,
        file: Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        exclusive: bool = False,
    ) -> ClaimsJournal:
        """Open (or create) the journal file; its parent is created (mode 0700).

        Args:
            file: the SQLite file.
            synchronous: ``NORMAL`` survives a killed process; ``FULL`` also
                survives power loss.
            exclusive: hold the advisory lock ``<file>.lock`` while open.

        Raises:
            AgentAlreadyRunningError: ``exclusive`` and another holder has the lock.
            BandConfigError: the file cannot be opened or is not a ledger.
        """
        lock = _acquire_lock(file) if exclusive else None
        try:
            try:
                file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                db = sqlite3.connect(file, isolation_level=None, check_same_thread=False)
            except (OSError, sqlite3.Error) as exc:
                raise BandConfigError(
                    f"cannot open the claims ledger at {str(file)!r}: {exc}"
                ) from exc
            try:
                # Set before the tables exist (a no-op on an older file): lets
                # compact() hand freed pages back to the file system.
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                db.execute("PRAGMA journal_mode=WAL")
                # The WAL is checkpointed every _WAL_CHECKPOINT_PAGES pages and
                # then cut back to _WAL_SIZE_LIMIT bytes; without the limit it
                # keeps its largest size forever.
                db.execute(f"PRAGMA wal_autocheckpoint={_WAL_CHECKPOINT_PAGES}")
                db.execute(f"PRAGMA journal_size_limit={_WAL_SIZE_LIMIT}")
                db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'FULL' else 'NORMAL'}")
                db.execute("PRAGMA busy_timeout=5000")
                return cls(db, durable=True, lock=lock)
            except sqlite3.Error as exc:
                db.close()
                raise BandConfigError(
                    f"{str(file)!r} is not a usable claims ledger: {exc}"
                ) from exc
        except BaseException:
            if lock is not None:
                lock.close()
            raise

    @classmethod
    def in_memory(cls) -> ClaimsJournal:
        """A journal that lives only as long as this object."""
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        return cls(db, durable=False)

    def close(self) -> None:
        """Close the database and release the lock. Idempotent."""
        if not self._closed:
            self._closed = True
            self.connection.close()
            if self._lock is not None:
                self._lock.close()  # releases the advisory lock
                self._lock = None

    # ----------------------------------------------------------------- reading

    def load(self, state: ClaimsState) -> None:
        """Fill ``state`` from the journal, oldest first.

        Rows the state's bounds evict (the bounds were lowered since they were
        written) are deleted from the file. Every loaded room counts as
        released until the owner serves it again (see
        :meth:`~band_trio.runtime.core._claims.ClaimsState.release_loaded_rooms`).

        Raises:
            sqlite3.Error: the file cannot be read.
        """
        db = self.connection
        top = 0
        for room_id, message_id, count in db.execute("SELECT * FROM attempts"):
            state.restore_attempts(room_id, message_id, count)
        for room_id, message_id, reply_id, seq in db.execute("SELECT * FROM replies ORDER BY seq"):
            state.restore_reply(room_id, message_id, reply_id)
            top = max(top, seq)
        for room_id, reply_id, seq in db.execute("SELECT * FROM known_replies ORDER BY seq"):
            top = max(top, seq)
            for e in state.restore_known_reply(room_id, reply_id):
                db.execute(
                    "DELETE FROM known_replies WHERE room_id = ? AND reply_id = ?", (room_id, e)
                )
        for room_id, message_id, digest, seq in db.execute("SELECT * FROM intents ORDER BY seq"):
            state.restore_intent(room_id, message_id, digest)
            top = max(top, seq)
        for room_id, message_id, seq in db.execute("SELECT * FROM acks ORDER BY seq"):
            state.restore_ack_pending(room_id, message_id)
            top = max(top, seq)
        for restore, name in (
            (state.restore_completed, "completed"),
            (state.restore_failed, "failed"),
        ):
            for room_id, message_id, seq in db.execute(f"SELECT * FROM {name} ORDER BY seq"):
                top = max(top, seq)
                for e in restore(room_id, message_id):
                    db.execute(
                        f"DELETE FROM {name} WHERE room_id = ? AND message_id = ?", (room_id, e)
                    )
        for room_id, seq in db.execute("SELECT * FROM released_rooms ORDER BY seq"):
            top = max(top, seq)
            state.restore_released(room_id)
        # No room is served before the owner says so again.
        state.release_loaded_rooms()
        self._seq = itertools.count(top + 1)

    # ----------------------------------------------------------------- writing

    def write(self, entries: Iterable[JournalEntry]) -> None:
        """Record ``entries`` in one transaction (nothing to do for none).

        A failing write is logged and counted in :attr:`write_errors`, never
        raised: the state in memory stays the truth.

        Raises:
            LocalProtocolError: the journal is closed.
        """
        statements = [s for entry in entries for s in self._statements(entry)]
        if not statements:
            return
        if self._closed:
            raise LocalProtocolError("the claims ledger is closed")
        db = self.connection
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    db.execute(sql, params)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self.write_errors += 1
            log = logger.error if self.write_errors == 1 else logger.debug
            log("claims ledger write failed (state kept in memory only): %s", exc)
            return
        self._writes += 1
        if self._writes % _COMPACT_EVERY == 0:
            self.compact()

    def compact(self) -> int:
        """Give the file's free pages back to the file system once there are
        more than a few; returns the pages freed.

        Rows the bounds evict and rooms the agent left are deleted as they go;
        SQLite reuses their pages, but a file that once held more than it
        holds now would keep its largest size. This runs every
        ``_COMPACT_EVERY`` writes (one ``PRAGMA`` when there is nothing to
        do). Files created before incremental vacuuming was turned on are left
        as they are. A failure is logged and counted like a failed write.
        """
        if self._closed:
            return 0
        db = self.connection
        try:
            free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
            if free < _COMPACT_FREE_PAGES:
                return 0
            # executescript steps the statement to its end: execute() would
            # free one page only (the pragma frees one page per step).
            db.executescript("PRAGMA incremental_vacuum;")
            return free - int(db.execute("PRAGMA freelist_count").fetchone()[0])
        except sqlite3.Error as exc:
            self.write_errors += 1
            logger.debug("claims ledger compaction failed: %s", exc)
            return 0

    def _statements(self, entry: JournalEntry) -> list[Statement]:
        room, item, detail = entry.room_id, entry.item, entry.detail
        key = (room, item)
        change = entry.change
        if change is Change.ATTEMPT_COUNTED:
            return [
                (
                    "INSERT INTO attempts VALUES (?, ?, ?) "
                    "ON CONFLICT (room_id, message_id) DO UPDATE SET count = excluded.count",
                    (room, item, detail),
                )
            ]
        if change is Change.ATTEMPT_DISCARDED:
            return [
                (
                    "UPDATE attempts SET count = ? WHERE room_id = ? AND message_id = ?",
                    (detail, room, item),
                )
            ]
        if change is Change.ATTEMPTS_CLEARED:
            return [("DELETE FROM attempts WHERE room_id = ? AND message_id = ?", key)]
        if change is Change.REPLY_SENT:
            return [
                (
                    "INSERT OR IGNORE INTO replies VALUES (?, ?, ?, ?)",
                    (room, item, detail, next(self._seq)),
                )
            ]
        if change is Change.REPLY_KNOWN:
            return [
                (
                    "INSERT OR REPLACE INTO known_replies VALUES (?, ?, ?)",
                    (room, item, next(self._seq)),
                )
            ]
        if change is Change.REPLY_FORGOTTEN:
            return [("DELETE FROM known_replies WHERE room_id = ? AND reply_id = ?", key)]
        if change is Change.INTENT_ADDED:
            return [
                (
                    "INSERT OR IGNORE INTO intents VALUES (?, ?, ?, ?)",
                    (room, item, detail, next(self._seq)),
                )
            ]
        if change is Change.INTENT_DROPPED:
            return [
                (
                    "DELETE FROM intents WHERE room_id = ? AND message_id = ? AND digest = ?",
                    (room, item, detail),
                )
            ]
        if change is Change.INTENTS_CLEARED:
            return [("DELETE FROM intents WHERE room_id = ? AND message_id = ?", key)]
        if change is Change.ACK_PENDING:
            return [("INSERT OR IGNORE INTO acks VALUES (?, ?, ?)", (room, item, next(self._seq)))]
        if change is Change.COMPLETED:
            return [
                *self._forget_progress(key),
                ("DELETE FROM failed WHERE room_id = ? AND message_id = ?", key),
                (
                    "INSERT OR REPLACE INTO completed VALUES (?, ?, ?)",
                    (room, item, next(self._seq)),
                ),
            ]
        if change is Change.COMPLETED_TOUCHED:
            return [
                (
                    "UPDATE completed SET seq = ? WHERE room_id = ? AND message_id = ?",
                    (next(self._seq), room, item),
                )
            ]
        if change is Change.COMPLETED_EVICTED:
            return [("DELETE FROM completed WHERE room_id = ? AND message_id = ?", key)]
        if change is Change.FAILED:
            return [
                *self._forget_progress(key),
                ("INSERT OR REPLACE INTO failed VALUES (?, ?, ?)", (room, item, next(self._seq))),
            ]
        if change is Change.FAILED_EVICTED:
            return [("DELETE FROM failed WHERE room_id = ? AND message_id = ?", key)]
        if change is Change.ROOM_FORGOTTEN:
            return [("DELETE FROM completed WHERE room_id = ?", (room,))]
        if change is Change.ROOM_RELEASED:
            return [
                (
                    "INSERT OR REPLACE INTO released_rooms VALUES (?, ?)",
                    (room, next(self._seq)),
                )
            ]
        if change is Change.ROOM_SERVED:
            return [("DELETE FROM released_rooms WHERE room_id = ?", (room,))]
        if change is Change.ROOM_EVICTED:
            return [(f"DELETE FROM {table} WHERE room_id = ?", (room,)) for table in _CACHE_TABLES]
        raise AssertionError(f"unhandled journal change {change!r}")  # pragma: no cover

    @staticmethod
    def _forget_progress(key: tuple[str, str]) -> list[Statement]:
        return [
            (f"DELETE FROM {table} WHERE room_id = ? AND message_id = ?", key)
            for table in _PROGRESS_TABLES
        ]
