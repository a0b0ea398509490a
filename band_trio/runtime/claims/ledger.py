"""The claims ledger: at-least-once delivery in, exactly-once effect out.

The ledger composes two parts:

* :class:`~band_trio.runtime.core.claims.ClaimsState`, the pure state per
  ``(room_id, message_id)``: in-flight claims, attempt counts, states
  (``reply_sent``, ``ack_pending``, ``completed``, ``failed_final``), reply
  intents, known replies and their bounds; it does no I/O;
* :class:`~band_trio.runtime.claims.journal.ClaimsJournal`, the SQLite
  journal every change of that state is written to before the call returns.

Durability. With a file (the default for agents, see
:meth:`~band_trio.runtime.config.AgentConfig.ledger_path`) a process killed at
any point finds the same states when it opens the file again: a message whose
reply was journaled but not acked is "ack only" after a restart and is never
run twice; failed messages stay failed; attempt counts survive (a message that
crashes the process still runs at most ``max_attempts`` times). Reads are
served from the state in memory.

The API is synchronous on purpose: each call is one small local SQLite write
(tens of microseconds), cheaper than a thread hop, and keeping it sync means no
state change can be interrupted half way by a Trio cancellation.

Memory bounds: completed ids are an LRU of ``completed_per_room`` per room (a
lookup refreshes recency); permanently failed ids are bounded per room (oldest
evicted first). Across rooms, the caches of rooms the agent no longer serves
(see :meth:`ClaimsLedger.release_room`) hold at most ``released_entries`` ids
in all: beyond that the least recently active released rooms lose theirs, whole
rooms at a time; a served room, or one that still owes a ``processed`` write or
has a post of unknown outcome, never does. Evicted ids leave the file too. A
replay of an evicted completed message is still caught by the platform's
delivery status.

If a write fails (disk full, read-only file), the ledger logs it, counts it in
:meth:`ClaimsLedger.statistics` and keeps working from memory: answering
messages matters more than durability.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Self

import attrs

from band_trio.errors import BandConfigError
from band_trio.runtime.claims.journal import ClaimsJournal
from band_trio.runtime.core.claims import (
    KNOWN_REPLIES_PER_ROOM,
    Attempt,
    Claim,
    ClaimsState,
    MessageState,
    Refusal,
    RefusalReason,
)

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
    served_rooms: int = 0
    """Rooms the agent serves now (their caches are never dropped)."""
    released_rooms: int = 0
    """Released rooms whose caches are still kept."""
    released_entries: int = 0
    """Ids those released rooms hold, within ``released_entries`` unless they owe work."""


class ClaimsLedger:
    """Claims, attempts and outcomes of messages, per room; optionally durable.

    Build it with :meth:`open` (a SQLite file), :meth:`in_memory`, or
    :meth:`for_config`. Close it with :meth:`close` (or use it as a context
    manager). Not thread-safe: use it from the Trio thread only.

    Args:
        journal: where every change is written; loaded into the state first.
        max_attempts: attempts per message before it is failed for good.
        completed_per_room: bound of the completed LRU per room.
        failed_per_room: bound of the failed ids per room.
        released_entries: bound of the ids kept for all released rooms together.

    Raises:
        BandConfigError: a bound is below 1 (``released_entries`` below 0).
        sqlite3.Error: the journal cannot be read.
    """

    def __init__(
        self,
        journal: ClaimsJournal,
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
        released_entries: int = 10_000,
    ) -> None:
        self._state = ClaimsState(
            max_attempts=max_attempts,
            completed_per_room=completed_per_room,
            failed_per_room=failed_per_room,
            released_entries=released_entries,
        )
        self._journal = journal
        journal.load(self._state)

    @property
    def max_attempts(self) -> int:
        """Attempts per message before it is failed for good."""
        return self._state.max_attempts

    @property
    def completed_per_room(self) -> int:
        """Bound of the completed LRU per room."""
        return self._state.completed_per_room

    @property
    def failed_per_room(self) -> int:
        """Bound of the failed ids per room."""
        return self._state.failed_per_room

    @property
    def released_entries(self) -> int:
        """Bound of the ids kept for all released rooms together."""
        return self._state.released_entries

    @property
    def _db(self) -> sqlite3.Connection:
        """The journal's database connection."""
        return self._journal.connection

    def _flush(self) -> None:
        """Write the state's changes of this call (one transaction)."""
        self._journal.write(self._state.take_changes())

    # ----------------------------------------------------------------- construction

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
        released_entries: int = 10_000,
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
            released_entries: bound of the ids kept for all released rooms.
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
        journal = ClaimsJournal.open(file, synchronous=synchronous, exclusive=exclusive)
        try:
            return cls(
                journal,
                max_attempts=max_attempts,
                completed_per_room=completed_per_room,
                failed_per_room=failed_per_room,
                released_entries=released_entries,
            )
        except sqlite3.Error as exc:
            journal.close()
            raise BandConfigError(f"{str(file)!r} is not a usable claims ledger: {exc}") from exc
        except BaseException:
            journal.close()
            raise

    @classmethod
    def in_memory(
        cls,
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
        released_entries: int = 10_000,
    ) -> ClaimsLedger:
        """A ledger that lives only as long as this object (nothing survives a restart)."""
        return cls(
            ClaimsJournal.in_memory(),
            max_attempts=max_attempts,
            completed_per_room=completed_per_room,
            failed_per_room=failed_per_room,
            released_entries=released_entries,
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
                released_entries=config.released_cache_size,
            )
        return cls.open(
            path,
            max_attempts=config.max_attempts,
            completed_per_room=config.completed_cache_size,
            failed_per_room=config.failed_cache_size,
            released_entries=config.released_cache_size,
            exclusive=exclusive,
        )

    def close(self) -> None:
        """Close the database. Idempotent. In-memory state is dropped."""
        self._journal.close()

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
        return self._journal.durable

    # ----------------------------------------------------------------- claims

    def try_claim(self, room_id: str, message_id: str) -> Claim | Refusal:
        """Claim a message for one run, or say why it must not run.

        Refuses when the message is in flight elsewhere, completed, failed for
        good, or completed/replied but not acked (``ACK_PENDING``: the caller
        must only retry the ``processed`` write).
        """
        claim = self._state.try_claim(room_id, message_id)
        self._flush()
        return claim

    def holds(self, claim: Claim) -> bool:
        """True while ``claim`` is the live claim of its message."""
        return self._state.holds(claim)

    def is_in_flight(self, room_id: str, message_id: str) -> bool:
        """True while some path holds a claim on the message."""
        return self._state.is_in_flight(room_id, message_id)

    def release(self, claim: Claim) -> bool:
        """Give a claim back (idempotent). Returns True if it was still held."""
        return self._state.release(claim)

    # ----------------------------------------------------------------- attempts

    def record_attempt(self, claim: Claim) -> Attempt:
        """Count one more run of the claimed message (durably).

        Check :attr:`Attempt.exceeded` before running it.

        Raises:
            LocalProtocolError: ``claim`` is not held.
        """
        attempt = self._state.record_attempt(claim)
        self._flush()
        return attempt

    def discard_attempt(self, claim: Claim) -> int:
        """Take the last attempt back (an interrupt, a stop, a refused claim,
        an input the adapter did not accept). Returns the attempts left counted.

        Raises:
            LocalProtocolError: ``claim`` is not held.
        """
        count = self._state.discard_attempt(claim)
        self._flush()
        return count

    def attempts(self, room_id: str, message_id: str) -> int:
        """Attempts recorded for a message that is not completed or failed yet."""
        return self._state.attempts(room_id, message_id)

    # ----------------------------------------------------------------- outcomes

    def reply_sent(self, room_id: str, message_id: str, reply_id: str) -> None:
        """Journal that the platform accepted ``reply_id`` answering the message.

        Written at once, so after a crash the message is only acked, never re-run.
        """
        self._state.reply_sent(room_id, message_id, reply_id)
        self._flush()

    def remember_reply(self, room_id: str, reply_id: str) -> None:
        """Note an own post whose outcome is known but answers no message (a
        synthetic turn's): it is accounted for, like every journaled reply."""
        self._state.remember_reply(room_id, reply_id)
        self._flush()

    def known_replies(self, room_id: str) -> frozenset[str]:
        """Own posts in the room whose outcome is known (the newest
        ``KNOWN_REPLIES_PER_ROOM``, kept across restarts): never to be taken
        for a reply whose post had no known outcome."""
        return self._state.known_replies(room_id)

    def replies(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Reply ids journaled for a message not yet completed."""
        return self._state.replies(room_id, message_id)

    def reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """Journal that a reply with ``digest`` is about to be posted.

        Written before the post; :meth:`drop_reply_intent` once the platform
        accepted or refused it. One that is never dropped marks a post whose
        outcome is unknown: the room then looks for that reply on the
        platform before it runs the message again.
        """
        self._state.reply_intent(room_id, message_id, digest)
        self._flush()

    def drop_reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """The post with ``digest`` has a known outcome (accepted or refused)."""
        self._state.drop_reply_intent(room_id, message_id, digest)
        self._flush()

    def reply_intents(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Digests of replies to the message whose post had no known outcome."""
        return self._state.reply_intents(room_id, message_id)

    def clear_reply_intents(self, room_id: str, message_id: str) -> None:
        """Forget every open intent of the message (they were looked up)."""
        self._state.clear_reply_intents(room_id, message_id)
        self._flush()

    def mark_ack_pending(self, room_id: str, message_id: str) -> None:
        """The turn completed: only the ``processed`` write is owed from now on.

        Record this *before* sending the write, with no await in between.
        """
        self._state.mark_ack_pending(room_id, message_id)
        self._flush()

    def note_ack_failure(self, room_id: str, message_id: str) -> int:
        """Count one failed ``processed`` write (memory only). Returns the count.

        The caller gives up (and calls :meth:`mark_completed`) once this reaches
        its budget.
        """
        return self._state.note_ack_failure(room_id, message_id)

    def mark_completed(self, room_id: str, message_id: str) -> None:
        """The message is done: acked, or the ack was given up on."""
        self._state.mark_completed(room_id, message_id)
        self._flush()

    def mark_failed_final(self, room_id: str, message_id: str) -> None:
        """The message failed for the last time: never run it again.

        A message already completed stays completed.
        """
        self._state.mark_failed_final(room_id, message_id)
        self._flush()

    # ----------------------------------------------------------------- queries

    def state(self, room_id: str, message_id: str) -> MessageState:
        """The message's state. A completed hit refreshes its LRU recency
        (in the file too, so a restart keeps the LRU order)."""
        state = self._state.state(room_id, message_id)
        self._flush()
        return state

    def is_done(self, room_id: str, message_id: str) -> bool:
        """True when the message is completed or failed for good."""
        done = self._state.is_done(room_id, message_id)
        self._flush()
        return done

    def is_failed_final(self, room_id: str, message_id: str) -> bool:
        """True when the message failed for good."""
        return self._state.is_failed_final(room_id, message_id)

    def pending_acks(self, room_id: str) -> list[str]:
        """Messages of the room that owe only a ``processed`` write, oldest first.

        That is ``ack_pending`` messages and messages with a journaled reply,
        excluding any that a running turn holds.
        """
        return self._state.pending_acks(room_id)

    def forget_room(self, room_id: str) -> None:
        """The room was released: drop its completed cache.

        Ack-pending messages, journaled replies, attempt counts and failed
        messages are kept, so a rejoin only retries acks and never re-runs a
        poison message.
        """
        self._state.forget_room(room_id)
        self._flush()

    def serve_room(self, room_id: str) -> None:
        """The agent serves the room: its caches are never dropped while it does."""
        self._state.serve_room(room_id)
        self._flush()

    def release_room(self, room_id: str) -> None:
        """The agent left the room: its caches are kept (a room added again
        does not run its messages again) within the bound of released caches;
        the least recently active released rooms lose theirs first."""
        self._state.release_room(room_id)
        self._flush()

    def is_served(self, room_id: str) -> bool:
        """True between :meth:`serve_room` and :meth:`release_room`."""
        return self._state.is_served(room_id)

    def statistics(self) -> LedgerStatistics:
        """Counts of what the ledger holds."""
        counts = self._state.counts()
        return LedgerStatistics(
            durable=self._journal.durable,
            in_flight=counts.in_flight,
            tracked_attempts=counts.tracked_attempts,
            reply_sent=counts.reply_sent,
            ack_pending=counts.ack_pending,
            completed=counts.completed,
            failed_final=counts.failed_final,
            write_errors=self._journal.write_errors,
            served_rooms=counts.served_rooms,
            released_rooms=counts.released_rooms,
            released_entries=counts.released_entries,
        )
