"""Memory and CPU per turn of one LangGraph room as its history grows.

One room, one message per turn, through ``LangGraphAdapter.on_message`` with
the user's own graph of the kind people write (``StateGraph`` over
``MessagesState``, the stock ``ToolNode`` and ``tools_condition``, compiled
without a checkpointer, so the adapter gives it its default), a scripted chat
model that answers every message through ``band_send_message``, and the
test kit's ``FakeAgentTools`` (no network). Two configurations, each in a
fresh process:

* ``bounded``: the adapter's defaults (``LatestCheckpointSaver``,
  ``max_thread_messages=200``);
* ``keep-all``: LangGraph's ``InMemorySaver`` and ``max_thread_messages=None``
  (the adapter's behaviour before the bounds; stopped at ``--keep-all-max``
  messages by default, since it grows with the square of the history).

At 50, 200 and 1,000 messages: the process's RSS, the checkpointer's stored
bytes, and the CPU time per turn (process time, every thread; mean of the 20
turns before the mark).

Usage::

    uv run python benchmarks/bench_langgraph_memory.py [--marks 50 200 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

MESSAGE = "question {n}: " + "please look into this and tell me what you think " * 6
REPLY = "here is what I think about it, in a few sentences of ordinary length. " * 4
WINDOW = 20


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(mode: str, marks: list[int]) -> list[dict[str, float]]:
    import trio
    from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
    from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
    from langchain_core.tools import BaseTool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from band_trio import PlatformMessage
    from band_trio.testing import FakeAgentTools

    def step(messages: list[Any], _tools: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return ai(text="sent", usage=(100, 2))
        args = {"content": REPLY, "mentions": ["user-1"]}
        return ai(tool_call("band_send_message", args, f"c{len(messages)}"), usage=(100, 40))

    model = ScriptedChatModel(default=step)

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

    if mode == "bounded":
        adapter = LangGraphAdapter(graph_factory=factory)
    else:
        adapter = LangGraphAdapter(
            LangGraphAdapterConfig(max_thread_messages=None),
            graph_factory=factory,
            checkpointer=InMemorySaver(),
        )

    def saver_bytes() -> int:
        saver = adapter.checkpointer
        assert isinstance(saver, InMemorySaver)
        total = sum(len(blob) for _, blob in saver.blobs.values())
        for namespaces in saver.storage.values():
            for checkpoints in namespaces.values():
                total += sum(len(c[0][1]) + len(c[1][1]) for c in checkpoints.values())
        for writes in saver.writes.values():
            total += sum(len(w[2][1]) for w in writes.values())
        return total

    async def main() -> list[dict[str, float]]:
        rows: list[dict[str, float]] = []
        await adapter.on_started("Bench", "A scripted agent.")
        cpu: list[float] = []
        for n in range(max(marks)):
            msg = PlatformMessage(f"m{n}", "room", MESSAGE.format(n=n), "user-1", "User", "Ann")
            start = time.process_time()
            await adapter.on_message(
                msg, FakeAgentTools(room_id="room"), [], None, None,
                is_session_bootstrap=False, room_id="room",
            )  # fmt: skip
            cpu.append(time.process_time() - start)
            # The scripted model records every call for tests; a model does not.
            model._calls.clear()
            if n + 1 in marks:
                rows.append(
                    {
                        "messages": n + 1,
                        "rss_mib": round(rss_mib(), 1),
                        "saver_mib": round(saver_bytes() / 2**20, 2),
                        "cpu_ms_per_turn": round(sum(cpu[-WINDOW:]) / WINDOW * 1e3, 2),
                    }
                )
        await adapter.aclose()
        return rows

    return trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", choices=["bounded", "keep-all"], help=argparse.SUPPRESS)
    parser.add_argument("--marks", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--keep-all-max", type=int, default=200)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(args.one, args.marks)))
        return
    results: dict[str, Any] = {"python": sys.version.split()[0], "modes": {}}
    for mode in ("bounded", "keep-all"):
        marks = (
            args.marks if mode == "bounded" else [m for m in args.marks if m <= args.keep_all_max]
        )
        command = [sys.executable, __file__, "--one", mode, "--marks", *map(str, marks)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results["modes"][mode] = json.loads(out.strip().splitlines()[-1])
    print(f"{'mode':<9} {'messages':>8} {'RSS MiB':>8} {'saver MiB':>10} {'CPU ms/turn':>12}")
    for mode, rows in results["modes"].items():
        for row in rows:
            print(
                f"{mode:<9} {row['messages']:>8} {row['rss_mib']:>8.1f} "
                f"{row['saver_mib']:>10.2f} {row['cpu_ms_per_turn']:>12.2f}"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
