"""The example script runs against the local platform and gets its answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import trio
from pydantic_ai_rooms import bridge_threads

EXAMPLE = Path(__file__).parent.parent / "examples" / "function_model_agent.py"


async def test_the_function_model_example_gets_an_answer() -> None:
    spec = importlib.util.spec_from_file_location("function_model_agent_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with trio.fail_after(60):
        lines = await module.main()
    question, answer = lines
    assert question.endswith("what is pydantic-ai?")
    assert "Hello Demo User! You asked:" in answer
    assert answer.endswith("what is pydantic-ai?")
    assert bridge_threads() == []
