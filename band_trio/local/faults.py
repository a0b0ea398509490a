"""Fault injection for the local platform (tests of retries and lost responses)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

import attrs

from band_trio.local.refusal import RequestRefusedError, fail

__all__ = ["Fault", "FaultInjector", "SocketFreeze", "fault_refusal"]


@attrs.define(eq=False)
class Fault:
    """One rule: the next ``remaining`` requests matching ``method`` and ``path``
    answer ``status``.

    Attributes:
        method: HTTP method (upper case) or ``"*"``.
        path: regular expression searched in the request path (no query string).
        status: the HTTP status to answer.
        remaining: how many more requests this rule applies to.
        retry_after: seconds for a ``Retry-After`` header (and body field), if any.
        perform: run the operation first, then answer ``status`` anyway (a lost
            response). When False the operation is not performed.
        delay: seconds to wait before answering (``float('inf')`` hangs until the
            client gives up).
        code: the error code of the body (default: the status' usual code).
        message: the error message of the body.
        probability: the share of matching requests this rule answers (1.0:
            every one); the others pass untouched and use up nothing. The
            draws come from the injector's seeded random source, so a run
            replays the same faults.
        hits: how many requests this rule answered.
    """

    method: str
    path: re.Pattern[str]
    status: int
    remaining: int
    retry_after: float | None = None
    perform: bool = False
    delay: float | None = None
    code: str | None = None
    message: str | None = None
    probability: float = 1.0
    hits: int = 0


@attrs.define(eq=False)
class SocketFreeze:
    """WebSockets gone silent without closing (a half-open connection): no
    frame reaches the client and no frame of the client is handled, while the
    TCP connection stays open. New sockets are not frozen.

    Attributes:
        connection_ids: the hub connections frozen.
        active: False once :meth:`FaultInjector.thaw` lifted it.
        dropped_in: client frames ignored.
        dropped_out: platform frames not sent.
    """

    connection_ids: frozenset[int]
    active: bool = True
    dropped_in: int = 0
    dropped_out: int = 0


def fault_refusal(fault: Fault, *, default_code: str | None = None) -> RequestRefusedError:
    """The refusal a matching request is answered with.

    Args:
        fault: the rule that matched.
        default_code: the error code when the rule names none (else the usual
            code of the status).
    """
    return fail(
        fault.status,
        fault.message or f"injected fault (HTTP {fault.status})",
        code=fault.code or default_code,
        retry_after=fault.retry_after,
    )


class FaultInjector:
    """Rules consulted by every HTTP request and WebSocket upgrade, oldest first.

    WebSocket upgrades match as method ``GET``; ``perform`` does not apply to
    them (a matching upgrade is refused with the rule's status and JSON body).
    """

    def __init__(self, seed: int = 0) -> None:
        self._faults: list[Fault] = []
        self._random = random.Random(seed)
        self._freezes: list[SocketFreeze] = []

    def reseed(self, seed: int) -> None:
        """Start the random source of the rules' ``probability`` over from ``seed``."""
        self._random.seed(seed)

    def add(
        self,
        method: str,
        path_regex: str,
        status: int,
        count: int = 1,
        *,
        retry_after: float | None = None,
        perform: bool = False,
        delay: float | None = None,
        code: str | None = None,
        message: str | None = None,
        probability: float = 1.0,
    ) -> Fault:
        """Add a rule; returns it (its ``hits`` counts the requests it answered).

        Raises:
            ValueError: a bad status, count, probability or regular expression.
        """
        if not 100 <= status <= 599:
            raise ValueError(f"invalid HTTP status {status}")
        if count < 1:
            raise ValueError("count must be at least 1")
        if not 0.0 < probability <= 1.0:
            raise ValueError(f"probability must be in (0, 1], got {probability!r}")
        try:
            pattern = re.compile(path_regex)
        except re.error as exc:
            raise ValueError(f"invalid path regex: {exc}") from None
        fault = Fault(
            method=method.upper(),
            path=pattern,
            status=status,
            remaining=count,
            retry_after=retry_after,
            perform=perform,
            delay=delay,
            code=code,
            message=message,
            probability=probability,
        )
        self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every rule (frozen sockets stay frozen: see :meth:`thaw`)."""
        self._faults.clear()

    def freeze_sockets(self, connection_ids: Iterable[int]) -> SocketFreeze:
        """Make the given WebSocket connections (hub connection ids) silent
        without closing them; returns the freeze (its counters fill up)."""
        freeze = SocketFreeze(frozenset(connection_ids))
        self._freezes.append(freeze)
        return freeze

    def thaw(self) -> None:
        """Lift every freeze (the sockets carry frames again)."""
        for freeze in self._freezes:
            freeze.active = False
        self._freezes.clear()

    def frozen(self, connection_id: int) -> SocketFreeze | None:
        """The freeze silencing this connection, if any."""
        for freeze in self._freezes:
            if connection_id in freeze.connection_ids:
                return freeze
        return None

    @property
    def pending(self) -> list[Fault]:
        """The rules that still apply."""
        return list(self._faults)

    def take(self, method: str, path: str) -> Fault | None:
        """The first rule matching this request, consuming one of its uses."""
        for fault in self._faults:
            if fault.method in ("*", method.upper()) and fault.path.search(path):
                if fault.probability < 1.0 and self._random.random() >= fault.probability:
                    continue
                fault.remaining -= 1
                fault.hits += 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                return fault
        return None
