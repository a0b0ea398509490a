"""Run the official band-sdk echo agent (``peers/band_sdk_echo_agent.py``) as a
subprocess of a test: its own venv, its own ``TMPDIR`` (the SDK takes a
per-agent lock file there), its output in a log file that is printed when the
test fails, and a stop by pid (SIGINT, then SIGKILL after a grace period).
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from tests.interop.conftest import PEERS, peer_env

ECHO_AGENT = PEERS / "band_sdk_echo_agent.py"
#: How long the peer may take to shut down after SIGINT before it is killed.
STOP_GRACE = 15
COMPLAINT_LEVELS = ("WARNING", "ERROR", "CRITICAL")


async def stop_process(process: trio.Process, grace: float = STOP_GRACE) -> None:
    """SIGINT, then SIGKILL after ``grace`` seconds; always reaps. Shielded, so
    it also runs to completion when the caller is being cancelled."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            with trio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@attrs.define
class SdkPeer:
    """A running band-sdk echo agent."""

    name: str
    process: trio.Process
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def complaints(self, log: str | None = None) -> list[str]:
        """Lines the SDK logged at WARNING or above, and tracebacks."""
        text = self.log() if log is None else log
        return [
            line
            for line in text.splitlines()
            if line.split(" ", 1)[0] in COMPLAINT_LEVELS or line.startswith("Traceback")
        ]

    def rejected_frames(self, log: str | None = None) -> list[str]:
        """Lines saying the SDK dropped a frame: a payload band-sdk-core found
        invalid (ERROR) or an event with no handler (WARNING), and any ERROR."""
        text = self.log() if log is None else log
        markers = ("[WebSocket] Invalid", "no handler registered", "No handler found")
        return [
            line
            for line in text.splitlines()
            if any(m in line for m in markers)
            or line.split(" ", 1)[0] in ("ERROR", "CRITICAL")
            or line.startswith("Traceback")
        ]

    def dispatched_from_push(self, room_id: str, message_id: str) -> bool:
        """Whether the SDK started this turn from a ``message_created`` push."""
        return f"Dispatch source=websocket room={room_id} message={message_id}" in self.log()

    async def stop(self) -> int:
        await stop_process(self.process)
        assert self.process.returncode is not None
        return self.process.returncode

    async def fail_if_exits(self) -> None:
        """Turn an early exit of the peer into an immediate failure (not a timeout)."""
        await self.process.wait()
        raise AssertionError(f"{self.name} exited early (status {self.process.returncode})")


@asynccontextmanager
async def running_sdk_echo(
    python: Path,
    platform: Any,
    agent: Any,
    workdir: Path,
    *,
    name: str = "band-sdk echo",
    on_conflict: str = "supersede",
    contacts: str = "",
) -> AsyncIterator[SdkPeer]:
    """Start the echo agent for ``agent`` (credentials of the local platform).

    The peer is stopped on exit; if the body raised, the peer's output is
    printed first so pytest shows it with the failure.
    """
    slug = name.replace(" ", "-")
    tmpdir = workdir / f"{slug}-tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{slug}.log"
    env = peer_env(
        {
            "BAND_AGENT_ID": agent.id,
            "BAND_API_KEY": agent.api_key,
            "BAND_REST_URL": platform.rest_url,
            "BAND_WS_URL": platform.ws_url,
            "TMPDIR": str(tmpdir),
            "BAND_ECHO_ON_CONFLICT": on_conflict,
            "BAND_ECHO_CONTACTS": contacts,
        }
    )
    async with await trio.open_file(log_path, "wb") as log:
        process = await trio.lowlevel.open_process(
            [str(python), str(ECHO_AGENT)], env=env, stdout=log.wrapped, stderr=log.wrapped
        )
    peer = SdkPeer(name, process, log_path)
    try:
        yield peer
    except Exception:
        print(f"--- {name} output ({log_path}) ---")
        print(peer.log()[-12000:] or "(none)")
        raise
    finally:
        await stop_process(process)
