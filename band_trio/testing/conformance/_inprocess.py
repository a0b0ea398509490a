"""The embedded platform reached in-process: no socket, no real time.

REST goes through :class:`httpx.ASGITransport` straight into the platform's
ASGI application (the same request handling Hypercorn serves). Pushes go
through :class:`InProcessLink`: it registers a connection with the platform's
WebSocket hub and exchanges the very Phoenix frames a socket would carry, but
through the hub's in-memory queues. Every wait is a Trio checkpoint, so a run
under ``MockClock(autojump_threshold=0)`` spends no real time on turn timeouts,
slow tools or grace periods.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import attrs
import httpx
import trio

from band_trio import (
    AgentConfig,
    AgentSettings,
)
from band_trio.errors import JoinError
from band_trio.runtime import PlatformRuntime
from band_trio.testing.conformance._runtime_access import LocalPlatform, RetryPolicy
from band_trio.wire import (
    EventRejected,
    LinkReconnected,
    RestConfig,
    decode_event,
)

__all__ = ["InProcessLink", "InProcessRuntime", "RequestDelays", "in_process_transport"]

REST_ORIGIN = "http://band.in-process"
"""The origin the agent's REST client believes it talks to (never resolved)."""

FAST_RETRIES = RestConfig(
    retry=RetryPolicy(backoff_base=0.05, backoff_cap=1.0, jitter=0.0),
    # The origin is never resolved: requests go to the platform's ASGI app in process.
    allow_insecure_transport=True,
)
"""REST retries without jitter and short (virtual) waits: deterministic runs."""


class RequestDelays:
    """Requests that take longer: each rule delays the next matching request once.

    The platform's fault injector answers every matching request with an
    error; a slow tool must succeed, only late. This ASGI wrapper waits (in
    virtual time) before handing the request to the platform.

    Args:
        app: the platform's ASGI application.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._rules: list[tuple[str, re.Pattern[str], float]] = []

    def add(self, method: str, path_regex: str, seconds: float) -> None:
        """Delay the next ``method`` request whose path matches by ``seconds``."""
        self._rules.append((method.upper(), re.compile(path_regex), seconds))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            for rule in self._rules:
                method, pattern, seconds = rule
                if method == scope["method"] and pattern.search(scope["path"]):
                    self._rules.remove(rule)
                    await trio.sleep(seconds)
                    break
        await self._app(scope, receive, send)


def in_process_transport(app: Any) -> httpx.AsyncBaseTransport:
    """An httpx transport that calls an ASGI app (the platform's) in this task."""
    return httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))


class InProcessLink:
    """What the runtime needs from a ``BandLink``, over the hub's memory queues.

    Args:
        platform: the local platform.
        agent_id: the agent this link belongs to.
        on_joined: called with every topic joined (the kit notes room lives).
        on_left: called with every topic left.
    """

    def __init__(
        self,
        platform: LocalPlatform,
        agent_id: str,
        *,
        on_joined: Callable[[str], None] | None = None,
        on_left: Callable[[str], None] | None = None,
    ) -> None:
        self._platform = platform
        self._agent_id = agent_id
        self._on_joined = on_joined
        self._on_left = on_left
        self._conn: Any = None
        self._refs = itertools.count(1)
        self._waiters: dict[str, tuple[trio.Event, list[dict[str, Any]]]] = {}
        self._topics: dict[str, None] = {}
        self._dropped = trio.Event()
        self._down_for = 0.0
        self.reconnects = 0

    def drop(self, seconds: float) -> None:
        """Lose the connection now and open a new one ``seconds`` later
        (virtual): pushes sent meanwhile are lost, as over a dropped socket.
        The new connection rejoins every topic, and the runtime is told
        (``LinkReconnected``) so that it resyncs."""
        self._down_for = seconds
        self._dropped.set()

    async def serve(
        self,
        events: trio.MemorySendChannel[Any],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Open the connection, join the agent topics, forward pushes until
        cancelled (reconnecting after each :meth:`drop`)."""
        await self._connected(events, None, task_status)
        while True:
            await trio.sleep(self._down_for)
            self.reconnects += 1
            await self._connected(events, tuple(self._topics), trio.TASK_STATUS_IGNORED)

    async def _connected(
        self,
        events: trio.MemorySendChannel[Any],
        rejoin: tuple[str, ...] | None,
        task_status: trio.TaskStatus[None],
    ) -> None:
        """One connection, until it is dropped."""
        platform = self._platform
        principal = platform.state.agents[self._agent_id]
        self._dropped = trio.Event()
        with trio.CancelScope() as scope:
            conn = platform.hub.open(principal, scope)
            self._conn = conn
            platform._flush()
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._reader, conn, events)
                    if rejoin is None:
                        await self.join(f"agent_control:{self._agent_id}")
                        await self.join(f"agent_rooms:{self._agent_id}")
                        task_status.started()
                    else:
                        rejoined, lost = await self._rejoin(rejoin)
                        await events.send(LinkReconnected(self.reconnects, rejoined, lost))
                    await self._dropped.wait()
                    nursery.cancel_scope.cancel()
            finally:
                self._conn = None
                platform.hub.close(conn)
                platform._flush()
                for done, _ in self._waiters.values():
                    done.set()

    async def _rejoin(self, topics: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        rejoined: list[str] = []
        lost: list[str] = []
        for topic in topics:
            try:
                await self.join(topic)
            except JoinError:
                self._topics.pop(topic, None)
                lost.append(topic)
            else:
                rejoined.append(topic)
        return tuple(rejoined), tuple(lost)

    async def _reader(self, conn: Any, events: trio.MemorySendChannel[Any]) -> None:
        async for item in conn.inbox:
            if not isinstance(item, str):
                return  # a close request: the platform ended the connection
            _join_ref, ref, topic, event, payload = json.loads(item)
            if event == "phx_reply":
                waiter = self._waiters.get(str(ref))
                if waiter is not None:
                    waiter[1].append(payload)
                    waiter[0].set()
                continue
            if event in ("phx_close", "phx_error"):
                continue
            try:
                decoded: Any = decode_event(topic, event, payload)
            except Exception as exc:
                decoded = EventRejected(topic, event, str(exc))
            await events.send(decoded)

    async def _request(self, topic: str, event: str) -> dict[str, Any] | None:
        await trio.lowlevel.checkpoint()
        conn = self._conn
        if conn is None:
            return None
        ref = str(next(self._refs))
        done = trio.Event()
        answer: list[dict[str, Any]] = []
        self._waiters[ref] = (done, answer)
        try:
            self._platform.hub.handle_frame(conn, json.dumps([ref, ref, topic, event, {}]))
            self._platform._flush()
            await done.wait()
        finally:
            del self._waiters[ref]
        return answer[0] if answer else None

    async def join(self, topic: str) -> None:
        """Join ``topic``.

        Raises:
            JoinError: the platform refused it, or the link is not connected.
        """
        reply = await self._request(topic, "phx_join")
        if reply is None:
            raise JoinError(topic, "not connected", retryable=True)
        if reply.get("status") != "ok":
            reason = str((reply.get("response") or {}).get("reason", "refused"))
            raise JoinError(topic, reason)
        self._topics[topic] = None
        if self._on_joined is not None:
            self._on_joined(topic)

    async def leave(self, topic: str) -> None:
        """Leave ``topic`` (nothing happens when it is not joined)."""
        await self._request(topic, "phx_leave")
        self._topics.pop(topic, None)
        if self._on_left is not None:
            self._on_left(topic)


class InProcessRuntime(PlatformRuntime):
    """A :class:`~band_trio.PlatformRuntime` whose link and REST client are in-process.

    Args:
        platform: the local platform.
        agent_id: the agent's id on it.
        api_key: the agent's key.
        config: the runtime configuration.
        on_joined: see :class:`InProcessLink`.
        on_left: see :class:`InProcessLink`.
        delays: slows chosen requests down (None: none are).
        rest_config: the REST client's settings (None: short retries without
            jitter, :data:`FAST_RETRIES`). Whatever is given, the in-process
            origin is allowed without TLS.
    """

    def __init__(
        self,
        platform: LocalPlatform,
        agent_id: str,
        api_key: str,
        config: AgentConfig,
        *,
        on_joined: Callable[[str], None] | None = None,
        on_left: Callable[[str], None] | None = None,
        delays: RequestDelays | None = None,
        rest_config: RestConfig | None = None,
    ) -> None:
        rest = (
            FAST_RETRIES
            if rest_config is None
            else attrs.evolve(rest_config, allow_insecure_transport=True)
        )
        settings = AgentSettings(
            agent_id=agent_id,
            api_key=api_key,
            rest_url=REST_ORIGIN,
            ws_url="ws://band.in-process/api/v1/socket/websocket",
        )
        super().__init__(
            settings,
            config,
            rest_options={
                "transport": in_process_transport(delays if delays is not None else platform.app),
                "config": rest,
            },
        )
        self._platform = platform
        self._on_joined = on_joined
        self._on_left = on_left
        self.link: InProcessLink | None = None

    def make_link(self) -> Any:
        """A fresh in-process link for one run (also kept as :attr:`link`)."""
        self.link = InProcessLink(
            self._platform, self.agent_id, on_joined=self._on_joined, on_left=self._on_left
        )
        return self.link
