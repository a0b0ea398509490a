"""Memory and GC-tracked objects per idle room, in one in-process engine.

An :class:`~band_trio.runtime.engine.AgentEngine` serves N rooms whose REST
answers come from an in-memory HTTP transport (``httpx.MockTransport``) behind
the real :class:`~band_trio.wire.rest.RestClient`: the room listing is real
JSON with each room's roster (``include=participants``: the agent and one
user, as the platform sends them), decoded and structured by the wire layer;
``/messages/next`` answers 204. Topic joins succeed at once (no socket: the
link's per-topic records are not counted here; ``bench_rooms.py`` measures a
whole agent process, link included).

Measured after every room joined, drained once and sat idle for a few idle
intervals (virtual time, so idle reconciles ran at the agent-wide budget):

* **KiB per idle room**: tracemalloc's traced memory after minus before the
  engine started, over N (the rooms' own state: objects, tasks, roster rows,
  the listing's strings still referenced);
* **GC-tracked objects per idle room**: ``len(gc.get_objects())`` after minus
  before, over N (what a full collection walks), and by type, top 15.

With ``--turns M`` the first M rooms then get one message each, pushed through
the dispatcher as the link would (``message_created``) and answered by an echo
adapter (a :class:`~band_trio.adapter.SimpleAdapter` whose ``on_message``
calls ``tools.send_message``, with the agent's real tools), through the whole
turn path: claim, context hydration (``/context``), ``/processing``, activity
reports, the reply's post and journal entry, ``/processed``. The rooms then
sit idle again and the same figures are taken **per answered room, on top of
an idle one** (after minus the idle measurement, over M), with the
allocation sites (tracemalloc, top 10) of what stayed. The turns run with the
defaults of :class:`~band_trio.runtime.config.AgentConfig` for working state
and context hydration, as a deployed agent would.

Run: ``uv run python benchmarks/bench_room_memory.py [--rooms 10000] [--turns 1000] [--json out.json]``.
Prints figures only; nothing here is an assertion.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx
import trio
import trio.testing

from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.adapter.protocols import FrameworkAdapter
from band_trio.adapter.turns import AgentInput, TurnHooks
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.room import RoomServices
from band_trio.tools import AgentTools
from band_trio.wire.events import MessageCreated
from band_trio.wire.models import ChatParticipant
from band_trio.wire.rest import RestClient

AGENT = "8c1f0000-0000-4000-8000-000000000001"
USER = "5d2a0000-0000-4000-8000-000000000003"
PAGE = 100
IDLE_SECONDS = 600.0
"""Virtual seconds the rooms sit idle before the measurement."""


def _room_id(i: int) -> str:
    return f"3f0c0000-0000-4000-8000-{i:012d}"


def _room_row(i: int) -> dict[str, Any]:
    # What the platform's listing carries per room with include=participants.
    return {
        "id": _room_id(i),
        "title": f"room {i}",
        "inserted_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "participant_count": 2,
        "participants_truncated": False,
        "participants": [
            {
                "id": AGENT,
                "role": "member",
                "status": "active",
                "type": "Agent",
                "name": "Helper",
                "handle": "ann/helper",
                "online": True,
                "description": "answers questions",
            },
            {
                "id": USER,
                "role": "owner",
                "status": "active",
                "type": "User",
                "name": "Ann",
                "handle": "ann",
                "online": True,
            },
        ],
    }


def _message_id(i: int) -> str:
    return f"7a3e0000-0000-4000-8000-{i:012d}"


def _data(body: Any) -> httpx.Response:
    return httpx.Response(200, content=json.dumps({"data": body}).encode())


class _Platform:
    """The REST answers of N rooms: idle ones, and the turns of answered ones."""

    def __init__(self, rooms: int) -> None:
        self.rooms = rooms
        self.calls: Counter[str] = Counter()
        self.sent = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/messages/next"):
            self.calls["next"] += 1
            return httpx.Response(204)
        if path.endswith("/context"):
            self.calls["context"] += 1
            body = {"data": [], "metadata": {"has_more": False, "limit": 50}}
            return httpx.Response(200, content=json.dumps(body).encode())
        if path.endswith("/processing") or path.endswith("/processed"):
            which = path.rsplit("/", 1)[1]
            self.calls[which] += 1
            message_id = path.rsplit("/", 2)[1]
            return _data({"id": message_id, "status": which, "attempt_number": 1, "success": True})
        if path.endswith("/activity"):
            self.calls["activity"] += 1
            working = json.loads(request.content or b"{}").get("working", False)
            return _data({"working": bool(working)})
        if path.endswith("/messages") and request.method == "POST":
            self.calls["send"] += 1
            self.sent += 1
            return _data({"id": f"9b4d0000-0000-4000-8000-{self.sent:012d}", "success": True})
        if path.endswith("/chats"):
            self.calls["chats"] += 1
            page = int(request.url.params.get("page", "1"))
            size = int(request.url.params.get("page_size", str(PAGE)))
            start = (page - 1) * size
            rows = [_room_row(i) for i in range(start, min(start + size, self.rooms))]
            body = {
                "data": rows,
                "metadata": {
                    "page": page,
                    "page_size": size,
                    "total_count": self.rooms,
                    "total_pages": max(1, -(-self.rooms // size)),
                },
            }
            return httpx.Response(200, content=json.dumps(body).encode())
        self.calls["other"] += 1
        return httpx.Response(404, json={"error": "not found"})


class _Link:
    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()


class _Adapter:
    async def on_started(self, agent_name: str, agent_description: str) -> None:
        return None

    async def on_event(self, inp: AgentInput) -> None:
        return None

    async def on_cleanup(self, room_id: str) -> None:
        return None


class _EchoAdapter(SimpleAdapter[HistoryProvider]):
    """Answers each message with ``echo: <content>`` to its sender."""

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])


def _message(i: int) -> MessageCreated:
    return MessageCreated(
        room_id=_room_id(i),
        id=_message_id(i),
        content=f"hello {i}",
        message_type="text",
        sender_id=USER,
        sender_type="User",
        sender_name="Ann",
        inserted_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )


def _tracked_by_type() -> Counter[str]:
    return Counter(type(o).__name__ for o in gc.get_objects())


def _per_room(delta: Counter[str], rooms: int) -> dict[str, float]:
    return {name: round(count / rooms, 2) for name, count in delta.most_common(15)}


def _sites(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot) -> list[str]:
    """The allocation sites that grew most, as ``KiB  blocks  file:line``."""
    out = []
    for stat in after.compare_to(before, "lineno")[:10]:
        frame = stat.traceback[0]
        out.append(
            f"{stat.size_diff / 1024:10.1f} KiB {stat.count_diff:8d} blocks"
            f"  {frame.filename.rsplit('/', 2)[-1]}:{frame.lineno}"
        )
    return out


async def _measure(rooms: int, turns: int, ledger_path: str | None, out: dict[str, Any]) -> None:
    platform = _Platform(rooms)
    rest = RestClient(
        base_url="http://127.0.0.1:9",
        api_key="bench-key",
        transport=httpx.MockTransport(platform),
    )
    adapter: FrameworkAdapter = _EchoAdapter() if turns else _Adapter()
    if turns:
        # A deployed agent's defaults: activity reports and context hydration on.
        config = AgentConfig(state_dir=None)
    else:
        config = AgentConfig(
            state_dir=None, enable_working_state=False, enable_context_hydration=False
        )

    def make_tools(
        room_id: str, participants: Sequence[ChatParticipant], hooks: TurnHooks
    ) -> AgentToolsProtocol:
        return AgentTools(
            rest=rest, room_id=room_id, agent_id=AGENT, participants=participants, hooks=hooks
        )

    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.open(ledger_path) if ledger_path else ClaimsLedger.in_memory(),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=config,
        make_tools=make_tools,
        rng=random.Random(7),
    )
    engine = AgentEngine(services, _Link())
    send, recv = trio.open_memory_channel[Any](10)
    gc.collect()
    types_before = _tracked_by_type()
    tracked_before = sum(types_before.values())
    traced_before = tracemalloc.get_traced_memory()[0]
    async with send, trio.open_nursery() as nursery:
        await nursery.start(engine.serve, recv)
        await trio.sleep(IDLE_SECONDS)
        serving = len(engine.serving_rooms())
        gc.collect()
        traced_idle = tracemalloc.get_traced_memory()[0]
        types_idle = _tracked_by_type()
        tracked_idle = sum(types_idle.values())
        if turns:
            snapshot_idle = tracemalloc.take_snapshot()
            # As the agent does once start-up has settled: what exists now
            # is frozen, so later collections examine only what came after.
            gc.collect()
            gc.freeze()
            try:
                for i in range(turns):
                    await send.send(_message(i))
                await trio.sleep(IDLE_SECONDS)
                completed = sum(s.completed for s in engine.statistics().rooms)
                # What the next full collection examines: everything that
                # survived the young collections, cyclic garbage included.
                gc.collect(1)
                walked = Counter(type(o).__name__ for o in gc.get_objects(2))
                gc.collect()
                created = len(gc.get_objects())
            finally:
                gc.unfreeze()
            gc.collect()
            traced_answered = tracemalloc.get_traced_memory()[0]
            kept = _tracked_by_type() - types_idle
            snapshot_answered = tracemalloc.take_snapshot()
        nursery.cancel_scope.cancel()
    out.update(
        rooms=rooms,
        serving=serving,
        kib_per_room=round((traced_idle - traced_before) / 1024 / rooms, 2),
        tracked_per_room=round((tracked_idle - tracked_before) / rooms, 2),
        tracked_by_type_per_room=_per_room(types_idle - types_before, rooms),
    )
    if turns:
        out.update(
            turns=turns,
            completed=completed,
            kib_per_answered_room=round((traced_answered - traced_idle) / 1024 / turns, 2),
            tracked_per_answered_room=round(sum(kept.values()) / turns, 2),
            tracked_by_type_per_answered_room=_per_room(kept, turns),
            created_per_answered_room=round(created / turns, 2),
            walked_per_answered_room=round(sum(walked.values()) / turns, 2),
            walked_by_type_per_answered_room=_per_room(walked, turns),
            sites_per_answered_room=_sites(snapshot_answered, snapshot_idle),
        )
    out["rest_calls"] = dict(platform.calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=10_000)
    parser.add_argument(
        "--turns", type=int, default=0, help="rooms that get one message answered (default 0)"
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="the claims ledger in a SQLite file (a deployed agent's) instead of in memory",
    )
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args()
    turns = min(args.turns, args.rooms)
    tracemalloc.start()
    out: dict[str, Any] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as state:
        ledger_path = os.path.join(state, "ledger.sqlite3") if args.durable else None
        trio.run(
            _measure,
            args.rooms,
            turns,
            ledger_path,
            out,
            clock=trio.testing.MockClock(autojump_threshold=0),
        )
    out["wall_seconds"] = round(time.perf_counter() - started, 1)
    print(f"rooms served        {out['serving']} of {out['rooms']}")
    print(f"REST calls          {out['rest_calls']}")
    print(f"KiB per idle room   {out['kib_per_room']}")
    print(f"GC-tracked per room {out['tracked_per_room']}")
    print("tracked objects per room, by type (top 15):")
    for name, count in out["tracked_by_type_per_room"].items():
        print(f"  {count:8.2f}  {name}")
    if turns:
        print(f"answered rooms      {out['completed']} of {out['turns']}")
        print(f"KiB per answered room, beyond an idle one   {out['kib_per_answered_room']}")
        print(f"GC-tracked per answered room, beyond idle   {out['tracked_per_answered_room']}")
        print("tracked objects per answered room, by type (top 15):")
        for name, count in out["tracked_by_type_per_answered_room"].items():
            print(f"  {count:8.2f}  {name}")
        print(
            "GC-tracked objects created since the freeze and alive, per answered room"
            f"   {out['created_per_answered_room']}"
        )
        print(
            "walked by the next full collection per answered room (garbage included)"
            f"   {out['walked_per_answered_room']}"
        )
        for name, count in out["walked_by_type_per_answered_room"].items():
            print(f"  {count:8.2f}  {name}")
        print(f"allocation sites of what the {turns} answered rooms kept (top 10):")
        for line in out["sites_per_answered_room"]:
            print(f"  {line}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
