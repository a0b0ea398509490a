"""How long turns take: a bounded window of recent durations and its percentiles.

Sans-io and synchronous: the rooms record each message turn's duration (the
adapter's run, from the processing mark to the handler's end) and
``Agent.statistics()`` reads the percentiles. Memory is fixed: the most recent
:data:`WINDOW` durations are kept in a ring, whatever the number of turns or
rooms; the count and the longest turn cover every turn since the start.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Final

import attrs

__all__ = ["WINDOW", "TurnDurationStatistics", "TurnDurations"]

WINDOW: Final = 1024
"""Durations kept for the percentiles (8 KiB of floats, one ring per agent)."""


@attrs.frozen
class TurnDurationStatistics:
    """Turn durations in seconds (a snapshot).

    Attributes:
        count: turns measured since the agent started.
        p50: median of the recent turns (None before the first turn).
        p90: 90th percentile of the recent turns.
        p99: 99th percentile of the recent turns.
        longest: the longest turn since the agent started.
        window: how many recent turns the percentiles are computed over (at
            most :data:`WINDOW`).
    """

    count: int = 0
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    longest: float | None = None
    window: int = 0


class TurnDurations:
    """Records turn durations; :meth:`statistics` reports their percentiles.

    Args:
        window: how many recent durations to keep (>= 1).
    """

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self._recent: deque[float] = deque(maxlen=window)
        self._count = 0
        self._longest: float | None = None

    def record(self, seconds: float) -> None:
        """Add one turn's duration (negative values count as 0)."""
        seconds = max(0.0, seconds)
        self._recent.append(seconds)
        self._count += 1
        if self._longest is None or seconds > self._longest:
            self._longest = seconds

    def statistics(self) -> TurnDurationStatistics:
        """The percentiles of the recent turns (nearest rank), now."""
        if not self._recent:
            return TurnDurationStatistics(count=self._count, longest=self._longest)
        ordered = sorted(self._recent)

        def rank(fraction: float) -> float:
            return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]

        return TurnDurationStatistics(
            count=self._count,
            p50=rank(0.50),
            p90=rank(0.90),
            p99=rank(0.99),
            longest=self._longest,
            window=len(ordered),
        )
