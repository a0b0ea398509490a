"""BandLink against a tiny Phoenix v2 server written here (trio-websocket on 127.0.0.1:0).

Tests that involve heartbeats, dead deadlines or backoff waits run under
``autojump_clock`` (both ends live in this Trio run, so the clock only jumps
when no socket has data pending); the others run on the real clock with fast
backoff policies, and every test is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import attrs
import pytest
import trio
import trio.testing
import trio_websocket

from band_trio.errors import (
    AgentAlreadyRunningError,
    BandConfigError,
    BandConnectionError,
    JoinError,
    SupersededError,
    UpgradeRefusedError,
)
from band_trio.wire.backoff import FirstConnectPolicy, ReconnectPolicy, RetryDecision
from band_trio.wire.events import AgentControl, MessageCreated, RoomAdded, Supersede
from band_trio.wire.link import (
    BandLink,
    EventRejected,
    LinkConfig,
    LinkEvent,
    LinkReconnected,
    TopicLost,
    agent_topics,
    build_ws_url,
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


# --------------------------------------------------------------------------- fake server


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

    async def on_frame(self, conn: Conn, frame: list[Any]) -> None:
        join_ref, ref, topic, event, _ = frame
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


@pytest.fixture
async def server() -> AsyncIterator[FakePhoenix]:
    fake = FakePhoenix()
    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(
            trio_websocket.serve_websocket, fake.handler, "127.0.0.1", 0, None
        )
        fake.port = ws_server.port
        yield fake
        nursery.cancel_scope.cancel()


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


# --------------------------------------------------------------------------- URL


def test_build_ws_url_replaces_vsn_and_strips_credentials() -> None:
    url = build_ws_url("wss://h.example/api/v1/socket/websocket?vsn=1.0.0&api_key=zz&keep=1", "a b")
    assert url == "wss://h.example/api/v1/socket/websocket?keep=1&vsn=2.0.0&agent_id=a%20b"
    assert "zz" not in url


def test_build_ws_url_drops_userinfo_and_fragment() -> None:
    url = build_ws_url("wss://me:secret@h.example:8443/ws#frag", "a1")
    assert url == "wss://h.example:8443/ws?vsn=2.0.0&agent_id=a1"


def test_build_ws_url_on_conflict_and_scheme() -> None:
    url = build_ws_url(
        "http://127.0.0.1:4000/ws?on_conflict=supersede", "a1", on_conflict_reject=True
    )
    assert url == "ws://127.0.0.1:4000/ws?vsn=2.0.0&agent_id=a1&on_conflict=reject"


@pytest.mark.parametrize("url", ["ftp://x/y", "not a url", "ws:///nohost"])
def test_build_ws_url_rejects_bad_urls(url: str) -> None:
    with pytest.raises(BandConfigError):
        build_ws_url(url, "a1")


@pytest.mark.parametrize(
    "kwargs",
    [{"agent_id": ""}, {"api_key": ""}, {"on_conflict": "fight"}, {"ws_url": "mailto:x"}],
)
def test_bad_configuration(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"agent_id": AGENT, "api_key": KEY, "ws_url": "ws://127.0.0.1:1/ws"}
    args.update(kwargs)
    with pytest.raises(BandConfigError):
        BandLink(**args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"join_timeout": 0},
        {"dead_after": -1.0},
        {"heartbeat_interval": float("nan")},
        {"close_timeout": True},
        {"max_message_size": 0},
        {"event_buffer_size": 1.5},
    ],
)
def test_bad_link_config(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BandConfigError):
        LinkConfig(**kwargs)


def test_repr_hides_the_key() -> None:
    link = BandLink(agent_id=AGENT, api_key=KEY, ws_url="ws://127.0.0.1:1/ws?api_key=" + KEY)
    assert KEY not in repr(link)
    assert KEY not in link.url()
    assert KEY not in link.url(first=False)


async def test_join_without_connection_is_retryable() -> None:
    link = BandLink(agent_id=AGENT, api_key=KEY, ws_url="ws://127.0.0.1:1/ws")
    with pytest.raises(JoinError) as info:
        await link.join(CHAT)
    assert info.value.retryable


# --------------------------------------------------------------------------- connect and join


async def test_connect_url_header_and_startup_joins(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await start(nursery, make_link(server, on_conflict="reject"))
            path, headers = server.requests[0]
            assert path == f"/api/v1/socket/websocket?vsn=2.0.0&agent_id={AGENT}&on_conflict=reject"
            assert headers["x-api-key"] == KEY
            joins = server.frames("phx_join")
            assert joins == [["1", "1", CONTROL, "phx_join", {}], ["2", "2", ROOMS, "phx_join", {}]]
            nursery.cancel_scope.cancel()


async def test_reconnect_drops_on_conflict(
    server: FakePhoenix, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, trio-websocket's included
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, on_conflict="reject"))
            await server.conn.ws.aclose(1001)
            assert isinstance(await running.next(), LinkReconnected)
            assert "on_conflict" in server.requests[0][0]
            assert server.requests[1][0] == f"/api/v1/socket/websocket?vsn=2.0.0&agent_id={AGENT}"
            assert server.requests[1][1]["x-api-key"] == KEY
            nursery.cancel_scope.cancel()
    assert caplog.records
    assert KEY not in caplog.text


async def test_join_and_events_flow(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await running.link.join(CHAT)  # already joined: no second phx_join
            assert [f[2] for f in server.frames("phx_join")] == [CONTROL, ROOMS, CHAT]
            await server.push(CHAT, "message_created", MESSAGE)
            event = await running.next()
            assert isinstance(event, MessageCreated)
            assert event.room_id == ROOM
            await server.push(CONTROL, "agent.control", CONTROL_PUSH)
            assert isinstance(await running.next(), AgentControl)
            await trio.testing.wait_all_tasks_blocked()
            stats = running.link.statistics()
            assert stats.connected
            assert set(stats.joined_topics) == {CONTROL, ROOMS, CHAT}
            assert stats.events_delivered == 2
            assert stats.frames_out == 3
            nursery.cancel_scope.cancel()


async def test_reply_matching_ignores_stale_and_null_join_refs(server: FakePhoenix) -> None:
    server.join_mode[CHAT] = "stale_then_ok"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)  # the null-ref error reply did not count
            assert CHAT in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_pushes_with_wrong_join_ref_are_dropped(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await server.push(CHAT, "message_created", {**MESSAGE, "id": "stale"}, join_ref="1")
            await server.push(CHAT, "message_created", {**MESSAGE, "id": "null"}, join_ref=None)
            await server.push(CHAT, "message_created", {**MESSAGE, "id": "good"})
            event = await running.next()
            assert isinstance(event, MessageCreated)
            assert event.id == "good"
            nursery.cancel_scope.cancel()


async def test_join_refused(server: FakePhoenix) -> None:
    server.join_mode[CHAT] = "error"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            with pytest.raises(JoinError) as info:
                await running.link.join(CHAT)
            assert info.value.reason == "denied"
            assert not info.value.retryable
            assert CHAT not in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_join_timeout(server: FakePhoenix, autojump_clock: trio.testing.MockClock) -> None:
    server.join_mode[CHAT] = "ignore"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            before = trio.current_time()
            with pytest.raises(JoinError) as info:
                await running.link.join(CHAT)
            assert info.value.reason == "timeout"
            assert info.value.retryable
            assert trio.current_time() - before == pytest.approx(10.0)
            # The topic is not registered: a reconnect does not rejoin it.
            server.join_mode.clear()
            await server.conn.ws.aclose(1000)
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert CHAT not in reconnected.rejoined
            nursery.cancel_scope.cancel()


async def test_control_join_refused_fails_startup(server: FakePhoenix) -> None:
    server.join_mode[CONTROL] = "error"
    with trio.fail_after(10):
        error = await serve_until_error(make_link(server))
    assert isinstance(error, JoinError)
    assert error.topic == CONTROL
    await server.wait_until(lambda: server.conn.closed)
    assert server.conn.close_code == 1000


async def test_rooms_join_failure_is_not_fatal(server: FakePhoenix) -> None:
    server.join_mode[ROOMS] = "error"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            assert running.link.statistics().joined_topics == (CONTROL,)
            nursery.cancel_scope.cancel()


async def test_leave(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await running.link.leave(CHAT)
            leave = server.frames("phx_leave")
            assert len(leave) == 1
            assert leave[0][2] == CHAT
            assert CHAT not in running.link.statistics().joined_topics
            await running.link.leave(CHAT)  # not joined: nothing happens
            assert len(server.frames("phx_leave")) == 1
            # A left topic is not rejoined after a reconnect.
            await server.conn.ws.aclose(1000)
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert set(reconnected.rejoined) == {CONTROL, ROOMS}
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- validation


async def test_invalid_payload_is_rejected_counted_and_the_link_keeps_going(
    server: FakePhoenix, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="band_trio")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            secret_payload = {**CONTROL_PUSH, "reason": None, "execution_id": KEY}
            await server.push(CONTROL, "agent.control", secret_payload)
            await server.push(CONTROL, "no_such_event", {"x": KEY})
            await server.push(CONTROL, "agent.control", CONTROL_PUSH)
            rejected = await running.next()
            assert isinstance(rejected, EventRejected)
            assert (rejected.topic, rejected.event) == (CONTROL, "agent.control")
            assert "reason" in rejected.reason
            unknown = await running.next()
            assert isinstance(unknown, EventRejected)
            assert unknown.reason == "unknown event"
            assert isinstance(await running.next(), AgentControl)
            stats = running.link.statistics()
            assert stats.events_rejected == 2
            assert stats.connected
            assert len(server.requests) == 1
            nursery.cancel_scope.cancel()
    assert KEY not in caplog.text
    assert "rejected 'agent.control'" in caplog.text


# --------------------------------------------------------------------------- heartbeat and liveness


async def test_heartbeat_every_30_seconds_with_acks(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            t0 = trio.current_time()
            await server.wait_until(lambda: len(server.frames("heartbeat")) >= 3)
            assert trio.current_time() - t0 == pytest.approx(90.0, abs=0.5)
            heartbeats = server.frames("heartbeat")
            assert all(f[0] is None and f[2] == "phoenix" for f in heartbeats)
            refs = [int(f[1]) for f in heartbeats]
            assert refs == sorted(refs)
            assert refs[0] > 2  # after the two start-up joins: one counter for all
            await trio.testing.wait_all_tasks_blocked()
            stats = running.link.statistics()
            assert stats.heartbeats_sent == 3
            assert stats.heartbeat_acks == 3
            assert stats.dead_connections == 0
            assert len(server.conns) == 1
            nursery.cancel_scope.cancel()


async def test_dead_connection_forces_close_4000_and_reconnects(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.answer_heartbeats = False
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await running.link.join(CHAT)
            t0 = trio.current_time()
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            first = server.conns[0]
            assert first.close_code == 4000
            # Dead after 60 s without an ack, then a short backoff.
            assert 60.0 <= trio.current_time() - t0 <= 65.0
            stats = running.link.statistics()
            assert stats.dead_connections == 1
            assert stats.reconnects == 1
            assert set(reconnected.rejoined) == {CONTROL, ROOMS, CHAT}
            nursery.cancel_scope.cancel()


async def test_slow_consumer_does_not_stop_heartbeats_or_lose_events(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    config = LinkConfig(event_buffer_size=1)
    with trio.fail_after(1000):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config), buffer=0)
            for i in range(6):
                await server.push(
                    CONTROL, "agent.control", {**CONTROL_PUSH, "correlation_id": str(i)}
                )
            # Nobody reads for 5 minutes: heartbeats continue and the link never
            # declares the connection dead although acks sit behind the events.
            await trio.sleep(300)
            assert len(server.frames("heartbeat")) >= 9
            assert len(server.conns) == 1
            assert running.link.statistics().consumer_stalls >= 1
            received = [await running.next() for _ in range(6)]
            assert [e.correlation_id for e in received if isinstance(e, AgentControl)] == [
                str(i) for i in range(6)
            ]
            await trio.sleep(100)
            stats = running.link.statistics()
            assert stats.dead_connections == 0
            assert stats.heartbeat_acks >= 9
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- reconnect


async def test_server_close_reconnects_and_rejoins_with_new_join_refs(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await running.link.join(PARTICIPANTS)
            old = dict(server.conn.joins)
            await server.conn.ws.aclose(1000)
            reconnected = await running.next()
            assert reconnected == LinkReconnected(1, (CONTROL, ROOMS, CHAT, PARTICIPANTS), ())
            new = server.conns[1].joins
            assert set(new) == set(old)
            assert all(int(new[t]) > max(int(r) for r in old.values()) for t in new)
            # Events flow on the new socket with the new join_ref.
            await server.push(CHAT, "message_created", MESSAGE)
            assert isinstance(await running.next(), MessageCreated)
            assert running.link.statistics().reconnects == 1
            nursery.cancel_scope.cancel()


async def test_rejoin_refused_is_reported_lost(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            server.join_mode[CHAT] = "error"
            await server.conn.ws.aclose(1000)
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert reconnected.lost == (CHAT,)
            assert CHAT not in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_close_1008_is_terminal(server: FakePhoenix) -> None:
    async def close_1008() -> None:
        await server.conn.ws.aclose(1008)

    with trio.fail_after(10):
        error = await serve_until_error(make_link(server), close_1008)
    assert type(error) is BandConnectionError
    assert not error.retryable
    assert len(server.requests) == 1


async def test_phx_close_loses_the_topic(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await server.push(CHAT, "phx_close", {})
            assert await running.next() == TopicLost(CHAT, "closed by the platform")
            assert CHAT not in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_phx_error_rejoins_with_a_new_join_ref(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    config = LinkConfig(random=lambda: 1.0)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            await running.link.join(CHAT)
            old_ref = server.conn.joins[CHAT]
            t0 = trio.current_time()
            await server.push(CHAT, "phx_error", {})
            await server.wait_until(lambda: server.conn.joins[CHAT] != old_ref)
            assert trio.current_time() - t0 == pytest.approx(0.5)
            await trio.testing.wait_all_tasks_blocked()
            assert CHAT in running.link.statistics().joined_topics
            await server.push(CHAT, "message_created", MESSAGE)
            assert isinstance(await running.next(), MessageCreated)
            assert len(server.conns) == 1
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- supersede


async def test_supersede_is_terminal(server: FakePhoenix) -> None:
    push = {
        "reason": "session.already_connected",
        "message": "superseded",
        "retryable": False,
        "retry_after": None,
        "correlation_id": "evict-9",
    }

    async def supersede() -> None:
        await server.push(CONTROL, "supersede", push)

    with trio.fail_after(10):
        error = await serve_until_error(make_link(server), supersede)
    assert isinstance(error, SupersededError)
    assert error.correlation_id == "evict-9"
    assert error.terminal
    await server.wait_until(lambda: server.conn.closed)
    assert server.conn.close_code == 1000
    assert len(server.requests) == 1


async def test_retryable_supersede_is_delivered_and_reconnection_proceeds(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    push = {
        "reason": "r",
        "message": "m",
        "retryable": True,
        "retry_after": 20,
        "correlation_id": None,
    }
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await server.push(CONTROL, "supersede", push)
            event = await running.next()
            assert isinstance(event, Supersede)
            assert event.retryable
            t0 = trio.current_time()
            await server.conn.ws.aclose(1000)
            assert isinstance(await running.next(), LinkReconnected)
            # The suggested retry_after is honoured as a minimum wait.
            assert trio.current_time() - t0 >= 20.0
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- upgrade refusals


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "invalid_on_conflict"), (403, "forbidden"), (409, "connection_conflict")],
)
async def test_terminal_refusals_on_first_connect(
    server: FakePhoenix, status: int, code: str
) -> None:
    server.reject_always = (status, [], error_body(code, "no"))
    with trio.fail_after(10):
        error = await serve_until_error(make_link(server))
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == status
    assert error.code == code
    assert error.message == "no"
    assert not error.retryable
    assert KEY not in str(error)
    assert len(server.requests) == 1


async def test_409_with_reject_policy_is_agent_already_running(server: FakePhoenix) -> None:
    server.reject_always = (409, [], error_body("connection_conflict", "active connection"))
    with trio.fail_after(10):
        error = await serve_until_error(make_link(server, on_conflict="reject"))
    assert isinstance(error, AgentAlreadyRunningError)


@pytest.mark.parametrize("status", [401, 503, 404])
async def test_retried_refusals_on_first_connect(server: FakePhoenix, status: int) -> None:
    server.rejections = [(status, [], error_body("x", "y")), (status, [], b"")]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            assert len(server.requests) == 3
            assert running.link.statistics().connect_failures == 2
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("extra", "body"),
    [
        ([], error_body("too_many_requests", "slow down", retry_after=42)),
        ([(b"Retry-After", b"42")], error_body("too_many_requests", "slow down")),
        ([(b"Retry-After", b"42")], b""),
    ],
)
async def test_429_waits_for_retry_after(
    server: FakePhoenix,
    autojump_clock: trio.testing.MockClock,
    extra: list[tuple[bytes, bytes]],
    body: bytes,
) -> None:
    server.rejections = [(429, extra, body)]
    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            t0 = trio.current_time()
            await start(nursery, make_link(server, LinkConfig()))
            assert len(server.requests) == 2
            assert 42.0 <= trio.current_time() - t0 < 43.0
            nursery.cancel_scope.cancel()


async def test_first_connect_gives_up_after_ten_rapid_failures(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.reject_always = (503, [], error_body("tracking_failed", "busy"))
    with trio.fail_after(1000):
        error = await serve_until_error(make_link(server, LinkConfig()))
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == 503
    assert len(server.requests) == 10


@pytest.mark.parametrize(
    ("status", "code", "retry_after"),
    [(401, "unauthorized", None), (429, "too_many_requests", 2), (503, "tracking_failed", 3)],
)
async def test_retried_refusals_surface_typed_and_retryable_when_the_policy_gives_up(
    server: FakePhoenix,
    autojump_clock: trio.testing.MockClock,
    status: int,
    code: str,
    retry_after: int | None,
) -> None:
    more = {} if retry_after is None else {"retry_after": retry_after}
    server.reject_always = (status, [], error_body(code, "refused", **more))
    with trio.fail_after(1000):
        error = await serve_until_error(make_link(server, LinkConfig()))
    assert type(error) is UpgradeRefusedError
    assert (error.status_code, error.code, error.message) == (status, code, "refused")
    assert error.retry_after == retry_after
    # Not terminal by its status: the first-connect policy ran out of attempts.
    assert error.retryable
    assert not error.terminal
    assert len(server.requests) == 10
    assert KEY not in str(error)


async def test_403_on_reconnect_is_terminal(server: FakePhoenix) -> None:
    async def refuse_then_drop() -> None:
        server.reject_always = (403, [], b"")
        await server.conn.ws.aclose(1000)

    with trio.fail_after(10):
        error = await serve_until_error(make_link(server), refuse_then_drop)
    assert isinstance(error, UpgradeRefusedError)
    assert error.status_code == 403
    assert not error.retryable


async def test_409_on_reconnect_is_retried(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, on_conflict="reject"))
            server.rejections = [(409, [], error_body("connection_conflict", "x"))]
            await server.conn.ws.aclose(1000)
            assert isinstance(await running.next(), LinkReconnected)
            assert len(server.requests) == 3
            nursery.cancel_scope.cancel()


async def test_unreachable_platform(autojump_clock: trio.testing.MockClock) -> None:
    # Bind a port, then close it, so nothing listens there.
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()
    link = BandLink(agent_id=AGENT, api_key=KEY, ws_url=f"ws://127.0.0.1:{port}/ws")
    send, _receive = trio.open_memory_channel[LinkEvent](10)
    with trio.fail_after(1000), pytest.raises(BandConnectionError) as info:
        await link.serve(send)
    assert type(info.value) is BandConnectionError
    assert link.statistics().connect_failures == 10
    assert KEY not in str(info.value)


# --------------------------------------------------------------------------- bad frames


async def test_oversize_frame_is_refused_and_the_link_reconnects(server: FakePhoenix) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            big = {**MESSAGE, "content": "x" * (1024 * 1024)}
            await server.push(CONTROL, "room_added", big)
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert server.conns[0].close_code == 1009
            assert running.link.statistics().oversize_frames == 1
            await server.push(
                ROOMS, "room_added", {"id": "r9", "inserted_at": "t", "updated_at": "t"}
            )
            assert isinstance(await running.next(), RoomAdded)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("bad", ["not json", '["1", null, "t"]', '[null, null, "", "e", {}]'])
async def test_malformed_frame_forces_a_reconnect(server: FakePhoenix, bad: str) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await server.conn.ws.send_message(bad)
            assert isinstance(await running.next(), LinkReconnected)
            assert server.conns[0].close_code == 1002
            assert running.link.statistics().malformed_frames == 1
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- shutdown


async def test_cancelling_serve_closes_with_1000(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await start(nursery, make_link(server))
            nursery.cancel_scope.cancel()
        await server.wait_until(lambda: server.conn.closed)
    assert server.conn.close_code == 1000


async def test_serve_twice_is_refused(server: FakePhoenix) -> None:
    link = make_link(server)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            send, _receive = trio.open_memory_channel[LinkEvent](10)
            await nursery.start(link.serve, send)
            with pytest.raises(BandConfigError):
                await link.serve(send)
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- more edges


async def test_concurrent_joins_share_one_phx_join(server: FakePhoenix) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            async with trio.open_nursery() as joiners:
                for _ in range(3):
                    joiners.start_soon(running.link.join, CHAT)
            assert [f[2] for f in server.frames("phx_join")].count(CHAT) == 1
            nursery.cancel_scope.cancel()


async def test_leave_without_reply_gives_up_after_the_timeout(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.answer_leaves = False
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await running.link.join(CHAT)
            t0 = trio.current_time()
            await running.link.leave(CHAT)
            assert trio.current_time() - t0 == pytest.approx(5.0)
            assert CHAT not in running.link.statistics().joined_topics
            # The topic can be joined again afterwards, with a fresh join_ref.
            await running.link.join(CHAT)
            assert CHAT in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_drop_during_startup_retries_the_first_connect(server: FakePhoenix) -> None:
    server.join_mode[CONTROL] = "close"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def heal() -> None:
                await server.wait_until(lambda: len(server.requests) >= 2)
                server.join_mode.clear()

            nursery.start_soon(heal)
            running = await start(nursery, make_link(server, on_conflict="reject"))
            # Still the first connect of the session: on_conflict is kept.
            assert all("on_conflict=reject" in path for path, _ in server.requests)
            assert running.link.statistics().reconnects == 0
            nursery.cancel_scope.cancel()


async def test_rejoin_timeout_is_recovered_in_the_background(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await running.link.join(CHAT)
            server.join_mode[CHAT] = "ignore_once"
            await server.conn.ws.aclose(1000)
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert CHAT not in reconnected.rejoined
            assert CHAT not in reconnected.lost
            await server.wait_until(lambda: CHAT in server.conn.joins)
            await trio.testing.wait_all_tasks_blocked()
            assert CHAT in running.link.statistics().joined_topics
            await server.push(CHAT, "message_created", MESSAGE)
            assert isinstance(await running.next(), MessageCreated)
            nursery.cancel_scope.cancel()


async def test_rooms_topic_join_timeout_is_retried(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.join_mode[ROOMS] = "ignore_once"
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            assert ROOMS not in running.link.statistics().joined_topics
            await server.wait_until(lambda: ROOMS in server.conn.joins)
            await trio.testing.wait_all_tasks_blocked()
            assert ROOMS in running.link.statistics().joined_topics
            nursery.cancel_scope.cancel()


async def test_a_closed_consumer_channel_ends_serve(server: FakePhoenix) -> None:
    link = make_link(server)
    send, receive = trio.open_memory_channel[LinkEvent](0)
    with trio.fail_after(10):
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(link.serve, send)
                await receive.aclose()
                await server.push(CONTROL, "agent.control", CONTROL_PUSH)
                await trio.sleep_forever()
        except BaseExceptionGroup as group:
            errors = [e for e in leaves(group) if not isinstance(e, trio.Cancelled)]
        await server.wait_until(lambda: server.conn.closed)
    assert [type(e) for e in errors] == [trio.BrokenResourceError]
    assert server.conn.close_code == 1000


async def test_serve_again_after_it_ended(server: FakePhoenix) -> None:
    link = make_link(server)
    with trio.fail_after(10):
        for _ in range(2):
            async with trio.open_nursery() as nursery:
                await start(nursery, link)
                nursery.cancel_scope.cancel()
    assert len(server.conns) == 2
    assert [f[2] for f in server.frames("phx_join", server.conns[1])] == [CONTROL, ROOMS]
    assert not link.statistics().connected


async def test_pushes_before_the_join_reply_are_not_delivered(server: FakePhoenix) -> None:
    server.join_mode[CHAT] = "push_first"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            await running.link.join(CHAT)
            await server.push(CHAT, "message_created", {**MESSAGE, "id": "after"})
            event = await running.next()
            assert isinstance(event, MessageCreated)
            assert event.id == "after"
            nursery.cancel_scope.cancel()
