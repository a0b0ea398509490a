"""A tiny Phoenix v2 server for BandLink tests (trio-websocket on 127.0.0.1:0), and helpers.

``FakePhoenix`` speaks enough of the protocol for the link (joins, leaves,
heartbeats, pushes, upgrade refusals) and records what it saw; the ``server``
fixture in ``conftest.py`` runs one per test. Fast backoff policies let
real-clock tests reconnect at once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio
import trio.testing
import trio_websocket

from band_trio.wire.backoff import FirstConnectPolicy, ReconnectPolicy, RetryDecision
from band_trio.wire.link import (
    BandLink,
    LinkConfig,
    LinkEvent,
    agent_topics,
    room_topics,
)

AGENT = "agent-8c1f"
KEY = "sk-band-TOPSECRET-KEY"
ROOM = "room-3f0c"
CONTROL, ROOMS, CONTACTS = agent_topics(AGENT)
CHAT, PARTICIPANTS = room_topics(ROOM)

MESSAGE = {
    "id": "m1",
    "content": "hello",
    "message_type": "text",
    "sender_id": "u1",
    "sender_type": "User",
    "inserted_at": "t",
    "updated_at": "t",
}
CONTROL_PUSH = {
    "mode": "stop",
    "scope": "room",
    "agent_id": AGENT,
    "execution_id": None,
    "room_id": ROOM,
    "correlation_id": "c1",
}


@attrs.define
class Conn:
    ws: trio_websocket.WebSocketConnection
    path: str
    headers: dict[str, str]
    frames: list[list[Any]] = attrs.field(factory=list)
    joins: dict[str, str] = attrs.field(factory=dict)
    close_code: int | None = None
    closed: bool = False


class FakePhoenix:
    """Speaks enough Phoenix v2 for the link: joins, leaves, heartbeats, pushes."""

    def __init__(self) -> None:
        self.port = 0
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.rejections: list[tuple[int, list[tuple[bytes, bytes]], bytes]] = []
        self.reject_always: tuple[int, list[tuple[bytes, bytes]], bytes] | None = None
        self.conns: list[Conn] = []
        self.answer_heartbeats = True
        self.answer_leaves = True
        # topic -> "ok" | "error" | "ignore" | "stale_then_ok"
        self.join_mode: dict[str, str] = {}
        # When a list: joins wait here unanswered until release_joins().
        self.held_joins: list[tuple[Conn, list[Any]]] | None = None
        self._changed = trio.Event()

    def changed(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    @property
    def conn(self) -> Conn:
        return self.conns[-1]

    def frames(self, event: str, conn: Conn | None = None) -> list[list[Any]]:
        source = conn.frames if conn is not None else [f for c in self.conns for f in c.frames]
        return [f for f in source if f[3] == event]

    async def handler(self, request: trio_websocket.WebSocketRequest) -> None:
        headers = {k.decode().lower(): v.decode() for k, v in request.headers}
        self.requests.append((request.path, headers))
        self.changed()
        refusal = self.rejections.pop(0) if self.rejections else self.reject_always
        if refusal is not None:
            status, extra, body = refusal
            await request.reject(status, extra_headers=list(extra), body=body)
            return
        ws = await request.accept()
        conn = Conn(ws, request.path, headers)
        self.conns.append(conn)
        self.changed()
        try:
            while True:
                frame = json.loads(await ws.get_message())
                conn.frames.append(frame)
                await self.on_frame(conn, frame)
                self.changed()
        except trio_websocket.ConnectionClosed as exc:
            conn.close_code = exc.reason.code if exc.reason else None
        finally:
            conn.closed = True
            self.changed()

    async def release_joins(self, *, hold_more: bool) -> None:
        """Answer the joins held so far; later joins are held too if ``hold_more``."""
        held = self.held_joins or []
        self.held_joins = [] if hold_more else None
        for conn, frame in held:
            await self.on_frame(conn, frame)

    async def on_frame(self, conn: Conn, frame: list[Any]) -> None:
        join_ref, ref, topic, event, _ = frame
        if event == "phx_join" and self.held_joins is not None:
            self.held_joins.append((conn, frame))
            return
        if event == "phx_join":
            mode = self.join_mode.get(topic, "ok")
            if mode == "ignore_once":
                self.join_mode[topic] = "ok"
                return
            if mode == "ignore":
                return
            if mode == "close":
                await conn.ws.aclose(1001)
                return
            if mode == "push_first":
                early = {**MESSAGE, "id": "early"}
                await self.send(conn, [join_ref, None, topic, "message_created", early])
            if mode == "error":
                await self.send(conn, [join_ref, ref, topic, "phx_reply", error_reply("denied")])
                return
            if mode == "stale_then_ok":
                await self.send(conn, [str(int(join_ref) - 1), ref, topic, "phx_reply", ok_reply()])
                await self.send(conn, [None, ref, topic, "phx_reply", error_reply("null ref")])
            conn.joins[topic] = join_ref
            await self.send(conn, [join_ref, ref, topic, "phx_reply", ok_reply()])
        elif event == "heartbeat" and self.answer_heartbeats:
            await self.send(conn, [None, ref, "phoenix", "phx_reply", ok_reply()])
        elif event == "phx_leave" and self.answer_leaves:
            conn.joins.pop(topic, None)
            await self.send(conn, [join_ref, ref, topic, "phx_reply", ok_reply()])
            await self.send(conn, [join_ref, join_ref, topic, "phx_close", {}])

    async def send(self, conn: Conn, frame: list[Any]) -> None:
        await conn.ws.send_message(json.dumps(frame))

    async def push(self, topic: str, event: str, payload: Any, *, join_ref: Any = ...) -> None:
        conn = self.conn
        ref = conn.joins[topic] if join_ref is ... else join_ref
        await self.send(conn, [ref, None, topic, event, payload])


def ok_reply() -> dict[str, Any]:
    return {"status": "ok", "response": {}}


def error_reply(reason: str) -> dict[str, Any]:
    return {"status": "error", "response": {"reason": reason}}


def error_body(code: str, message: str, **more: Any) -> bytes:
    return json.dumps(
        {"error": {"code": code, "message": message, "request_id": None, **more}}
    ).encode()


class FastReconnect(ReconnectPolicy):
    """The real classification, with delays shrunk for real-clock tests."""

    def connection_lost(
        self, now: float, *, uptime: float, close_code: int | None = None
    ) -> RetryDecision:
        d = super().connection_lost(now, uptime=uptime, close_code=close_code)
        return d if d.give_up else RetryDecision.retry(0.01)

    def connect_failed(
        self, now: float, *, status: int | None = None, retry_after: float | None = None
    ) -> RetryDecision:
        d = super().connect_failed(now, status=status, retry_after=retry_after)
        return d if d.give_up else RetryDecision.retry(0.01)

    def closed_locally(self, now: float, *, uptime: float) -> RetryDecision:
        super().closed_locally(now, uptime=uptime)
        return RetryDecision.retry(0.01)


class FastFirst(FirstConnectPolicy):
    def failure(
        self,
        now: float,
        *,
        uptime: float = 0.0,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> RetryDecision:
        d = super().failure(now, uptime=uptime, status=status, retry_after=retry_after)
        return d if d.give_up else RetryDecision.retry(0.01)


FAST = LinkConfig(first_connect_policy=FastFirst, reconnect_policy=FastReconnect, join_timeout=2.0)


def make_link(server: FakePhoenix, config: LinkConfig = FAST, **kw: Any) -> BandLink:
    url = f"ws://127.0.0.1:{server.port}/api/v1/socket/websocket"
    return BandLink(agent_id=AGENT, api_key=KEY, ws_url=url, config=config, **kw)


class Running:
    """A served link plus its event stream."""

    def __init__(self, link: BandLink, receive: trio.MemoryReceiveChannel[LinkEvent]) -> None:
        self.link = link
        self.receive = receive

    async def next(self) -> LinkEvent:
        return await self.receive.receive()


async def start(nursery: trio.Nursery, link: BandLink, buffer: int = 100) -> Running:
    send, receive = trio.open_memory_channel[LinkEvent](buffer)
    await nursery.start(link.serve, send)
    return Running(link, receive)


async def serve_until_error(
    link: BandLink, action: Callable[[], Awaitable[None]] | None = None
) -> BaseException:
    """Serve ``link`` (then run ``action``) and return the one error serve ends with."""
    send, _receive = trio.open_memory_channel[LinkEvent](100)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(link.serve, send)
            if action is not None:
                await action()
            await trio.sleep_forever()
    except BaseExceptionGroup as group:
        errors = [e for e in leaves(group) if not isinstance(e, trio.Cancelled)]
        return errors[0] if len(errors) == 1 else group
    raise AssertionError("serve did not fail")


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]
