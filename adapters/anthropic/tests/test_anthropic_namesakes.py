"""Two people of one display name in a room: the model is shown each sender's
unique handle, so its reply mentions the one who asked, and only them (the
local Messages API stub, the real anthropic client, a real agent)."""

from __future__ import annotations

from typing import Any

import anthropic
import trio
from anthropic_stub import AnthropicStub, Reply, message, text, tool_use
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms, latest_sender_mention

NAMESAKES = [("Sam", "sam-a"), ("Sam", "sam-b")]


def user_text(body: dict[str, Any]) -> str:
    """Every text block of the user messages of a request, in order."""
    lines: list[str] = []
    for m in body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        lines += [b["text"] for b in blocks if b.get("type") == "text"]
    return "\n".join(lines)


def answer_the_asker(body: dict[str, Any]) -> Reply:
    """Mention whoever wrote the latest line, as the model was shown them."""
    asker = latest_sender_mention(user_text(body))
    assert asker is not None
    args = {"content": f"Your answer, {asker}.", "mentions": [asker]}
    return message(tool_use(f"toolu_{len(body['messages'])}", "band_send_message", args))


async def test_the_reply_mentions_the_namesake_who_asked(
    band_platform: LocalPlatform,
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    done = message(text("Answered."))
    anthropic_stub.push(answer_the_asker, done, answer_the_asker, done)
    config = AnthropicAdapterConfig(model="claude-test", allow_unknown_model=True)
    adapter = AnthropicAdapter(config, client=anthropic_client)
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
    assert not anthropic_stub.exhausted
