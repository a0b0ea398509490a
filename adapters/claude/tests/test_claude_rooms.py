"""The rooms' CLIs with the real ``claude`` CLI: a bound on live CLIs closes
the least recently used room's (which later resumes its conversation), an
idle room's CLI is closed on time (no further message needed), and leaving a
room closes its CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio
from band_trio_claude import ClaudeAgentAdapter
from claude_support import DONE, ClaudeStub, config_for, reply

from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 60


def gone(pid: int | None) -> bool:
    assert pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_the_least_recently_used_cli_is_closed_and_its_room_resumes_later(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    bodies: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Any:
        bodies.append(body)
        return reply("ok", [user_id], f"toolu_{len(bodies)}")

    claude_stub.push(answer, DONE, answer, DONE, answer, DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home, max_live_clients=1))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as [first, second]:
            posted = await first.post("the code word is heliotrope")
            assert await first.settled(posted) == "processed"
            first_pid = adapter.client_pid(first.room_id)
            posted = await second.post("hello")
            assert await second.settled(posted) == "processed"
            assert adapter.live_rooms() == [second.room_id]
            assert gone(first_pid)
            posted = await first.post("what was the code word?")
            assert await first.settled(posted) == "processed"
            assert adapter.live_rooms() == [first.room_id]
            assert adapter.client_pid(first.room_id) != first_pid
    stats = adapter.statistics().clients
    assert stats.opened == 3
    assert stats.closed_over_limit == 2
    # The first room's new CLI resumed its conversation.
    assert "the code word is heliotrope" in json.dumps(bodies[2]["messages"])


async def test_an_idle_cli_is_closed_on_time_without_another_turn(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    claude_stub.push(reply("one", [user_id]), DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home, idle_timeout=0.5))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hello")
            assert await room.settled(posted) == "processed"
            pid = adapter.client_pid(room.room_id)
            assert pid is not None
            requests = len(claude_stub.requests)
            # No further message: the agent's background work closes the CLI.
            while not gone(pid):  # noqa: ASYNC110 (a process's end announces nothing)
                await trio.sleep(0.05)
            assert adapter.live_rooms() == []
            assert adapter.statistics().clients.closed_idle == 1
            assert len(claude_stub.requests) == requests
    assert adapter.statistics().killed == 0
