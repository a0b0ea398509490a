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

from band_trio import HistoryItem, PlatformMessage
from band_trio.adapter import ResumableHistory, ResumableHistoryConverter, render_turn_lines

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


class CodexHistory(ResumableHistory):
    """A room's history for a Codex turn: a :class:`~band_trio.adapter.ResumableHistory`
    whose ``resume_id`` is the newest Codex thread id recorded in the room (a
    ``task`` event with ``codex_thread_id`` metadata), also read as
    :attr:`thread_id`.

    Args:
        text: the earlier messages (see :class:`~band_trio.adapter.ResumableHistory`).
        thread_id: the thread to resume, or None.
    """

    __slots__ = ()

    def __init__(self, text: str = "", thread_id: str | None = None) -> None:
        super().__init__(text, thread_id)

    @property
    def thread_id(self) -> str | None:
        """The newest Codex thread id recorded in the room, or None."""
        return self.resume_id


class CodexHistoryConverter(ResumableHistoryConverter):
    """Converts a room's history for :class:`~band_trio_codex.CodexAdapter`:
    a :class:`~band_trio.adapter.ResumableHistoryConverter` reading the
    thread id under ``THREAD_METADATA_KEY`` (``codex_thread_id``)."""

    def __init__(self) -> None:
        super().__init__(THREAD_METADATA_KEY, THREAD_EVENT_TEXT)

    def convert(self, items: Sequence[HistoryItem]) -> CodexHistory:
        """The history as text, and the newest thread id in it."""
        history = super().convert(items)
        return CodexHistory(history.text, history.resume_id)


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
