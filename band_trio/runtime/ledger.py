"""The claims ledger: at-least-once delivery in, exactly-once effect out (sans-io).

Per ``(room_id, message_id)`` the ledger keeps:

* an **in-flight claim** (memory only): a message runs at most once at a time,
  whichever path (live push, ``/next`` backlog, control scan) found it;
* an **attempt count**: how many times its turn was started; a message is
  marked failed for good after ``max_attempts`` and then stepped past;
* a **state**: nothing yet, ``reply_sent`` (a reply was journaled),
  ``ack_pending`` (the turn completed, the ``processed`` write has not landed),
  ``completed`` or ``failed_final``;
* **reply intents**: the digest of each reply about to be posted, journaled
  before the post and dropped once its outcome is known. An intent that is
  still there when the message comes up again means a post whose outcome was
  never learned (the process died mid-request, or the response was lost): the
  runtime then looks for that reply on the platform before running the turn
  again (see ``Room``), so an ambiguous post never becomes a second reply.

Durability. With a file (the default for agents, see
:meth:`~band_trio.runtime.config.AgentConfig.ledger_path`) every state change is
written to SQLite (WAL journal) before the call returns, so a process killed at
any point finds the same states when it opens the file again: a message whose
reply was journaled but not acked is "ack only" after a restart and is never run
twice; failed messages stay failed; attempt counts survive (a message that
crashes the process still runs at most ``max_attempts`` times). ``synchronous``
is NORMAL by default: this survives the process being killed, which is the
failure that matters here; pass ``synchronous="FULL"`` to survive power loss too.

The API is synchronous on purpose: each call is one small local SQLite write
(tens of microseconds), cheaper than a thread hop, and keeping it sync means no
state change can be interrupted half way by a Trio cancellation. Reads are
served from an in-memory mirror.

Memory bounds: completed ids are an LRU of ``completed_per_room`` per room (a
lookup refreshes recency); permanently failed ids are bounded per room (oldest
evicted first). Evicted ids leave the file too. A replay of an evicted
completed message is still caught by the platform's delivery status.

If a write fails (disk full, read-only file), the ledger logs it, counts it in
:meth:`ClaimsLedger.statistics` and keeps working from memory: answering
messages matters more than durability.
"""

from __future__ import annotations

import enum
import errno
import itertools
import logging
import os
import sqlite3
import sys
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Final, Literal, Self

import attrs

from band_trio.errors import AgentAlreadyRunningError, BandConfigError, LocalProtocolError

if TYPE_CHECKING:
    from band_trio.runtime.config import AgentConfig

__all__ = [
    "KNOWN_REPLIES_PER_ROOM",
    "Attempt",
    "Claim",
    "ClaimsLedger",
    "LedgerStatistics",
    "MessageState",
    "Refusal",
    "RefusalReason",
]

logger = logging.getLogger(__name__)

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
)

Key = tuple[str, str]

KNOWN_REPLIES_PER_ROOM: Final = 256
"""Own reply ids remembered per room as accounted for (see :meth:`ClaimsLedger.known_replies`)."""

# Claim tokens are unique in the process, so a claim from a closed ledger can
# never release a claim of a reopened one.
_TOKENS = itertools.count(1)


class MessageState(enum.Enum):
    """Where a message stands in the ledger."""

    NEW = "new"
    """Nothing recorded beyond (maybe) attempts: it may run."""
    REPLY_SENT = "reply_sent"
    """A reply was journaled; the turn has not been acked. Never run again."""
    ACK_PENDING = "ack_pending"
    """The turn completed; only the ``processed`` write is owed."""
    COMPLETED = "completed"
    """Done and acked (or given up acking)."""
    FAILED_FINAL = "failed_final"
    """Failed ``max_attempts`` times: stepped past for good."""


class RefusalReason(enum.Enum):
    """Why :meth:`ClaimsLedger.try_claim` refused."""

    IN_FLIGHT = "in_flight"
    """Another path is running this message right now."""
    COMPLETED = "completed"
    """Already done."""
    FAILED_FINAL = "failed_final"
    """Permanently failed."""
    ACK_PENDING = "ack_pending"
    """Completed (or replied to) but not acked: the caller must only ack."""


@attrs.frozen
class Claim:
    """Proof that the holder runs a message; give it back with :meth:`ClaimsLedger.release`."""

    room_id: str
    message_id: str
    token: int = attrs.field(repr=False)


@attrs.frozen
class Refusal:
    """:meth:`ClaimsLedger.try_claim` said no."""

    room_id: str
    message_id: str
    reason: RefusalReason


@attrs.frozen
class Attempt:
    """The attempt just recorded.

    Attributes:
        number: 1 for the first run of the message.
        max_attempts: the ledger's budget.
    """

    number: int
    max_attempts: int

    @property
    def is_final(self) -> bool:
        """True when a failure of this attempt makes the message failed for good."""
        return self.number >= self.max_attempts

    @property
    def exceeded(self) -> bool:
        """True when the budget was already used up (for example by runs that
        crashed the process): do not run; mark the message failed instead."""
        return self.number > self.max_attempts


@attrs.frozen
class LedgerStatistics:
    """A snapshot of the ledger's size and health."""

    durable: bool
    in_flight: int
    tracked_attempts: int
    reply_sent: int
    ack_pending: int
    completed: int
    failed_final: int
    write_errors: int


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
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

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


def _bounded_add(table: OrderedDict[str, None], message_id: str, limit: int) -> list[str]:
    table[message_id] = None
    table.move_to_end(message_id)
    evicted: list[str] = []
    while len(table) > limit:
        evicted.append(table.popitem(last=False)[0])
    return evicted


class ClaimsLedger:
    """Claims, attempts and outcomes of messages, per room; optionally durable.

    Build it with :meth:`open` (a SQLite file), :meth:`in_memory`, or
    :meth:`for_config`. Close it with :meth:`close` (or use it as a context
    manager). Not thread-safe: use it from the Trio thread only.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        *,
        durable: bool,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
    ) -> None:
        if max_attempts < 1 or completed_per_room < 1 or failed_per_room < 1:
            raise BandConfigError("ledger bounds must be >= 1")
        self._db = connection
        self._durable = durable
        self.max_attempts = max_attempts
        self.completed_per_room = completed_per_room
        self.failed_per_room = failed_per_room
        self._in_flight: dict[Key, int] = {}
        self._attempts: dict[Key, int] = {}
        self._replies: dict[Key, list[str]] = {}
        self._intents: dict[Key, list[str]] = {}
        self._known: dict[str, OrderedDict[str, None]] = {}
        self._acks: dict[Key, None] = {}
        self._ack_failures: dict[Key, int] = {}
        self._completed: dict[str, OrderedDict[str, None]] = {}
        self._failed: dict[str, OrderedDict[str, None]] = {}
        self._write_errors = 0
        self._closed = False
        self._lock_file: IO[bytes] | None = None
        self._create_schema()
        self._seq = itertools.count(self._load() + 1)

    # ----------------------------------------------------------------- construction

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        exclusive: bool = False,
    ) -> ClaimsLedger:
        """Open (or create) the ledger file at ``path``.

        The parent directory is created (mode 0700) when missing.

        Args:
            path: the SQLite file.
            max_attempts: attempts per message before it is failed for good.
            completed_per_room: bound of the completed LRU per room.
            failed_per_room: bound of the failed ids per room.
            synchronous: ``NORMAL`` survives a killed process; ``FULL`` also
                survives power loss (one fsync per write).
            exclusive: hold an advisory lock (``<path>.lock``) while open, so a
                second process (or a second ledger in this process) using the
                same state cannot run the same messages at once.

        Raises:
            AgentAlreadyRunningError: ``exclusive`` and another holder has the lock.
            BandConfigError: the file cannot be opened or is not a ledger.
        """
        file = Path(path)
        lock = _acquire_lock(file) if exclusive else None
        try:
            ledger = cls._open_file(
                file,
                max_attempts=max_attempts,
                completed_per_room=completed_per_room,
                failed_per_room=failed_per_room,
                synchronous=synchronous,
            )
        except BaseException:
            if lock is not None:
                lock.close()
            raise
        ledger._lock_file = lock
        return ledger

    @classmethod
    def _open_file(
        cls,
        file: Path,
        *,
        max_attempts: int,
        completed_per_room: int,
        failed_per_room: int,
        synchronous: Literal["NORMAL", "FULL"],
    ) -> ClaimsLedger:
        try:
            file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            db = sqlite3.connect(file, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise BandConfigError(f"cannot open the claims ledger at {str(file)!r}: {exc}") from exc
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'FULL' else 'NORMAL'}")
            db.execute("PRAGMA busy_timeout=5000")
            return cls(
                db,
                durable=True,
                max_attempts=max_attempts,
                completed_per_room=completed_per_room,
                failed_per_room=failed_per_room,
            )
        except sqlite3.Error as exc:
            db.close()
            raise BandConfigError(f"{str(file)!r} is not a usable claims ledger: {exc}") from exc

    @classmethod
    def in_memory(
        cls,
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
    ) -> ClaimsLedger:
        """A ledger that lives only as long as this object (nothing survives a restart)."""
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        return cls(
            db,
            durable=False,
            max_attempts=max_attempts,
            completed_per_room=completed_per_room,
            failed_per_room=failed_per_room,
        )

    @classmethod
    def for_config(
        cls, config: AgentConfig, agent_id: str, *, exclusive: bool = False
    ) -> ClaimsLedger:
        """The ledger an agent with ``config`` uses: its state file, or in memory.

        Raises:
            AgentAlreadyRunningError: ``exclusive`` and the state is in use.
            BandConfigError: the file cannot be opened.
        """
        path = config.ledger_path(agent_id)
        if path is None:
            return cls.in_memory(
                max_attempts=config.max_attempts,
                completed_per_room=config.completed_cache_size,
                failed_per_room=config.failed_cache_size,
            )
        return cls.open(
            path,
            max_attempts=config.max_attempts,
            completed_per_room=config.completed_cache_size,
            failed_per_room=config.failed_cache_size,
            exclusive=exclusive,
        )

    def close(self) -> None:
        """Close the database. Idempotent. In-memory state is dropped."""
        if not self._closed:
            self._closed = True
            self._db.close()
            if self._lock_file is not None:
                self._lock_file.close()  # releases the advisory lock
                self._lock_file = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def durable(self) -> bool:
        """True when states survive a restart (a file-backed ledger)."""
        return self._durable

    # ----------------------------------------------------------------- claims

    def try_claim(self, room_id: str, message_id: str) -> Claim | Refusal:
        """Claim a message for one run, or say why it must not run.

        Refuses when the message is in flight elsewhere, completed, failed for
        good, or completed/replied but not acked (``ACK_PENDING``: the caller
        must only retry the ``processed`` write).
        """
        key = (room_id, message_id)
        if key in self._in_flight:
            return Refusal(room_id, message_id, RefusalReason.IN_FLIGHT)
        state = self.state(room_id, message_id)
        if state is MessageState.COMPLETED:
            return Refusal(room_id, message_id, RefusalReason.COMPLETED)
        if state is MessageState.FAILED_FINAL:
            return Refusal(room_id, message_id, RefusalReason.FAILED_FINAL)
        if state in (MessageState.ACK_PENDING, MessageState.REPLY_SENT):
            return Refusal(room_id, message_id, RefusalReason.ACK_PENDING)
        token = next(_TOKENS)
        self._in_flight[key] = token
        return Claim(room_id, message_id, token)

    def holds(self, claim: Claim) -> bool:
        """True while ``claim`` is the live claim of its message."""
        return self._in_flight.get((claim.room_id, claim.message_id)) == claim.token

    def is_in_flight(self, room_id: str, message_id: str) -> bool:
        """True while some path holds a claim on the message."""
        return (room_id, message_id) in self._in_flight

    def release(self, claim: Claim) -> bool:
        """Give a claim back (idempotent). Returns True if it was still held."""
        if self.holds(claim):
            del self._in_flight[(claim.room_id, claim.message_id)]
            return True
        return False

    # ----------------------------------------------------------------- attempts

    def record_attempt(self, claim: Claim) -> Attempt:
        """Count one more run of the claimed message (durably).

        Check :attr:`Attempt.exceeded` before running it.

        Raises:
            LocalProtocolError: ``claim`` is not held.
        """
        key = self._held(claim)
        count = self._attempts.get(key, 0) + 1
        self._attempts[key] = count
        self._write(
            "INSERT INTO attempts VALUES (?, ?, ?) "
            "ON CONFLICT (room_id, message_id) DO UPDATE SET count = excluded.count",
            (key[0], key[1], count),
        )
        return Attempt(count, self.max_attempts)

    def discard_attempt(self, claim: Claim) -> int:
        """Take the last attempt back (an interrupt, a stop, a refused claim,
        an input the adapter did not accept). Returns the attempts left counted.

        Raises:
            LocalProtocolError: ``claim`` is not held.
        """
        key = self._held(claim)
        count = max(0, self._attempts.get(key, 0) - 1)
        if count:
            self._attempts[key] = count
            self._write(
                "UPDATE attempts SET count = ? WHERE room_id = ? AND message_id = ?",
                (count, key[0], key[1]),
            )
        else:
            self._attempts.pop(key, None)
            self._write("DELETE FROM attempts WHERE room_id = ? AND message_id = ?", key)
        return count

    def attempts(self, room_id: str, message_id: str) -> int:
        """Attempts recorded for a message that is not completed or failed yet."""
        return self._attempts.get((room_id, message_id), 0)

    # ----------------------------------------------------------------- outcomes

    def reply_sent(self, room_id: str, message_id: str, reply_id: str) -> None:
        """Journal that the platform accepted ``reply_id`` answering the message.

        Written at once, so after a crash the message is only acked, never re-run.
        """
        key = (room_id, message_id)
        replies = self._replies.setdefault(key, [])
        if reply_id in replies:
            return
        replies.append(reply_id)
        self._transaction(
            [
                (
                    "INSERT OR IGNORE INTO replies VALUES (?, ?, ?, ?)",
                    (room_id, message_id, reply_id, next(self._seq)),
                ),
                *self._remember(room_id, reply_id),
            ]
        )

    def remember_reply(self, room_id: str, reply_id: str) -> None:
        """Note an own post whose outcome is known but answers no message (a
        synthetic turn's): it is accounted for, like every journaled reply."""
        if reply_id not in self._known.get(room_id, ()):
            self._transaction(self._remember(room_id, reply_id))

    def known_replies(self, room_id: str) -> frozenset[str]:
        """Own posts in the room whose outcome is known (the newest
        ``KNOWN_REPLIES_PER_ROOM``, kept across restarts): never to be taken
        for a reply whose post had no known outcome."""
        return frozenset(self._known.get(room_id, ()))

    def _remember(self, room_id: str, reply_id: str) -> list[tuple[str, tuple[object, ...]]]:
        table = self._known.setdefault(room_id, OrderedDict())
        evicted = _bounded_add(table, reply_id, KNOWN_REPLIES_PER_ROOM)
        return [
            (
                "INSERT OR REPLACE INTO known_replies VALUES (?, ?, ?)",
                (room_id, reply_id, next(self._seq)),
            ),
            *(
                ("DELETE FROM known_replies WHERE room_id = ? AND reply_id = ?", (room_id, e))
                for e in evicted
            ),
        ]

    def replies(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Reply ids journaled for a message not yet completed."""
        return tuple(self._replies.get((room_id, message_id), ()))

    def reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """Journal that a reply with ``digest`` is about to be posted.

        Written before the post; :meth:`drop_reply_intent` once the platform
        accepted or refused it. One that is never dropped marks a post whose
        outcome is unknown.
        """
        key = (room_id, message_id)
        digests = self._intents.setdefault(key, [])
        if digest in digests:
            return
        digests.append(digest)
        self._write(
            "INSERT OR IGNORE INTO intents VALUES (?, ?, ?, ?)",
            (room_id, message_id, digest, next(self._seq)),
        )

    def drop_reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """The post with ``digest`` has a known outcome (accepted or refused)."""
        key = (room_id, message_id)
        digests = self._intents.get(key)
        if digests is None or digest not in digests:
            return
        digests.remove(digest)
        if not digests:
            del self._intents[key]
        self._write(
            "DELETE FROM intents WHERE room_id = ? AND message_id = ? AND digest = ?",
            (room_id, message_id, digest),
        )

    def reply_intents(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Digests of replies to the message whose post had no known outcome."""
        return tuple(self._intents.get((room_id, message_id), ()))

    def clear_reply_intents(self, room_id: str, message_id: str) -> None:
        """Forget every open intent of the message (they were looked up)."""
        if self._intents.pop((room_id, message_id), None) is not None:
            self._write(
                "DELETE FROM intents WHERE room_id = ? AND message_id = ?", (room_id, message_id)
            )

    def mark_ack_pending(self, room_id: str, message_id: str) -> None:
        """The turn completed: only the ``processed`` write is owed from now on.

        Record this *before* sending the write, with no await in between.
        """
        key = (room_id, message_id)
        if self._is_final(key):
            return
        self._acks[key] = None
        self._write(
            "INSERT OR IGNORE INTO acks VALUES (?, ?, ?)", (room_id, message_id, next(self._seq))
        )

    def note_ack_failure(self, room_id: str, message_id: str) -> int:
        """Count one failed ``processed`` write (memory only). Returns the count.

        The caller gives up (and calls :meth:`mark_completed`) once this reaches
        its budget.
        """
        key = (room_id, message_id)
        count = self._ack_failures.get(key, 0) + 1
        self._ack_failures[key] = count
        return count

    def mark_completed(self, room_id: str, message_id: str) -> None:
        """The message is done: acked, or the ack was given up on."""
        key = (room_id, message_id)
        self._forget_progress(key)
        failed = self._failed.get(room_id)
        if failed is not None:
            failed.pop(message_id, None)
        table = self._completed.setdefault(room_id, OrderedDict())
        evicted = _bounded_add(table, message_id, self.completed_per_room)
        self._transaction(
            [
                ("DELETE FROM attempts WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM acks WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM replies WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM intents WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM failed WHERE room_id = ? AND message_id = ?", key),
                (
                    "INSERT OR REPLACE INTO completed VALUES (?, ?, ?)",
                    (room_id, message_id, next(self._seq)),
                ),
                *(
                    ("DELETE FROM completed WHERE room_id = ? AND message_id = ?", (room_id, e))
                    for e in evicted
                ),
            ]
        )

    def mark_failed_final(self, room_id: str, message_id: str) -> None:
        """The message failed for the last time: never run it again.

        A message already completed stays completed.
        """
        key = (room_id, message_id)
        if message_id in self._completed.get(room_id, ()):
            return
        self._forget_progress(key)
        table = self._failed.setdefault(room_id, OrderedDict())
        evicted = _bounded_add(table, message_id, self.failed_per_room)
        self._transaction(
            [
                ("DELETE FROM attempts WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM acks WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM replies WHERE room_id = ? AND message_id = ?", key),
                ("DELETE FROM intents WHERE room_id = ? AND message_id = ?", key),
                (
                    "INSERT OR REPLACE INTO failed VALUES (?, ?, ?)",
                    (room_id, message_id, next(self._seq)),
                ),
                *(
                    ("DELETE FROM failed WHERE room_id = ? AND message_id = ?", (room_id, e))
                    for e in evicted
                ),
            ]
        )

    # ----------------------------------------------------------------- queries

    def state(self, room_id: str, message_id: str) -> MessageState:
        """The message's state. A completed hit refreshes its LRU recency."""
        completed = self._completed.get(room_id)
        if completed is not None and message_id in completed:
            if next(reversed(completed)) != message_id:
                # Refresh recency, in the file too, so a restart keeps the LRU order.
                completed.move_to_end(message_id)
                self._write(
                    "UPDATE completed SET seq = ? WHERE room_id = ? AND message_id = ?",
                    (next(self._seq), room_id, message_id),
                )
            return MessageState.COMPLETED
        if message_id in self._failed.get(room_id, ()):
            return MessageState.FAILED_FINAL
        key = (room_id, message_id)
        if key in self._acks:
            return MessageState.ACK_PENDING
        if self._replies.get(key):
            return MessageState.REPLY_SENT
        return MessageState.NEW

    def is_done(self, room_id: str, message_id: str) -> bool:
        """True when the message is completed or failed for good."""
        return self.state(room_id, message_id) in (
            MessageState.COMPLETED,
            MessageState.FAILED_FINAL,
        )

    def is_failed_final(self, room_id: str, message_id: str) -> bool:
        """True when the message failed for good."""
        return message_id in self._failed.get(room_id, ())

    def pending_acks(self, room_id: str) -> list[str]:
        """Messages of the room that owe only a ``processed`` write, oldest first.

        That is ``ack_pending`` messages and messages with a journaled reply,
        excluding any that a running turn holds.
        """
        out: list[str] = []
        for key in self._acks:
            if key[0] == room_id and key not in self._in_flight:
                out.append(key[1])
        for key, replies in self._replies.items():
            if (
                key[0] == room_id
                and replies
                and key not in self._acks
                and key not in self._in_flight
                and not self._is_final(key)
            ):
                out.append(key[1])
        return out

    def forget_room(self, room_id: str) -> None:
        """The room was released: drop its completed cache.

        Ack-pending messages, journaled replies, attempt counts and failed
        messages are kept, so a rejoin only retries acks and never re-runs a
        poison message.
        """
        self._completed.pop(room_id, None)
        self._write("DELETE FROM completed WHERE room_id = ?", (room_id,))

    def statistics(self) -> LedgerStatistics:
        """Counts of what the ledger holds."""
        reply_keys = {k for k, v in self._replies.items() if v}
        return LedgerStatistics(
            durable=self._durable,
            in_flight=len(self._in_flight),
            tracked_attempts=len(self._attempts),
            reply_sent=len(reply_keys - self._acks.keys()),
            ack_pending=len(self._acks),
            completed=sum(len(t) for t in self._completed.values()),
            failed_final=sum(len(t) for t in self._failed.values()),
            write_errors=self._write_errors,
        )

    # ----------------------------------------------------------------- internals

    def _held(self, claim: Claim) -> Key:
        if not self.holds(claim):
            raise LocalProtocolError(
                f"claim on message {claim.message_id!r} in room {claim.room_id!r} is not held"
            )
        return (claim.room_id, claim.message_id)

    def _is_final(self, key: Key) -> bool:
        room_id, message_id = key
        return message_id in self._completed.get(room_id, ()) or message_id in self._failed.get(
            room_id, ()
        )

    def _forget_progress(self, key: Key) -> None:
        self._attempts.pop(key, None)
        self._acks.pop(key, None)
        self._replies.pop(key, None)
        self._intents.pop(key, None)
        self._ack_failures.pop(key, None)

    def _create_schema(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, _SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"unknown ledger schema version {version}")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._db.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")

    def _load(self) -> int:
        """Fill the memory mirror from the file; return the highest sequence number."""
        db = self._db
        top = 0
        for room_id, message_id, count in db.execute("SELECT * FROM attempts"):
            self._attempts[(room_id, message_id)] = count
        for room_id, message_id, reply_id, seq in db.execute("SELECT * FROM replies ORDER BY seq"):
            self._replies.setdefault((room_id, message_id), []).append(reply_id)
            top = max(top, seq)
        for room_id, reply_id, seq in db.execute("SELECT * FROM known_replies ORDER BY seq"):
            top = max(top, seq)
            known = self._known.setdefault(room_id, OrderedDict())
            for e in _bounded_add(known, reply_id, KNOWN_REPLIES_PER_ROOM):
                db.execute(
                    "DELETE FROM known_replies WHERE room_id = ? AND reply_id = ?", (room_id, e)
                )
        for room_id, message_id, digest, seq in db.execute("SELECT * FROM intents ORDER BY seq"):
            self._intents.setdefault((room_id, message_id), []).append(digest)
            top = max(top, seq)
        for room_id, message_id, seq in db.execute("SELECT * FROM acks ORDER BY seq"):
            self._acks[(room_id, message_id)] = None
            top = max(top, seq)
        for table, bound, name in (
            (self._completed, self.completed_per_room, "completed"),
            (self._failed, self.failed_per_room, "failed"),
        ):
            for room_id, message_id, seq in db.execute(f"SELECT * FROM {name} ORDER BY seq"):
                top = max(top, seq)
                evicted = _bounded_add(table.setdefault(room_id, OrderedDict()), message_id, bound)
                for e in evicted:  # the bound was lowered since the file was written
                    db.execute(
                        f"DELETE FROM {name} WHERE room_id = ? AND message_id = ?", (room_id, e)
                    )
        return top

    def _write(self, sql: str, params: Iterable[object]) -> None:
        self._transaction([(sql, tuple(params))])

    def _transaction(self, statements: Iterable[tuple[str, tuple[object, ...]]]) -> None:
        if self._closed:
            raise LocalProtocolError("the claims ledger is closed")
        db = self._db
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
            self._write_errors += 1
            log = logger.error if self._write_errors == 1 else logger.debug
            log("claims ledger write failed (state kept in memory only): %s", exc)
