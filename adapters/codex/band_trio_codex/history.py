"""What a Codex turn is told about the room: :class:`CodexHistoryConverter`
turns the room's history into one text and finds the Codex thread to resume;
:func:`turn_input` builds a turn's input items.

A Codex thread keeps its own memory of a room, so the platform history is
given only to a new thread: on a room's first turn in this process with no
thread recorded in the room, or when resuming the recorded one failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from band_trio import HistoryItem, PlatformMessage
from band_trio.adapter import render_turn_lines

__all__ = [
    "HISTORY_HEADER",
    "THREAD_EVENT_TEXT",
    "THREAD_METADATA_KEY",
    "CodexHistory",
    "CodexHistoryConverter",
    "turn_input",
]

THREAD_METADATA_KEY: Final = "codex_thread_id"
"""The ``task`` event metadata key holding a room's Codex thread id (the
official adapter's key, so either adapter resumes the other's rooms)."""
THREAD_EVENT_TEXT: Final = "Codex thread"
"""The text of the ``task`` event recording the thread id."""
HISTORY_HEADER: Final = "[Conversation History]"
"""The line before the room's history in a new thread's first turn."""

_TOOL_EVENTS: Final = frozenset({"tool_call", "tool_result"})


@attrs.frozen
class CodexHistory:
    """A room's history for a Codex turn.

    Attributes:
        text: the earlier messages, one ``[Sender]: text`` line each (tool
            events as their JSON text); empty when there are none.
        thread_id: the newest Codex thread id recorded in the room (a ``task``
            event with ``codex_thread_id`` metadata), or None.
    """

    text: str = ""
    thread_id: str | None = None


class CodexHistoryConverter:
    """Converts a room's history for :class:`~band_trio_codex.CodexAdapter`.

    Messages of others read ``[Name]: text``, this agent's own ``[Name (you)]:
    text``; tool calls and results keep their JSON text; thoughts, errors and
    other events are left out.
    """

    def __init__(self) -> None:
        self.agent_name = ""

    def set_agent_name(self, name: str) -> None:
        """Remember this agent's name (to mark its own messages)."""
        self.agent_name = name

    def convert(self, items: Sequence[HistoryItem]) -> CodexHistory:
        """The history as text, and the newest thread id in it."""
        lines: list[str] = []
        thread_id: str | None = None
        for item in items:
            if item.message_type == "task":
                value = item.metadata.get(THREAD_METADATA_KEY)
                if isinstance(value, str) and value:
                    thread_id = value
                continue
            if item.message_type in _TOOL_EVENTS:
                lines.append(f"[{item.sender_name}] {item.message_type}: {item.content}")
            elif item.message_type == "text" and item.content.strip():
                label = (
                    f"{item.sender_name} (you)" if item.role == "assistant" else item.sender_name
                )
                lines.append(f"[{label}]: {item.content}")
        return CodexHistory("\n".join(lines), thread_id)


def turn_input(
    msg: PlatformMessage,
    *,
    history: str,
    participants_msg: str | None,
    contacts_msg: str | None,
) -> list[dict[str, Any]]:
    """The input items of one turn: the history (when given), the
    ``[System]:`` lines, then the message, one text item each."""
    texts = [f"{HISTORY_HEADER}\n{history}"] if history else []
    texts += [line.text for line in render_turn_lines(msg, participants_msg, contacts_msg)]
    return [{"type": "text", "text": text} for text in texts]
