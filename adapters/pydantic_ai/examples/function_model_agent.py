"""A pydantic-ai agent in a Band room, offline: the local platform, a
``FunctionModel`` and PydanticAIAdapter on Trio.

Run it with ``uv run python adapters/pydantic_ai/examples/function_model_agent.py``.
It starts an embedded Band platform, creates a room with you (the platform's
user) and the agent (``agent_in_rooms``), posts a question, and prints the
conversation once the agent has answered through ``band_send_message``. Swap
the ``FunctionModel`` for a real model (``Agent("anthropic:claude-sonnet-5-5")``,
with pydantic-ai's provider extra installed) and the local platform and its
room helper for ``band_trio.open_agent`` on the real one to run a real agent.
"""

from __future__ import annotations

import trio
from band_trio_pydantic_ai import PydanticAIAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from band_trio import open_local_platform
from band_trio.adapter import PromptSettings
from band_trio.testing.rooms import agent_in_rooms


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that answers the latest question through the Band tool."""
    latest = messages[-1].parts
    if any(isinstance(p, ToolReturnPart) for p in latest):  # the reply was posted
        return ModelResponse(
            parts=[TextPart("Done.")], usage=RequestUsage(input_tokens=40, output_tokens=2)
        )
    prompt = next(p for p in reversed(latest) if isinstance(p, UserPromptPart))
    content = prompt.content
    line = content if isinstance(content, str) else str(list(content)[-1])
    # The sender is labelled "[Name (@handle)]: ..."; greet by name, mention by handle.
    sender, _, question = line.removeprefix("[").partition("]: ")
    name, _, handle = sender.partition(" (@")
    reply = f"Hello {name}! You asked: {question}"
    mention = handle.removesuffix(")") or name
    call = ToolCallPart("band_send_message", {"content": reply, "mentions": [mention]})
    return ModelResponse(parts=[call], usage=RequestUsage(input_tokens=120, output_tokens=18))


async def main() -> list[str]:
    """Run the demo; the room's messages as ``"<sender>: <text>"`` lines."""
    async with open_local_platform(seed_demo=False) as platform:
        creds = platform.register_agent("PydanticAI", "Answers with a pydantic-ai agent.")
        adapter = PydanticAIAdapter(
            agent=Agent(FunctionModel(answer)),
            prompt=PromptSettings(custom_section="Answer briefly."),
        )
        async with agent_in_rooms(platform, adapter, agent=creds, title="PydanticAI demo") as [
            room
        ]:
            posted = await room.post("what is pydantic-ai?")
            with trio.fail_after(30):
                await room.settled(posted)
        return platform.transcript(room.room_id)


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
