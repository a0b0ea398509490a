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

from band_trio import HistoryItem, PlatformMessage
from band_trio.adapter import ResumableHistory, ResumableHistoryConverter, render_turn_lines

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


class ClaudeHistory(ResumableHistory):
    """A room's history for a Claude turn: a :class:`~band_trio.adapter.ResumableHistory`
    whose ``resume_id`` is the newest Claude conversation id recorded in the
    room (a ``task`` event with ``claude_sdk_session_id`` metadata), also
    read as :attr:`session_id`.

    Args:
        text: the earlier messages (see :class:`~band_trio.adapter.ResumableHistory`).
        session_id: the conversation to resume, or None.
    """

    __slots__ = ()

    def __init__(self, text: str = "", session_id: str | None = None) -> None:
        super().__init__(text, session_id)

    @property
    def session_id(self) -> str | None:
        """The newest Claude conversation id recorded in the room, or None."""
        return self.resume_id


class ClaudeHistoryConverter(ResumableHistoryConverter):
    """Converts a room's history for :class:`~band_trio_claude.ClaudeAgentAdapter`:
    a :class:`~band_trio.adapter.ResumableHistoryConverter` reading the
    conversation id under ``SESSION_METADATA_KEY`` (``claude_sdk_session_id``)."""

    def __init__(self) -> None:
        super().__init__(SESSION_METADATA_KEY, SESSION_EVENT_TEXT)

    def convert(self, items: Sequence[HistoryItem]) -> ClaudeHistory:
        """The history as text, and the newest conversation id in it."""
        history = super().convert(items)
        return ClaudeHistory(history.text, history.resume_id)


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
