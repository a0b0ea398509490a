"""Running one agent in its own process, restarting it when its source changes.

Each start is a fresh ``python -m band_trio.devloop.child TARGET`` process, so a
reload is a clean re-import of the user's code. The agent keeps the same
identity and state directory across restarts, so its claims ledger makes a
restart safe: a message answered before the restart is not answered again.
Every process is stopped through its own pid: its stdin is closed and it gets
SIGTERM (both start a graceful shutdown), then SIGKILL if it is still running
after ``stop_timeout`` seconds.
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import trio

from band_trio.devloop.reports import EXIT_LOAD_ERROR, LOG_LEVEL_VARIABLE, REPORT_PREFIX
from band_trio.devloop.targets import Target
from band_trio.devloop.watch import SourceWatch, discover_sources

__all__ = ["AgentIdentity", "AgentProcess", "AgentState"]

_CHILD_MODULE = "band_trio.devloop.child"
WATCH_INTERVAL = 0.3
"""Seconds between two looks at the watched source files."""


@attrs.frozen
class AgentIdentity:
    """What the agent's process connects as.

    Attributes:
        agent_id: the agent's id on the platform.
        api_key: its API key.
        handle: its handle (for messages).
        rest_url: the platform's REST origin.
        ws_url: the platform's WebSocket URL.
    """

    agent_id: str
    api_key: str = attrs.field(repr=False)
    handle: str
    rest_url: str
    ws_url: str


class AgentState(enum.Enum):
    """Where an :class:`AgentProcess` is."""

    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    """A source file changed: the running process is being stopped for a new one."""
    FAILED = "failed"
    """The target did not load, or the process ended on its own."""
    STOPPED = "stopped"


class AgentProcess:
    """Runs one target's agent in a child process (see the module docstring).

    Args:
        target: what to run.
        identity: who it connects as.
        state_home: the directory given as ``XDG_STATE_HOME`` (the ledger lives
            in ``<state_home>/band-trio/<agent id>``); the same for every start.
        say: prints one line (or block) for the user.
        reload: restart when a watched source file changes, and after a failed
            start wait for a change instead of giving up.
        stop_timeout: seconds a graceful stop may take before SIGKILL.
        log_level: logging level of the agent process.
        python: the interpreter of the agent process.
    """

    def __init__(
        self,
        target: Target,
        identity: AgentIdentity,
        *,
        state_home: Path,
        say: Callable[[str], None],
        reload: bool = False,
        stop_timeout: float = 5.0,
        log_level: str = "WARNING",
        python: str = sys.executable,
    ) -> None:
        self.target = target
        self.identity = identity
        self.state_home = state_home
        self.reload = reload
        self.stop_timeout = stop_timeout
        self.log_level = log_level
        self.python = python
        self._say = say
        self.state = AgentState.STOPPED
        self._state_changed = trio.Event()
        self.starts = 0
        """How many processes were started."""
        self.pid: int | None = None
        """The pid of the running process, if any."""
        self.watch = SourceWatch([str(target.path)] if target.path else [])

    def _set_state(self, state: AgentState) -> None:
        self.state = state
        self._state_changed.set()
        self._state_changed = trio.Event()

    @property
    def restarting(self) -> bool:
        """Whether the agent is starting, or will restart for a source change
        (saved, and not yet noticed by the watch, included)."""
        if self.state in (AgentState.STARTING, AgentState.RESTARTING):
            return True
        return self.reload and self.watch.pending()

    async def wait_restarted(self) -> None:
        """Wait while :attr:`restarting`: until the new process is ready, or
        it failed to load (its messages then wait on the platform for the next
        start)."""
        while self.restarting:
            # The watch notices a saved file within one poll; look again then.
            with trio.move_on_after(WATCH_INTERVAL):
                await self._state_changed.wait()

    @property
    def label(self) -> str:
        """``@handle`` of the agent."""
        return "@" + self.identity.handle

    def environment(self) -> dict[str, str]:
        """The agent process's environment: ours plus its identity and state home."""
        env = dict(os.environ)
        env.update(
            {
                "BAND_AGENT_ID": self.identity.agent_id,
                "BAND_API_KEY": self.identity.api_key,
                "BAND_REST_URL": self.identity.rest_url,
                "BAND_WS_URL": self.identity.ws_url,
                "XDG_STATE_HOME": str(self.state_home),
                "PYTHONUNBUFFERED": "1",
                LOG_LEVEL_VARIABLE: self.log_level,
            }
        )
        return env

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the agent and keep it running until cancelled (then stop it).

        ``task_status.started()`` is called at once (the first process is
        started; it may still be loading). Without ``reload`` an agent that
        ends on its own is reported and not restarted (this returns).
        """
        task_status.started()
        while True:
            changed = await self._run_once()
            if changed:
                continue
            if not self.reload:
                self._say(f"* {self.label} stopped (run with --reload to restart it on save)")
                return
            if not any(stamp is not None for stamp in self.watch.files.values()):
                self.watch.watch(discover_sources(self.target.root))
            self._say(f"* {self.label}: waiting for a change to its source to restart")
            self._say_restarting(await self.watch.wait_for_change(WATCH_INTERVAL))

    def _say_restarting(self, changed: list[str]) -> None:
        names = ", ".join(_short(f, self.target.root) for f in changed)
        self._say(f"* {self.label}: {names} changed, restarting")

    async def _run_once(self) -> list[str]:
        """Run one process to its end; returns the changed files when it was
        stopped for a reload, an empty list when it ended on its own."""
        self._set_state(AgentState.STARTING)
        self.starts += 1
        process = await trio.lowlevel.open_process(
            [self.python, "-m", _CHILD_MODULE, self.target.spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.environment(),
            # Its own session: a Ctrl+C at the terminal reaches the dev process
            # only, which then stops every agent itself.
            start_new_session=True,
        )
        self.pid = process.pid
        changed: list[str] = []
        try:
            async with trio.open_nursery() as nursery:
                if self.reload:

                    async def stop_on_change() -> None:
                        changed.extend(await self.watch.wait_for_change(WATCH_INTERVAL))
                        # Said before the old process stops, so that what it
                        # prints (and the platform's "offline") comes after.
                        self._set_state(AgentState.RESTARTING)
                        self._say_restarting(changed)
                        await self._terminate(process)

                    nursery.start_soon(stop_on_change)
                assert process.stdout is not None
                await self._pump(process.stdout)
                code = await process.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await self._terminate(process)
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        await stream.aclose()
                self.pid = None
        if changed:
            return changed
        self._set_state(AgentState.FAILED)
        if code not in (0, EXIT_LOAD_ERROR):
            self._say(f"* {self.label}: the agent process exited with status {code}")
        return []

    async def _terminate(self, process: trio.Process) -> None:
        """Stop ``process`` by its pid: close stdin, SIGTERM, then SIGKILL."""
        if process.returncode is None:
            if process.stdin is not None:
                await process.stdin.aclose()
            process.terminate()
            with trio.move_on_after(self.stop_timeout):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()

    async def _pump(self, stdout: trio.abc.ReceiveStream) -> None:
        """Show the process's output line by line until end of file."""
        buffer = b""
        while True:
            chunk = await stdout.receive_some(65536)
            if not chunk:
                if buffer:
                    self._line(buffer.decode(errors="replace"))
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self._line(line.decode(errors="replace"))

    def _line(self, line: str) -> None:
        if not line.startswith(REPORT_PREFIX):
            self._say(f"[{self.identity.handle}] {line.rstrip()}")
            return
        report: Mapping[str, object] = json.loads(line[len(REPORT_PREFIX) :])
        event = report.get("event")
        if event == "watch":
            files = report.get("files")
            assert isinstance(files, list)
            self.watch.watch(str(f) for f in files)
        elif event == "ready":
            self._set_state(AgentState.READY)
            self._say(f"* {self.label} is running ({self.target.spec}, pid {self.pid})")
        elif event == "error":
            self._set_state(AgentState.FAILED)
            text = str(report.get("text", ""))
            indented = "\n".join("  " + row for row in text.splitlines())
            self._say(f"* {self.label} could not load {self.target.spec}:\n{indented}")


def _short(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path
