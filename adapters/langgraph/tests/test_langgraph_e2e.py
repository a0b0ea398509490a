"""End to end: the local Band platform, a real band-trio agent running
LangGraphAdapter with a scripted chat model, both patterns."""

from __future__ import annotations

import json

import trio
from helpers import agent_in_rooms, bridge_threads

from band_trio.local import LocalPlatform
from band_trio_langgraph import LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call


async def test_simple_pattern_replies_through_send_message(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel(
        [
            ai(
                tool_call("band_send_message", {"content": "4.", "mentions": [user_id]}, "c1"),
                usage=(100, 20),
            ),
            ai(text="Answered.", usage=(130, 5), cache=(40, 0)),
        ]
    )
    adapter = LangGraphAdapter(model=model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("what is 2+2?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)

    (reply,) = room.from_agent("text")
    assert reply.content.endswith("4.")
    assert [m.message_type for m in room.from_agent()] == ["tool_call", "text", "tool_result", "task"]
    (call,) = room.events("tool_call")
    assert call == {"name": "band_send_message", "args": {"content": "4.", "mentions": [user_id]}, "tool_call_id": "c1"}
    (result,) = room.events("tool_result")
    assert result["tool_call_id"] == "c1" and result["is_error"] is False
    assert json.loads(result["output"])["id"] == reply.id
    usage = room.from_agent("task")[0].metadata["band_usage"]
    assert usage == {"input_tokens": 230, "output_tokens": 25, "cache_read_tokens": 40, "cache_write_tokens": 0}
    assert model.exhausted
    assert bridge_threads() == []
