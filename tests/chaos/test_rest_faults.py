"""A fifth of every REST call fails for 30 seconds: every message is still
answered exactly once, none is marked failed, none is lost, and the agent
drains within 25 seconds.

The adapter is an echo that, like most adapters, catches nothing: whatever
the tools raise ends its turn. The faults come from the local platform's own
fault injection, on every agent REST call, in three forms:

* ``503-before``: a 503 without ``Retry-After``, the call not performed;
* ``503-after``: the call performed, its answer lost behind a 503;
* ``5xx-after``: the call performed, its answer lost behind a 502 or a 504.

The platform is reached in-process (no socket), so the run is on the
autojump clock: the drain time is virtual seconds, measured, with the REST
client's default retry policy and the runtime's default retry delays.
"""

from __future__ import annotations

import logging

import attrs
import pytest
import trio
import trio.testing

from band_trio import AgentConfig
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.agent import Agent
from band_trio.local import LocalPlatform
from band_trio.local._input import Obj
from band_trio.testing.conformance._inprocess import InProcessRuntime
from band_trio.wire.rest import RestConfig

ROOMS = 20
MESSAGES = 200
FAULT_SECONDS = 30.0
FAULT_SHARE = 0.2
DRAIN_WITHIN = 25.0
AGENT_REST = r"^/api/v1/agent/"


class NonCatchingEcho(SimpleAdapter[HistoryProvider]):
    """Replies ``echo: <content>`` to the sender and lets every error through."""

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


@attrs.frozen
class Outcome:
    """What the platform holds once the run is over."""

    drained_after: float | None
    processed: int
    replied_once: int
    duplicated: int
    failed_attempts: int
    faults_fired: int


def _inject(platform: LocalPlatform, kind: str) -> list[object]:
    faults = platform.faults
    if kind == "503-before":
        return [faults.add("*", AGENT_REST, 503, 10**9, probability=FAULT_SHARE)]
    if kind == "503-after":
        return [faults.add("*", AGENT_REST, 503, 10**9, probability=FAULT_SHARE, perform=True)]
    half = FAULT_SHARE / 2
    return [
        faults.add("*", AGENT_REST, 502, 10**9, probability=half, perform=True),
        # Drawn only for the calls the 502 rule let through.
        faults.add("*", AGENT_REST, 504, 10**9, probability=half / (1 - half), perform=True),
    ]


async def _run(kind: str, seed: int) -> Outcome:
    platform = LocalPlatform(seed_demo=False)
    platform.faults.reseed(seed)
    creds = platform.register_agent("Echo", "Answers every message.")
    state = platform.state
    user = state.users[platform.user.id]
    rooms = []
    for n in range(ROOMS):
        room = state.create_room(user, Obj({"chat": {"title": f"room {n}"}}))
        state.add_participant(user, room.id, Obj({"participant": {"participant_id": creds.id}}))
        rooms.append(room.id)
    platform._flush()
    config = AgentConfig(state_dir=None, gc_freeze_min_rooms=0)
    runtime = InProcessRuntime(platform, creds.id, creds.api_key, config, rest_config=RestConfig())
    agent = Agent(runtime, NonCatchingEcho(), handle_signals=False)
    posted: dict[str, tuple[str, str]] = {}
    rules: list[object] = []
    drained_after: float | None = None

    def processed(room_id: str, message_id: str) -> bool:
        delivery = state.rooms[room_id].by_id[message_id].deliveries.get(creds.id)
        return delivery is not None and delivery.status == "processed"

    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        start = trio.current_time()
        rules = _inject(platform, kind)
        for n in range(MESSAGES):
            room_id = rooms[n % ROOMS]
            word = f"w{n}x"
            sent = state.post_message(
                user,
                room_id,
                Obj(
                    {
                        "message": {
                            "content": f"@{creds.handle} {word}",
                            "mentions": [{"id": creds.id}],
                        }
                    }
                ),
            )
            posted[str(sent["id"])] = (room_id, word)
        platform._flush()
        with trio.move_on_after(120.0):
            while True:
                if all(processed(r, m) for m, (r, _) in posted.items()):
                    drained_after = trio.current_time() - start
                    break
                if trio.current_time() - start >= FAULT_SECONDS:
                    platform.faults.clear()
                await trio.sleep(0.1)
        platform.faults.clear()
        agent.request_shutdown()

    replies: dict[str, int] = {}
    failed_attempts = 0
    for message_id, (room_id, word) in posted.items():
        room = state.rooms[room_id]
        replies[word] = sum(
            1
            for m in room.messages
            if m.sender_id == creds.id
            and m.message_type == "text"
            and m.content.endswith(f" {word}")
        )
        delivery = room.by_id[message_id].deliveries.get(creds.id)
        failed_attempts += sum(1 for a in delivery.attempts if a.status == "failed")
    return Outcome(
        drained_after=drained_after,
        processed=sum(1 for m, (r, _) in posted.items() if processed(r, m)),
        replied_once=sum(1 for n in replies.values() if n == 1),
        duplicated=sum(1 for n in replies.values() if n > 1),
        failed_attempts=failed_attempts,
        faults_fired=sum(rule.hits for rule in rules),  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("kind", ["503-before", "503-after", "5xx-after"])
def test_a_fifth_of_rest_calls_failing_loses_and_repeats_nothing(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="band_trio")
    outcome = trio.run(_run, kind, 26, clock=trio.testing.MockClock(autojump_threshold=0))
    print(f"{kind}: {outcome}")
    assert outcome.faults_fired > 100, outcome
    assert outcome.processed == MESSAGES, outcome
    assert outcome.replied_once == MESSAGES, outcome
    assert outcome.duplicated == 0, outcome
    assert outcome.failed_attempts == 0, outcome
    assert outcome.drained_after is not None, outcome
    assert outcome.drained_after <= DRAIN_WITHIN, outcome
