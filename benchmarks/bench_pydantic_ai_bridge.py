"""The cost of running pydantic-ai under Trio: the asyncio bridge against plain asyncio.

A real ``pydantic_ai.Agent`` on a scripted ``FunctionModel`` runs N turns,
each making T tool calls (one model request per call, then a final answer),
in two ways:

* ``asyncio``: plain ``asyncio.run``; the tool's work is awaited in the same
  loop (the baseline: what pydantic-ai costs with no bridge at all);
* ``bridge``: band-trio-asyncio's ``AsyncioBridge`` (one asyncio loop in a
  worker thread) driven from ``trio.run``; each turn is a ``bridge.run`` and
  each tool call hops back to Trio through the turn's portal, as in
  ``PydanticAIAdapter``.

The tool's work awaits nothing, so the difference between the two is the
bridge. Wall time (``perf_counter``) and CPU time of every thread of the
process (``process_time``) are measured for both, in one run; the best of
``--repeat`` runs is kept. No network.

Usage::

    uv run python benchmarks/bench_pydantic_ai_bridge.py          # 1,000 turns, T = 0 and 2
    uv run python benchmarks/bench_pydantic_ai_bridge.py --turns 200 --tool-calls 0 1 4 \\
        --json benchmarks/results/pydantic-ai-bridge.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform as py_platform
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from band_trio_asyncio import AsyncioBridge, TrioPortal
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

Hop = Callable[[Callable[[], Awaitable[str]]], Awaitable[str]]


async def _work() -> str:
    return '{"ok": true}'


def make_agent(tool_calls: int) -> Agent[None, str]:
    """An agent whose model calls ``lookup`` ``tool_calls`` times, then answers."""

    def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages for p in m.parts if p.part_kind == "tool-return")
        if done >= tool_calls:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("lookup", {}, f"c{len(messages)}")])

    return Agent(FunctionModel(model))


def make_toolset(hop: list[Hop]) -> FunctionToolset[Any]:
    """One ``lookup`` tool whose work runs through ``hop[0]`` (set per turn)."""

    async def lookup() -> str:
        return await hop[0](_work)

    schema = {"type": "object", "properties": {}}
    return FunctionToolset([Tool.from_schema(lookup, "lookup", "Look up.", schema)])


def run_asyncio(turns: int, tool_calls: int) -> tuple[float, float]:
    agent = make_agent(tool_calls)

    async def direct(fn: Callable[[], Awaitable[str]]) -> str:
        return await fn()

    toolset = make_toolset([direct])

    async def main() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for n in range(turns):
            await agent.run(f"turn {n}", toolsets=[toolset])
        return time.perf_counter() - wall, time.process_time() - cpu

    return asyncio.run(main())


def run_bridge(turns: int, tool_calls: int) -> tuple[float, float]:
    agent = make_agent(tool_calls)
    hop: list[Hop] = []
    toolset = make_toolset(hop)

    async def main() -> tuple[float, float]:
        async with AsyncioBridge() as bridge:
            await bridge.start()
            wall, cpu = time.perf_counter(), time.process_time()
            for n in range(turns):

                async def body(portal: TrioPortal, n: int = n) -> None:
                    hop[:] = [portal.run]
                    await agent.run(f"turn {n}", toolsets=[toolset])

                await bridge.run(body)
            return time.perf_counter() - wall, time.process_time() - cpu

    return trio.run(main)


MODES: dict[str, Callable[[int, int], tuple[float, float]]] = {
    "asyncio": run_asyncio,
    "bridge": run_bridge,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--tool-calls", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the best is kept")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "python": py_platform.python_version(),
        "turns": args.turns,
        "per_turn_us": {},
        "ratio_to_asyncio": {},
    }
    for calls in args.tool_calls:
        row: dict[str, dict[str, float]] = {}
        for _ in range(args.repeat):
            # Interleaved, so a busy moment of a shared machine hits both modes.
            for mode, run in MODES.items():
                wall, cpu = run(args.turns, calls)
                best = row.setdefault(mode, {"wall": wall, "cpu": cpu})
                best["wall"], best["cpu"] = min(best["wall"], wall), min(best["cpu"], cpu)
        per_turn = {
            mode: {k: round(v / args.turns * 1e6, 1) for k, v in times.items()}
            for mode, times in row.items()
        }
        ratio = {k: round(row["bridge"][k] / row["asyncio"][k], 3) for k in ("wall", "cpu")}
        results["per_turn_us"][str(calls)] = per_turn
        results["ratio_to_asyncio"][str(calls)] = ratio
        print(
            f"T={calls}: asyncio {per_turn['asyncio']} us/turn, bridge {per_turn['bridge']} "
            f"us/turn; bridge/asyncio wall {ratio['wall']}x, CPU {ratio['cpu']}x"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
