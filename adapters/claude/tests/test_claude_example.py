"""The example runs the real CLI against its scripted Messages API and the
local platform, and gets its answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import trio

EXAMPLE = Path(__file__).parent.parent / "examples" / "scripted_claude.py"


async def test_the_example_gets_an_answer() -> None:
    spec = importlib.util.spec_from_file_location("scripted_claude_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with trio.fail_after(60):
        lines = await module.main()
    question, answer = lines
    assert question.endswith("hello!")
    assert answer.endswith("Hello from Claude Code!")
