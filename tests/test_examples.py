"""The scripts in examples/ run and do what the tutorial says they do.

The documentation includes these files as they are, so a change that breaks a
script fails here instead of leaving the tutorial wrong. The LangGraph example
lives with its adapter (adapters/langgraph/examples) and is run by that
adapter's tests.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import trio

from band_trio import HumanClient
from band_trio.devloop.targets import TargetKind, resolve_target
from band_trio.local import LocalPlatform

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


@pytest.mark.slow
async def test_the_echo_agent_runs_as_a_process_and_stops_on_sigterm(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    creds = band_platform.agents[0]
    env = {
        **os.environ,
        **band_platform.agent_env(creds),
        "BAND_STATE_DIR": str(tmp_path / "state"),
        "BAND_SHUTDOWN_TIMEOUT": "5",
    }
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as human:
        room = await human.create_room("echo process")
        await human.add_participant(room["id"], creds.id)
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(EXAMPLES / "echo_agent.py")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            sent = await human.post_message(room["id"], "hello process", [creds.handle])
            state = band_platform.state.rooms[room["id"]]

            def processed() -> bool:
                delivery = state.by_id[sent["id"]].deliveries.get(creds.id)
                return delivery is not None and str(delivery.status) == "processed"

            with trio.fail_after(60):
                await band_platform.wait_for(processed)
            os.kill(proc.pid, signal.SIGTERM)
            with trio.fail_after(30):
                returncode = await proc.wait()
        finally:
            if proc.returncode is None:
                os.kill(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
    assert returncode == 0
    replies = [m.content for m in state.messages if m.sender_id == creds.id]
    assert len(replies) == 1
    assert replies[0] == f"@[[{band_platform.user.id}]] You said: @demo/echo hello process"
    # BAND_STATE_DIR from the environment chose where the ledger lives.
    assert subdirectories(tmp_path) == [tmp_path / "state"]


@pytest.mark.slow
async def test_the_testing_example_passes_under_pytest() -> None:
    with trio.fail_after(300):
        done = await trio.run_process(
            [
                sys.executable,
                "-m",
                "pytest",
                str(EXAMPLES / "test_echo_adapter.py"),
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
            ],
            cwd=EXAMPLES.parent,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    output = done.stdout.decode()
    assert done.returncode == 0, output + done.stderr.decode()
    assert "3 passed" in output
