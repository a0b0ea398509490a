"""Frames decoded per second by band-trio's wire layer (no network).

Measures, for a realistic ``message_created`` frame (protocol.md §3.9) and a
few other events:

* ``decode_frame``: JSON text -> Phoenix ``Frame``;
* ``decode_event``: payload -> validated, typed event;
* the full reader path: ``PhoenixProtocol.receive_frame`` (join_ref
  filtering included) then ``decode_event``.

Run: ``uv run python benchmarks/bench_wire_decode.py [--seconds 1.0]``.
Prints figures only; nothing here is an assertion.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from band_trio.wire.events import decode_event
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
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


if __name__ == "__main__":
    main()
