"""Helpers of the Codex adapter's tests: the fake app-server's script and
log, and a room with an agent in it on the local platform."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import attrs
import trio
from band_trio_codex import CodexAdapter, CodexConfig

import band_trio
from band_trio.local import HumanClient, LocalPlatform

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


@attrs.define
class Room:
    platform: LocalPlatform
    human: HumanClient
    room_id: str
    agent_id: str
    agent_handle: str

    @property
    def state(self) -> Any:
        return self.platform.state.rooms[self.room_id]

    def from_agent(self, kind: str | None = None) -> list[Any]:
        return [
            m
            for m in self.state.messages
            if m.sender_id == self.agent_id and (kind is None or m.message_type == kind)
        ]

    def status(self, message_id: str) -> str | None:
        delivery = self.state.by_id[message_id].deliveries.get(self.agent_id)
        return None if delivery is None else str(delivery.status)

    async def post(self, content: str) -> str:
        sent = await self.human.post_message(
            self.room_id, f"@{self.agent_handle} {content}", [self.agent_handle]
        )
        return str(sent["id"])

    async def settled(self, message_id: str) -> str:
        """Wait until the agent settled the message; its delivery status."""
        await self.platform.wait_for(lambda: self.status(message_id) in ("processed", "failed"))
        return str(self.status(message_id))


@asynccontextmanager
async def agent_in_rooms(
    platform: LocalPlatform,
    adapter: CodexAdapter,
    rooms: int = 1,
    *,
    room_ids: list[str] | None = None,
    shutdown_timeout: float = 30.0,
    **agent_settings: Any,
) -> AsyncIterator[list[Room]]:
    """An agent serving ``adapter`` in ``rooms`` new rooms (or the given ones);
    ``agent_settings`` go to its ``AgentConfig``."""
    creds = platform.agents[0]
    config = band_trio.AgentConfig(
        state_dir=None, max_attempts=1, shutdown_timeout=shutdown_timeout, **agent_settings
    )
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        if room_ids is None:
            room_ids = []
            for index in range(rooms):
                room = await human.create_room(f"codex {index}")
                await human.add_participant(room["id"], creds.id)
                room_ids.append(str(room["id"]))
        async with band_trio.open_agent(
            adapter=adapter,
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=config,
        ):
            yield [Room(platform, human, r, creds.id, creds.handle) for r in room_ids]


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
