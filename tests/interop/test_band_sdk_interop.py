"""Issue 2, item 13: the OFFICIAL band-sdk agent works against the local platform.

The echo agent in ``peers/band_sdk_echo_agent.py`` runs with the band-sdk venv's
python as a separate process (band_trio never imports ``band``). It must
connect, join its rooms (two that exist when it starts, one added while it
runs), and answer every message that mentions it exactly once: each trigger
ends ``processed`` after exactly one successful attempt, with exactly one reply.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.conftest import PEERS, peer_env
from tests.interop.scenario import (
    Human,
    Trigger,
    exactly_once_problems,
    make_rooms,
    run_echo_rounds,
    unprocessed,
)

pytestmark = pytest.mark.interop

ECHO_AGENT = PEERS / "band_sdk_echo_agent.py"
#: Start-up of the SDK (imports, /agent/me, connect, joins) plus six turns.
DEADLINE = 60
#: How long the peer may take to shut down after SIGINT before it is killed.
STOP_GRACE = 15


async def stop_process(process: trio.Process) -> None:
    """SIGINT, then SIGKILL after ``STOP_GRACE``; always reaps. Shielded, so it
    also runs to completion when the test is being cancelled."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            with trio.move_on_after(STOP_GRACE):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def fail_if_exits(process: trio.Process) -> None:
    """Turn an early exit of the peer into an immediate failure (not a timeout)."""
    await process.wait()
    raise AssertionError(f"the band-sdk agent exited early (status {process.returncode})")


def joined(platform: Any, agent_id: str, topics: set[str]) -> bool:
    """The agent has a live socket that joined every one of ``topics``."""
    return topics <= platform.hub.joined_topics(agent_id)


def room_topic_set(rooms: list[str]) -> set[str]:
    return {f"{kind}:{room}" for room in rooms for kind in ("chat_room", "room_participants")}


async def test_official_band_sdk_agent_echoes_in_three_rooms(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    platform = band_platform
    agent = platform.register_agent("SDK Echo", "Echo agent written with the official band-sdk")
    human = Human(platform.rest_url, platform.user.api_key)
    log_path = tmp_path / "band-sdk-echo.log"
    sdk_tmp = tmp_path / "sdk-tmp"  # the SDK takes a per-agent lock file in TMPDIR
    sdk_tmp.mkdir()
    env = peer_env(
        {
            "BAND_AGENT_ID": agent.id,
            "BAND_API_KEY": agent.api_key,
            "BAND_REST_URL": platform.rest_url,
            "BAND_WS_URL": platform.ws_url,
            "TMPDIR": str(sdk_tmp),
        }
    )
    triggers: list[Trigger] = []
    process: trio.Process | None = None
    stage = "making rooms"
    try:
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            stage = "starting the band-sdk agent"
            async with await trio.open_file(log_path, "wb") as log:
                process = await trio.lowlevel.open_process(
                    [str(band_sdk_venv_python), str(ECHO_AGENT)],
                    env=env,
                    stdout=log.wrapped,
                    stderr=log.wrapped,
                )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(fail_if_exits, process)
                stage = "waiting for its socket to join the control topics and two rooms"
                control = {f"agent_control:{agent.id}", f"agent_rooms:{agent.id}"}
                await platform.wait_for(
                    lambda: joined(platform, agent.id, control | room_topic_set(rooms))
                )
                stage = "waiting for it to join a room added while it runs"
                rooms += await make_rooms(human, agent.id, 1)
                await platform.wait_for(lambda: joined(platform, agent.id, room_topic_set(rooms)))
                stage = "waiting for answers"
                triggers = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                nursery.cancel_scope.cancel()

        stage = "checking the outcome"
        problems = exactly_once_problems(platform, agent.id, triggers)
        assert not problems, problems
        # The SDK logs (WARNING) every frame or payload it drops, so a clean log
        # means every push and reply of the platform was accepted as sent.
        running_log = log_path.read_text(errors="replace")
        complaints = [
            line
            for line in running_log.splitlines()
            if line.split(" ", 1)[0] in ("WARNING", "ERROR", "CRITICAL") or "Traceback" in line
        ]
        assert complaints == []
        # Answers from the /next backlog alone would hide a broken push path.
        pushed = [
            t.token
            for t in triggers
            if f"Dispatch source=websocket room={t.room_id} message={t.message_id}" in running_log
        ]
        assert pushed, "no turn was started by a message_created push"

        stage = "stopping the agent with SIGINT"
        await stop_process(process)
        assert process.returncode == 0, "the SDK agent did not exit cleanly on SIGINT"
        with trio.fail_after(10):  # a closed socket leaves every topic
            await platform.wait_for(lambda: not platform.hub.joined_topics(agent.id))
    except Exception:
        # pytest shows this with the failure: the peer's own view of what went wrong.
        print(f"failed while {stage}; platform view: {unprocessed(platform, agent.id, triggers)}")
        print(f"--- band-sdk echo agent output ({log_path}) ---")
        print(log_path.read_text(errors="replace")[-12000:] if log_path.exists() else "(none)")
        raise
    finally:
        if process is not None:
            await stop_process(process)
        with trio.CancelScope(shield=True):
            await human.aclose()
