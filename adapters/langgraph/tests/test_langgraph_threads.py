"""Synchronous nodes and the threads they run on.

LangGraph runs synchronous nodes and edge functions (``tools_condition``
included) on the asyncio loop's default executor, which is the bridge's own
(see band_trio_asyncio): rooms whose nodes block do not starve a quiet room,
and a node that never returns holds neither ``serve`` nor process exit.

Threads run in real time: real clock, ``trio.fail_after`` bounds, waits on
observable state (thread events, the platform, a child's output)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from band_trio_langgraph import LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import HumanClient, LocalPlatform

BLOCKING_AGENT = Path(__file__).parent / "blocking_node_agent.py"


async def test_rooms_blocked_in_sync_nodes_do_not_starve_a_quiet_room(
    band_platform: LocalPlatform,
) -> None:
    """Seven rooms block in a synchronous node (more than asyncio's default
    executor has threads on a small machine); an eighth room, whose graph
    needs the executor for a quick synchronous node and ``tools_condition``,
    still answers while they block."""
    user_id = band_platform.user.id
    release = threading.Event()
    lock = threading.Lock()
    blocked = 0
    all_blocked = threading.Event()

    def gate(state: MessagesState) -> dict[str, Any]:
        nonlocal blocked
        if "block" in str(state["messages"][-1].content):
            with lock:
                blocked += 1
                if blocked == 7:
                    all_blocked.set()
            release.wait()
        return {}

    def step(messages: list[Any], _tools: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return ai(text="done")
        args = {"content": "answered", "mentions": [user_id]}
        return ai(tool_call("band_send_message", args, "q1"))

    model = ScriptedChatModel(default=step)

    def factory(tools: list[BaseTool]) -> Any:
        bound = model.bind_tools(tools)

        async def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await bound.ainvoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("gate", gate)
        builder.add_node("agent", agent)
        builder.add_node("tools", ToolNode(tools))
        builder.add_edge(START, "gate")
        builder.add_edge("gate", "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        return builder.compile()

    adapter = LangGraphAdapter(graph_factory=factory)
    try:
        async with agent_in_rooms(band_platform, adapter, rooms=8) as rooms:
            *busy, quiet = rooms
            for room in busy:
                await room.post("block")
            with trio.fail_after(30):
                await trio.to_thread.run_sync(all_blocked.wait, abandon_on_cancel=True)
                asked = await quiet.post("a quick question")
                await band_platform.wait_for(lambda: quiet.status(asked) == "processed")
            assert [m.content.split()[-1] for m in quiet.from_agent("text")] == ["answered"]
            assert not any(room.from_agent("text") for room in busy)
            assert adapter.statistics().bridge.stuck_threads >= 1
            release.set()
    finally:
        release.set()


@pytest.mark.slow
async def test_an_agent_with_a_node_that_never_returns_exits_on_a_second_sigint(
    band_platform: LocalPlatform,
) -> None:
    """A real agent process (``trio.run(agent.serve)``) whose turn blocks for
    good in a synchronous node: the first SIGINT starts the graceful drain,
    the second cancels the turn, and the process exits; no thread holds it."""
    creds = band_platform.agents[0]
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as human:
        room = await human.create_room("blocking node")
        await human.add_participant(room["id"], creds.id)
        await human.post_message(room["id"], f"@{creds.handle} block", [creds.handle])
    command = [
        sys.executable,
        str(BLOCKING_AGENT),
        creds.id,
        creds.api_key,
        band_platform.rest_url,
        band_platform.ws_url,
    ]
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        stdout = process.stdout
        assert stdout is not None
        out = bytearray()

        async def read_until(marker: bytes) -> None:
            while marker not in out:
                chunk = await stdout.receive_some()
                assert chunk, f"the agent ended before printing {marker!r}"
                out.extend(chunk)

        with trio.fail_after(60):
            await read_until(b"blocked")
        with trio.fail_after(20):
            process.send_signal(signal.SIGINT)
            await read_until(b"shutting down")  # the first one was handled
            process.send_signal(signal.SIGINT)
            code = await process.wait()
        assert code == 0  # serve returned: a shutdown asked for by signals
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
