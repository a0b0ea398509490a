"""Helpers to run ``band-trio`` as a real process in tests."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import trio

STARTUP_DEADLINE = 30


def cli_command(*args: str) -> list[str]:
    """The ``band-trio`` command line with ``args``."""
    script = Path(sys.executable).with_name("band-trio")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "band_trio.cli", *args]


async def read_line(stream: Any) -> bytes:
    """Bytes from ``stream`` up to and including its first newline (or its end)."""
    buffer = b""
    while b"\n" not in buffer:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        buffer += chunk
    return buffer


async def stop_process(process: trio.Process) -> int:
    """Stop ``process`` with SIGTERM, by its pid, and return its exit status; it is
    killed if it has not exited within :data:`STARTUP_DEADLINE`."""
    try:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(STARTUP_DEADLINE):
                return await process.wait()
        return process.returncode
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
