"""The agent-wide bound of the caches the claims state keeps for released rooms."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from band_trio.errors import BandConfigError
from band_trio.runtime.claims._journal import ClaimsJournal
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._claims import Change, ClaimsState, JournalEntry, MessageState
from tests.agent.harness import RecordingAdapter, fast_config, scene, serving, token

if TYPE_CHECKING:
    from band_trio.local import LocalPlatform

ROOMS = ("r1", "r2", "r3", "r4")
MESSAGES = ("m0", "m1", "m2")
REPLIES = ("s1", "s2")
PER_ROOM = 2
RELEASED = 3

rooms = st.sampled_from(ROOMS)
messages = st.sampled_from(MESSAGES)


def bounded_state(released_entries: int = RELEASED) -> ClaimsState:
    return ClaimsState(
        max_attempts=2,
        completed_per_room=PER_ROOM,
        failed_per_room=PER_ROOM,
        released_entries=released_entries,
    )


def completed_ids(state: ClaimsState, room: str, ids: tuple[str, ...] = MESSAGES) -> set[str]:
    probe = copy.deepcopy(state)  # a lookup refreshes recency: leave the state alone
    return {m for m in ids if probe.state(room, m) is MessageState.COMPLETED}


def evicted(changes: list[JournalEntry]) -> list[str]:
    return [e.room_id for e in changes if e.change is Change.ROOM_EVICTED]


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(BandConfigError):
        ClaimsState(released_entries=-1)
    with pytest.raises(BandConfigError, match="released_cache_size"):
        AgentConfig(released_cache_size=-1)
    assert AgentConfig().released_cache_size == 10_000
    assert AgentConfig(released_cache_size=0).released_cache_size == 0


def test_released_rooms_lose_their_caches_least_recently_active_first() -> None:
    state = bounded_state(released_entries=4)
    for room in ("a", "b", "c"):
        state.serve_room(room)
        state.mark_completed(room, "m1")
        state.mark_completed(room, "m2")
    state.take_changes()
    state.release_room("a")
    state.release_room("b")  # 4 ids released: within the bound
    assert state.released_rooms() == ["a", "b"]
    assert evicted(state.take_changes()) == []
    state.release_room("c")  # 6 ids: "a", the least recently active, goes
    assert evicted(state.take_changes()) == ["a"]
    assert state.released_rooms() == ["b", "c"]
    assert completed_ids(state, "a") == set()
    assert completed_ids(state, "b") == completed_ids(state, "c") == {"m1", "m2"}
    counts = state.counts()
    assert (counts.released_rooms, counts.released_entries, counts.served_rooms) == (2, 4, 0)


def test_activity_in_a_released_room_makes_it_the_most_recent() -> None:
    state = bounded_state(released_entries=4)
    for room in ("a", "b"):
        state.serve_room(room)
        state.mark_completed(room, "m1")
        state.release_room(room)
    state.mark_completed("a", "m2")  # "a" is now the most recently active
    assert state.released_rooms() == ["b", "a"]
    state.serve_room("c")
    state.mark_completed("c", "m1")
    state.mark_completed("c", "m2")
    state.take_changes()
    state.release_room("c")  # 5 ids: "b" goes, not "a"
    assert evicted(state.take_changes()) == ["b"]
    assert state.released_rooms() == ["a", "c"]


def test_served_rooms_are_never_dropped_however_many_ids_they_hold() -> None:
    state = bounded_state(released_entries=0)
    for room in ROOMS:
        state.serve_room(room)
        for msg in MESSAGES:
            state.mark_completed(room, msg)
        state.remember_reply(room, "s1")
    assert evicted(state.take_changes()) == []
    for room in ROOMS:
        assert state.is_served(room)
        assert len(completed_ids(state, room)) == PER_ROOM
        assert state.known_replies(room) == {"s1"}
    state.release_room("r1")  # a bound of 0 drops a room's ids once it is left
    assert evicted(state.take_changes()) == ["r1"]
    assert state.known_replies("r1") == frozenset()
    assert state.known_replies("r2") == {"s1"}


def test_a_released_room_that_owes_work_keeps_its_caches_until_it_is_settled() -> None:
    state = bounded_state(released_entries=0)
    state.serve_room("r")
    state.reply_sent("r", "m0", "s1")  # replied, the ``processed`` write still owed
    state.reply_intent("r", "m1", "d")  # a post of unknown outcome
    state.mark_completed("r", "m2")
    state.release_room("r")
    assert evicted(state.take_changes()) == []
    assert state.known_replies("r") == {"s1"}
    state.mark_completed("r", "m0")  # the ack landed; the intent is still open
    assert evicted(state.take_changes()) == []
    state.drop_reply_intent("r", "m1", "d")  # nothing owed any more: the bound applies
    assert evicted(state.take_changes()) == ["r"]
    assert state.known_replies("r") == frozenset()
    assert completed_ids(state, "r") == set()


def test_serving_a_released_room_again_takes_it_out_of_the_bound() -> None:
    state = bounded_state(released_entries=2)
    for room in ("a", "b"):
        state.serve_room(room)
        state.mark_completed(room, "m1")
        state.mark_completed(room, "m2")
    state.release_room("a")
    state.serve_room("a")
    state.release_room("b")
    assert state.released_rooms() == ["b"]
    assert completed_ids(state, "a") == {"m1", "m2"}
    assert evicted(state.take_changes()) == []


def test_rooms_never_served_nor_released_are_not_counted() -> None:
    state = bounded_state(released_entries=0)
    for msg in MESSAGES:
        state.mark_completed("r", msg)
    assert state.released_rooms() == []
    assert evicted(state.take_changes()) == []
    assert len(completed_ids(state, "r")) == PER_ROOM


def test_the_file_drops_evicted_rooms_and_keeps_the_release_order(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ClaimsLedger.open(path, completed_per_room=5, released_entries=4) as ledger:
        for room in ("a", "b", "c"):
            ledger.serve_room(room)
            ledger.mark_completed(room, "m1")
            ledger.reply_sent(room, "m2", f"reply-{room}")
            ledger.mark_completed(room, "m2")
        for room in ("a", "b", "c"):
            ledger.release_room(room)
        stats = ledger.statistics()
        assert (stats.released_rooms, stats.released_entries, stats.completed) == (1, 3, 2)
        ledger.serve_room("d")
        ledger.mark_completed("d", "m1")  # served when the process stops
    with ClaimsLedger.open(path, completed_per_room=5, released_entries=4) as ledger:
        rows = ledger._db.execute("SELECT DISTINCT room_id FROM completed").fetchall()
        assert sorted(r for (r,) in rows) == ["c", "d"]
        assert ledger.known_replies("a") == frozenset()
        assert ledger.known_replies("c") == {"reply-c"}
        stats = ledger.statistics()
        # Nothing is served after a restart: "d" counts as released, after "c".
        assert (stats.served_rooms, stats.released_rooms, stats.released_entries) == (0, 2, 4)
        ledger.serve_room("d")
        ledger.serve_room("e")
        ledger.mark_completed("e", "m1")
        ledger.mark_completed("e", "m2")
        ledger.release_room("e")  # 5 ids released: "c" goes, "d" is served
        assert ledger.state("c", "m1") is MessageState.NEW
        assert ledger.state("d", "m1") is MessageState.COMPLETED
        assert ledger.state("e", "m1") is MessageState.COMPLETED


def test_a_dropped_room_answers_as_if_its_ids_had_never_been_recorded() -> None:
    """Once the bound dropped a released room's ids, a message it had completed
    is new again (as after an eviction from the per-room LRU): a reply
    journaled for it afterwards and a final failure act on it as on any new
    message, while a state that still knows it completed ignores the failure."""
    state, unbounded = bounded_state(), bounded_state(released_entries=10**9)
    for s in (state, unbounded):
        s.remember_reply("r1", "s1")
        s.release_room("r1")
        s.mark_completed("r1", "m0")
        s.mark_completed("r1", "m1")
        s.remember_reply("r1", "s2")  # 4 ids released, over the bound of 3
    assert evicted(state.take_changes()) == ["r1"]
    assert evicted(unbounded.take_changes()) == []
    for s in (state, unbounded):
        s.reply_sent("r1", "m0", "s1")
        s.mark_failed_final("r1", "m0")
    assert state.is_failed_final("r1", "m0")
    assert state.replies("r1", "m0") == ()
    assert not unbounded.is_failed_final("r1", "m0")  # it stays completed there
    assert unbounded.replies("r1", "m0") == ("s1",)
    unbounded.drop_caches("r1")  # what the bound did, done to the unbounded state
    unbounded.reply_sent("r1", "m0", "s1")
    unbounded.mark_failed_final("r1", "m0")
    assert unbounded.is_failed_final("r1", "m0")
    assert unbounded.replies("r1", "m0") == ()


class ReleasedCachesBound(RuleBasedStateMachine):
    """Whatever the order of serving, releasing and outcomes: released rooms
    hold at most the bound (unless every one of them owes work), a room loses
    its caches only while released and owing nothing, and only its caches
    (never what it owes); every room answers like an unbounded state to which
    the same drops are applied; and a state loaded from the journal answers
    like the live one."""

    def __init__(self) -> None:
        super().__init__()
        self.state = bounded_state()
        self.reference = bounded_state(released_entries=10**9)
        self.journal = ClaimsJournal.in_memory()

    def teardown(self) -> None:
        self.journal.close()

    def _owes_work(self, room: str) -> bool:
        return bool(self.state.pending_acks(room)) or any(
            self.state.reply_intents(room, m) or self.state.replies(room, m) for m in MESSAGES
        )

    def _owed(self, room: str) -> list[object]:
        return [
            self.state.pending_acks(room),
            [(self.state.replies(room, m), self.state.reply_intents(room, m)) for m in MESSAGES],
        ]

    def _both(self, method: str, *args: str) -> None:
        getattr(self.reference, method)(*args)
        getattr(self.state, method)(*args)
        changes = self.state.take_changes()
        assert not evicted(self.reference.take_changes())
        for room in evicted(changes):
            assert not self.state.is_served(room), room
            assert not self._owes_work(room), room
            owed = self._owed(room)
            self.reference.drop_caches(room)
            self.reference.take_changes()
            assert self._owed(room) == owed  # the drop took only the caches
        self.journal.write(changes)

    @rule(room=rooms)
    def serve(self, room: str) -> None:
        self._both("serve_room", room)

    @rule(room=rooms)
    def release(self, room: str) -> None:
        self._both("release_room", room)

    @rule(room=rooms, msg=messages)
    def completed(self, room: str, msg: str) -> None:
        self._both("mark_completed", room, msg)

    @rule(room=rooms, msg=messages)
    def failed(self, room: str, msg: str) -> None:
        self._both("mark_failed_final", room, msg)

    @rule(room=rooms, msg=messages)
    def ack_pending(self, room: str, msg: str) -> None:
        self._both("mark_ack_pending", room, msg)

    @rule(room=rooms, msg=messages, reply=st.sampled_from(REPLIES))
    def reply_sent(self, room: str, msg: str, reply: str) -> None:
        self._both("reply_sent", room, msg, reply)

    @rule(room=rooms, reply=st.sampled_from(REPLIES))
    def remember_reply(self, room: str, reply: str) -> None:
        self._both("remember_reply", room, reply)

    @rule(room=rooms, msg=messages, drop=st.booleans())
    def intent(self, room: str, msg: str, drop: bool) -> None:
        self._both("drop_reply_intent" if drop else "reply_intent", room, msg, "d")

    @rule(room=rooms)
    def forget_room(self, room: str) -> None:
        self._both("forget_room", room)

    def _holds_ids(self, room: str) -> bool:
        return bool(
            completed_ids(self.state, room)
            or self.state.known_replies(room)
            or any(self.state.is_failed_final(room, m) for m in MESSAGES)
        )

    @invariant()
    def released_rooms_stay_within_the_bound(self) -> None:
        counts = self.state.counts()
        released = self.state.released_rooms()
        assert not set(released) & {r for r in ROOMS if self.state.is_served(r)}
        sizes = {
            r: len(completed_ids(self.state, r))
            + sum(self.state.is_failed_final(r, m) for m in MESSAGES)
            + len(self.state.known_replies(r))
            for r in released
        }
        assert counts.released_entries == sum(sizes.values())
        assert all(sizes.values())
        if counts.released_entries > RELEASED:
            assert all(self._owes_work(r) for r in released)

    @invariant()
    def every_room_answers_like_the_unbounded_state_with_the_same_drops(self) -> None:
        for room in ROOMS:
            assert self.state.known_replies(room) == self.reference.known_replies(room)
            assert completed_ids(self.state, room) == completed_ids(self.reference, room)
            assert self.state.pending_acks(room) == self.reference.pending_acks(room)
            for msg in MESSAGES:
                assert self.state.is_failed_final(room, msg) == self.reference.is_failed_final(
                    room, msg
                )
                assert self.state.replies(room, msg) == self.reference.replies(room, msg)
                assert self.state.reply_intents(room, msg) == self.reference.reply_intents(
                    room, msg
                )

    @invariant()
    def a_loaded_state_answers_alike(self) -> None:
        loaded = bounded_state()
        self.journal.load(loaded)
        live = self.state.released_rooms()
        reloaded = loaded.released_rooms()
        # Released rooms keep their order; rooms served when the state was
        # written count as released, after them.
        assert reloaded[: len(live)] == live
        assert set(reloaded) == {r for r in ROOMS if self._holds_ids(r)}
        assert loaded.counts().served_rooms == 0
        for room in ROOMS:
            assert loaded.known_replies(room) == self.state.known_replies(room)
            assert completed_ids(loaded, room) == completed_ids(self.state, room)
            for msg in MESSAGES:
                assert loaded.is_failed_final(room, msg) == self.state.is_failed_final(room, msg)
                assert loaded.replies(room, msg) == self.state.replies(room, msg)


ReleasedCachesBound.TestCase.settings = settings(
    max_examples=80, stateful_step_count=40, deadline=None
)
test_released_caches_stay_bounded_and_served_rooms_are_kept = ReleasedCachesBound.TestCase


async def test_the_agent_releases_a_removed_room_and_a_shutdown_releases_none(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    """With no caches kept for left rooms, the room the agent was removed from
    loses its completed ids (in the file too), while the room it still served
    when it stopped keeps them."""
    config = fast_config(state_dir=tmp_path, released_cache_size=0)
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            left, kept = await s.new_room(), await s.new_room()
            agent = s.make_agent(RecordingAdapter(), config)
            async with serving(agent):
                left_msg = await s.post(left, token())
                kept_msg = await s.post(kept, token())
                await s.wait_for(lambda: agent.statistics().completed == 2)
                await s.human.remove_participant(left, s.agent_id)
                await s.wait_for(lambda: left not in agent.room_ids)
            path = config.ledger_path(s.agent_id)
    assert path is not None
    with ClaimsLedger.open(path) as ledger:
        assert ledger.state(left, left_msg) is MessageState.NEW
        assert ledger.state(kept, kept_msg) is MessageState.COMPLETED
