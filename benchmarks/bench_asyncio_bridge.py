"""What the asyncio bridge costs: LangGraph and pydantic-ai on it against plain asyncio.

Both asyncio frameworks band-trio ships an adapter for run the same scripted
turns two ways, side by side in one process:

* ``asyncio``: plain ``asyncio.run`` in the main thread, the tools' work
  awaited in the same loop (the baseline: the framework with no bridge);
* ``bridge``: band-trio-asyncio's ``AsyncioBridge`` driven from ``trio.run``
  in the main thread; each turn is a ``bridge.run`` and each tool call hops
  back to Trio through the turn's portal, as in the adapters.

The frameworks: ``langgraph`` (the LangGraph adapter's agent graph,
``build_agent_graph``, with a scripted chat model; the graph of
``bench_langgraph_bridge.py``) and ``pydantic-ai`` (a real ``Agent`` on a
scripted ``FunctionModel``; the agent of ``bench_pydantic_ai_bridge.py``).
Each turn makes T tool calls (a model call each, then a final answer). No
network.

A shared machine makes single runs useless for ratios, so the turns are cut
into rounds: each round runs ``--round`` turns of one side, then of the
other (the order alternates between rounds), and the ratio of the two is
taken per round; the report gives the median ratio and the median per-turn
cost of each side, for wall time and for CPU time of the whole process (every
thread: the bridge's loop thread and executor included). A burst of load
then hits both sides of a round alike, and the median drops the rounds it
spoiled anyway.

Usage::

    uv run python benchmarks/bench_asyncio_bridge.py            # 1,000 turns a side, T = 0 and 2
    uv run python benchmarks/bench_asyncio_bridge.py --turns 400 --round 50 \\
        --frameworks pydantic-ai --json benchmarks/results/asyncio-bridge.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform as py_platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from band_trio_asyncio import AsyncioBridge, TrioPortal

sys.path.insert(0, str(Path(__file__).parent))

import bench_langgraph_bridge as lg  # the benchmarks directory, just added
import bench_pydantic_ai_bridge as pai

Body = Callable[[Any, int], Awaitable[None]]
"""One turn: ``body(portal, n)``, run on an asyncio loop."""


def langgraph_turn(tool_calls: int) -> Body:
    graph, tools = lg.make_graph(tool_calls), lg.QuietTools()

    async def body(portal: Any, n: int) -> None:
        await lg.turn_body(graph, tools, n)(portal)

    return body


def pydantic_ai_turn(tool_calls: int) -> Body:
    agent = pai.make_agent(tool_calls)
    hop: list[pai.Hop] = []
    toolset = pai.make_toolset(hop)

    async def body(portal: Any, n: int) -> None:
        hop[:] = [portal.run]
        await agent.run(f"turn {n}", toolsets=[toolset])

    return body


FRAMEWORKS: dict[str, Callable[[int], Body]] = {
    "langgraph": langgraph_turn,
    "pydantic-ai": pydantic_ai_turn,
}


class DirectPortal:
    """The baseline's portal: calls the function in the same loop."""

    async def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        return await afn(*args)


def asyncio_round(body: Body, first: int, turns: int) -> tuple[float, float]:
    """``turns`` turns on a fresh ``asyncio.run`` loop: (wall, CPU) seconds."""

    async def main() -> tuple[float, float]:
        loop, portal = asyncio.get_running_loop(), DirectPortal()
        await loop.create_task(body(portal, -1))  # the loop's first-turn costs
        wall, cpu = time.perf_counter(), time.process_time()
        for n in range(first, first + turns):
            # A task per turn, as the bridge makes one (fresh context).
            await loop.create_task(body(portal, n))
        return time.perf_counter() - wall, time.process_time() - cpu

    return asyncio.run(main())


def bridge_round(body: Body, first: int, turns: int) -> tuple[float, float]:
    """``turns`` turns through a bridge on a fresh ``trio.run``: (wall, CPU) seconds."""

    async def main() -> tuple[float, float]:
        async with AsyncioBridge() as bridge:
            await bridge.start()
            await bridge.run(lambda portal: body(portal, -1))  # the loop's first-turn costs
            wall, cpu = time.perf_counter(), time.process_time()
            for n in range(first, first + turns):

                async def run(portal: TrioPortal, n: int = n) -> None:
                    await body(portal, n)

                await bridge.run(run)
            return time.perf_counter() - wall, time.process_time() - cpu

    return trio.run(main)


ROUNDS: dict[str, Callable[[Body, int, int], tuple[float, float]]] = {
    "asyncio": asyncio_round,
    "bridge": bridge_round,
}


def measure(body: Body, turns: int, per_round: int) -> dict[str, Any]:
    """Interleaved rounds of both sides; medians per turn and of the ratios.

    Each round runs in a loop of its own (``asyncio.run``, ``trio.run``) in
    the main thread, one after the other: never one inside the other, which
    would let a library that asks which async library runs (``sniffio``)
    answer for the wrong one.
    """
    samples: dict[str, list[tuple[float, float]]] = {"asyncio": [], "bridge": []}
    for side in ROUNDS:
        ROUNDS[side](body, 0, 20)  # warm-up: imports, caches
    for index, first in enumerate(range(0, turns, per_round)):
        count = min(per_round, turns - first)
        order = list(ROUNDS) if index % 2 == 0 else list(reversed(ROUNDS))
        for side in order:
            wall, cpu = ROUNDS[side](body, first, count)
            samples[side].append((wall / count, cpu / count))
    out: dict[str, Any] = {"rounds": len(samples["asyncio"]), "per_turn_us": {}, "ratio": {}}
    for k, clock in enumerate(("wall", "cpu")):
        for side, values in samples.items():
            out["per_turn_us"].setdefault(side, {})[clock] = round(
                statistics.median(v[k] for v in values) * 1e6, 1
            )
        ratios = sorted(
            b[k] / a[k] for a, b in zip(samples["asyncio"], samples["bridge"], strict=True)
        )
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        out["ratio"][clock] = {
            "median": round(statistics.median(ratios), 3),
            "q1": round(quartiles[0], 3),
            "q3": round(quartiles[-1], 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns per side")
    parser.add_argument("--round", type=int, default=50, help="turns per side in one round")
    parser.add_argument("--tool-calls", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--frameworks", nargs="+", choices=sorted(FRAMEWORKS), default=None)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "python": py_platform.python_version(),
        "machine": py_platform.machine(),
        "turns": args.turns,
        "round": args.round,
        "load_average_before": os.getloadavg(),
        "frameworks": {},
    }
    for name in args.frameworks or sorted(FRAMEWORKS):
        for calls in args.tool_calls:
            body = FRAMEWORKS[name](calls)
            row = measure(body, args.turns, args.round)
            results["frameworks"].setdefault(name, {})[str(calls)] = row
            per, ratio = row["per_turn_us"], row["ratio"]
            print(
                f"{name:<12} T={calls}: asyncio {per['asyncio']['cpu']:8.0f} us CPU/turn, "
                f"bridge {per['bridge']['cpu']:8.0f}; bridge/asyncio CPU "
                f"{ratio['cpu']['median']:.3f}x (IQR {ratio['cpu']['q1']:.3f}-"
                f"{ratio['cpu']['q3']:.3f}), wall {ratio['wall']['median']:.3f}x "
                f"({row['rounds']} rounds)",
                flush=True,
            )
    results["load_average_after"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
