"""The example runs the real ``codex app-server`` against its scripted
Responses API and the local platform, and gets its answer (skipped like the
other real-binary tests where node or codex is missing)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import trio

EXAMPLE = Path(__file__).parent.parent / "examples" / "scripted_codex.py"


async def test_the_example_gets_an_answer(
    codex_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BAND_CODEX", str(codex_binary))
    spec = importlib.util.spec_from_file_location("scripted_codex_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with trio.fail_after(60):
        lines = await module.main()
    question, answer = lines
    assert question.endswith("hello!")
    assert answer.endswith("Hello from Codex!")
