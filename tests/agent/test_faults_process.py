"""The agent as a real process: killed by pid mid-backlog, restarted on the same
state directory, then stopped with SIGTERM (official runtime, "Testable behaviours" 26).

Every message must end processed exactly once with exactly one reply: the reply
journaled by the killed process is only acked by its successor.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from .harness import scene, token

pytestmark = pytest.mark.slow

AGENT_SCRIPT = textwrap.dedent(
    """
    import sys
    import trio
    from band_trio import Agent, AgentConfig
    from band_trio.adapter import SimpleAdapter

    class Echo(SimpleAdapter):
        async def on_message(self, msg, tools, history, participants_msg, contacts_msg,
                             *, is_session_bootstrap, room_id):
            await tools.send_message(f"echo: {msg.content}", [msg.sender_id])
            if "crash" in msg.content and sys.argv[2] == "crash":
                print("REPLIED", flush=True)
                await trio.sleep_forever()  # killed here, before the processed mark

    config = AgentConfig(state_dir=sys.argv[1], shutdown_timeout=2.0, retry_delay=0.05)
    agent = Agent.create(adapter=Echo(), config=config)
    trio.run(agent.serve)
    print("STOPPED", flush=True)
    """
)


async def _start(script: Path, state: Path, mode: str, env: dict[str, str]) -> trio.Process:
    return await trio.lowlevel.open_process(
        [sys.executable, str(script), str(state), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


async def _wait_for_line(proc: trio.Process, line: bytes) -> None:
    """Read the process's stdout until ``line`` appears."""
    assert proc.stdout is not None
    seen = b""
    while line not in seen:
        chunk = await proc.stdout.receive_some()
        if not chunk:
            raise AssertionError(f"process ended before printing {line!r}")
        seen += chunk


async def _stop(proc: trio.Process) -> None:
    if proc.returncode is None:
        os.kill(proc.pid, signal.SIGKILL)
    with trio.CancelScope(shield=True):
        await proc.wait()
        if proc.stdout is not None:
            await proc.stdout.aclose()


async def test_killed_process_restarts_without_a_second_reply(
    band_platform, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    state = tmp_path / "state"
    with trio.fail_after(60):
        async with scene(band_platform) as s:
            env = dict(
                os.environ,
                BAND_AGENT_ID=s.agent_id,
                BAND_API_KEY=s.agent_key,
                BAND_REST_URL=band_platform.rest_url,
                BAND_WS_URL=band_platform.ws_url,
            )
            room_id = await s.new_room()
            posted: dict[str, str] = {}
            for word in [token("p"), token("crash"), token("p"), token("p")]:
                posted[await s.post(room_id, word)] = word
            crash_id = next(m for m, w in posted.items() if "crash" in w)
            first = await _start(script, state, "crash", env)
            try:
                # Killed once the reply was accepted (and so journaled): between
                # the reply and the processed mark. (A kill while the reply's
                # HTTP response is still in flight cannot be told apart from a
                # lost request without an idempotency key on the platform.)
                with trio.fail_after(30):
                    await _wait_for_line(first, b"REPLIED")
                assert s.replies_to(room_id, posted[crash_id]) == 1
            finally:
                await _stop(first)  # SIGKILL by pid: no graceful anything
            assert first.returncode == -signal.SIGKILL
            assert s.status(room_id, crash_id) == "processing"
            second = await _start(script, state, "normal", env)
            try:
                await s.wait_for(lambda: all(s.processed(room_id, m) for m in posted), within=30)
                os.kill(second.pid, signal.SIGTERM)
                with trio.fail_after(15):
                    await second.wait()
                assert second.returncode == 0  # SIGTERM is a graceful shutdown
            finally:
                await _stop(second)
            s.assert_exactly_once(room_id, posted)
