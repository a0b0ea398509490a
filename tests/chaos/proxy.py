"""A Trio TCP proxy that injects network faults between an agent and the platform.

The proxy listens on a loopback port and forwards every connection to the
platform's port, byte for byte, in both directions. A :class:`Rule` names a
point of the conversation by a pattern of bytes (an HTTP request line going
up, a WebSocket frame coming down) and a :class:`Fault` to inject there. Which
matches a rule fires on comes from a seeded random source, so a failing
schedule replays with the same seed.

Faults, by where the matching bytes travel:

* a **request** going up (REST): ``DELAY`` holds it before forwarding it;
  ``DROP`` closes the connection without forwarding it (the platform never
  sees it); ``RESET``, ``TRUNCATE`` and ``STALL`` forward it (the platform
  applies it) and then lose the answer: the client's socket is reset, gets
  half the answer and a close, or gets nothing until it gives up.
* a **frame** coming down (WebSocket): ``DELAY`` holds it; ``DROP`` closes
  the connection without forwarding it; ``RESET`` resets the client's socket;
  ``TRUNCATE`` forwards half of it and closes; ``STALL`` forwards nothing
  more to the client (heartbeat replies included) until the connection ends.

Only loopback addresses are used.
"""

from __future__ import annotations

import enum
import random
import re
import socket
import struct
from collections import Counter

import attrs
import trio

LOOPBACK = "127.0.0.1"
_CHUNK = 64 * 1024


class Fault(enum.Enum):
    """What happens to the bytes a rule matched."""

    DELAY = "delay"
    DROP = "drop"
    RESET = "reset"
    TRUNCATE = "truncate"
    STALL = "stall"


class Direction(enum.Enum):
    """Which way the matched bytes travel."""

    UP = "up"
    """Agent to platform: requests, WebSocket frames the agent sends."""
    DOWN = "down"
    """Platform to agent: answers, pushed frames."""


@attrs.define
class Rule:
    """Inject ``fault`` where ``pattern`` matches bytes travelling ``direction``.

    Attributes:
        name: the point of the conversation (reported in :attr:`ChaosProxy.fired`).
        direction: which way the bytes travel.
        pattern: a regular expression over one chunk of bytes.
        fault: the fault to inject.
        probability: chance that a match fires (drawn from the proxy's seeded source).
        limit: the rule fires at most this many times (``None``: no limit).
        skip: matches passed over before the rule may fire.
        delay: seconds a ``DELAY`` holds the bytes.
    """

    name: str
    direction: Direction
    pattern: re.Pattern[bytes]
    fault: Fault
    probability: float = 1.0
    limit: int | None = 1
    skip: int = 0
    delay: float = 0.3
    matched: int = 0
    fired: int = 0

    def fires(self, rng: random.Random) -> bool:
        """Count one match; whether the fault fires on it."""
        self.matched += 1
        if self.matched <= self.skip:
            return False
        if self.limit is not None and self.fired >= self.limit:
            return False
        if rng.random() >= self.probability:
            return False
        self.fired += 1
        return True


@attrs.define
class _Connection:
    """One proxied connection: the agent's socket, the platform's, and what is
    owed to the next answer (a fault armed by the request it answers)."""

    client: trio.SocketStream
    upstream: trio.SocketStream
    scope: trio.CancelScope
    lose_answer: Fault | None = None


class ChaosProxy:
    """Forward loopback connections to ``upstream_port`` and inject faults.

    Start it with ``await nursery.start(proxy.serve)``; point the agent at
    :attr:`rest_url` and :attr:`ws_url`.

    Args:
        upstream_port: the platform's port on 127.0.0.1.
        seed: seeds every random choice of the schedule.
        rules: the fault rules, checked in order (the first that fires wins).
    """

    def __init__(self, upstream_port: int, *, seed: int, rules: list[Rule] | None = None) -> None:
        self.upstream_port = upstream_port
        self.rules: list[Rule] = list(rules or [])
        self.random = random.Random(seed)
        self.port = 0
        self.connections = 0
        self.fired: Counter[tuple[str, Fault]] = Counter()

    @property
    def rest_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{LOOPBACK}:{self.port}/api/v1/socket/websocket"

    async def serve(
        self, *, task_status: trio.TaskStatus[ChaosProxy] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept and forward connections until cancelled."""
        listeners = await trio.open_tcp_listeners(0, host=LOOPBACK)
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(self)

    async def _handle(self, client: trio.SocketStream) -> None:
        self.connections += 1
        try:
            upstream = await trio.open_tcp_stream(LOOPBACK, self.upstream_port)
        except OSError:
            await client.aclose()
            return
        with trio.CancelScope() as scope:
            conn = _Connection(client, upstream, scope)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, conn, Direction.UP)
                    nursery.start_soon(self._pump, conn, Direction.DOWN)
            finally:
                await _close(upstream)
                await _close(client)

    def _pick(self, direction: Direction, data: bytes) -> Rule | None:
        for rule in self.rules:
            if (
                rule.direction is direction
                and rule.pattern.search(data)
                and rule.fires(self.random)
            ):
                self.fired[(rule.name, rule.fault)] += 1
                return rule
        return None

    async def _pump(self, conn: _Connection, direction: Direction) -> None:
        source, sink = (
            (conn.client, conn.upstream)
            if direction is Direction.UP
            else (conn.upstream, conn.client)
        )
        try:
            while True:
                data = await source.receive_some(_CHUNK)
                if not data:
                    break  # end of stream: the whole connection ends with it
                if direction is Direction.DOWN and conn.lose_answer is not None:
                    fault, conn.lose_answer = conn.lose_answer, None
                    await self._lose(conn, fault, data)
                    return
                rule = self._pick(direction, data)
                if rule is None:
                    await sink.send_all(data)
                    continue
                if rule.fault is Fault.DELAY:
                    await trio.sleep(rule.delay)
                    await sink.send_all(data)
                elif rule.fault is Fault.DROP:
                    break
                elif direction is Direction.UP:
                    # The platform gets the request; its answer is lost.
                    conn.lose_answer = rule.fault
                    await sink.send_all(data)
                else:
                    await self._lose(conn, rule.fault, data)
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        conn.scope.cancel()

    async def _lose(self, conn: _Connection, fault: Fault, data: bytes) -> None:
        """Lose ``data`` (bytes going down to the agent) the way ``fault`` says."""
        if fault is Fault.RESET:
            _reset(conn.client)
        elif fault is Fault.TRUNCATE:
            await conn.client.send_all(data[: max(1, len(data) // 2)])
        else:  # STALL: nothing more reaches the agent until the connection ends
            await _drain(conn.upstream)
        conn.scope.cancel()


def _reset(stream: trio.SocketStream) -> None:
    """Make closing ``stream`` send a TCP reset instead of a clean FIN."""
    stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _drain(stream: trio.SocketStream) -> None:
    """Read and discard until the stream ends (the agent gave up on it)."""
    try:
        while await stream.receive_some(_CHUNK):
            pass
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _close(stream: trio.SocketStream) -> None:
    with trio.CancelScope(shield=True):
        await trio.aclose_forcefully(stream)
