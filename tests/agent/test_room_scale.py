"""Many rooms in one agent: REST calls per room at start-up, per reconnect and
when idle, counted exactly.

The link and REST are in-memory fakes, so the autojump clock drives every
timer and the counts are exact: rosters come with the room listing, each room
reconciles once at start and once per reconnect (the most
recently active rooms first, a bounded number at a time), and the idle
reconciles of all rooms stay under one agent-wide rate.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._reconcile_budget import ReconcileBudget
from band_trio.runtime.core._rest_messages import event_from_rest
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.room import RoomServices
from band_trio.wire.models import (
    ChatMessage,
    ChatParticipant,
    CursorPage,
    MessageSent,
    MessageStatus,
)

from ..runtime.room.fakes import AGENT, TS, Adapter, FakeTools

PAGE = 100
"""Rows per page of the fake room listing (the platform's cap)."""

ROSTER_CAP = 100
"""Roster rows per room in the listing (beyond it the row is truncated)."""


def _participant(pid: str, kind: str = "User") -> ChatParticipant:
    return ChatParticipant(id=pid, role="member", status="active", type=kind, name=pid)


class ManyRooms:
    """The REST calls of an agent's rooms, in memory, counted per endpoint and room.

    ``next_delay`` and ``context_delay`` make every ``/next`` and every context
    read take that long (to observe how many run at once).
    """

    def __init__(
        self, rooms: list[str], *, next_delay: float = 0.0, context_delay: float = 0.0
    ) -> None:
        self.rooms = list(rooms)
        self.members: dict[str, list[ChatParticipant]] = {
            r: [_participant("user-1"), _participant(AGENT, "Agent")] for r in rooms
        }
        self.messages: dict[str, list[ChatMessage]] = {r: [] for r in rooms}
        self.status: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.next_log: list[tuple[float, str]] = []
        self.next_delay = next_delay
        self.next_active = 0
        self.next_max_active = 0
        self.context_delay = context_delay
        self.context_active = 0
        self.context_max_active = 0
        self.participant_reads: Counter[str] = Counter()
        self.replies: list[str] = []
        self._ids = 0

    # ---------------------------------------------------------------- test side

    def add(self, room_id: str, text: str = "hello") -> ChatMessage:
        self._ids += 1
        msg = ChatMessage(
            id=f"m{self._ids}",
            content=text,
            message_type="text",
            sender_id="user-1",
            sender_type="User",
            sender_name="Ann",
            inserted_at=TS,
            updated_at=TS,
            metadata={"mentions": [{"id": AGENT, "handle": "ann/agent"}]},
        )
        self.messages[room_id].append(msg)
        self.status[msg.id] = "delivered"
        return msg

    def reset(self) -> None:
        self.calls.clear()
        self.next_log.clear()
        self.participant_reads.clear()

    def next_per_room(self) -> Counter[str]:
        return Counter(room for _, room in self.next_log)

    # ---------------------------------------------------------------- RuntimeRest

    async def iter_chats(
        self, *, include_participants: bool = False, max_pages: int = 50
    ) -> AsyncIterator[Any]:
        from band_trio.wire.models import ChatRoom

        for start in range(0, min(max(len(self.rooms), 1), max_pages * PAGE), PAGE):
            await trio.lowlevel.checkpoint()
            self.calls["chats"] += 1
            for room_id in self.rooms[start : start + PAGE]:
                if include_participants:
                    members = self.members[room_id]
                    yield ChatRoom(
                        id=room_id,
                        inserted_at=TS,
                        updated_at=TS,
                        participants=tuple(members[:ROSTER_CAP]),
                        participant_count=len(members),
                        participants_truncated=len(members) > ROSTER_CAP,
                    )
                else:
                    yield ChatRoom(id=room_id, inserted_at=TS, updated_at=TS)

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        self.calls["next"] += 1
        self.next_log.append((trio.current_time(), chat_id))
        self.next_active += 1
        self.next_max_active = max(self.next_max_active, self.next_active)
        try:
            if self.next_delay:
                await trio.sleep(self.next_delay)
            else:
                await trio.lowlevel.checkpoint()
        finally:
            self.next_active -= 1
        for msg in self.messages[chat_id]:
            if self.status[msg.id] != "processed":
                return msg
        return None

    async def list_messages(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await trio.lowlevel.checkpoint()
        self.calls["list"] += 1
        items = tuple(m for m in self.messages[chat_id] if self.status[m.id] != "processed")
        return CursorPage(items=items, has_more=False)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self.calls["processing"] += 1
        self.status[message_id] = "processing"
        return MessageStatus(id=message_id, status="processing", attempt_number=1, success=True)

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self.calls["processed"] += 1
        self.status[message_id] = "processed"
        return MessageStatus(id=message_id, status="processed", attempt_number=1, success=True)

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self.calls["failed"] += 1
        self.status[message_id] = "failed"
        return MessageStatus(id=message_id, status="failed", attempt_number=1, success=True)

    async def send_event(
        self, chat_id: str, content: str, message_type: str, metadata: Any = None
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.calls["event"] += 1

    async def get_context(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        self.calls["context"] += 1
        self.context_active += 1
        self.context_max_active = max(self.context_max_active, self.context_active)
        try:
            await trio.sleep(self.context_delay)
        finally:
            self.context_active -= 1
        return CursorPage(items=tuple(self.messages[chat_id]), has_more=False)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        await trio.lowlevel.checkpoint()
        self.calls["participants"] += 1
        self.participant_reads[chat_id] += 1
        return list(self.members[chat_id])

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await trio.lowlevel.checkpoint()
        return working

    async def send_message(self, chat_id: str, content: str, mentions: Any) -> MessageSent:
        await trio.lowlevel.checkpoint()
        self.replies.append(content)
        return MessageSent(id=f"r{len(self.replies)}", success=True)


class InstantLink:
    """Joins and leaves succeed at once; the joined topics are kept."""

    def __init__(self) -> None:
        self.joined: set[str] = set()
        self.joins = 0

    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        if topic not in self.joined:
            self.joins += 1
        self.joined.add(topic)

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        self.joined.discard(topic)


QUIET: dict[str, Any] = {"idle_resync_interval": 1e9, "idle_resync_max_interval": 1e9}
"""No idle reconcile within a test: the counts are start-up's or reconnect's alone."""


def make_engine(rest: ManyRooms, link: InstantLink, **config: Any) -> AgentEngine:
    values: dict[str, Any] = {
        "state_dir": None,
        "enable_working_state": False,
        "enable_context_hydration": False,
        "max_parallel_joins": 8,
        "max_parallel_drains": 8,
    }
    values.update(config)
    cfg = AgentConfig(**values)
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(),
        adapter=Adapter(),
        preprocessor=DefaultPreprocessor(),
        config=cfg,
        make_tools=lambda room_id, participants, hooks: FakeTools(rest, hooks),  # type: ignore[arg-type,return-value]
        rng=random.Random(11),
    )
    return AgentEngine(services, link)


@contextlib.asynccontextmanager
async def serving_engine(
    rest: ManyRooms, *, link: InstantLink | None = None, **config: Any
) -> AsyncIterator[AgentEngine]:
    """An engine over ``rest`` and ``link`` (a new instant one when None),
    serving for the block."""
    engine = make_engine(rest, link if link is not None else InstantLink(), **config)
    send, recv = trio.open_memory_channel[Any](10)
    async with send, trio.open_nursery() as nursery:
        await nursery.start(engine.serve, recv)
        yield engine
        nursery.cancel_scope.cancel()


def rooms(n: int) -> list[str]:
    return [f"r{i:04d}" for i in range(n)]


async def test_start_up_costs_one_listing_and_one_next_per_room(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(250)
    rest = ManyRooms(ids)
    async with serving_engine(rest, **QUIET) as engine:
        await trio.sleep(60)
        assert set(engine.serving_rooms()) == set(ids)
        assert rest.calls["chats"] == math.ceil(len(ids) / PAGE)
        assert rest.next_per_room() == Counter({r: 1 for r in ids})
        assert rest.calls["participants"] == 0
        per_room = sum(rest.calls.values()) / len(ids)
        assert per_room <= 1.1


async def test_a_truncated_roster_is_read_only_before_the_rooms_first_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(4)
    rest = ManyRooms(ids)
    crowd = [_participant(f"user-{i}") for i in range(ROSTER_CAP + 5)]
    rest.members["r0000"] = [*crowd, _participant(AGENT, "Agent")]
    rest.members["r0001"] = [*crowd, _participant(AGENT, "Agent")]
    waiting = rest.add("r0000")
    async with serving_engine(rest, **QUIET):
        await trio.sleep(60)
        assert rest.status[waiting.id] == "processed"
        # r0000 ran a turn: its cut roster was read in full, once. r0001 has
        # the same cut roster but ran no turn: not read. The others were complete.
        assert rest.participant_reads == Counter({"r0000": 1})


async def test_bulk_reconciles_are_bounded_and_pipelined_with_joins(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(40)
    rest = ManyRooms(ids, next_delay=1.0)
    async with serving_engine(rest, max_parallel_drains=5, **QUIET):
        await trio.sleep(60)
        assert rest.next_max_active == 5
        assert rest.next_per_room() == Counter({r: 1 for r in ids})
        # 40 reconciles of 1 s, 5 at a time: 8 s, not 40 s and not all at once.
        assert max(t for t, _ in rest.next_log) - min(t for t, _ in rest.next_log) == 7


async def test_history_loads_are_bounded_across_rooms(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(40)
    rest = ManyRooms(ids, context_delay=1.0)
    messages = [rest.add(r) for r in ids]
    async with serving_engine(
        rest, enable_context_hydration=True, max_parallel_history_loads=4, **QUIET
    ):
        await trio.sleep(60)
        # Every room's first turn read its history, never more than four
        # rooms at a time, and every message was answered.
        assert rest.calls["context"] == 40
        assert rest.context_max_active == 4
        assert [rest.status[m.id] for m in messages] == ["processed"] * 40
        assert len(rest.replies) == 40


async def test_a_reconnect_costs_one_listing_and_one_next_per_room(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(250)
    rest = ManyRooms(ids)
    async with serving_engine(rest, **QUIET) as engine:
        await trio.sleep(60)
        rest.reset()
        engine.on_reconnected()
        await trio.sleep(60)
        assert rest.calls["chats"] == math.ceil(len(ids) / PAGE)
        assert rest.next_per_room() == Counter({r: 1 for r in ids})
        assert rest.calls["participants"] == 0
        assert sum(rest.calls.values()) / len(ids) <= 1.1


async def test_reconnects_before_a_bulk_reconcile_runs_are_merged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(30)
    rest = ManyRooms(ids, next_delay=1.0)
    async with serving_engine(rest, max_parallel_drains=3, **QUIET) as engine:
        await trio.sleep(60)
        rest.reset()
        engine.on_reconnected()
        await trio.sleep(0.5)  # three reconciles running, 27 waiting
        engine.on_reconnected()
        await trio.sleep(60)
        per_room = rest.next_per_room()
        # The rooms still waiting reconcile once for both reconnects; the three
        # whose /next was already in flight at the second one reconcile again.
        assert sorted(per_room.values()) == [1] * 27 + [2] * 3


async def test_recently_active_rooms_drain_first_after_a_reconnect(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(12)
    rest = ManyRooms(ids)
    async with serving_engine(rest, max_parallel_drains=1, **QUIET) as engine:
        await trio.sleep(60)
        # Pushes reach three rooms, oldest first: r0007, then r0003, then r0010.
        for room_id in ("r0007", "r0003", "r0010"):
            msg = rest.add(room_id)
            room = engine.room(room_id)
            assert room is not None
            assert room.deliver(event_from_rest(room_id, msg))
            await trio.sleep(5)
            assert rest.status[msg.id] == "processed"
        rest.reset()
        engine.on_reconnected()
        await trio.sleep(60)
        order = [room for _, room in rest.next_log]
        assert order[:3] == ["r0010", "r0003", "r0007"]
        assert sorted(order) == ids


async def test_messages_missed_while_down_are_answered_by_the_reconnect_reconcile(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(20)
    rest = ManyRooms(ids)
    async with serving_engine(rest, **QUIET) as engine:
        await trio.sleep(60)
        missed = [rest.add(r) for r in ("r0002", "r0015")]  # no push: the socket is down
        engine.on_reconnected()
        await trio.sleep(10)
        assert all(rest.status[m.id] == "processed" for m in missed)


async def test_rooms_added_or_removed_while_down_are_joined_or_left(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ids = rooms(5)
    rest = ManyRooms(ids)
    link = InstantLink()
    async with serving_engine(rest, link=link, **QUIET) as engine:
        await trio.sleep(60)
        rest.rooms.remove("r0001")
        rest.rooms.append("new")
        rest.members["new"] = [_participant("user-1"), _participant(AGENT, "Agent")]
        rest.messages["new"] = []
        waiting = rest.add("new")
        rest.reset()
        engine.on_reconnected()
        await trio.sleep(60)
        assert set(engine.serving_rooms()) == (set(ids) - {"r0001"}) | {"new"}
        assert "chat_room:r0001" not in link.joined
        assert "chat_room:new" in link.joined
        assert rest.status[waiting.id] == "processed"
        # The new room's roster came with the listing.
        assert rest.calls["participants"] == 0


@pytest.mark.parametrize(("n", "rate"), [(200, 2.0), (30, 4.0)])
async def test_idle_reconciles_stay_under_the_ceiling_and_reach_every_room(
    autojump_clock: trio.testing.MockClock, n: int, rate: float
) -> None:
    ids = rooms(n)
    rest = ManyRooms(ids)
    base, ceiling = 10.0, 20.0
    async with serving_engine(
        rest,
        idle_resync_interval=base,
        idle_resync_max_interval=ceiling,
        idle_reconcile_rate=rate,
    ):
        await trio.sleep(30)  # the start-up reconciles are done
        rest.reset()
        start = trio.current_time()
        await trio.sleep(600)
        end = trio.current_time()
        times = sorted(t for t, _ in rest.next_log)
        # The ceiling, over every window of the run (one token of burst).
        for i, t in enumerate(times):
            j = i
            while j + 1 < len(times) and times[j + 1] - t <= 10.0:
                j += 1
            assert j - i + 1 <= 1 + rate * 10.0
        # And every room is visited within the documented bound.
        bound = ReconcileBudget.notice_bound(rooms=n, rate=rate, max_interval=ceiling)
        for room_id in ids:
            seen = [start, *(t for t, r in rest.next_log if r == room_id), end]
            assert max(b - a for a, b in itertools.pairwise(seen)) <= bound


async def test_a_missed_push_is_noticed_within_the_bound_without_a_reconnect(
    autojump_clock: trio.testing.MockClock,
) -> None:
    n, rate, ceiling = 100, 2.0, 20.0
    ids = rooms(n)
    rest = ManyRooms(ids)
    async with serving_engine(
        rest,
        idle_resync_interval=10.0,
        idle_resync_max_interval=ceiling,
        idle_reconcile_rate=rate,
    ) as engine:
        await trio.sleep(30)
        missed = rest.add("r0042")  # no push at all
        posted_at = trio.current_time()
        bound = ReconcileBudget.notice_bound(rooms=n, rate=rate, max_interval=ceiling)
        # The room's previous reconcile was before the post, so by then at the latest.
        await trio.sleep(bound)
        assert trio.current_time() - posted_at == bound
        assert rest.status[missed.id] == "processed"
        assert engine.statistics().reconnects == 0


async def test_a_room_busy_with_a_turn_does_not_hold_a_bulk_place(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The most recently active room is often mid-turn after a reconnect: it
    gives its place back, and the other rooms reconcile meanwhile."""
    ids = rooms(6)
    rest = ManyRooms(ids)
    link = InstantLink()
    engine = make_engine(rest, link, max_parallel_drains=1, **QUIET)
    release = trio.Event()
    adapter = engine._svc.adapter
    assert isinstance(adapter, Adapter)
    original = adapter.on_message

    async def slow_in_r0000(msg: Any, tools: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("room_id") == "r0000":
            await release.wait()
        await original(msg, tools, *args, **kwargs)

    adapter.on_message = slow_in_r0000  # type: ignore[method-assign]
    send, recv = trio.open_memory_channel[Any](10)
    async with send, trio.open_nursery() as nursery:
        await nursery.start(engine.serve, recv)
        await trio.sleep(60)
        busy = rest.add("r0000")
        room = engine.room("r0000")
        assert room is not None
        assert room.deliver(event_from_rest("r0000", busy))
        await trio.sleep(1)
        assert room.busy
        rest.reset()
        engine.on_reconnected()
        await trio.sleep(60)
        assert set(rest.next_per_room()) == set(ids) - {"r0000"}
        release.set()
        await trio.sleep(10)
        assert rest.status[busy.id] == "processed"
        assert rest.next_per_room() == Counter({r: 1 for r in ids})
        nursery.cancel_scope.cancel()


async def test_an_agent_in_more_than_fifty_pages_of_rooms_serves_them_all(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The REST client's default cap (the official SDK's 50 pages, 5,000 rooms)
    does not apply to the agent's own room listing."""
    ids = rooms(50 * PAGE + 150)
    rest = ManyRooms(ids)
    async with serving_engine(rest, **QUIET) as engine:
        await trio.sleep(60)
        assert len(engine.serving_rooms()) == len(ids)
        assert rest.calls["chats"] == 52
