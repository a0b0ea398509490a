"""History for an agent whose framework keeps its own conversation (sans-io but
for the one post in :meth:`ResumableHistoryConverter.record`).

Some frameworks (a Claude Agent SDK session, a Codex thread) remember a room
themselves and can resume that memory by an id. The adapter records the id in
the room as a ``task`` event carrying it under one metadata key, and gives the
platform history to the model only when there is nothing to resume.
:class:`ResumableHistoryConverter` reads both back from a room's history: the
earlier messages as one text, and the newest recorded id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from band_trio._logging import get_logger
from band_trio.adapter.messages import HistoryItem
from band_trio.adapter.tool_protocol import AgentToolsProtocol

__all__ = ["ResumableHistory", "ResumableHistoryConverter"]

logger = get_logger("band_trio.adapter")

_TOOL_EVENTS: Final = frozenset({"tool_call", "tool_result"})


@attrs.frozen
class ResumableHistory:
    """A room's history for a framework that keeps its own conversation.

    Attributes:
        text: the earlier messages, one ``[Sender]: text`` line each (tool
            events as their JSON text); empty when there are none.
        resume_id: the newest conversation id recorded in the room (a
            ``task`` event carrying it under the converter's metadata key),
            or None.
    """

    text: str = ""
    resume_id: str | None = None


class ResumableHistoryConverter:
    """Converts a room's history into a :class:`ResumableHistory`.

    Messages of others read ``[Name]: text``, this agent's own ``[Name (you)]:
    text``; tool calls and results keep their JSON text, as ``[Name]
    tool_call: ...``; thoughts, errors and other events are left out. A
    ``task`` event whose metadata holds a non-empty string under
    ``metadata_key`` records a conversation id; the newest one wins.

    Args:
        metadata_key: the ``task`` event metadata key holding the
            conversation id (keep it stable: rooms recorded under it resume).
        event_text: the text of the ``task`` event :meth:`record` posts.
    """

    def __init__(self, metadata_key: str, event_text: str) -> None:
        self.metadata_key = metadata_key
        self.event_text = event_text
        self.agent_name = ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(metadata_key={self.metadata_key!r})"

    def set_agent_name(self, name: str) -> None:
        """Remember this agent's name (to mark its own messages)."""
        self.agent_name = name

    def convert(self, items: Sequence[HistoryItem]) -> ResumableHistory:
        """The history as text, and the newest conversation id in it."""
        lines: list[str] = []
        resume_id: str | None = None
        for item in items:
            if item.message_type == "task":
                value = item.metadata.get(self.metadata_key)
                if isinstance(value, str) and value:
                    resume_id = value
                continue
            if item.message_type in _TOOL_EVENTS:
                lines.append(f"[{item.sender_name}] {item.message_type}: {item.content}")
            elif item.message_type == "text" and item.content.strip():
                label = (
                    f"{item.sender_name} (you)" if item.role == "assistant" else item.sender_name
                )
                lines.append(f"[{label}]: {item.content}")
        return ResumableHistory("\n".join(lines), resume_id)

    async def record(
        self,
        tools: AgentToolsProtocol,
        resume_id: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record ``resume_id`` in the room (a ``task`` event with
        ``event_text``, ``resume_id`` under ``metadata_key`` and ``metadata``
        beside it), best-effort: True when posted; a failed post is logged
        and gives False, never raises (a later turn records it again)."""
        try:
            await tools.send_event(
                self.event_text, "task", {self.metadata_key: resume_id, **(metadata or {})}
            )
        except Exception as exc:
            logger.warning(
                "room %s: could not record the %s: %r", tools.room_id, self.event_text, exc
            )
            return False
        return True
