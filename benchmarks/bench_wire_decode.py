"""Frames decoded per second by band-trio's wire layer (no network).

Measures, for a realistic ``message_created`` frame (docs/reference/protocol.rst,
"Example frames") and a few other events:

* ``decode_frame``: JSON text -> Phoenix ``Frame``;
* ``decode_event``: payload -> validated, typed event;
* the full reader path: ``PhoenixProtocol.receive_frame`` (join_ref
  filtering included) then ``decode_event``;
* with ``--link N``: N ``message_created`` pushes through a real ``BandLink``
  over loopback from a minimal in-process Phoenix server (wall time and CPU
  time per frame; the CPU figure includes the server's sending side).

Run: ``uv run python benchmarks/bench_wire_decode.py [--seconds 1.0] [--link 20000]``.
Prints figures only; nothing here is an assertion.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import trio
import trio_websocket

from band_trio.wire.events import MessageCreated, decode_event
from band_trio.wire.link import BandLink, LinkEvent
from band_trio.wire.phoenix import ChannelMessage, PhoenixProtocol, decode_frame

AGENT = "8c1f0000-0000-4000-8000-000000000001"
ROOM = "3f0c0000-0000-4000-8000-000000000002"
USER = "5d2a0000-0000-4000-8000-000000000003"

MESSAGE = {
    "id": "b41e0000-0000-4000-8000-000000000004",
    "content": f"@[[{AGENT}]] please summarise the attached document in three bullet points",
    "message_type": "text",
    "metadata": {
        "mentions": [{"id": AGENT, "handle": "alice/summariser", "name": "Summariser"}],
        "status": "sent",
        "delivery_status": {AGENT: {"status": "delivered", "current_attempt": 0, "attempts": []}},
    },
    "sender_id": USER,
    "sender_type": "User",
    "sender_name": "Alice",
    "chat_room_id": ROOM,
    "thread_id": None,
    "inserted_at": "2026-01-05T10:00:00.123456Z",
    "updated_at": "2026-01-05T10:00:00.123456Z",
}
CONTROL = {
    "type": "agent.control",
    "mode": "stop",
    "scope": "room",
    "agent_id": AGENT,
    "execution_id": "e9",
    "room_id": ROOM,
    "reason": "user_requested",
    "correlation_id": "ctl-42",
}
PARTICIPANT = {"id": USER, "name": "Alice", "type": "User", "handle": "alice", "is_remote": False}


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds`` of wall time."""
    for _ in range(200):
        fn()
    n = 0
    batch = 500
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(batch):
            fn()
        n += batch
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


async def link_throughput(count: int) -> tuple[float, float]:
    """Push ``count`` frames through a BandLink; return (wall s, CPU s)."""
    topic = f"chat_room:{ROOM}"
    ready = trio.Event()

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept()
        joins: dict[str, str] = {}
        while True:
            join_ref, ref, frame_topic, event, _ = json.loads(await ws.get_message())
            if event in ("phx_join", "heartbeat"):
                reply = {"status": "ok", "response": {}}
                await ws.send_message(json.dumps([join_ref, ref, frame_topic, "phx_reply", reply]))
                if event == "phx_join":
                    joins[frame_topic] = join_ref
                    if frame_topic == topic:
                        ready.set()
                        frame = json.dumps([join_ref, None, topic, "message_created", MESSAGE])
                        for _ in range(count):
                            await ws.send_message(frame)

    async with trio.open_nursery() as nursery:
        server = await nursery.start(trio_websocket.serve_websocket, handler, "127.0.0.1", 0, None)
        link = BandLink(
            agent_id=AGENT, api_key="bench-key", ws_url=f"ws://127.0.0.1:{server.port}/ws"
        )
        send, receive = trio.open_memory_channel[LinkEvent](1000)
        await nursery.start(link.serve, send)
        wall, cpu = time.perf_counter(), time.process_time()
        await link.join(topic)
        received = 0
        async for item in receive:
            if isinstance(item, MessageCreated):
                received += 1
                if received == count:
                    break
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        nursery.cancel_scope.cancel()
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument(
        "--link", type=int, default=0, metavar="N", help="also push N frames through a BandLink"
    )
    args = parser.parse_args()

    proto = PhoenixProtocol()
    proto.reset_connection(0.0)
    topics = {
        "message_created": f"chat_room:{ROOM}",
        "agent.control": f"agent_control:{AGENT}",
        "participant_added": f"room_participants:{ROOM}",
    }
    frames: dict[str, str] = {}
    for event, topic in topics.items():
        join_ref, _ = proto.send_join(topic)
        proto.receive_frame(
            json.dumps([join_ref, join_ref, topic, "phx_reply", {"status": "ok", "response": {}}]),
            0.0,
        )
        payload = {"message_created": MESSAGE, "agent.control": CONTROL}.get(event, PARTICIPANT)
        frames[event] = json.dumps([join_ref, None, topic, event, payload])

    print(f"band-trio wire decode benchmark ({args.seconds:.1f} s per figure)")
    print(
        f"{'event':<20} {'bytes':>6} {'frame/s':>12} {'event/s':>12} {'reader path/s':>14} {'us/frame':>9}"
    )
    for event, text in frames.items():
        frame = decode_frame(text)
        payload = frame.payload
        topic = frame.topic

        def full(text: str = text) -> object:
            out = None
            for item in proto.receive_frame(text, 0.0):
                if isinstance(item, ChannelMessage):
                    out = decode_event(item.topic, item.event, item.payload)
            return out

        def frame_only(text: str = text) -> object:
            return decode_frame(text)

        def event_only(topic: str = topic, event: str = event, payload: Any = payload) -> object:
            return decode_event(topic, event, payload)

        frame_rate = rate(frame_only, args.seconds)
        event_rate = rate(event_only, args.seconds)
        full_rate = rate(full, args.seconds)
        print(
            f"{event:<20} {len(text):>6} {frame_rate:>12,.0f} {event_rate:>12,.0f} "
            f"{full_rate:>14,.0f} {1e6 / full_rate:>9.1f}"
        )

    if args.link:
        wall, cpu = trio.run(link_throughput, args.link)
        print(
            f"BandLink over loopback: {args.link} message_created frames in {wall:.2f} s "
            f"({args.link / wall:,.0f} frames/s), CPU {1e6 * cpu / args.link:.1f} us/frame "
            "(server side included)"
        )


if __name__ == "__main__":
    main()
