"""The scripts in examples/ run and do what the tutorial says they do.

The documentation includes these files as they are, so a change that breaks a
script fails here instead of leaving the tutorial wrong. The LangGraph example
lives with its adapter (adapters/langgraph/examples) and is run by that
adapter's tests.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import trio

from band_trio.devloop.targets import TargetKind, resolve_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(file_name: str) -> ModuleType:
    """Import a script of examples/ as a module (the directory is no package)."""
    path = EXAMPLES / file_name
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def subdirectories(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir())


def test_band_trio_dev_finds_the_echo_adapter() -> None:
    # The quick start runs `band-trio dev echo_agent.py`: dev picks the
    # adapter class out of the script.
    resolved = resolve_target(load("echo_agent.py"))
    assert resolved.name == "Echo"
    assert resolved.kind is TargetKind.ADAPTER_CLASS


async def test_the_claude_example_stores_a_memory_and_answers() -> None:
    with trio.fail_after(60):
        lines = await load("claude_agent.py").main()
    # Mentions read as handles, never as the platform's @[[id]] tokens.
    assert lines == [
        "Demo User: @demo/claude please keep it short",
        "Claude: @demo Noted: I will keep my answers short.",
        "memory: Prefers short answers.",
    ]


async def test_the_embedding_example_drains_then_cancels_at_once(tmp_path: Path) -> None:
    with trio.fail_after(60):
        lines = await load("embedding.py").main(tmp_path)
    assert lines == [
        "Echo: You said: @demo/echo @demo/shout hello agents",
        "Shout: @DEMO/ECHO @DEMO/SHOUT HELLO AGENTS",
        "serve returned at once after cancel",
        # Cancelled, not failed: the next start finds it again.
        "stuck message: processing",
    ]
    # Each agent kept its ledger in its own state directory.
    assert len(subdirectories(tmp_path)) == 3
