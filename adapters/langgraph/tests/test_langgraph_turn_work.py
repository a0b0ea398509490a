"""What a turn costs only when it is needed: the adapter's callback handler
(usage, thoughts) is attached only when those posts are on (LangChain runs
its callback machinery for every runnable of the graph while a handler is
attached), and the default checkpointer, which keeps a thread's latest
checkpoint only, is given that one alone, not one per super-step."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from band_trio_langgraph import LangGraphAdapter, LatestCheckpointSaver
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import Emit, LocalPlatform


def user_graph(model: ScriptedChatModel, tools: list[BaseTool], agent: Any = None) -> Any:
    """A user's graph: the stock ToolNode and tools_condition."""
    bound = model.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent or call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def reply(user_id: str, call_id: str) -> Any:
    args = {"content": "hi", "mentions": [user_id]}
    return ai(tool_call("band_send_message", args, call_id), usage=(10, 2))


@pytest.mark.parametrize(
    ("emit", "handlers"),
    [((Emit.TOOL_CALLS,), 0), ((), 0), ((Emit.USAGE,), 1), ((Emit.THOUGHTS,), 1)],
)
async def test_a_handler_only_when_usage_or_thoughts_are_posted(
    band_platform: LocalPlatform, emit: tuple[Emit, ...], handlers: int
) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel([reply(user_id, "c1"), ai(text="done", usage=(10, 1))])
    seen: list[int] = []

    def factory(tools: list[BaseTool]) -> Any:
        bound = model.bind_tools(tools)

        async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            manager = config.get("callbacks")
            found = manager.handlers if hasattr(manager, "handlers") else manager
            seen.append(len(found or []))
            return {"messages": [await bound.ainvoke(state["messages"], config)]}

        return user_graph(model, tools, agent)

    adapter = LangGraphAdapter(graph_factory=factory, emit=emit)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.is_settled(posted))

    assert room.status(posted) == "processed"
    assert seen == [handlers, handlers]
    if Emit.USAGE in emit:
        assert room.from_agent("task")  # the handler still sums usage


class CountingSaver(LatestCheckpointSaver):
    def __init__(self) -> None:
        super().__init__()
        self.puts = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.puts += 1
        return super().put(*args, **kwargs)


async def test_the_latest_checkpoint_saver_stores_one_checkpoint_a_turn(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel(
        [reply(user_id, "c1"), ai(text="done"), reply(user_id, "c2"), ai(text="done")]
    )
    saver = CountingSaver()
    adapter = LangGraphAdapter(
        graph_factory=lambda tools: user_graph(model, tools), checkpointer=saver
    )
    puts: list[int] = []
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("one")
            await band_platform.wait_for(lambda: room.is_settled(first))
            puts.append(saver.puts)
            second = await room.post("two")
            await band_platform.wait_for(lambda: room.is_settled(second))
            puts.append(saver.puts - puts[0])

    assert (room.status(first), room.status(second)) == ("processed", "processed")
    # Four super-steps a turn (input, model, tools, model): one checkpoint.
    assert puts == [1, 1]
    assert saver.checkpoint_count() == 1
    # The thread goes on: the second turn's model call saw the first turn.
    shown: list[BaseMessage] = model.calls[2].messages
    assert any("one" in str(m.content) for m in shown)
    assert [c["tool_call_id"] for c in room.events("tool_call")] == ["c1", "c2"]
    assert len(room.from_agent("text")) == 2
