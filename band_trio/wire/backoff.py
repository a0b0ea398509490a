"""Sans-io reconnect policies.

Reference: docs/reference/protocol.rst (protocol, "Reconnection").

Two policies, as in the official client:

* :class:`FirstConnectPolicy` governs the first connect of a session
  ("First connect of a session"): full jitter over ``1 s · 2^n`` capped at 30 s, "rapid failure"
  floors (1, 5, 10, 20 … 60 s), and the session gives up after 10 rapid
  failures inside 300 s. Upgrade refusals 400, 403 and 409 are terminal.
* :class:`ReconnectPolicy` governs every reconnect after a session was
  established ("Reconnect after a successful connect"): equal jitter over ``0.5 s · 2^attempt`` capped at 30 s,
  rapid-drop floors (2, 10, 60, 90 … 300 s, jittered with the delay), hold-down
  jitter after 3 rapid drops, suppression after 10 rapid drops inside 60 s,
  close-code classification (1008 terminal; 1012 and 1013 have their own
  floors) and a 403 upgrade refusal is terminal. A connection the client
  closed itself while the platform was alive (repeated malformed frames) is
  not counted as a rapid drop (:meth:`ReconnectPolicy.closed_locally`).

Neither reads a clock nor a global random source: the caller passes ``now``
and may inject ``random`` (a function returning a float in ``[0, 1)``), so
tests can pin every delay exactly.
"""

from __future__ import annotations

import enum
import random as _random
from collections import deque
from collections.abc import Callable
from typing import Final

import attrs

__all__ = [
    "CloseAction",
    "FirstConnectPolicy",
    "ReconnectPolicy",
    "RetryDecision",
    "classify_close",
    "first_connect_status_is_terminal",
    "reconnect_status_is_terminal",
]

RandomSource = Callable[[], float]

FIRST_CONNECT_TERMINAL_STATUSES: Final = frozenset({400, 403, 409})
RECONNECT_TERMINAL_STATUSES: Final = frozenset({403})


@attrs.frozen
class RetryDecision:
    """What to do after a failure.

    Attributes:
        give_up: True when the failure is terminal or the policy ran out of
            patience; ``delay`` is then 0.
        delay: seconds to wait before the next attempt.
        reason: a short machine reason (``"rapid_disconnect"``, ``"http_409"``,
            ``"close_1008"``, ``"suppressed"``, or ``"retry"``).
    """

    give_up: bool
    delay: float
    reason: str

    @classmethod
    def retry(cls, delay: float) -> RetryDecision:
        """Try again after ``delay`` seconds."""
        return cls(False, delay, "retry")

    @classmethod
    def stop(cls, reason: str) -> RetryDecision:
        """Do not try again."""
        return cls(True, 0.0, reason)


class CloseAction(enum.Enum):
    """How a reconnect treats a WebSocket close code (protocol, "Reconnect after a successful connect")."""

    RECONNECT = "reconnect"
    TERMINAL = "terminal"
    SERVICE_RESTART = "service_restart"
    TRY_AGAIN_LATER = "try_again_later"


def classify_close(code: int | None) -> CloseAction:
    """Classify a close code: 1008 is terminal, 1012/1013 reconnect with floors.

    ``None`` (an abnormal drop without a close frame), 1000, 1001, the
    client-forced 4000 and every other code reconnect.
    """
    if code == 1008:
        return CloseAction.TERMINAL
    if code == 1012:
        return CloseAction.SERVICE_RESTART
    if code == 1013:
        return CloseAction.TRY_AGAIN_LATER
    return CloseAction.RECONNECT


def first_connect_status_is_terminal(status: int) -> bool:
    """True for upgrade refusals that end a session's first connect (400, 403, 409)."""
    return status in FIRST_CONNECT_TERMINAL_STATUSES


def reconnect_status_is_terminal(status: int) -> bool:
    """True for upgrade refusals that end reconnection (403)."""
    return status in RECONNECT_TERMINAL_STATUSES


def _check_random(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError("the random source must return a float in [0, 1]")
    return value


class FirstConnectPolicy:
    """Backoff for the first connect of a session (protocol, "First connect of a session").

    Args:
        random: returns a float in ``[0, 1)``; defaults to :func:`random.random`.
        base, factor, cap: exponential delay ``min(cap, base · factor^n)``,
            fully jittered (``U(0, 1) ×`` that).
        stable_after: a connection that stayed up this long resets ``n`` and the
            rapid history.
        rapid_uptime: a failure after less uptime than this is "rapid" (every
            failed connect is).
        rapid_window: rapid failures older than this are forgotten.
        give_up_after: this many rapid failures inside the window end the session.
    """

    def __init__(
        self,
        *,
        random: RandomSource = _random.random,
        base: float = 1.0,
        factor: float = 2.0,
        cap: float = 30.0,
        stable_after: float = 60.0,
        rapid_uptime: float = 10.0,
        rapid_window: float = 300.0,
        give_up_after: int = 10,
    ) -> None:
        self._random = random
        self.base = base
        self.factor = factor
        self.cap = cap
        self.stable_after = stable_after
        self.rapid_uptime = rapid_uptime
        self.rapid_window = rapid_window
        self.give_up_after = give_up_after
        self._n = 0
        self._rapid: deque[float] = deque()

    @property
    def rapid_failures(self) -> int:
        """Rapid failures currently remembered (those inside the window at the last failure)."""
        return len(self._rapid)

    @staticmethod
    def floor(rapid_count: int) -> float:
        """The minimum delay after the ``rapid_count``-th rapid failure (1, 5, 10, 20 … 60)."""
        if rapid_count <= 0:
            return 0.0
        if rapid_count == 1:
            return 1.0
        if rapid_count == 2:
            return 5.0
        return min(60.0, 10.0 + 10.0 * (rapid_count - 3))

    def failure(
        self,
        now: float,
        *,
        uptime: float = 0.0,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> RetryDecision:
        """Record a failed connect (or a drop after ``uptime`` seconds) and decide.

        Args:
            now: the current time.
            uptime: how long the connection was up (0 for a failed connect).
            status: the HTTP status of a refused upgrade, if any.
            retry_after: seconds the platform asked us to wait (429/503), if any.
        """
        if status is not None and first_connect_status_is_terminal(status):
            return RetryDecision.stop(f"http_{status}")
        if uptime >= self.stable_after:
            self._n = 0
            self._rapid.clear()
        while self._rapid and now - self._rapid[0] > self.rapid_window:
            self._rapid.popleft()
        floor = 0.0
        if uptime < self.rapid_uptime:
            self._rapid.append(now)
            if len(self._rapid) >= self.give_up_after:
                return RetryDecision.stop("rapid_disconnect")
            floor = self.floor(len(self._rapid))
        exponential = min(self.cap, self.base * self.factor**self._n)
        self._n += 1
        delay = max(_check_random(self._random()) * exponential, floor)
        if retry_after is not None and retry_after > 0:
            delay = max(delay, retry_after)
        return RetryDecision.retry(delay)


class ReconnectPolicy:
    """Backoff for reconnects after a successful connect.

    See (protocol, "Reconnect after a successful connect").

    Args:
        random: returns a float in ``[0, 1)``; defaults to :func:`random.random`.
        base, factor, cap: exponential delay ``min(cap, base · factor^attempt)``.
        stable_after: a connection that lived this long resets the attempt
            counter and the rapid history.
        rapid_uptime: a drop after less uptime than this is "rapid" (failed
            connects count as uptime 0).
        rapid_window: sliding window for rapid drops.
        hold_down_after: from this many rapid drops in the window on, jitter is
            ``U(0.25·d, d)`` instead of ``U(d/2, d)``.
        suppress_after: this many rapid drops inside the window stop reconnecting.
    """

    def __init__(
        self,
        *,
        random: RandomSource = _random.random,
        base: float = 0.5,
        factor: float = 2.0,
        cap: float = 30.0,
        stable_after: float = 60.0,
        rapid_uptime: float = 5.0,
        rapid_window: float = 60.0,
        hold_down_after: int = 3,
        suppress_after: int = 10,
    ) -> None:
        self._random = random
        self.base = base
        self.factor = factor
        self.cap = cap
        self.stable_after = stable_after
        self.rapid_uptime = rapid_uptime
        self.rapid_window = rapid_window
        self.hold_down_after = hold_down_after
        self.suppress_after = suppress_after
        self._attempt = 0
        self._rapid: deque[float] = deque()

    @property
    def attempt(self) -> int:
        """The attempt counter (the exponent of the next delay)."""
        return self._attempt

    @property
    def rapid_drops(self) -> int:
        """Rapid drops currently remembered."""
        return len(self._rapid)

    @staticmethod
    def floor(rapid_count: int) -> float:
        """Minimum (pre-jitter) delay after the ``rapid_count``-th rapid drop (2, 10, 60, 90 … 300)."""
        if rapid_count <= 0:
            return 0.0
        if rapid_count == 1:
            return 2.0
        if rapid_count == 2:
            return 10.0
        return min(300.0, 60.0 + 30.0 * (rapid_count - 3))

    def _decide(self, now: float, uptime: float) -> RetryDecision:
        if uptime >= self.stable_after:
            self._attempt = 0
            self._rapid.clear()
        while self._rapid and now - self._rapid[0] > self.rapid_window:
            self._rapid.popleft()
        floor = 0.0
        if uptime < self.rapid_uptime:
            self._rapid.append(now)
            if len(self._rapid) >= self.suppress_after:
                return RetryDecision.stop("suppressed")
            floor = self.floor(len(self._rapid))
        d = max(min(self.cap, self.base * self.factor**self._attempt), floor)
        self._attempt += 1
        low = 0.25 if len(self._rapid) >= self.hold_down_after else 0.5
        r = _check_random(self._random())
        return RetryDecision.retry(d * (low + (1.0 - low) * r))

    def connection_lost(
        self, now: float, *, uptime: float, close_code: int | None = None
    ) -> RetryDecision:
        """An established connection ended after ``uptime`` seconds; decide what next.

        Args:
            now: the current time.
            uptime: how long the connection was up.
            close_code: the close code (``None`` for an abnormal drop; 4000 for a
                close we forced ourselves, which is never terminal).
        """
        action = classify_close(close_code)
        if action is CloseAction.TERMINAL:
            return RetryDecision.stop(f"close_{close_code}")
        decision = self._decide(now, uptime)
        if decision.give_up:
            return decision
        if action is CloseAction.SERVICE_RESTART:
            extra = 1.0 + 4.0 * _check_random(self._random())
            return RetryDecision.retry(max(decision.delay, extra))
        if action is CloseAction.TRY_AGAIN_LATER:
            extra = 30.0 + 30.0 * _check_random(self._random())
            return RetryDecision.retry(max(decision.delay, extra))
        return decision

    def closed_locally(self, now: float, *, uptime: float) -> RetryDecision:
        """We closed an established connection on purpose; the platform did not drop it.

        For a socket the link gave up on while the platform was demonstrably
        alive (it kept sending frames, but malformed ones). This is not a
        rapid drop: no floor, no hold-down jitter, never suppressed, so one
        burst of garbage costs a reconnect of about ``base`` seconds. The
        attempt counter still grows (a stable connection resets it), so a
        platform that keeps sending garbage is retried with capped exponential
        backoff rather than in a tight loop.

        Args:
            now: the current time.
            uptime: how long the connection was up.
        """
        del now  # the rapid-drop window is not consulted
        if uptime >= self.stable_after:
            self._attempt = 0
            self._rapid.clear()
        d = min(self.cap, self.base * self.factor**self._attempt)
        self._attempt += 1
        r = _check_random(self._random())
        return RetryDecision.retry(d * (0.5 + 0.5 * r))

    def connect_failed(
        self, now: float, *, status: int | None = None, retry_after: float | None = None
    ) -> RetryDecision:
        """A reconnect attempt failed (network error or refused upgrade).

        A 403 refusal is terminal; any other status is retried. Unlike the
        official client, a ``retry_after`` the platform sent is honoured.
        """
        if status is not None and reconnect_status_is_terminal(status):
            return RetryDecision.stop(f"http_{status}")
        decision = self._decide(now, 0.0)
        if decision.give_up or retry_after is None or retry_after <= 0:
            return decision
        return RetryDecision.retry(max(decision.delay, retry_after))
