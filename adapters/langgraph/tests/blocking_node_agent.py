"""An agent program whose graph blocks for good in a synchronous node.

Run by ``test_langgraph_threads.py`` as a real process:
``python blocking_node_agent.py AGENT_ID API_KEY REST_URL WS_URL``. It prints
``blocked`` when a turn reaches the node, then waits for signals like any agent
run with ``trio.run(agent.serve)``; the agent's log goes to stdout too (the test
sees when the first signal was handled).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph

import band_trio


def block(_state: MessagesState) -> dict[str, Any]:
    print("blocked", flush=True)
    threading.Event().wait()  # never set: a synchronous call that never returns
    return {}


def factory(_tools: list[BaseTool]) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("block", block)
    builder.add_edge(START, "block")
    builder.add_edge("block", END)
    return builder.compile()


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    agent_id, api_key, rest_url, ws_url = sys.argv[1:5]
    agent = band_trio.Agent.create(
        adapter=LangGraphAdapter(graph_factory=factory),
        agent_id=agent_id,
        api_key=api_key,
        rest_url=rest_url,
        ws_url=ws_url,
        config=band_trio.AgentConfig(state_dir=None),
    )
    trio.run(agent.serve)


if __name__ == "__main__":
    main()
