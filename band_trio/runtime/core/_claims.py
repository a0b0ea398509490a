"""The claims state of an agent's messages, per room (sans-io, no storage).

Per ``(room_id, message_id)`` the state keeps:

* an **in-flight claim**: a message runs at most once at a time, whichever
  path (live push, ``/next`` backlog, control scan) found it;
* an **attempt count**: how many times its turn was started; a message is
  marked failed for good after ``max_attempts`` and then stepped past;
* a **state**: nothing yet, ``reply_sent`` (a reply was journaled),
  ``ack_pending`` (the turn completed, the ``processed`` write has not landed),
  ``completed`` or ``failed_final``;
* **reply intents**: the digest of each reply about to be posted, recorded
  before the post and dropped once its outcome is known. An intent that is
  still there when the message comes up again means a post whose outcome was
  never learned: the runtime then looks for that reply on the platform before
  running the turn again, so an ambiguous post never becomes a second reply;
* **known replies**: the agent's own posts whose outcome is known, which a
  lookup must never take for the lost reply of another message.

Memory bounds: completed ids are an LRU of ``completed_per_room`` per room (a
lookup refreshes recency); permanently failed ids are bounded per room (oldest
evicted first); known replies keep the newest ``KNOWN_REPLIES_PER_ROOM``.

Across rooms: the owner says which rooms are served (:meth:`ClaimsState.serve_room`,
:meth:`ClaimsState.release_room`). The caches (completed, failed and known
reply ids) of a released room are kept, so a room added again does not run
its messages again, but all released rooms together hold at most
``released_entries`` ids: beyond that, whole released rooms are dropped, least
recently active first. A served room's caches are never dropped, nor those of
a room that still owes work (an open reply intent, a journaled reply or an
``ack_pending`` message): its known replies are what tells a lost post from
another one. Served rooms are memory only: a state loaded from a journal
serves no room until told, so every room it loaded counts as released (the
ones released before keep their order, the others are the most recent).
A room the owner never served nor released is not counted.

:class:`ClaimsState` does no I/O. Every durable change is also appended, as a
:class:`JournalEntry`, to a list the owner takes with
:meth:`ClaimsState.take_changes` and writes wherever it keeps them (the
:class:`~band_trio.runtime.claims.ledger.ClaimsLedger` writes them to SQLite). A
state rebuilt from those entries with the ``restore_*`` methods answers every
query as the original did. In-flight claims and ack failure counts are memory
only: they do not survive a restart, on purpose.
"""

from __future__ import annotations

import enum
import itertools
from collections import OrderedDict
from typing import Final

import attrs

from band_trio.errors import BandConfigError, LocalProtocolError

__all__ = [
    "KNOWN_REPLIES_PER_ROOM",
    "Attempt",
    "Change",
    "Claim",
    "ClaimsCounts",
    "ClaimsState",
    "JournalEntry",
    "MessageState",
    "Refusal",
    "RefusalReason",
]

Key = tuple[str, str]

KNOWN_REPLIES_PER_ROOM: Final = 256
"""Own reply ids remembered per room as accounted for (see :meth:`ClaimsState.known_replies`)."""

# Claim tokens are unique in the process, so a claim from a closed ledger can
# never release a claim of a reopened one.
_TOKENS = itertools.count(1)


class MessageState(enum.Enum):
    """Where a message stands."""

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
    """Why a claim was refused."""

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
    """Proof that the holder runs a message; give it back with ``release``."""

    room_id: str
    message_id: str
    token: int = attrs.field(repr=False)


@attrs.frozen
class Refusal:
    """A claim was refused."""

    room_id: str
    message_id: str
    reason: RefusalReason


@attrs.frozen
class Attempt:
    """The attempt just recorded.

    Attributes:
        number: 1 for the first run of the message.
        max_attempts: the budget.
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


class Change(enum.Enum):
    """A durable change of the state, as its journal records it."""

    ATTEMPT_COUNTED = "attempt_counted"
    """``detail`` is the new count (the row is created when missing)."""
    ATTEMPT_DISCARDED = "attempt_discarded"
    """``detail`` is the count left (> 0; the existing row is updated)."""
    ATTEMPTS_CLEARED = "attempts_cleared"
    """No attempt is counted any more."""
    REPLY_SENT = "reply_sent"
    """``detail`` is the reply id journaled for the message ``item``."""
    REPLY_KNOWN = "reply_known"
    """``item`` is an own reply id now accounted for."""
    REPLY_FORGOTTEN = "reply_forgotten"
    """``item`` left the known replies (the bound evicted it)."""
    INTENT_ADDED = "intent_added"
    """``detail`` is the digest of a reply about to be posted."""
    INTENT_DROPPED = "intent_dropped"
    """``detail`` is the digest of a post whose outcome is known."""
    INTENTS_CLEARED = "intents_cleared"
    """Every intent of the message is gone."""
    ACK_PENDING = "ack_pending"
    """Only the ``processed`` write is owed."""
    COMPLETED = "completed"
    """The message is done: its progress is forgotten, it is the newest completed."""
    COMPLETED_TOUCHED = "completed_touched"
    """A completed message was looked up: it is the most recently used."""
    COMPLETED_EVICTED = "completed_evicted"
    """A completed message left the LRU."""
    FAILED = "failed"
    """The message failed for good: its progress is forgotten."""
    FAILED_EVICTED = "failed_evicted"
    """A failed message left the bounded table."""
    ROOM_FORGOTTEN = "room_forgotten"
    """The room's completed cache is gone."""
    ROOM_RELEASED = "room_released"
    """The room is released, or a released room was active: it is the most
    recently active released room."""
    ROOM_SERVED = "room_served"
    """The room is no longer among the released rooms (it is served again,
    or it holds no ids any more)."""
    ROOM_EVICTED = "room_evicted"
    """A released room's caches (completed, failed, known replies) are gone."""


@attrs.frozen
class JournalEntry:
    """One durable change.

    Attributes:
        change: what changed.
        room_id: the room.
        item: the message id (the reply id for ``REPLY_KNOWN`` and
            ``REPLY_FORGOTTEN``; empty for the ``ROOM_*`` changes).
        detail: the attempt count, reply id or digest, where the change has one.
    """

    change: Change
    room_id: str
    item: str = ""
    detail: str | int | None = None


@attrs.frozen
class ClaimsCounts:
    """How much the state holds."""

    in_flight: int
    tracked_attempts: int
    reply_sent: int
    ack_pending: int
    completed: int
    failed_final: int
    served_rooms: int = 0
    released_rooms: int = 0
    released_entries: int = 0


# The per-room id tables are plain dicts used as insertion-ordered sets
# (oldest first), not OrderedDicts: a dict of strings is not tracked by the
# cyclic garbage collector and takes about half the memory, and an agent may
# hold such tables for ten thousand rooms.
_IdTable = dict[str, None]


def _to_end(table: _IdTable, item: str) -> None:
    """Make ``item`` the newest entry of ``table``."""
    table.pop(item, None)
    table[item] = None


def _bounded_add(table: _IdTable, item: str, limit: int) -> list[str]:
    _to_end(table, item)
    evicted: list[str] = []
    while len(table) > limit:
        oldest = next(iter(table))
        del table[oldest]
        evicted.append(oldest)
    return evicted


class ClaimsState:
    """Claims, attempts and outcomes of messages, per room, in memory.

    Args:
        max_attempts: attempts per message before it is failed for good.
        completed_per_room: bound of the completed LRU per room.
        failed_per_room: bound of the failed ids per room.
        released_entries: bound of the ids (completed, failed, known replies)
            kept for all released rooms together; 0 drops a room's caches
            as soon as it is released.

    Raises:
        BandConfigError: a bound is below 1 (``released_entries`` below 0).
    """

    def __init__(
        self,
        *,
        max_attempts: int = 3,
        completed_per_room: int = 500,
        failed_per_room: int = 10_000,
        released_entries: int = 10_000,
    ) -> None:
        if max_attempts < 1 or completed_per_room < 1 or failed_per_room < 1:
            raise BandConfigError("ledger bounds must be >= 1")
        if released_entries < 0:
            raise BandConfigError("released_entries must be >= 0")
        self.max_attempts = max_attempts
        self.completed_per_room = completed_per_room
        self.failed_per_room = failed_per_room
        self.released_entries = released_entries
        self._served: set[str] = set()
        # Released rooms with caches, least recently active first, each with
        # the number of ids it held when last counted.
        self._released: OrderedDict[str, int] = OrderedDict()
        self._released_total = 0
        self._in_flight: dict[Key, int] = {}
        self._attempts: dict[Key, int] = {}
        self._replies: dict[Key, list[str]] = {}
        self._intents: dict[Key, list[str]] = {}
        self._known: dict[str, _IdTable] = {}
        self._acks: dict[Key, None] = {}
        self._ack_failures: dict[Key, int] = {}
        self._completed: dict[str, _IdTable] = {}
        self._failed: dict[str, _IdTable] = {}
        self._changes: list[JournalEntry] = []

    def take_changes(self) -> list[JournalEntry]:
        """The durable changes made since the last call, oldest first."""
        changes, self._changes = self._changes, []
        return changes

    def _note(
        self, change: Change, room_id: str, item: str = "", detail: str | int | None = None
    ) -> None:
        self._changes.append(JournalEntry(change, room_id, item, detail))

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
        """Count one more run of the claimed message.

        Check :attr:`Attempt.exceeded` before running it.

        Raises:
            LocalProtocolError: ``claim`` is not held.
        """
        key = self._held(claim)
        count = self._attempts.get(key, 0) + 1
        self._attempts[key] = count
        self._note(Change.ATTEMPT_COUNTED, key[0], key[1], count)
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
            self._note(Change.ATTEMPT_DISCARDED, key[0], key[1], count)
        else:
            self._attempts.pop(key, None)
            self._note(Change.ATTEMPTS_CLEARED, key[0], key[1])
        return count

    def attempts(self, room_id: str, message_id: str) -> int:
        """Attempts recorded for a message that is not completed or failed yet."""
        return self._attempts.get((room_id, message_id), 0)

    # ----------------------------------------------------------------- replies

    def reply_sent(self, room_id: str, message_id: str, reply_id: str) -> None:
        """The platform accepted ``reply_id`` answering the message.

        The claims ledger writes it at once, so after a crash the message is
        only acked, never re-run.
        """
        replies = self._replies.setdefault((room_id, message_id), [])
        if reply_id in replies:
            return
        replies.append(reply_id)
        self._note(Change.REPLY_SENT, room_id, message_id, reply_id)
        self._remember(room_id, reply_id)

    def remember_reply(self, room_id: str, reply_id: str) -> None:
        """Note an own post whose outcome is known but answers no message (a
        synthetic turn's): it is accounted for, like every journaled reply.
        """
        if reply_id not in self._known.get(room_id, ()):
            self._remember(room_id, reply_id)

    def known_replies(self, room_id: str) -> frozenset[str]:
        """Own posts in the room whose outcome is known (the newest
        ``KNOWN_REPLIES_PER_ROOM``, kept across restarts): never to be taken
        for a reply whose post had no known outcome.
        """
        return frozenset(self._known.get(room_id, ()))

    def replies(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Reply ids journaled for a message not yet completed."""
        return tuple(self._replies.get((room_id, message_id), ()))

    def _remember(self, room_id: str, reply_id: str) -> None:
        table = self._known.setdefault(room_id, {})
        evicted = _bounded_add(table, reply_id, KNOWN_REPLIES_PER_ROOM)
        self._note(Change.REPLY_KNOWN, room_id, reply_id)
        for e in evicted:
            self._note(Change.REPLY_FORGOTTEN, room_id, e)
        self._room_active(room_id)

    def reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """A reply with ``digest`` is about to be posted.

        The claims ledger writes it before the post; :meth:`drop_reply_intent` once the platform
        accepted or refused it. One that is never dropped marks a post whose
        outcome is unknown: the room then looks for that reply on the
        platform before it runs the message again.
        """
        digests = self._intents.setdefault((room_id, message_id), [])
        if digest in digests:
            return
        digests.append(digest)
        self._note(Change.INTENT_ADDED, room_id, message_id, digest)

    def drop_reply_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """The post with ``digest`` has a known outcome (accepted or refused)."""
        key = (room_id, message_id)
        digests = self._intents.get(key)
        if digests is None or digest not in digests:
            return
        digests.remove(digest)
        if not digests:
            del self._intents[key]
        self._note(Change.INTENT_DROPPED, room_id, message_id, digest)
        self._room_active(room_id)  # may no longer owe work: the bound applies

    def reply_intents(self, room_id: str, message_id: str) -> tuple[str, ...]:
        """Digests of replies to the message whose post had no known outcome."""
        return tuple(self._intents.get((room_id, message_id), ()))

    def clear_reply_intents(self, room_id: str, message_id: str) -> None:
        """Forget every open intent of the message (they were looked up)."""
        if self._intents.pop((room_id, message_id), None) is not None:
            self._note(Change.INTENTS_CLEARED, room_id, message_id)
            self._room_active(room_id)

    # ----------------------------------------------------------------- outcomes

    def mark_ack_pending(self, room_id: str, message_id: str) -> None:
        """The turn completed: only the ``processed`` write is owed from now on.

        Record this *before* sending the write, with no await in between.
        """
        key = (room_id, message_id)
        if self._is_final(key):
            return
        self._acks[key] = None
        self._note(Change.ACK_PENDING, room_id, message_id)

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
        self._forget_progress((room_id, message_id))
        failed = self._failed.get(room_id)
        if failed is not None:
            failed.pop(message_id, None)
        table = self._completed.setdefault(room_id, {})
        evicted = _bounded_add(table, message_id, self.completed_per_room)
        self._note(Change.COMPLETED, room_id, message_id)
        for e in evicted:
            self._note(Change.COMPLETED_EVICTED, room_id, e)
        self._room_active(room_id)

    def mark_failed_final(self, room_id: str, message_id: str) -> None:
        """The message failed for the last time: never run it again.

        A message already completed stays completed.
        """
        if message_id in self._completed.get(room_id, ()):
            return
        self._forget_progress((room_id, message_id))
        table = self._failed.setdefault(room_id, {})
        evicted = _bounded_add(table, message_id, self.failed_per_room)
        self._note(Change.FAILED, room_id, message_id)
        for e in evicted:
            self._note(Change.FAILED_EVICTED, room_id, e)
        self._room_active(room_id)

    def forget_room(self, room_id: str) -> None:
        """The room was released: drop its completed cache.

        Ack-pending messages, journaled replies, attempt counts and failed
        messages are kept, so a rejoin only retries acks and never re-runs a
        poison message.
        """
        self._completed.pop(room_id, None)
        self._note(Change.ROOM_FORGOTTEN, room_id)
        self._recount(room_id)

    # ----------------------------------------------------------------- rooms

    def drop_caches(self, room_id: str) -> None:
        """Drop the room's completed, failed and known-reply ids, what the
        bound of released caches does to a released room that owes nothing.
        Its progress (attempts, journaled replies, intents, ``ack_pending``)
        stays. From then on the room answers as if those ids had never been
        recorded: a message it had completed is ``NEW`` again, as after an
        eviction from the per-room LRU, and the platform's delivery status is
        what keeps it from running twice."""
        self._released_total -= self._released.pop(room_id, 0)
        self._completed.pop(room_id, None)
        self._failed.pop(room_id, None)
        self._known.pop(room_id, None)
        self._note(Change.ROOM_EVICTED, room_id)

    def serve_room(self, room_id: str) -> None:
        """The room is served: its caches are never dropped while it is."""
        self._served.add(room_id)
        if room_id in self._released:
            self._released_total -= self._released.pop(room_id)
            self._note(Change.ROOM_SERVED, room_id)

    def release_room(self, room_id: str) -> None:
        """The agent left the room: its caches are kept (a room added again
        does not run its messages again) within the bound of released caches;
        the least recently active released rooms lose theirs first.
        """
        self._served.discard(room_id)
        self._touch_released(room_id)

    def is_served(self, room_id: str) -> bool:
        """True between :meth:`serve_room` and :meth:`release_room`."""
        return room_id in self._served

    def released_rooms(self) -> list[str]:
        """Released rooms that still have caches, least recently active first."""
        return list(self._released)

    def restore_released(self, room_id: str) -> None:
        """Loading a journal: a released room (least recently active first).
        Call it after the caches are restored; a room with none is ignored."""
        self._account(room_id)

    def release_loaded_rooms(self) -> None:
        """Loading a journal, last: every room with caches that was not
        restored as released counts as released (the most recent ones), until
        :meth:`serve_room` says otherwise. Nothing is dropped here: the owner
        serves its rooms again before the bound is next applied."""
        rooms = dict.fromkeys(itertools.chain(self._completed, self._failed, self._known))
        for room_id in rooms:
            if room_id not in self._released and room_id not in self._served:
                self._account(room_id)

    # ----------------------------------------------------------------- queries

    def state(self, room_id: str, message_id: str) -> MessageState:
        """The message's state. A completed hit refreshes its LRU recency
        (in the file too, so a restart keeps the LRU order).
        """
        completed = self._completed.get(room_id)
        if completed is not None and message_id in completed:
            if next(reversed(completed)) != message_id:
                _to_end(completed, message_id)
                self._note(Change.COMPLETED_TOUCHED, room_id, message_id)
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

    def counts(self) -> ClaimsCounts:
        """How much the state holds now."""
        reply_keys = {k for k, v in self._replies.items() if v}
        return ClaimsCounts(
            in_flight=len(self._in_flight),
            tracked_attempts=len(self._attempts),
            reply_sent=len(reply_keys - self._acks.keys()),
            ack_pending=len(self._acks),
            completed=sum(len(t) for t in self._completed.values()),
            failed_final=sum(len(t) for t in self._failed.values()),
            served_rooms=len(self._served),
            released_rooms=len(self._released),
            released_entries=self._released_total,
        )

    # ----------------------------------------------------------------- restore

    def restore_attempts(self, room_id: str, message_id: str, count: int) -> None:
        """Loading a journal: the message's attempt count."""
        self._attempts[(room_id, message_id)] = count

    def restore_reply(self, room_id: str, message_id: str, reply_id: str) -> None:
        """Loading a journal: a journaled reply (in journal order)."""
        self._replies.setdefault((room_id, message_id), []).append(reply_id)

    def restore_known_reply(self, room_id: str, reply_id: str) -> list[str]:
        """Loading a journal: a known reply (oldest first). Returns the ids the
        bound evicts, which the journal should drop too."""
        return _bounded_add(self._known.setdefault(room_id, {}), reply_id, KNOWN_REPLIES_PER_ROOM)

    def restore_intent(self, room_id: str, message_id: str, digest: str) -> None:
        """Loading a journal: an open reply intent (in journal order)."""
        self._intents.setdefault((room_id, message_id), []).append(digest)

    def restore_ack_pending(self, room_id: str, message_id: str) -> None:
        """Loading a journal: a message owing only its ``processed`` write."""
        self._acks[(room_id, message_id)] = None

    def restore_completed(self, room_id: str, message_id: str) -> list[str]:
        """Loading a journal: a completed message (least recently used first).
        Returns the ids the bound evicts (it was lowered since they were written)."""
        return _bounded_add(
            self._completed.setdefault(room_id, {}), message_id, self.completed_per_room
        )

    def restore_failed(self, room_id: str, message_id: str) -> list[str]:
        """Loading a journal: a failed message (oldest first). Returns the ids
        the bound evicts."""
        return _bounded_add(self._failed.setdefault(room_id, {}), message_id, self.failed_per_room)

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

    def _size(self, room_id: str) -> int:
        return (
            len(self._completed.get(room_id, ()))
            + len(self._failed.get(room_id, ()))
            + len(self._known.get(room_id, ()))
        )

    def _account(self, room_id: str) -> bool:
        """Count a released room as the most recent one. Returns False when it
        has no caches (it is then not listed)."""
        self._released_total -= self._released.pop(room_id, 0)
        size = self._size(room_id)
        if not size:
            return False
        self._released[room_id] = size
        self._released_total += size
        return True

    def _recount(self, room_id: str) -> None:
        """A released room's caches changed size, not its recency."""
        if room_id in self._released:
            size = self._size(room_id)
            self._released_total += size - self._released[room_id]
            if size:
                self._released[room_id] = size
            else:
                del self._released[room_id]
                self._note(Change.ROOM_SERVED, room_id)

    def _room_active(self, room_id: str) -> None:
        """Activity in a room: a released one becomes the most recent."""
        if room_id in self._released:
            self._touch_released(room_id)

    def _touch_released(self, room_id: str) -> None:
        last = next(reversed(self._released), None)
        listed = room_id in self._released
        if self._account(room_id):
            if last != room_id:
                self._note(Change.ROOM_RELEASED, room_id)
        elif listed:
            self._note(Change.ROOM_SERVED, room_id)
        self._apply_released_bound()

    def _apply_released_bound(self) -> None:
        excess = self._released_total - self.released_entries
        if excess <= 0:
            return
        owing = {k[0] for k in self._intents}
        owing.update(k[0] for k in self._acks)
        owing.update(k[0] for k, v in self._replies.items() if v)
        victims: list[str] = []
        for room_id, size in self._released.items():  # least recently active first
            if excess <= 0:
                break
            if room_id not in owing:
                victims.append(room_id)
                excess -= size
        for room_id in victims:
            self.drop_caches(room_id)

    def _forget_progress(self, key: Key) -> None:
        self._attempts.pop(key, None)
        self._acks.pop(key, None)
        self._replies.pop(key, None)
        self._intents.pop(key, None)
        self._ack_failures.pop(key, None)
