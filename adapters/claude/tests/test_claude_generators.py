"""Closing a room's CLI leaves no async generator of claude-agent-sdk's for
the garbage collector: every reader is run to its end or closed by the task
that closes the client, so none is finalized later, outside its task (where
Trio reports it as an unraisable ResourceWarning in whatever test runs then)."""

from __future__ import annotations

import gc
from pathlib import Path
from types import AsyncGeneratorType
from typing import Any

import trio
from band_trio_claude import ClaudeAgentAdapter
from claude_support import DONE, ClaudeStub, alive, config_for, fake_config, pids, reply

from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 60


def unfinished_sdk_generators() -> list[str]:
    """The async generators of claude-agent-sdk and this adapter still
    suspended (not run to their end, not closed)."""
    out = []
    for obj in gc.get_objects():
        if not isinstance(obj, AsyncGeneratorType):
            continue
        frame = obj.ag_frame
        if frame is None or frame.f_lasti < 0:  # run to its end or closed; never started
            continue
        module = obj.ag_code.co_filename
        if "claude_agent_sdk" in module or "band_trio_claude" in module:
            out.append(obj.__qualname__)
    return out


async def test_closed_clis_leave_no_unfinished_sdk_generator(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    gc.collect()
    before = unfinished_sdk_generators()
    turns: list[Any] = []
    for _ in range(3):
        turns += [reply("ok", [user_id]), DONE]
    claude_stub.push(*turns)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as [first, second]:
            for room in (first, second, first):
                posted = await room.post("hello")
                assert await room.settled(posted) == "processed"
            assert adapter.live_rooms()
    assert adapter.live_rooms() == []
    assert unfinished_sdk_generators() == before


async def test_a_cli_still_writing_when_closed_leaves_no_unfinished_sdk_generator(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    """The fake CLI writes more after its result than the SDK buffers, so the
    SDK's reader is blocked handing a message on when the CLI is closed: it
    is read to its end, not cancelled halfway and dropped."""
    gc.collect()
    before = unfinished_sdk_generators()
    adapter = ClaudeAgentAdapter(fake_config(tmp_path, "chatty"))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hello")
            assert await room.settled(posted) == "processed"
    assert unfinished_sdk_generators() == before
    (pid,) = pids(tmp_path)
    assert not alive(pid)
    assert adapter.statistics().killed == 0
