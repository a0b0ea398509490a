"""Shared pieces of the PydanticAI adapter's end-to-end tests: a scripted
``FunctionModel``, and an agent serving rooms of the local platform, with
only public names."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import band_trio
from band_trio import HumanClient, LocalPlatform

Step = ModelResponse | Callable[[list[ModelMessage], AgentInfo], Any]


def respond(
    *parts: ModelResponsePart | str, usage: tuple[int, int] = (0, 0), thinking: str = ""
) -> ModelResponse:
    """A model response: strings become text parts."""
    made: list[ModelResponsePart] = [ThinkingPart(thinking)] if thinking else []
    made += [TextPart(p) if isinstance(p, str) else p for p in parts]
    return ModelResponse(
        parts=made, usage=RequestUsage(input_tokens=usage[0], output_tokens=usage[1])
    )


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, call_id)


class ScriptError(AssertionError):
    """The model was called more often than its script says."""


@attrs.define
class Script:
    """A scripted model: each request takes the next step (a response, or a
    function of the messages, sync or async); then ``default``, if any."""

    steps: list[Step] = attrs.field(factory=list)
    default: Step | None = None
    calls: list[list[ModelMessage]] = attrs.field(factory=list)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond)

    @property
    def exhausted(self) -> bool:
        return not self.steps

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(list(messages))
        if self.steps:
            step = self.steps.pop(0)
        elif self.default is not None:
            step = self.default
        else:
            raise ScriptError(f"model call {len(self.calls)} is not in the script")
        if isinstance(step, ModelResponse):
            return step
        value = step(messages, info)
        if inspect.isawaitable(value):
            value = await value
        assert isinstance(value, ModelResponse)
        return value


def prompts(messages: Sequence[ModelMessage]) -> list[str]:
    """Every user prompt text the model was shown, in order (lists flattened)."""
    texts: list[str] = []
    for message in messages:
        for part in message.parts:
            if getattr(part, "part_kind", None) != "user-prompt":
                continue
            content = part.content  # type: ignore[union-attr]
            texts.extend([content] if isinstance(content, str) else [str(c) for c in content])
    return texts


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
    join: Sequence[Room] = (),
    **config: Any,
) -> AsyncIterator[list[Room]]:
    """An agent serving ``rooms`` new rooms, or the rooms of ``join`` (again)."""
    creds = platform.agents[0]
    cfg = band_trio.AgentConfig(**{"max_attempts": 1, **config})
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        made = [Room(platform, human, r.room_id, creds.id, creds.handle) for r in join]
        for n in range(0 if join else rooms):
            room = await human.create_room(f"pydantic-ai e2e {n}")
            await human.add_participant(room["id"], creds.id)
            made.append(Room(platform, human, str(room["id"]), creds.id, creds.handle))
        async with band_trio.open_agent(
            adapter=adapter,
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=cfg,
        ):
            yield made


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Wait (real time) until ``predicate()`` is true, re-checking every few ms.

    Raises:
        trio.TooSlowError: it did not become true within ``within`` seconds.
    """
    with trio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - polling state spread over threads
            await trio.sleep(0.005)
