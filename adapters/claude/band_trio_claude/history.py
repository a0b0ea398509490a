"""What a Claude turn is told about the room: :class:`ClaudeHistoryConverter`
turns the room's history into one text (and finds the Claude conversation to
resume), :func:`compose_prompt` builds the turn's prompt.

A Claude conversation keeps its own memory of a room, so the platform history
is given only when there is nothing to resume: on a room's first turn in this
process with no conversation id recorded in the room.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from band_trio import HistoryItem, PlatformMessage
from band_trio.adapter import render_turn_lines

__all__ = [
    "HISTORY_HEADER",
    "SESSION_EVENT_TEXT",
    "SESSION_METADATA_KEY",
    "ClaudeHistory",
    "ClaudeHistoryConverter",
    "compose_prompt",
]

SESSION_METADATA_KEY: Final = "claude_sdk_session_id"
"""The ``task`` event metadata key holding a room's Claude conversation id (the
official adapter's key, so either adapter resumes the other's rooms)."""
SESSION_EVENT_TEXT: Final = "Claude SDK session"
"""The text of the ``task`` event recording the conversation id."""
HISTORY_HEADER: Final = "Your memory of this room so far — the conversation before this message:"
"""The line before the room's history in a first turn without a conversation to resume."""

_TOOL_EVENTS: Final = frozenset({"tool_call", "tool_result"})


@attrs.frozen
class ClaudeHistory:
    """A room's history for a Claude turn.

    Attributes:
        text: the earlier messages, one ``[Sender]: text`` line each (tool
            events as their JSON text); empty when there are none.
        session_id: the newest Claude conversation id recorded in the room
            (a ``task`` event with ``claude_sdk_session_id`` metadata), or None.
    """

    text: str = ""
    session_id: str | None = None


class ClaudeHistoryConverter:
    """Converts a room's history for :class:`~band_trio_claude.ClaudeAgentAdapter`.

    Messages of others read ``[Name]: text``, this agent's own ``[Name (you)]:
    text``; tool calls and results keep their JSON text; thoughts, errors and
    other events are left out.
    """

    def __init__(self) -> None:
        self.agent_name = ""

    def set_agent_name(self, name: str) -> None:
        """Remember this agent's name (to mark its own messages)."""
        self.agent_name = name

    def convert(self, items: Sequence[HistoryItem]) -> ClaudeHistory:
        """The history as text, and the newest conversation id in it."""
        lines: list[str] = []
        session_id: str | None = None
        for item in items:
            if item.message_type == "task":
                value = item.metadata.get(SESSION_METADATA_KEY)
                if isinstance(value, str) and value:
                    session_id = value
                continue
            if item.message_type in _TOOL_EVENTS:
                lines.append(f"[{item.sender_name}] {item.message_type}: {item.content}")
            elif item.message_type == "text" and item.content.strip():
                label = (
                    f"{item.sender_name} (you)" if item.role == "assistant" else item.sender_name
                )
                lines.append(f"[{label}]: {item.content}")
        return ClaudeHistory("\n".join(lines), session_id)


def compose_prompt(
    msg: PlatformMessage,
    *,
    history: str,
    participants_msg: str | None,
    contacts_msg: str | None,
) -> str:
    """The prompt of one turn: the history (when given), the ``[System]:``
    lines, then the message; parts separated by a blank line."""
    parts = [f"{HISTORY_HEADER}\n{history}"] if history else []
    parts += [line.text for line in render_turn_lines(msg, participants_msg, contacts_msg)]
    return "\n\n".join(parts)
