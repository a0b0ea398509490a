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

Run: ``uv run python benchmarks/bench_room_memory.py [--rooms 10000] [--json out.json]``.
Prints figures only; nothing here is an assertion.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
import tracemalloc
from collections import Counter
from typing import Any

import httpx
import trio
import trio.testing

from band_trio.adapter.protocols import FrameworkAdapter
from band_trio.adapter.turns import AgentInput
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.ledger import ClaimsLedger
from band_trio.runtime.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import RoomServices
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


class _Platform:
    """The REST answers of N idle rooms."""

    def __init__(self, rooms: int) -> None:
        self.rooms = rooms
        self.calls: Counter[str] = Counter()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/messages/next"):
            self.calls["next"] += 1
            return httpx.Response(204)
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


def _tracked_by_type() -> Counter[str]:
    return Counter(type(o).__name__ for o in gc.get_objects())


async def _measure(rooms: int, out: dict[str, Any]) -> None:
    platform = _Platform(rooms)
    rest = RestClient(
        base_url="http://127.0.0.1:9",
        api_key="bench-key",
        transport=httpx.MockTransport(platform),
    )
    adapter: FrameworkAdapter = _Adapter()
    config = AgentConfig(state_dir=None, enable_working_state=False, enable_context_hydration=False)
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=config,
        make_tools=lambda room_id, participants, hooks: None,  # type: ignore[arg-type,return-value]
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
        traced_after = tracemalloc.get_traced_memory()[0]
        types_after = _tracked_by_type()
        tracked_after = sum(types_after.values())
        nursery.cancel_scope.cancel()
    delta = types_after - types_before
    out.update(
        rooms=rooms,
        serving=serving,
        rest_calls=dict(platform.calls),
        kib_per_room=round((traced_after - traced_before) / 1024 / rooms, 2),
        tracked_per_room=round((tracked_after - tracked_before) / rooms, 2),
        tracked_by_type_per_room={
            name: round(count / rooms, 2) for name, count in delta.most_common(15)
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=10_000)
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args()
    tracemalloc.start()
    out: dict[str, Any] = {}
    started = time.perf_counter()
    trio.run(_measure, args.rooms, out, clock=trio.testing.MockClock(autojump_threshold=0))
    out["wall_seconds"] = round(time.perf_counter() - started, 1)
    print(f"rooms served        {out['serving']} of {out['rooms']}")
    print(f"REST calls          {out['rest_calls']}")
    print(f"KiB per idle room   {out['kib_per_room']}")
    print(f"GC-tracked per room {out['tracked_per_room']}")
    print("tracked objects per room, by type (top 15):")
    for name, count in out["tracked_by_type_per_room"].items():
        print(f"  {count:8.2f}  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
