"""The claims ledger: at-least-once delivery in, exactly-once effect out.

The ledger is two parts in one object:

* :class:`~band_trio.runtime.core._claims.ClaimsState`, the pure state per
  ``(room_id, message_id)``: in-flight claims, attempt counts, states
  (``reply_sent``, ``ack_pending``, ``completed``, ``failed_final``), reply
  intents, known replies and their bounds; it does no I/O;
* :class:`~band_trio.runtime.claims._journal.ClaimsJournal`, the SQLite
  journal every change of that state is written to before the call returns.

:class:`ClaimsLedger` *is* the claims state (its queries are the state's
own) and journals the changes of every call that makes any, once, when the
outermost call returns.

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

import functools
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, ParamSpec, Self, TypeVar, cast

import attrs

from band_trio.errors import BandConfigError
from band_trio.runtime.claims._journal import ClaimsJournal
from band_trio.runtime.core._claims import (
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


P = ParamSpec("P")
R = TypeVar("R")


def _journaled(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` of the claims state, its changes journaled once the
    outermost journaled call returns (a call that raises journals nothing:
    its changes go with the next call's)."""

    @functools.wraps(method)
    def journaled(*args: P.args, **kwargs: P.kwargs) -> R:
        ledger = cast("ClaimsLedger", args[0])
        ledger._depth += 1
        try:
            result = method(*args, **kwargs)
        finally:
            ledger._depth -= 1
        if not ledger._depth:
            ledger._flush()
        return result

    return journaled


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


class ClaimsLedger(ClaimsState):
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
        super().__init__(
            max_attempts=max_attempts,
            completed_per_room=completed_per_room,
            failed_per_room=failed_per_room,
            released_entries=released_entries,
        )
        self._journal = journal
        self._depth = 0
        journal.load(self)

    @property
    def _db(self) -> sqlite3.Connection:
        """The journal's database connection."""
        return self._journal.connection

    def _flush(self) -> None:
        """Write the state's changes of this call (one transaction)."""
        self._journal.write(self.take_changes())

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

    # ----------------------------------------------------------------- journaled calls

    # The calls that change the state (a completed hit of ``state`` and
    # ``is_done`` refreshes its LRU recency, in the file too): each is the
    # state's own, journaled when it returns.
    try_claim = _journaled(ClaimsState.try_claim)
    record_attempt = _journaled(ClaimsState.record_attempt)
    discard_attempt = _journaled(ClaimsState.discard_attempt)
    reply_sent = _journaled(ClaimsState.reply_sent)
    remember_reply = _journaled(ClaimsState.remember_reply)
    reply_intent = _journaled(ClaimsState.reply_intent)
    drop_reply_intent = _journaled(ClaimsState.drop_reply_intent)
    clear_reply_intents = _journaled(ClaimsState.clear_reply_intents)
    mark_ack_pending = _journaled(ClaimsState.mark_ack_pending)
    mark_completed = _journaled(ClaimsState.mark_completed)
    mark_failed_final = _journaled(ClaimsState.mark_failed_final)
    state = _journaled(ClaimsState.state)
    is_done = _journaled(ClaimsState.is_done)
    forget_room = _journaled(ClaimsState.forget_room)
    serve_room = _journaled(ClaimsState.serve_room)
    release_room = _journaled(ClaimsState.release_room)

    def statistics(self) -> LedgerStatistics:
        """Counts of what the ledger holds."""
        counts = self.counts()
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
