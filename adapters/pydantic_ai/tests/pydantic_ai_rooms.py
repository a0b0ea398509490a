"""Shared pieces of the PydanticAI adapter's end-to-end tests: a scripted
``FunctionModel``, and an agent serving rooms of the local platform
(:mod:`band_trio.testing.rooms`), with only public names."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs
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

from band_trio.testing.rooms import AgentRoom, agent_in_rooms, wait_until

__all__ = [
    "AgentRoom",
    "Script",
    "ScriptError",
    "agent_in_rooms",
    "bridge_threads",
    "call",
    "prompts",
    "respond",
    "wait_until",
]

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


def bridge_threads() -> list[threading.Thread]:
    """The asyncio bridge threads alive now."""
    return [t for t in threading.enumerate() if t.name.startswith("band-trio-asyncio")]
