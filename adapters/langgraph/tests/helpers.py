"""Shared pieces of the LangGraph adapter's end-to-end tests: an agent serving
one or more rooms of the local platform (:mod:`band_trio.testing.rooms`), and
the bridge's threads, with only public names."""

from __future__ import annotations

import threading

from band_trio.testing.rooms import AgentRoom, agent_in_rooms, wait_until

__all__ = ["AgentRoom", "agent_in_rooms", "bridge_threads", "wait_until"]


def bridge_threads() -> list[threading.Thread]:
    """The asyncio bridge threads alive now."""
    return [t for t in threading.enumerate() if t.name.startswith("band-trio-asyncio")]
