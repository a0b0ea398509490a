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
