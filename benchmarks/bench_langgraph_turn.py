"""Where the CPU of one LangGraph turn goes: the graph, its checkpoints, the bridge, the events.

One room, one message per turn, answered through ``band_send_message`` by
the user's own graph (``StateGraph`` over ``MessagesState`` with the stock
``ToolNode`` and ``tools_condition``, a scripted chat model), as in
``bench_langgraph_memory.py``. The same turns run four ways, each keeping
its own room across the run, the thread bounded to the adapter's default
``max_thread_messages`` (200) the adapter's way (``trim_plan``):

* ``graph``: the graph compiled without a checkpointer, under plain
  ``asyncio.run``, with tools that await nothing (``bench_langgraph_bridge``); the conversation kept in a list and given whole each turn
  (what LangGraph itself costs for the turn);
* ``checkpointed``: the graph compiled with the adapter's default
  checkpointer (``LatestCheckpointSaver``), plain ``asyncio.run``, the
  thread continued each turn (``checkpointed - graph``: the checkpoints);
* ``adapter-quiet``: ``LangGraphAdapter.on_message`` on the asyncio bridge
  from Trio, with the test kit's ``FakeAgentTools`` and ``emit=()``
  (``adapter-quiet - checkpointed``: the bridge and the adapter's own work);
* ``adapter``: the same with the default events (tool calls, usage,
  thoughts) (``adapter - adapter-quiet``: the events).

The room first reaches ``--history`` messages; then rounds of ``--round``
turns run each way in turn (the order alternates), and the median CPU per
turn (process time, every thread) of each way is reported with the median
difference between neighbours. No network.

Usage::

    uv run python benchmarks/bench_langgraph_turn.py [--turns 400] [--history 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform as py_platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig, LatestCheckpointSaver
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from band_trio_langgraph.thread_memory import trim_plan
from band_trio_langgraph.tools import TurnState
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools

sys.path.insert(0, str(Path(__file__).parent))

import bench_langgraph_bridge as lg  # the benchmarks directory, just added

MESSAGE = "question {n}: " + "please look into this and tell me what you think " * 6
REPLY = "here is what I think about it, in a few sentences of ordinary length. " * 4
BUDGET = LangGraphAdapterConfig().max_thread_messages or 200


def make_model() -> ScriptedChatModel:
    def step(messages: list[Any], _tools: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return ai(text="sent", usage=(100, 2))
        args = {"content": REPLY, "mentions": ["user-1"]}
        return ai(tool_call("band_send_message", args, f"c{len(messages)}"), usage=(100, 40))

    return ScriptedChatModel(default=step)


def user_graph(model: ScriptedChatModel, tools: list[BaseTool], checkpointer: Any = None) -> Any:
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def band_tools_for(adapter: LangGraphAdapter) -> list[BaseTool]:
    """The Band tools the adapter gives a graph factory (captured once)."""
    captured: list[list[BaseTool]] = []

    def factory(tools: list[BaseTool]) -> Any:
        captured.append(tools)
        return user_graph(make_model(), tools)

    probe = LangGraphAdapter(graph_factory=factory)

    async def main() -> None:
        await probe.on_started("Bench", "A scripted agent.")
        await probe.on_message(
            PlatformMessage("m", "room", "hi", "user-1", "User", "Ann"),
            FakeAgentTools(room_id="room"), [], None, None,
            is_session_bootstrap=False, room_id="room",
        )  # fmt: skip
        await probe.aclose()

    trio.run(main)
    return captured[0]


def message(n: int) -> PlatformMessage:
    return PlatformMessage(f"m{n}", "room", MESSAGE.format(n=n), "user-1", "User", "Ann")


class Way:
    """One way to run a turn, keeping its room between rounds."""

    def round(self, first: int, turns: int) -> float:
        """CPU seconds per turn of turns ``first .. first + turns``."""
        raise NotImplementedError


class PlainGraph(Way):
    def __init__(self, tools: list[BaseTool], checkpointed: bool) -> None:
        self.model = make_model()
        self.saver = LatestCheckpointSaver() if checkpointed else None
        self.graph = user_graph(self.model, tools, self.saver)
        self.kept: list[BaseMessage] = []
        self.trims: list[Any] = []

    def round(self, first: int, turns: int) -> float:
        async def main() -> float:
            # The Band tools need a turn state: tools that await nothing, so
            # they run on asyncio as they are, called directly.
            tools = lg.QuietTools()
            cpu = time.process_time()
            for n in range(first, first + turns):
                TurnState(tools, lg.DirectPortal(), frozenset()).enter()  # type: ignore[arg-type]
                await asyncio.get_running_loop().create_task(self.turn(n))
                self.model._calls.clear()
            return (time.process_time() - cpu) / turns

        return asyncio.run(main())

    async def turn(self, n: int) -> None:
        new = HumanMessage(content=f"[Ann]: {MESSAGE.format(n=n)}", id=f"band-m{n}")
        if self.saver is None:
            result = await self.graph.ainvoke({"messages": [*self.kept, new]})
            kept = result["messages"]
            plan = trim_plan(kept, BUDGET)
            drop = {r.id for r in plan}
            self.kept = [m for m in kept if m.id not in drop]
            return
        config = {"configurable": {"thread_id": "room"}}
        result = await self.graph.ainvoke({"messages": [*self.trims, new]}, config)
        self.trims = trim_plan(result["messages"], BUDGET)


class AdapterWay(Way):
    def __init__(self, emit: bool) -> None:
        self.model = make_model()
        options: dict[str, Any] = {} if emit else {"emit": ()}
        self.adapter = LangGraphAdapter(
            graph_factory=lambda tools: user_graph(self.model, tools), **options
        )
        self.started = False

    def round(self, first: int, turns: int) -> float:
        async def main() -> float:
            if not self.started:
                await self.adapter.on_started("Bench", "A scripted agent.")
                self.started = True
            else:
                await self.adapter.bridge.start()
            cpu = time.process_time()
            for n in range(first, first + turns):
                await self.adapter.on_message(
                    message(n), FakeAgentTools(room_id="room"), [], None, None,
                    is_session_bootstrap=False, room_id="room",
                )  # fmt: skip
                self.model._calls.clear()
            spent = (time.process_time() - cpu) / turns
            # The bridge's loop belongs to one Trio run: closed here, started
            # again (a new thread) by the next round, outside the timing.
            await self.adapter.bridge.aclose()
            return spent

        return trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="timed turns per way")
    parser.add_argument("--round", type=int, default=20)
    parser.add_argument("--history", type=int, default=200, help="messages before timing")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    tools = band_tools_for(LangGraphAdapter(model=make_model()))
    ways: dict[str, Way] = {
        "graph": PlainGraph(tools, checkpointed=False),
        "checkpointed": PlainGraph(tools, checkpointed=True),
        "adapter-quiet": AdapterWay(emit=False),
        "adapter": AdapterWay(emit=True),
    }
    warm = -(-args.history // 3)  # three messages a turn
    for way in ways.values():
        way.round(-warm, warm)
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for index, first in enumerate(range(0, args.turns, args.round)):
        order = list(ways) if index % 2 == 0 else list(reversed(ways))
        for name in order:
            samples[name].append(ways[name].round(first, args.round))
    per_turn = {name: round(statistics.median(v) * 1e3, 3) for name, v in samples.items()}
    names = list(ways)
    steps = {
        f"{b} - {a}": round(
            statistics.median(y - x for x, y in zip(samples[a], samples[b], strict=True)) * 1e3, 3
        )
        for a, b in itertools.pairwise(names)
    }
    results = {
        "python": py_platform.python_version(),
        "turns": args.turns,
        "round": args.round,
        "history": args.history,
        "load_average": os.getloadavg(),
        "cpu_ms_per_turn": per_turn,
        "differences_ms": steps,
    }
    for name, value in per_turn.items():
        print(f"{name:<14} {value:8.3f} ms CPU/turn")
    for name, value in steps.items():
        print(f"  {name:<30} {value:+8.3f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
