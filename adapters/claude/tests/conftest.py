"""Fixtures of the Claude adapter's tests: the scripted Messages API the real
``claude`` CLI talks to, and the environment that keeps the CLI offline.

The stub is the Anthropic adapter's (``adapters/anthropic/tests``), which
streams its answers as server-sent events when asked to, as the CLI does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "anthropic" / "tests"))

from claude_support import ClaudeStub


@pytest.fixture
async def claude_stub(nursery: trio.Nursery) -> ClaudeStub:
    stub = ClaudeStub()
    await nursery.start(stub.serve)
    return stub


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    """The CLI's home and configuration directory (its sessions live there)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # claude-agent-sdk's transport leaves its reader (an async generator) to the
    # garbage collector when a client is closed; when the collector finalises it
    # outside its event loop, Python reports an unraisable exception at a random
    # later test. It is the SDK's, not a failure of the test it lands in.
    for item in items:
        if "adapters/claude/" in item.path.as_posix():
            item.add_marker(
                pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
            )
