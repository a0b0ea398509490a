"""The names of the Phoenix topics an agent joins."""

from __future__ import annotations

__all__ = ["agent_topics", "room_topics"]


def room_topics(room_id: str) -> tuple[str, str]:
    """The two per-room topics: ``(chat_room:<id>, room_participants:<id>)``."""
    return f"chat_room:{room_id}", f"room_participants:{room_id}"


def agent_topics(agent_id: str) -> tuple[str, str, str]:
    """``(agent_control:<id>, agent_rooms:<id>, agent_contacts:<id>)``."""
    return f"agent_control:{agent_id}", f"agent_rooms:{agent_id}", f"agent_contacts:{agent_id}"
