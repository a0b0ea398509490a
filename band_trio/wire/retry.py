"""Sans-io retry policy for REST calls: no clock, no sockets, no randomness of its own.

Reference: docs/reference/protocol.rst.

Given what happened (an HTTP status and its headers, or a transport failure),
how many retries were already spent, whether the request is idempotent, the
wall-clock time and one uniform random number, :class:`RetryPolicy` answers
with the number of seconds to wait before the next attempt, or ``None`` for
"give up". The Trio layer (:mod:`band_trio.wire.rest`) does the waiting with
``trio.sleep`` so every retry is cancellable.

The rules (protocol, "Conventions"; improved where the official client is unsafe):

* 429 means "the platform did not do it, come back later", and so does a 503
  that says when to come back (``Retry-After``, or ``retry-after-ms``): both
  are retried for every request, waiting what the header (or
  ``X-RateLimit-Reset``, epoch seconds) asks, capped, plus 0–20 % jitter so a
  crowd of clients does not return in lockstep; otherwise exponential backoff.
* 408, a 503 without ``Retry-After`` and every other 5xx are *ambiguous*: a
  gateway answers that way when the platform committed the write but its
  answer was lost. They are retried only for idempotent requests; for any
  other request the outcome is unknown (:func:`status_leaves_outcome_unknown`)
  and the caller must check before sending it again.
* A transport failure before the request left (could not connect, no pooled
  connection free in time) is safe to retry for every request; any other
  transport failure (a timeout, a reset after sending) is ambiguous and retried
  only for idempotent requests. A non-idempotent write is therefore never sent
  twice by us.
* Everything else (4xx) is final — including 409, which the official
  generated client retries although it can repeat a committed write.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping

import attrs

__all__ = [
    "ALWAYS_RETRIED_STATUSES",
    "RetryPolicy",
    "parse_retry_after",
    "server_requested_delay",
    "status_leaves_outcome_unknown",
    "status_proves_nothing_done",
]

ALWAYS_RETRIED_STATUSES = frozenset({429})
"""Statuses that prove the platform did not act whatever their headers: safe
to retry any request (a 503 is only when it carries ``Retry-After``)."""


def _header(headers: Mapping[str, str], name: str) -> str | None:
    # Headers may be an httpx.Headers (case-insensitive) or a plain dict.
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, val in headers.items():
        if key.lower() == lowered:
            return val
    return None


def _finite_number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return value


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait through ``retry-after-ms`` or ``Retry-After``.

    Args:
        headers: response headers (any case).
        now: the current wall-clock time (epoch seconds), to resolve an HTTP date.

    Returns:
        A non-negative number of seconds (uncapped), or ``None`` when neither
        header is present and valid.
    """
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        value = _finite_number(millis)
        if value is not None and value >= 0:
            return value / 1000.0
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    value = _finite_number(raw)
    if value is not None:
        return value if value >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT by definition
        return None
    return max(0.0, when.timestamp() - now)


def server_requested_delay(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait the server asked for: ``Retry-After`` first, then ``X-RateLimit-Reset``.

    ``X-RateLimit-Reset`` is an absolute epoch time; one already in the past
    is ignored (it cannot be what the server meant).

    Returns:
        Seconds (uncapped, non-negative) or ``None``.
    """
    retry_after = parse_retry_after(headers, now=now)
    if retry_after is not None:
        return retry_after
    reset = _header(headers, "x-ratelimit-reset")
    if reset is None:
        return None
    at = _finite_number(reset)
    if at is None or at <= now:
        return None
    return at - now


def status_proves_nothing_done(status: int, headers: Mapping[str, str], *, now: float) -> bool:
    """Whether an error status proves the platform did not act on the request.

    True for 429, and for a 503 that says when to come back (``Retry-After``
    or ``retry-after-ms``): the platform refused the work before doing it.
    A bare 503 is not proof: a gateway in front of the platform answers 503
    when the platform is slow or its answer is lost, whatever it did.

    Args:
        status: the HTTP status received.
        headers: the response headers (any case).
        now: the current wall-clock time (epoch seconds), for an HTTP date.
    """
    if status in ALWAYS_RETRIED_STATUSES:
        return True
    return status == 503 and parse_retry_after(headers, now=now) is not None


def status_leaves_outcome_unknown(status: int, headers: Mapping[str, str], *, now: float) -> bool:
    """Whether an error status may hide a write the platform committed.

    True for 408 and every 5xx except a 503 with ``Retry-After``; False for
    2xx, 4xx other than 408, and the statuses of
    :func:`status_proves_nothing_done`.

    Args:
        status: the HTTP status received.
        headers: the response headers (any case).
        now: the current wall-clock time (epoch seconds), for an HTTP date.
    """
    if status_proves_nothing_done(status, headers, now=now):
        return False
    return status == 408 or status >= 500


def _non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """When and how long to wait before retrying a REST call.

    Attributes:
        max_retries: retries after the first attempt (0 disables retrying).
        backoff_base: first backoff delay in seconds; doubles per retry (0.5, 1, 2 ...).
        backoff_cap: the longest backoff delay.
        server_delay_cap: the longest wait a ``Retry-After`` / ``X-RateLimit-Reset``
            header can impose (longer requests are shortened to this).
        jitter: backoff delays are spread by ±``jitter`` (a fraction); waits the
            server asked for get +0 to +2×``jitter`` instead (+0–20 % by
            default; never shorter than asked, unless capped). Set 0 for
            exact, deterministic delays.
    """

    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    backoff_base: float = attrs.field(default=0.5, validator=_non_negative)
    backoff_cap: float = attrs.field(default=60.0, validator=_non_negative)
    server_delay_cap: float = attrs.field(default=60.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.1, validator=[_non_negative, attrs.validators.le(1.0)])

    def backoff(self, attempt: int, random: float) -> float:
        """The exponential backoff delay after ``attempt`` retries already spent."""
        base = min(self.backoff_cap, self.backoff_base * 2.0 ** min(attempt, 62))
        spread = 1.0 + self.jitter * (2.0 * random - 1.0)
        return max(0.0, min(self.backoff_cap, base * spread))

    def after_status(
        self,
        *,
        attempt: int,
        status: int,
        headers: Mapping[str, str],
        idempotent: bool,
        now: float,
        random: float,
    ) -> float | None:
        """Decide after an HTTP error status.

        Args:
            attempt: retries already spent for this call (0 after the first try).
            status: the HTTP status received.
            headers: the response headers.
            idempotent: whether repeating the request cannot repeat an effect.
            now: wall-clock time in epoch seconds (for HTTP dates and reset times).
            random: a uniform number in [0, 1) for jitter.

        Returns:
            Seconds to wait before the next attempt, or ``None`` to give up.
        """
        if attempt >= self.max_retries:
            return None
        if status_proves_nothing_done(status, headers, now=now):
            pass
        elif status_leaves_outcome_unknown(status, headers, now=now):
            if not idempotent:
                return None
        else:
            return None
        asked = server_requested_delay(headers, now=now)
        if asked is not None:
            # Never earlier than asked: the jitter only adds (2 x jitter, so
            # +0-20 % by default).
            return min(self.server_delay_cap, asked * (1.0 + 2.0 * self.jitter * random))
        return self.backoff(attempt, random)

    def after_transport_error(
        self, *, attempt: int, maybe_sent: bool, idempotent: bool, random: float
    ) -> float | None:
        """Decide after a transport failure (no HTTP status).

        Args:
            attempt: retries already spent for this call.
            maybe_sent: ``False`` only when the request provably never left
                (connect failed, pool timeout); ``True`` when the server may have
                received it.
            idempotent: whether repeating the request cannot repeat an effect.
            random: a uniform number in [0, 1) for jitter.

        Returns:
            Seconds to wait before the next attempt, or ``None`` to give up.
        """
        if attempt >= self.max_retries:
            return None
        if maybe_sent and not idempotent:
            return None
        return self.backoff(attempt, random)
