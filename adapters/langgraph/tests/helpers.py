"""Shared pieces of the LangGraph adapter's end-to-end tests: an agent serving
one or more rooms of the local platform, with only public names."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

import band_trio
from band_trio import (
    HumanClient,
    LocalPlatform,
)


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

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [json.loads(m.content) for m in self.from_agent(kind)]

    def status(self, message_id: str) -> str | None:
        delivery = self.state.by_id[message_id].deliveries.get(self.agent_id)
        return None if delivery is None else str(delivery.status)

    def is_settled(self, message_id: str) -> bool:
        return self.status(message_id) in ("processed", "failed")

    async def post(self, content: str) -> str:
        sent = await self.human.post_message(
            self.room_id, f"@{self.agent_handle} {content}", [self.agent_handle]
        )
        return str(sent["id"])


def bridge_threads() -> list[threading.Thread]:
    """The asyncio bridge threads alive now."""
    return [t for t in threading.enumerate() if t.name.startswith("band-trio-asyncio")]


@asynccontextmanager
async def agent_in_rooms(
    platform: LocalPlatform,
    adapter: Any,
    *,
    rooms: int = 1,
    state_dir: Path | None = None,
    **config: Any,
) -> AsyncIterator[list[Room]]:
    creds = platform.agents[0]
    settings = {"max_attempts": 1, **config}
    cfg = band_trio.AgentConfig(state_dir=state_dir, **settings)
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        made = []
        for n in range(rooms):
            room = await human.create_room(f"langgraph e2e {n}")
            await human.add_participant(room["id"], creds.id)
            made.append(room)
        async with band_trio.open_agent(
            adapter=adapter,
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=cfg,
        ):
            yield [Room(platform, human, str(room["id"]), creds.id, creds.handle) for room in made]


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Wait (real time) until ``predicate()`` is true, re-checking every few ms.

    The state polled is spread over the platform, the agent and the bridge's
    thread, so no single event announces the change.

    Raises:
        trio.TooSlowError: it did not become true within ``within`` seconds.
    """
    with trio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - polling state spread over threads
            await trio.sleep(0.005)
