"""Fixtures for the interop tests: the peers' private venvs and platform helpers.

pytest-trio runs every test in its own ``trio.run``, so an async fixture cannot
be session-scoped. The session-wide part lives in ``venvs.py`` (a venv is built
once per checkout and reused while its marker matches, and once per process it
is not even re-checked); the fixtures below only hop to a worker thread so the
first, slow install (about 20 s) never blocks the test's event loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.venvs import band_client_rest_python, band_sdk_python

PEERS = Path(__file__).resolve().parent / "peers"


@pytest.fixture
async def rest_models_python() -> Path:
    """The python of the venv holding the official ``band-client-rest``."""
    return await trio.to_thread.run_sync(band_client_rest_python)


@pytest.fixture
async def band_sdk_venv_python() -> Path:
    """The python of the venv holding the official ``band-sdk``."""
    return await trio.to_thread.run_sync(band_sdk_python)


def describe_platform(platform: Any) -> dict[str, Any]:
    """The platform as ``band-trio platform --json`` prints it."""
    agents = list(platform.agents)
    if not agents:
        agents = [platform.register_agent("Interop Agent", "An agent for the interop tests")]
    user = platform.user
    return {
        "rest_url": platform.rest_url,
        "ws_url": platform.ws_url,
        "user": {"id": user.id, "api_key": user.api_key, "handle": user.handle},
        "agents": [
            {"id": a.id, "api_key": a.api_key, "name": a.name, "handle": a.handle} for a in agents
        ],
    }


def peer_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment for a peer process: ours, minus anything that would make
    its venv's python pick up band-trio's packages, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def json_lines(stdout: bytes) -> list[dict[str, Any]]:
    """The JSON objects a peer printed, one per line (other lines are ignored)."""
    lines = []
    for raw in stdout.decode(errors="replace").splitlines():
        raw = raw.strip()
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    return lines
