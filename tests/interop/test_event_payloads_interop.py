"""Every WebSocket push of the local platform, checked on the wire and by the
OFFICIAL validator (band-sdk-core; protocol, "Validation rules common to all events").

Bare Phoenix v2 recorders (no band-trio client code) join the agent, room,
contact and user topics and keep every frame. A scenario over REST makes the
platform send each agent-side event at least once, ``supersede`` included.
Then:

* every frame is checked for Phoenix v2 framing (protocol, "Phoenix Channels v2 framing";
  "Channel control frames"): five elements,
  pushes with ``ref: null`` and the topic's current ``join_ref``, replies
  echoing the request's refs;
* every push payload goes through ``band_sdk_core.validate_event_payload`` in
  the band-sdk venv (``peers/event_validator.py``).

The band-sdk echo tests only see the events the SDK subscribes to; this one
also covers contact events and ``message_updated`` (sent to agents only when
the platform is asked to).

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio_websocket

from band_trio.local import open_local_platform
from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient
from tests.interop.conftest import PEERS, json_lines, peer_env
from tests.interop.scenario import Human

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # peers run as real processes

VALIDATOR = PEERS / "event_validator.py"
DEADLINE = 30
CONTROL_EVENTS = {"phx_reply", "phx_close", "phx_error"}
#: What an agent socket must have received by the end of the scenario.
AGENT_EVENTS = {
    "room_added",
    "room_removed",
    "room_deleted",
    "participant_added",
    "participant_removed",
    "message_created",
    "message_updated",
    "contact_request_received",
    "contact_request_updated",
    "contact_added",
    "contact_removed",
    "agent.control",
    "supersede",
}
#: Topics of a human socket carry events the agent validator does not know
#: (room_updated, task_*), passed through unvalidated by the SDK (protocol, "Human-scope topics").
HUMAN_TOPIC_KINDS = ("user_rooms", "tasks")


class FrameRecorder:
    """A bare Phoenix v2 client: joins topics and records every frame."""

    def __init__(self, ws_url: str, api_key: str, agent_id: str | None = None) -> None:
        query = "?vsn=2.0.0" + (f"&agent_id={agent_id}" if agent_id else "")
        self.url = ws_url + query
        self.api_key = api_key
        self.frames: list[Any] = []
        self.join_refs: dict[str, str] = {}
        self.sent_refs: set[str] = set()
        self.closed = False
        self._ref = 0
        self._ws: trio_websocket.WebSocketConnection | None = None
        self._changed = trio.Event()

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        headers = [(b"x-api-key", self.api_key.encode())]
        async with trio_websocket.open_websocket_url(self.url, extra_headers=headers) as ws:
            self._ws = ws
            task_status.started()
            try:
                while True:
                    self.frames.append(json.loads(await ws.get_message()))
                    self._wake()
            except trio_websocket.ConnectionClosed:
                self.closed = True
                self._wake()
            finally:
                # trio-websocket leaves the TCP stream open when the server
                # closed first (its aclose returns early); close it ourselves.
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(ws._stream)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def join(self, topic: str) -> None:
        assert self._ws is not None
        self._ref += 1
        ref = str(self._ref)
        self.join_refs[topic] = ref
        self.sent_refs.add(ref)
        await self._ws.send_message(json.dumps([ref, ref, topic, "phx_join", {}]))
        await self.wait_for(lambda: any(self._is_reply(f, topic, ref) for f in self.frames))
        (reply,) = [f for f in self.frames if self._is_reply(f, topic, ref)]
        assert reply[4]["status"] == "ok", reply

    @staticmethod
    def _is_reply(frame: Any, topic: str, ref: str) -> bool:
        return frame[2] == topic and frame[3] == "phx_reply" and frame[1] == ref

    async def wait_for(self, predicate: Any) -> None:
        while not predicate():
            await self._changed.wait()

    def events(self) -> set[str]:
        return {f[3] for f in self.frames if f[3] not in CONTROL_EVENTS}

    def framing_problems(self) -> list[str]:
        problems = []
        for frame in self.frames:
            if not (isinstance(frame, list) and len(frame) == 5):
                problems.append(f"not a 5-element array: {frame!r:.200}")
                continue
            join_ref, ref, topic, event, payload = frame
            if not (isinstance(topic, str) and topic and isinstance(event, str) and event):
                problems.append(f"empty topic or event: {frame!r:.200}")
            if not isinstance(payload, dict):
                problems.append(f"payload is not an object: {frame!r:.200}")
            if event == "phx_reply":
                if ref not in self.sent_refs:
                    problems.append(f"reply to a ref we never sent: {frame!r:.200}")
            elif event not in CONTROL_EVENTS and (
                ref is not None or join_ref != self.join_refs.get(topic)
            ):
                problems.append(f"push without ref null and the current join_ref: {frame!r:.200}")
        return problems

    def pushes(self) -> list[dict[str, Any]]:
        return [
            {"topic": f[2], "event": f[3], "payload": f[4]}
            for f in self.frames
            if f[3] not in CONTROL_EVENTS
        ]


async def test_every_push_is_framed_right_and_passes_the_official_validator(
    band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    async with open_local_platform(agent_message_updates=True) as platform:
        user = platform.user
        a = platform.register_agent("Frames A", "Receives everything")
        b = platform.register_agent("Frames B", "The other side of contacts")
        human = Human(platform.rest_url, user.api_key)
        rec_a = FrameRecorder(platform.ws_url, a.api_key, a.id)
        rec_b = FrameRecorder(platform.ws_url, b.api_key, b.id)
        rec_u = FrameRecorder(platform.ws_url, user.api_key)
        try:
            with trio.fail_after(DEADLINE):
                async with (
                    RestClient(base_url=platform.rest_url, api_key=a.api_key) as rest_a,
                    RestClient(base_url=platform.rest_url, api_key=b.api_key) as rest_b,
                    trio.open_nursery() as nursery,
                ):
                    for rec in (rec_a, rec_b, rec_u):
                        await nursery.start(rec.serve)
                    for topic in ("agent_control", "agent_rooms", "agent_contacts"):
                        await rec_a.join(f"{topic}:{a.id}")
                    await rec_b.join(f"agent_contacts:{b.id}")
                    await rec_u.join(f"user_rooms:{user.id}")

                    # Rooms and rosters.
                    room = await human.create_room("frames")
                    await human.add_participant(room, a.id)
                    await rec_a.wait_for(lambda: "room_added" in rec_a.events())
                    await rec_a.join(f"chat_room:{room}")
                    await rec_a.join(f"room_participants:{room}")
                    await human.add_participant(room, b.id)
                    await human.remove_participant(room, b.id)

                    # The message lifecycle (message_updated as deliveries change).
                    message_id = await human.post(room, f"@{a.handle} hello", a.id)
                    await rest_a.mark_processing(room, message_id)
                    await rest_a.send_event(room, "thinking", "thought")
                    await rest_a.send_message(room, "hi", [MentionRequest(id=user.id)])
                    await rest_a.mark_processed(room, message_id)

                    # Contacts, both directions.
                    await rest_a.add_contact(b.handle)
                    await rest_b.respond_contact_request("approve", handle=a.handle)
                    await rest_a.remove_contact(handle=b.handle)

                    # Control signals, room and agent scope.
                    await platform.push_control(a.id, "stop", room_id=room)
                    await platform.push_control(a.id, "play", room_id=room)
                    await platform.push_control(a.id, "interrupt", scope="agent")

                    # Leaving rooms: removed from one, another deleted.
                    await human.remove_participant(room, a.id)
                    doomed = await human.create_room("doomed")
                    await human.add_participant(doomed, a.id)
                    await rec_a.wait_for(lambda: len(rooms_added(rec_a)) == 2)
                    await rec_a.join(f"room_participants:{doomed}")
                    await human.delete_rooms([doomed])

                    # A second connection of the same agent supersedes the first.
                    rec_a2 = FrameRecorder(platform.ws_url, a.api_key, a.id)
                    await nursery.start(rec_a2.serve)
                    await rec_a.wait_for(lambda: rec_a.closed)
                    await rec_b.wait_for(
                        lambda: {"contact_added", "contact_removed"} <= rec_b.events()
                    )
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await human.aclose()

    missing = AGENT_EVENTS - rec_a.events() - rec_b.events()
    assert missing == set(), f"never pushed: {sorted(missing)}"
    assert "contact_request_received" in rec_b.events()
    assert "room_added" in rec_u.events()
    for rec in (rec_a, rec_b, rec_u):
        assert rec.framing_problems() == []

    pushes = [
        p
        for rec in (rec_a, rec_b, rec_u)
        for p in rec.pushes()
        if p["topic"].split(":", 1)[0] not in HUMAN_TOPIC_KINDS
        or p["event"] in ("room_added", "room_removed")
    ]
    with trio.fail_after(DEADLINE):
        done = await trio.run_process(
            [str(band_sdk_venv_python), str(VALIDATOR)],
            stdin="".join(json.dumps(p) + "\n" for p in pushes).encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=peer_env({}),
        )
    verdicts = json_lines(done.stdout)
    assert len(verdicts) == len(pushes), done.stderr.decode(errors="replace")
    rejected = [
        (v["event"], v["error"], p["payload"])
        for v, p in zip(verdicts, pushes, strict=True)
        if not v["ok"]
    ]
    assert rejected == []
    assert done.returncode == 0


def rooms_added(rec: FrameRecorder) -> list[str]:
    return [f[4].get("id") for f in rec.frames if f[3] == "room_added"]
