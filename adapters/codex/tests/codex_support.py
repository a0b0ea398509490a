"""Helpers of the Codex adapter's tests: the fake app-server's script and
log, and the real binary's offline config (rooms with an agent in them come
from ``band_trio.testing.rooms``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import attrs
import trio
from band_trio_codex import CodexConfig

FAKE = Path(__file__).with_name("fake_codex.py")
SEND = "band_send_message"
NO_REPLY = "band_no_reply"


@attrs.define
class FakeCodex:
    """The script and log of the fake app-servers of one test."""

    directory: Path

    @property
    def script_path(self) -> Path:
        return self.directory / "script.json"

    @property
    def log_path(self) -> Path:
        return self.directory / "log.jsonl"

    def script(
        self,
        *turns: list[dict[str, Any]],
        default: list[dict[str, Any]] | None = None,
        **options: Any,
    ) -> None:
        """What the fakes play: one list of steps per turn, in order."""
        body = {"turns": list(turns), "default": default or [], **options}
        self.script_path.write_text(json.dumps(body))

    def config(self, **kwargs: Any) -> CodexConfig:
        """A config whose app-server is the fake."""
        if not self.script_path.exists():
            self.script()
        kwargs.setdefault("cwd", self.directory)
        return CodexConfig(
            command=(sys.executable, str(FAKE), str(self.script_path), str(self.log_path)),
            **kwargs,
        )

    def log(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def received(self, method: str | None = None) -> list[dict[str, Any]]:
        """The messages the fakes read (requests, notifications, answers)."""
        return [
            m
            for m in self.log()
            if m.get("dir") == "in" and (method is None or m.get("method") == method)
        ]

    def answers(self) -> list[dict[str, Any]]:
        """The adapter's answers to the fakes' requests."""
        return [m for m in self.received() if "method" not in m]


def call(tool: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"call": tool, "args": args, "id": call_id}


def reply(content: str, mentions: list[str], call_id: str = "call_1") -> dict[str, Any]:
    return call(SEND, {"content": content, "mentions": mentions}, call_id)


async def until(predicate: Callable[[], bool]) -> None:
    """Wait until ``predicate()`` holds (the state of a child process or of
    the fake's log, which wakes no one): re-checked every 20 ms. Put a
    deadline around it."""
    while True:
        if predicate():
            return
        await trio.sleep(0.02)


def gone(pid: int | None) -> bool:
    """The process no longer exists (reaped)."""
    assert pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def open_pipes() -> int:
    """This process's open pipe descriptors (a child's stdin and stdout are pipes)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    return count


def real_config(binary: Path, stub_url: str, home: Path, **kwargs: Any) -> CodexConfig:
    """A config whose real ``codex app-server`` asks the scripted Responses API
    at ``stub_url`` and keeps its threads in ``home``."""
    kwargs.setdefault("cwd", home)
    provider = (
        f'{{name="stub", base_url="{stub_url}", env_key="OPENAI_API_KEY", wire_api="responses"}}'
    )
    return CodexConfig(
        codex_path=binary,
        config_overrides={"model_provider": '"stub"', "model_providers.stub": provider},
        env={"CODEX_HOME": str(home), "HOME": str(home), "OPENAI_API_KEY": "test-key"},
        model="gpt-5.1-codex",
        stderr_path=home / "stderr.log",
        **kwargs,
    )
