"""Cancellation with the real ``claude`` CLI: a turn timeout and an
interrupt interrupt Claude (the CLI's turn ends with its result), the room is
free again at once, and the next message runs on the same CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from anthropic_stub import HANG
from band_trio_claude import ClaudeAgentAdapter
from claude_support import DONE, ClaudeStub, config_for, reply

from band_trio.adapter import GENERIC_FAILURE_MESSAGE
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 60


async def test_a_turn_timeout_interrupts_claude_and_keeps_the_cli(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    claude_stub.push(HANG, reply("back again", [user_id]), DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home, turn_timeout=1.0))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            stuck = await room.post("think forever")
            assert await room.settled(stuck) == "failed"
            pid = adapter.client_pid(room.room_id)
            await band_platform.wait_for(lambda: bool(room.from_agent("error")))
            posted = await room.post("and now?")
            assert await room.settled(posted) == "processed"
            assert adapter.client_pid(room.room_id) == pid
    assert pid is not None
    assert [m.content for m in room.from_agent("error")] == [GENERIC_FAILURE_MESSAGE]
    assert room.from_agent("error")[0].metadata.get("band_failure", {}).get("code") in (
        "timeout",
        None,
    )
    assert adapter.statistics().killed == 0
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("back again")


async def test_an_interrupt_stops_claude_mid_turn_and_the_room_goes_on(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    asked = trio.Event()

    def hang(body: dict[str, Any]) -> Any:
        asked.set()
        return HANG

    claude_stub.push(hang, reply("here I am", [user_id]), DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            await room.post("take your time")
            await asked.wait()
            pid = adapter.client_pid(room.room_id)
            await room.human.control(room.room_id, "interrupt")
            posted = await room.post("are you there?")
            assert await room.settled(posted) == "processed"
            assert adapter.client_pid(room.room_id) == pid
    assert pid is not None
    assert adapter.statistics().killed == 0
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("here I am")
