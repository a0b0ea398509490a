"""Two people of one display name in a room: the model is shown each sender's
unique handle, so its reply mentions the one who asked, and only them."""

from __future__ import annotations

import trio
from band_trio_pydantic_ai import PydanticAIAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai_rooms import Script, agent_in_rooms, call, prompts, respond

from band_trio import LocalPlatform
from band_trio.testing.rooms import latest_sender_mention

NAMESAKES = [("Sam", "sam-a"), ("Sam", "sam-b")]


def answer_the_asker(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
    """Mention whoever wrote the latest line, as the model was shown them."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        return respond("done")
    asker = latest_sender_mention("\n".join(prompts(messages)))
    assert asker is not None
    args = {"content": f"Your answer, {asker}.", "mentions": [asker]}
    return respond(call("band_send_message", args, f"c{len(messages)}"))


async def test_the_reply_mentions_the_namesake_who_asked(band_platform: LocalPlatform) -> None:
    adapter = PydanticAIAdapter(agent=Agent(Script(default=answer_the_asker).model))
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, people=NAMESAKES) as (room,):
            # The second one asks first: "the first Sam of the roster" is wrong.
            second = await room.post("what is my number?", by="sam-b")
            await band_platform.wait_for(lambda: room.is_settled(second))
            first = await room.post("and mine?", by="sam-a")
            await band_platform.wait_for(lambda: room.is_settled(first))

    assert (room.status(second), room.status(first)) == ("processed", "processed")
    to_b, to_a = room.from_agent("text")
    assert room.mentioned_ids(to_b) == [room.people["sam-b"][0].id]
    assert room.mentioned_ids(to_a) == [room.people["sam-a"][0].id]
