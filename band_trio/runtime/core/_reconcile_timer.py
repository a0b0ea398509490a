"""When a room reconciles on its own (sans-io).

The idle timer is :class:`~band_trio.runtime.core._schedule.ReconcileSchedule`
(jittered first check, doubling while empty, a fixed interval while stopped).
On top of it, a deferred message (refused claim, failed ack, non-final
failure) is retried after a short backoff (``AgentConfig.retry_delay``,
doubling up to ``AgentConfig.max_retry_delay``) instead of waiting a whole idle interval.
The caller passes the time; nothing here reads a clock.
"""

from __future__ import annotations

import math
import random

from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._schedule import ReconcileOutcome, ReconcileSchedule

__all__ = ["ReconcileTimer"]


class ReconcileTimer(ReconcileSchedule):
    """The idle timer of a room plus the backoff of its deferred messages.

    One object per room (an agent may hold ten thousand): the idle timer is
    the :class:`~band_trio.runtime.core._schedule.ReconcileSchedule` this
    extends, and :attr:`due` also counts the retry of a deferred message.

    Args:
        config: the runtime knobs (intervals and ``retry_delay``).
        rng: randomness for the jittered first check.
        now: the current time.
    """

    def __init__(self, config: AgentConfig, rng: random.Random, now: float) -> None:
        super().__init__(
            base=config.idle_resync_interval,
            maximum=config.idle_resync_max_interval,
            stopped=config.stopped_resync_interval,
            now=now,
            rng=rng.random,
        )
        self._max_retry = min(config.max_retry_delay, config.idle_resync_interval)
        self._first_retry = min(config.retry_delay, self._max_retry)
        self._retry_at = math.inf
        self._retry_delay = self._first_retry

    @property
    def due(self) -> float:
        """The time of the next reconcile the room starts on its own."""
        return min(self._due, self._retry_at)

    @property
    def retry_due(self) -> float:
        """The time a deferred message is retried (``inf`` when none is)."""
        return self._retry_at

    def retry_is_due(self, now: float) -> bool:
        """True when the reconcile due now is the retry of a deferred message
        (not the idle timer)."""
        return now >= self._retry_at

    def after(self, result: ReconcileOutcome, now: float) -> None:
        """A reconcile ended with ``result`` (``RETRY`` also for a deferred message)."""
        self.completed(result, now)
        if result is ReconcileOutcome.RETRY:
            self._retry_at = now + self._retry_delay
            self._retry_delay = min(self._retry_delay * 2, self._max_retry)
        else:
            self._retry_at = math.inf
            self._retry_delay = self._first_retry

    def set_stopped(self, stopped: bool, now: float) -> None:
        """The room was stopped or resumed: the retry backoff starts over."""
        super().set_stopped(stopped, now)
        self._retry_at = math.inf
        self._retry_delay = self._first_retry
