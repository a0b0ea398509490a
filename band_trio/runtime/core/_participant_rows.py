"""``ParticipantRows``: one object for identical participant rows across rooms.

The room listing carries every room's roster, decoded afresh for each room:
the agent's own row and a user's row arrive once per room they share, each a
new object with new strings. An agent in ten thousand rooms would keep tens of
thousands of identical rows alive. Rows are immutable, so the rooms can share
one object per distinct content; this table finds it. It is bounded: beyond
``limit`` distinct rows the oldest entries are forgotten (a forgotten row is
still correct, only no longer shared with later ones).
"""

from __future__ import annotations

from typing import Any, Final

from band_trio.wire.models import ChatParticipant

__all__ = ["ParticipantRows"]

_LIMIT: Final = 2048
"""Distinct rows remembered by default."""


class ParticipantRows:
    """Shares identical (equal, immutable) participant rows.

    Args:
        limit: distinct rows remembered at most (the oldest are forgotten first).
    """

    __slots__ = ("_limit", "_rows")

    def __init__(self, limit: int = _LIMIT) -> None:
        self._limit = limit
        self._rows: dict[tuple[Any, ...], ChatParticipant] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def share(self, row: ChatParticipant) -> ChatParticipant:
        """The remembered row equal to ``row``, else ``row`` itself (remembered)."""
        key = _key(row)
        if key is None:
            return row
        known = self._rows.get(key)
        if known is not None:
            return known
        if len(self._rows) >= self._limit:
            del self._rows[next(iter(self._rows))]
        self._rows[key] = row
        return row


def _key(row: ChatParticipant) -> tuple[Any, ...] | None:
    # Every field, extra included; a row whose extra holds an unhashable value
    # (a nested object) is not shared.
    extra: tuple[tuple[str, Any], ...] = ()
    if row.extra:
        extra = tuple(sorted(row.extra.items()))
        try:
            hash(extra)
        except TypeError:
            return None
    return (
        row.id,
        row.role,
        row.status,
        row.type,
        row.name,
        row.handle,
        row.online,
        row.avatar_url,
        row.description,
        extra,
    )
