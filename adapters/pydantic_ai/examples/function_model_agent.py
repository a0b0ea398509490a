"""A pydantic-ai agent in a Band room, offline: the local platform, a
``FunctionModel`` and PydanticAIAdapter on Trio.

Run it with ``uv run python adapters/pydantic_ai/examples/function_model_agent.py``.
It starts an embedded Band platform, creates a room with you (the platform's
user) and the agent, posts a question, and prints the conversation once the
agent has answered through ``band_send_message``. Swap the ``FunctionModel``
for a real model (``Agent("anthropic:claude-sonnet-5-5")``, with
pydantic-ai's provider extra installed) and the local platform for the real
one to run a real agent.
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

import band_trio
from band_trio import HumanClient, open_local_platform
from band_trio.adapter import PromptSettings


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
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room = await human.create_room("PydanticAI demo")
            await human.add_participant(room["id"], creds.id)
            async with band_trio.open_agent(
                adapter=adapter,
                agent_id=creds.id,
                api_key=creds.api_key,
                rest_url=platform.rest_url,
                ws_url=platform.ws_url,
                config=band_trio.AgentConfig(state_dir=None),
            ):
                sent = await human.post_message(
                    room["id"], f"@{creds.handle} what is pydantic-ai?", [creds.handle]
                )
                state = platform.state.rooms[room["id"]]

                def answered() -> bool:
                    delivery = state.by_id[sent["id"]].deliveries.get(creds.id)
                    return delivery is not None and str(delivery.status) == "processed"

                with trio.fail_after(30):
                    await platform.wait_for(answered)
        return platform.transcript(room["id"])


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
