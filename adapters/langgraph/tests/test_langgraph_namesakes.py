"""Two people of one display name in a room: the model is shown each sender's
unique handle, so its reply mentions the one who asked, and only them; with
the adapter's own graph and with a user's ``StateGraph`` built on the stock
``ToolNode`` and ``tools_condition``."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from band_trio_langgraph import LangGraphAdapter, band_tools
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import LocalPlatform
from band_trio.testing.rooms import latest_sender_mention

NAMESAKES = [("Sam", "sam-a"), ("Sam", "sam-b")]


def answer_the_asker(messages: list[Any], _tools: list[Any]) -> Any:
    """Mention whoever wrote the latest line, as the model was shown them."""
    if messages[-1].type == "tool":
        return ai(text="done")
    shown = "\n".join(str(m.content) for m in messages if m.type == "human")
    asker = latest_sender_mention(shown)
    assert asker is not None
    args = {"content": f"Your answer, {asker}.", "mentions": [asker]}
    return ai(tool_call("band_send_message", args, f"c{len(messages)}"))


def own_graph(model: ScriptedChatModel, tools: list[BaseTool]) -> Any:
    """A user's graph: LangGraph's prebuilt ToolNode and tools_condition."""
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


@pytest.mark.parametrize("pattern", ["adapter graph", "own StateGraph"])
async def test_the_reply_mentions_the_namesake_who_asked(
    band_platform: LocalPlatform, pattern: str
) -> None:
    model = ScriptedChatModel(default=answer_the_asker)
    if pattern == "adapter graph":
        adapter = LangGraphAdapter(model=model)
    else:
        adapter = LangGraphAdapter(graph=own_graph(model, band_tools()))
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
