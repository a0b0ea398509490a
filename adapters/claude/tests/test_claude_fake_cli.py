"""What the real CLI cannot be made to show, with a fake ``claude`` CLI
(``fake_claude.py``, given as ``cli_path``): a CLI that crashes mid-turn, and
one that ignores the interrupt and SIGTERM."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from band_trio_claude import ClaudeAgentAdapter
from claude_support import alive, fake_config, pids

from band_trio.adapter import GENERIC_FAILURE_MESSAGE
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 60


async def poll(predicate: Callable[[], bool]) -> None:
    """Wait for a process's state, which no event announces (under the
    test's deadline)."""
    while not predicate():  # noqa: ASYNC110
        await trio.sleep(0.05)


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX executable script")


async def test_a_cli_that_crashes_mid_turn_fails_the_turn_once_and_is_replaced(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    adapter = ClaudeAgentAdapter(fake_config(tmp_path, "crash-first"))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            first = await room.post("hello?")
            assert await room.settled(first) == "failed"
            second = await room.post("hello again?")
            assert await room.settled(second) == "processed"
            await band_platform.wait_for(lambda: bool(room.from_agent("error")))
    crashed, fresh = pids(tmp_path)
    assert crashed != fresh
    assert [m.content for m in room.from_agent("error")] == [GENERIC_FAILURE_MESSAGE]
    (sent,) = room.from_agent("text")
    assert "fake answer" in sent.content
    assert not alive(crashed)
    assert not alive(fresh)


async def test_a_cli_that_ignores_the_interrupt_is_killed_and_the_room_is_free(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    adapter = ClaudeAgentAdapter(
        fake_config(tmp_path, "ignore-interrupt", interrupt_timeout=0.5, close_timeout=0.5)
    )
    # The second turn never ends: the agent stops after a short drain.
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, shutdown_timeout=1.0) as [room]:
            await room.post("take your time")
            await band_platform.wait_for(lambda: len(pids(tmp_path)) == 1)
            # The pid is written before the SDK finished connecting.
            await poll(lambda: adapter.client_pid(room.room_id) is not None)
            await room.human.control(room.room_id, "interrupt")
            (stuck,) = pids(tmp_path)
            await poll(lambda: not alive(stuck))
            assert adapter.session_id(room.room_id) == f"fake-session-{stuck}"
            # The room is free: the next message starts a fresh CLI at once.
            await room.post("still there?")
            await band_platform.wait_for(lambda: len(pids(tmp_path)) == 2)
        # The agent stopped: the second CLI, deaf to its input ending and to
        # SIGTERM, was killed within the close timeout.
        assert not any(alive(pid) for pid in pids(tmp_path))
    assert adapter.live_rooms() == []
    assert adapter.statistics().killed == 2
