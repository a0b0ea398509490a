"""The example script runs against the local platform and gets its answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import trio
from helpers import bridge_threads

EXAMPLE = Path(__file__).parent.parent / "examples" / "scripted_agent.py"


async def test_the_scripted_example_gets_an_answer() -> None:
    spec = importlib.util.spec_from_file_location("scripted_agent_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with trio.fail_after(60):
        lines = await module.main()
    # The example's agent has a name of its own; mentions read as handles.
    assert lines == [
        "Demo User: @demo/langgraph what is LangGraph?",
        "LangGraph: @demo Hello Demo User! You asked: @demo/langgraph what is LangGraph?",
    ]
    assert bridge_threads() == []
