"""How long turns take: a bounded window of recent durations and its percentiles.

Sans-io and synchronous: the rooms record each message turn's duration (the
adapter's run, from the processing mark to the handler's end) and
``Agent.statistics()`` reads the percentiles. Memory is fixed: the most recent
:data:`WINDOW` durations are kept in a ring, whatever the number of turns or
rooms; the count, the longest turn, the sum and the histogram over
:data:`BUCKETS` cover every turn since the start.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from typing import Final

import attrs

__all__ = ["BUCKETS", "WINDOW", "TurnDurationStatistics", "TurnDurations"]

BUCKETS: Final = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
"""Upper bounds, in seconds, of the turn duration histogram (a last bucket,
unbounded, holds the rest): from a quick echo to the default turn timeout."""

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
        total: the sum of every turn's duration since the agent started.
        buckets: for each bound of :data:`BUCKETS`, the turns since the start
            that took at most that long (cumulative, as a histogram is read).
    """

    count: int = 0
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    longest: float | None = None
    window: int = 0
    total: float = 0.0
    buckets: tuple[int, ...] = (0,) * len(BUCKETS)


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
        self._total = 0.0
        self._in_bucket = [0] * (len(BUCKETS) + 1)

    def record(self, seconds: float) -> None:
        """Add one turn's duration (negative values count as 0)."""
        seconds = max(0.0, seconds)
        self._recent.append(seconds)
        self._count += 1
        if self._longest is None or seconds > self._longest:
            self._longest = seconds
        self._total += seconds
        self._in_bucket[bisect.bisect_left(BUCKETS, seconds)] += 1

    def _histogram(self) -> tuple[float, tuple[int, ...]]:
        running, cumulative = 0, []
        for n in self._in_bucket[: len(BUCKETS)]:
            running += n
            cumulative.append(running)
        return self._total, tuple(cumulative)

    def statistics(self) -> TurnDurationStatistics:
        """The percentiles of the recent turns (nearest rank), now."""
        total, buckets = self._histogram()
        if not self._recent:
            return TurnDurationStatistics(
                count=self._count, longest=self._longest, total=total, buckets=buckets
            )
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
            total=total,
            buckets=buckets,
        )
