"""The tool families an adapter may offer and what a tool call does to a turn.

:class:`Capability` gates optional tool families, :class:`ToolCategory` is the
family of a tool (for ``include_categories`` filters) and :class:`ToolEffect`
is what a successful call did for the turn (the runtime judges a turn by it).
"""

from __future__ import annotations

import enum

__all__ = ["Capability", "ToolCategory", "ToolEffect"]


class Capability(enum.Enum):
    """Optional tool families. The 8 chat tools are always offered."""

    MEMORY = "memory"
    CONTACTS = "contacts"
    FILES = "files"
    TASKS = "tasks"


class ToolCategory(enum.Enum):
    """The family a tool belongs to, for ``include_categories`` filters."""

    CHAT = "chat"
    CONTACTS = "contacts"
    MEMORY = "memory"
    FILES = "files"
    TASKS = "tasks"


class ToolEffect(enum.Enum):
    """What a successful platform tool call did for the current turn.

    The turn ledger uses these to judge whether a turn answered its message.
    """

    OBSERVE = "observe"
    """Read something (participants, tasks, memories), not an answer."""
    ACT = "act"
    """Durable work that counts as handling the message (add a participant, ...)."""
    REPLY = "reply"
    """A message was posted to the room."""
    DECLINE = "decline"
    """The agent decided explicitly not to answer (``band_no_reply``)."""
