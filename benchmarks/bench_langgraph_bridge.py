"""The cost of running LangGraph under Trio: the asyncio bridge against plain asyncio.

One small graph, the LangGraph adapter's own tool-calling agent graph
(``band_trio_langgraph.build_agent_graph``) with a scripted chat model, runs N
turns in three ways:

* ``asyncio``: plain ``asyncio.run``; the tools run in the same loop (the
  baseline: what the graph costs with no bridge at all);
* ``thread``: band-trio-asyncio's bridge (``AsyncioBridge``: one asyncio
  loop in a worker thread); each turn is a ``bridge.run`` from Trio and every
  tool call hops back to Trio through the turn's portal, as in the adapter;
* ``trio-asyncio``: the same graph inside ``trio_asyncio.open_loop()``;
  each turn is ``aio_as_trio`` and every tool call ``trio_as_aio``.

Each turn makes T tool calls (a model call per call, then a final answer), so
T=0 gives the per-turn overhead and the slope over T the per-tool-call
overhead. The tools object is a stand-in whose methods await nothing, so it
runs on either loop and costs the same everywhere: the difference between the
modes is the bridge. No network.

Usage::

    uv run python benchmarks/bench_langgraph_bridge.py               # 1,000 turns, T = 0 and 2
    uv run python benchmarks/bench_langgraph_bridge.py --turns 200 --tool-calls 0 1 4
    uv run python benchmarks/bench_langgraph_bridge.py --cpu   # CPU time of all threads

It also times the bridge alone (a run making trivial Trio calls, no LangGraph).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform as py_platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio
from band_trio_asyncio import AsyncioBridge
from band_trio_langgraph import build_agent_graph
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from band_trio_langgraph.tools import BandTool, TurnState
from langchain_core.messages import AIMessage, HumanMessage

from band_trio import (
    Emit,
    ToolResult,
)

_CLOCK = time.perf_counter


def _clock() -> float:
    return _CLOCK()


SEND = {
    "type": "function",
    "function": {
        "name": "band_send_message",
        "description": "Send a message.",
        "parameters": {
            "type": "object",
            "properties": {"content": {"type": "string"}, "mentions": {"type": "array"}},
            "required": ["content", "mentions"],
        },
    },
}


class QuietTools:
    """A tools object whose methods await nothing: the same cost on any loop."""

    async def execute_tool_call(
        self, name: str, args: Mapping[str, Any], *, custom_tools: Any = None
    ) -> ToolResult:
        return ToolResult.ok(name, {"id": "m-1", "status": "sent"})

    async def send_event(self, content: str, message_type: str, metadata: Any = None) -> None:
        return None

    async def send_message(self, content: str, mentions: Any) -> None:
        return None

    def get_tool_schemas(self, fmt: str, **kwargs: Any) -> list[dict[str, Any]]:
        return [SEND]


class DirectPortal:
    """The baseline's portal: calls the function in the same loop."""

    async def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        return await afn(*args)


def make_graph(tool_calls: int) -> Any:
    def step(messages: list[Any], _tools: list[Any]) -> AIMessage:
        done = sum(1 for m in messages if m.type == "tool")
        if done < tool_calls:
            args = {"content": "hi", "mentions": ["u"]}
            return ai(tool_call("band_send_message", args), usage=(10, 2))
        return ai(text="done", usage=(10, 1))

    model = ScriptedChatModel(default=step)
    return build_agent_graph(model, [BandTool.from_schema(SEND)], system_prompt="You are a bench.")


def turn_body(graph: Any, tools: QuietTools, n: int) -> Callable[[Any], Awaitable[None]]:
    async def body(portal: Any) -> None:
        TurnState(tools, portal, frozenset({Emit.TOOL_CALLS})).enter()  # type: ignore[arg-type]
        await graph.ainvoke({"messages": [HumanMessage(f"[bench]: turn {n}")]})

    return body


def run_asyncio(turns: int, tool_calls: int) -> float:
    graph, tools = make_graph(tool_calls), QuietTools()

    async def main() -> float:
        for n in range(20):  # warm-up
            await asyncio.get_running_loop().create_task(turn_body(graph, tools, n)(DirectPortal()))
        start = _clock()
        for n in range(turns):
            # A task per turn, as the adapter's bridge makes (fresh context).
            await asyncio.get_running_loop().create_task(turn_body(graph, tools, n)(DirectPortal()))
        return _clock() - start

    return asyncio.run(main())


def run_thread(turns: int, tool_calls: int) -> float:
    graph, tools = make_graph(tool_calls), QuietTools()

    async def main() -> float:
        async with AsyncioBridge() as bridge:
            for n in range(20):
                await bridge.run(turn_body(graph, tools, n))
            start = _clock()
            for n in range(turns):
                await bridge.run(turn_body(graph, tools, n))
            return _clock() - start

    return trio.run(main)


def run_trio_asyncio(turns: int, tool_calls: int) -> float:
    # Imported here only: importing trio_asyncio replaces asyncio's loop policy
    # for the whole process, which would slow the baseline down. Each mode runs
    # in its own process anyway.
    import trio_asyncio

    class TrioAsyncioPortal:
        async def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
            return await trio_asyncio.trio_as_aio(afn)(*args)

    graph, tools = make_graph(tool_calls), QuietTools()

    async def main() -> float:
        async with trio_asyncio.open_loop():
            portal = TrioAsyncioPortal()
            for n in range(20):
                await trio_asyncio.aio_as_trio(turn_body(graph, tools, n))(portal)
            start = _clock()
            for n in range(turns):
                await trio_asyncio.aio_as_trio(turn_body(graph, tools, n))(portal)
            return _clock() - start

    return trio.run(main)


def run_hops(turns: int, tool_calls: int) -> float:
    """The bridge alone: a run whose coroutine makes ``tool_calls`` trivial Trio calls."""

    async def noop() -> None:
        await trio.lowlevel.checkpoint()

    async def body(portal: Any) -> None:
        for _ in range(tool_calls):
            await portal.run(noop)

    async def main() -> float:
        async with AsyncioBridge() as bridge:
            for _ in range(20):
                await bridge.run(body)
            start = _clock()
            for _ in range(turns):
                await bridge.run(body)
            return _clock() - start

    return trio.run(main)


MODES: dict[str, Callable[[int, int], float]] = {
    "asyncio": run_asyncio,
    "thread": run_thread,
    "trio-asyncio": run_trio_asyncio,
}


ALL_MODES = {**MODES, "hops": run_hops}


def measure(mode: str, turns: int, tool_calls: int, cpu: bool) -> float:
    """Microseconds per turn of ``mode``, measured in a fresh Python process."""
    command = [sys.executable, __file__, "--one", mode, "--turns", str(turns)]
    command += ["--tool-calls", str(tool_calls)] + (["--cpu"] if cpu else [])
    out = subprocess.run(
        command,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", choices=sorted(ALL_MODES), help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="measure CPU time of the process (all threads) instead of wall time",
    )
    parser.add_argument("--tool-calls", type=int, nargs="+", default=[0, 2])
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="runs per mode; the best is kept (the median is written to --json too)",
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.cpu:
        global _CLOCK
        _CLOCK = time.process_time
    if args.one:
        print(ALL_MODES[args.one](args.turns, args.tool_calls[0]) / args.turns * 1e6)
        return

    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "machine": py_platform.machine(),
        "turns": args.turns,
        "repeat": args.repeat,
        "load_average_before": os.getloadavg(),
        "clock": "cpu" if args.cpu else "wall",
        "per_turn_us": {},
    }
    for calls in args.tool_calls:
        row: dict[str, float] = {}
        # Interleaved repeats, so a burst of load on the shared machine hits
        # every mode alike.
        samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(args.repeat):
            for mode in MODES:
                samples[mode].append(measure(mode, args.turns, calls, args.cpu))
        for mode in MODES:
            # The best run: on a shared machine, other jobs only ever add time.
            row[mode] = min(samples[mode])
        results.setdefault("median_per_turn_us", {})[str(calls)] = {
            mode: statistics.median(values) for mode, values in samples.items()
        }
        results["per_turn_us"][str(calls)] = row
        base = row["asyncio"]
        print(f"tool calls per turn: {calls}  ({args.turns} turns, best of {args.repeat})")
        for mode, value in row.items():
            print(f"  {mode:<13} {value:9.0f} us/turn   ratio {value / base:5.3f}x")

    if len(args.tool_calls) >= 2:
        lo, hi = min(args.tool_calls), max(args.tool_calls)
        per_call: dict[str, float] = {}
        print(f"overhead against asyncio (per turn at T={lo}; per tool call from T={lo}..{hi})")
        for mode in ("thread", "trio-asyncio"):
            low = results["per_turn_us"][str(lo)]
            high = results["per_turn_us"][str(hi)]
            turn_over = low[mode] - low["asyncio"]
            call_over = ((high[mode] - high["asyncio"]) - turn_over) / (hi - lo)
            per_call[mode] = call_over
            print(f"  {mode:<13} {turn_over:7.0f} us per turn  {call_over:7.0f} us per tool call")
        results["overhead_per_tool_call_us"] = per_call
        # The bridge alone, without LangGraph: what one run and one Trio call cost.
        hops = {
            str(calls): min(
                measure("hops", args.turns, calls, args.cpu) for _ in range(args.repeat)
            )
            for calls in (lo, hi)
        }
        per_hop = (hops[str(hi)] - hops[str(lo)]) / (hi - lo)
        results["bridge_alone_us"] = {"per_run": hops[str(lo)], "per_trio_call": per_hop}
        print(f"  bridge alone: {hops[str(lo)]:7.0f} us per run  {per_hop:7.0f} us per Trio call")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
