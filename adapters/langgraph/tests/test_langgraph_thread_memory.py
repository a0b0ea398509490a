"""What a room's thread keeps: the default checkpointer stores one checkpoint
per thread, and the thread keeps at most ``max_thread_messages`` messages, so
a room's memory stays bounded however long it runs."""

from __future__ import annotations

from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from band_trio_langgraph.thread_memory import trim_plan
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools

ROOM = "room-1"


def stored_bytes(saver: InMemorySaver) -> int:
    """Everything an in-memory saver holds, serialized."""
    total = sum(len(blob) for _, blob in saver.blobs.values())
    for namespaces in saver.storage.values():
        for checkpoints in namespaces.values():
            total += sum(len(c[0][1]) + len(c[1][1]) for c in checkpoints.values())
    for writes in saver.writes.values():
        total += sum(len(w[2][1]) for w in writes.values())
    return total


def react_factory(model: ScriptedChatModel) -> Any:
    """A user's own graph: ``StateGraph`` with the stock ``ToolNode`` and
    ``tools_condition``, compiled without a checkpointer."""

    def factory(tools: list[BaseTool]) -> Any:
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

    return factory


def replying_model() -> ScriptedChatModel:
    def step(messages: list[Any], _tools: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return ai(text="done")
        args = {"content": "a reply of some length " * 10, "mentions": ["user-1"]}
        return ai(tool_call("band_send_message", args, f"c{len(messages)}"))

    return ScriptedChatModel(default=step)


async def run_turns(adapter: LangGraphAdapter, first: int, count: int) -> None:
    for n in range(first, first + count):
        msg = PlatformMessage(
            f"m{n}", ROOM, f"question {n} " + "words " * 40, "user-1", "User", "Alice"
        )
        await adapter.on_message(
            msg, FakeAgentTools(room_id=ROOM), [], None, None,
            is_session_bootstrap=False, room_id=ROOM,
        )  # fmt: skip


async def test_the_default_checkpointer_keeps_a_room_bounded() -> None:
    model = replying_model()
    adapter = LangGraphAdapter(
        LangGraphAdapterConfig(max_thread_messages=20), graph_factory=react_factory(model)
    )
    await adapter.on_started("Bench", "A scripted agent.")
    try:
        with trio.fail_after(60):
            await run_turns(adapter, 0, 20)
            saver = adapter.checkpointer
            assert isinstance(saver, InMemorySaver)
            after_20 = stored_bytes(saver)
            await run_turns(adapter, 20, 40)
            after_60 = stored_bytes(saver)
    finally:
        await adapter.aclose()
    # Each turn stores four messages; the thread keeps at most 20 plus a turn.
    assert after_60 <= after_20 * 1.2
    assert sum(len(c) for ns in saver.storage.values() for c in ns.values()) == 1
    last_call = model.calls[-1].messages
    assert len(last_call) <= 20 + 4
    assert isinstance(last_call[0], HumanMessage)
    assert "question 59" in str(last_call[-3].content)


async def test_max_thread_messages_none_keeps_every_message() -> None:
    model = replying_model()
    adapter = LangGraphAdapter(
        LangGraphAdapterConfig(max_thread_messages=None), graph_factory=react_factory(model)
    )
    await adapter.on_started("Bench", "A scripted agent.")
    try:
        with trio.fail_after(60):
            await run_turns(adapter, 0, 12)
    finally:
        await adapter.aclose()
    assert len(model.calls[-1].messages) == 12 * 4 - 1


def test_a_trim_cuts_before_a_human_message_and_keeps_the_system_prompt() -> None:
    def turn(n: int) -> list[Any]:
        call = {"name": "band_send_message", "args": {}, "id": f"c{n}"}
        return [
            HumanMessage(f"q{n}", id=f"h{n}"),
            AIMessage("", tool_calls=[call], id=f"a{n}"),
            ToolMessage("ok", tool_call_id=f"c{n}", id=f"t{n}"),
            AIMessage("done", id=f"d{n}"),
        ]

    thread = [SystemMessage("prompt", id="sys"), *turn(0), *turn(1), *turn(2)]
    removed = [m.id for m in trim_plan(thread, 6)]
    # 13 messages, at most 6 kept: the cut lands on h2 (4 kept), never on a
    # tool result; the system prompt stays.
    assert removed == ["h0", "a0", "t0", "d0", "h1", "a1", "t1", "d1"]
    assert trim_plan(thread, 13) == []
    assert trim_plan(turn(0) * 1, 2) == []  # no human message to cut at
