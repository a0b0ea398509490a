"""The advanced pattern (a graph factory, a static graph), custom tools of
both kinds, thoughts, and the tool schemas the model is shown."""

from __future__ import annotations

import json
from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter, band_tools
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import (
    Capability,
    CustomTools,
    LocalPlatform,
    get_openai_tool_schemas,
)


def react_graph(model: ScriptedChatModel, tools: list[BaseTool]) -> Any:
    """A tool-calling graph built with LangGraph's own prebuilt ToolNode."""
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


def send(user_id: str, text: str, call_id: str) -> Any:
    return ai(tool_call("band_send_message", {"content": text, "mentions": [user_id]}, call_id))


async def test_a_graph_factory_is_compiled_once_per_room_and_keeps_its_thread(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel(
        [send(user_id, "one", "c1"), ai(text="ok"), send(user_id, "two", "c2"), ai(text="ok")]
    )
    built: list[list[str]] = []

    def factory(tools: list[BaseTool]) -> Any:
        built.append([t.name for t in tools])
        return react_graph(model, tools)

    adapter = LangGraphAdapter(graph_factory=factory)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("question one")
            await band_platform.wait_for(lambda: room.status(first) == "processed")
            second = await room.post("question two")
            await band_platform.wait_for(lambda: room.status(second) == "processed")

    assert len(built) == 1  # not once per turn
    assert built[0] == [s["function"]["name"] for s in get_openai_tool_schemas(capabilities=())]
    assert [m.content.split()[-1] for m in room.from_agent("text")] == ["one", "two"]
    results = room.events("tool_result")
    assert [r["tool_call_id"] for r in results] == ["c1", "c2"]  # the model's ids
    assert all(not r["output"].startswith("content=") for r in results)  # text, not a repr
    # The graph had no checkpointer: the adapter's in-memory one keeps the thread.
    third_call = model.calls[2].messages
    assert any("question one" in str(m.content) for m in third_call)


async def test_a_static_graph_with_band_tools(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel([send(user_id, "static", "s1"), ai(text="ok")])
    adapter = LangGraphAdapter(graph=react_graph(model, band_tools()))
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hi")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("static")


async def test_custom_tools_of_both_kinds_and_their_failures(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    custom = CustomTools()

    @custom.tool
    async def forecast(city: str) -> dict[str, Any]:
        """The weather forecast for a city.

        Args:
            city: The city name.
        """
        return {"city": city, "sky": "clear"}

    @tool
    def flaky(n: int) -> str:
        """A tool that fails."""
        raise RuntimeError(f"boom {n}")

    seen: list[Any] = []

    def finish(messages: list[Any], _tools: list[Any]) -> Any:
        seen.extend(m for m in messages if isinstance(m, ToolMessage))
        return send(user_id, "done", "c9")

    model = ScriptedChatModel(
        [
            ai(
                tool_call("forecast", {"city": "Lisbon"}, "t1"),
                tool_call("flaky", {"n": "not a number"}, "t2"),
                tool_call("flaky", {"n": 3}, "t3"),
                tool_call("nonexistent_tool", {}, "t4"),
            ),
            finish,
            ai(text="ok"),
        ]
    )
    adapter = LangGraphAdapter(model=model, custom_tools=custom, tools=[flaky])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("weather?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    offered = model.calls[0].tool_names
    assert offered[-2:] == ["forecast", "flaky"]
    results = {r["tool_call_id"]: r for r in room.events("tool_result")}
    assert results["t1"]["is_error"] is False
    assert json.loads(results["t1"]["output"]) == {"city": "Lisbon", "sky": "clear"}
    assert results["t2"]["is_error"] is True  # a validation error is an error too
    assert results["t3"]["is_error"] is True
    assert "boom 3" in results["t3"]["output"]
    assert results["t4"]["is_error"] is True
    assert "Unknown tool" in results["t4"]["output"]
    assert [m.tool_call_id for m in seen] == ["t1", "t2", "t3", "t4"]
    assert [m.status for m in seen] == ["success", "error", "error", "error"]
    calls = {c["tool_call_id"]: c for c in room.events("tool_call")}
    assert calls["t1"] == {"name": "forecast", "args": {"city": "Lisbon"}, "tool_call_id": "t1"}
    assert room.from_agent("text")[0].content.endswith("done")


async def test_thoughts_are_posted_where_the_model_gives_them(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel(
        [
            ai(
                tool_call("band_send_message", {"content": "hi", "mentions": [user_id]}, "c1"),
                reasoning="The user greets me; greet back.",
            ),
            ai(text="ok"),
        ]
    )
    with trio.fail_after(30):
        adapter = LangGraphAdapter(model=model)
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
    (thought,) = room.from_agent("thought")
    assert thought.content == "The user greets me; greet back."
    kinds = [m.message_type for m in room.from_agent()]
    assert kinds.index("thought") < kinds.index("tool_call")


async def test_the_model_is_shown_the_same_schemas_as_every_other_adapter(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel([send(user_id, "x", "c1"), ai(text="ok")])
    options: dict[str, Any] = {
        "capabilities": [Capability.MEMORY, Capability.TASKS],
        "exclude_tools": ["band_create_chatroom"],
    }
    adapter = LangGraphAdapter(model=model, emit=(), **options)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hi")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
    expected = get_openai_tool_schemas(**options)
    shown = list(model.calls[0].tools)
    assert [s["function"]["name"] for s in shown] == [s["function"]["name"] for s in expected]
    for got, want in zip(shown, expected, strict=True):
        assert got["function"]["description"] == want["function"]["description"]
        # LangChain leaves out the copy of the tool's description that our
        # schemas repeat at the top of "parameters"; everything else is equal.
        wanted = {k: v for k, v in want["function"]["parameters"].items() if k != "description"}
        assert got["function"]["parameters"] == wanted
    assert "band_create_chatroom" not in model.calls[0].tool_names
