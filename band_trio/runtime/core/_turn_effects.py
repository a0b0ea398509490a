"""The record of one turn's tool effects and the judgement of the turn (sans-io)."""

from __future__ import annotations

import enum

from band_trio.adapter.capabilities import ToolEffect

__all__ = ["TurnEffects", "TurnVerdict"]


class TurnVerdict(enum.Enum):
    """How a finished turn is judged."""

    COMPLETE = "complete"
    MISSING_REPLY = "missing_reply"


class TurnEffects:
    """Per-turn record of tool effects, used to judge a turn (sans-io).

    A turn is complete when any ACT, REPLY or DECLINE effect was recorded, when
    the adapter called :meth:`settle`, or when a failure was already reported to
    the room (:meth:`note_reported`). Only OBSERVE effects (or nothing) mean a
    missing reply.
    """

    __slots__ = ("_effects", "_reported", "_settled")

    def __init__(self) -> None:
        self._effects: list[ToolEffect] = []
        self._settled = False
        self._reported = False

    def record_effect(self, effect: ToolEffect) -> None:
        """Record the effect of one successful tool call."""
        self._effects.append(ToolEffect(effect))

    def settle(self) -> None:
        """Declare the turn handled although no tool recorded it."""
        self._settled = True

    def note_reported(self) -> None:
        """Record that the turn's failure was already reported to the room."""
        self._reported = True

    @property
    def effects(self) -> tuple[ToolEffect, ...]:
        """Every effect recorded so far, in order."""
        return tuple(self._effects)

    @property
    def replied(self) -> bool:
        """True once a REPLY or DECLINE was recorded."""
        return any(e in (ToolEffect.REPLY, ToolEffect.DECLINE) for e in self._effects)

    @property
    def reported(self) -> bool:
        """True when a failure report was already posted for this turn."""
        return self._reported

    @property
    def verdict(self) -> TurnVerdict:
        """The judgement of the turn so far."""
        if self._settled or self._reported:
            return TurnVerdict.COMPLETE
        if any(e is not ToolEffect.OBSERVE for e in self._effects):
            return TurnVerdict.COMPLETE
        return TurnVerdict.MISSING_REPLY
