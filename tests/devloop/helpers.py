"""Running ``band-trio`` commands as real processes in the devloop tests."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from band_trio.devloop.console import Console
from band_trio.local import HumanClient

from ..conftest import masked

STARTUP = 60.0
"""Seconds a command may take to start (the machine is shared and loaded)."""
STEP = 30.0
"""Seconds one observable step (a reply, a reload) may take."""
POLL = 0.05

ECHO_SOURCE = """
import band_trio


class Echo(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    async def on_message(self, msg, tools, history, participants_msg, contacts_msg,
                         *, is_session_bootstrap, room_id):
        await tools.send_message("{prefix}: " + msg.content, [msg.sender_id])
"""


def echo_source(prefix: str) -> str:
    """An echo adapter answering ``<prefix>: <the message>``."""
    return ECHO_SOURCE.replace("{prefix}", prefix)


def bump_mtime(path: Path) -> None:
    """Make an edit visible even within the file system's time resolution."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def band_trio_command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("band-trio")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "band_trio.cli", *args]


class Output:
    """The lines a process printed, readable while it runs."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = trio.Event()

    async def pump(self, stream: trio.abc.ReceiveStream) -> None:
        buffer = b""
        while chunk := await stream.receive_some(65536):
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            self.lines += [line.decode(errors="replace") for line in complete]
            self._changed.set()
            self._changed = trio.Event()
        if buffer:
            self.lines.append(buffer.decode(errors="replace"))
        self._changed.set()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    async def wait_for(self, text: str, *, times: int = 1, within: float = STEP) -> str:
        """Wait until ``text`` was printed ``times`` times; returns the last such line."""
        with trio.move_on_after(within):
            while self.count(text) < times:
                await self._changed.wait()
            return [line for line in self.lines if text in line][-1]
        raise AssertionError(
            f"{text!r} printed {self.count(text)} of {times} time(s):\n{masked(self.text())}"
        )

    def text(self) -> str:
        return "\n".join(self.lines)


def outside_the_environment() -> dict[str, str]:
    """The environment of a new terminal: this virtual environment not active."""
    scripts = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != scripts
    )
    return env


@asynccontextmanager
async def running(
    args: Sequence[str], cwd: Path, *, command: Sequence[str] | None = None, **kwargs: Any
) -> AsyncIterator[tuple[trio.Process, Output]]:
    """Run ``band-trio ARGS`` (or ``command``) in ``cwd``; stop it by its pid on
    exit (SIGKILL if it is still running then)."""
    process = await trio.lowlevel.open_process(
        list(command) if command is not None else band_trio_command(*args),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **kwargs,
    )
    output = Output()
    try:
        async with trio.open_nursery() as nursery:
            assert process.stdout is not None
            nursery.start_soon(output.pump, process.stdout)
            yield process, output
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            assert process.stdout is not None
            await process.stdout.aclose()


async def read_banner(output: Output) -> dict[str, Any]:
    """The JSON banner of ``dev --json``."""
    with trio.fail_after(STARTUP):
        while not any(line.startswith("{") for line in output.lines):
            await output.wait_for("", times=len(output.lines) + 1, within=STARTUP)
    line = next(line for line in output.lines if line.startswith("{"))
    info: dict[str, Any] = json.loads(line)
    return info


async def wait_for_messages(
    human: HumanClient,
    room_id: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    within: float = STEP,
) -> list[dict[str, Any]]:
    """Poll the room (over REST: it lives in another process) until ``predicate``."""
    with trio.fail_after(within):
        while True:
            messages = await human.list_messages(room_id)
            if predicate(messages):
                return messages
            await trio.sleep(POLL)


def replies(messages: list[dict[str, Any]], agent_id: str, text: str) -> list[str]:
    """Contents of the agent's messages that contain ``text``."""
    return [m["content"] for m in messages if m["sender_id"] == agent_id and text in m["content"]]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r")


class Terminal:
    """A process on a pseudo-terminal: type into it, read what it shows."""

    def __init__(self, process: trio.Process, master: trio.lowlevel.FdStream) -> None:
        self.process = process
        self.master = master
        self.raw = b""
        self._changed = trio.Event()

    @property
    def screen(self) -> str:
        """Everything shown so far, without terminal escape sequences."""
        return _ANSI.sub("", self.raw.decode(errors="replace"))

    async def pump(self) -> None:
        while True:
            try:
                chunk = await self.master.receive_some(65536)
            except (trio.BrokenResourceError, OSError):  # EIO once the other side is closed
                chunk = b""
            self._changed.set()
            self._changed = trio.Event()
            if not chunk:
                return
            self.raw += chunk

    async def type(self, text: str) -> None:
        await self.master.send_all(text.encode())

    async def wait_for(self, text: str, *, after: int = 0, within: float = STEP) -> int:
        """Wait until ``text`` shows at or after offset ``after`` of :attr:`screen`;
        returns the offset just past it."""
        with trio.move_on_after(within):
            while (index := self.screen.find(text, after)) < 0:
                await self._changed.wait()
            return index + len(text)
        # The dev loop's screen shows the user's token on purpose; a failure hides it.
        raise AssertionError(f"{text!r} not shown after offset {after}:\n{masked(self.screen)}")


@asynccontextmanager
async def on_terminal(args: Sequence[str], cwd: Path) -> AsyncIterator[Terminal]:
    """Run ``band-trio ARGS`` on a new pseudo-terminal; SIGKILL it by its pid if it
    is still running at the end."""
    master, slave = os.openpty()
    # A terminal of a known size, so the line editor does not wrap early.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200", "LINES": "50"}
    try:
        process = await trio.lowlevel.open_process(
            band_trio_command(*args),
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    terminal = Terminal(process, trio.lowlevel.FdStream(master))
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(terminal.pump)
            yield terminal
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            await terminal.master.aclose()


CONSOLE_DEADLINE = 20


class RecordingConsole(Console):
    """A console that lets a test wait for a line to be printed."""

    def __init__(self) -> None:
        super().__init__(io.StringIO(), interactive=False)
        self._printed = trio.Event()

    @property
    def text(self) -> str:
        assert isinstance(self.out, io.StringIO)
        return self.out.getvalue()

    def print(self, text: str = "") -> None:
        super().print(text)
        self._printed.set()
        self._printed = trio.Event()

    async def wait_for(self, text: str, after: int = 0) -> int:
        with trio.fail_after(CONSOLE_DEADLINE):
            while (index := self.text.find(text, after)) < 0:
                await self._printed.wait()
        return index + len(text)
