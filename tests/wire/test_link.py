"""BandLink: configuration, start-up, joins and leaves, event delivery, shutdown.

Tests that involve heartbeats, dead deadlines or backoff waits run under
``autojump_clock`` (both ends live in this Trio run, so the clock only jumps
when no socket has data pending); the others run on the real clock with fast
backoff policies, and every test is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from band_trio.errors import (
    BandConfigError,
    JoinError,
)
from band_trio.wire.events import AgentControl, MessageCreated
from band_trio.wire.link import (
    BandLink,
    EventRejected,
    LinkConfig,
    LinkEvent,
    LinkReconnected,
)

from .phoenix_server import (
    AGENT,
    CHAT,
    CONTROL,
    CONTROL_PUSH,
    KEY,
    MESSAGE,
    ROOM,
    ROOMS,
    FakePhoenix,
    leaves,
    make_link,
    serve_until_error,
    start,
)


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
        {"malformed_frame_limit": 0},
        {"malformed_frame_limit": True},
        {"malformed_frame_window": 0.0},
        {"malformed_frame_window": float("nan")},
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


async def test_a_join_cancelled_before_its_reply_is_withdrawn(server: FakePhoenix) -> None:
    """A caller cancelled while its join waits for the reply (a room removed
    while joining): the topic is not left "joining" (a new join works), a
    late reply does not join it, the platform gets a leave, and a caller
    sharing the join is told at once."""
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            server.held_joins = []
            shared: list[JoinError] = []

            async def share() -> None:
                try:
                    await running.link.join(CHAT)
                except JoinError as exc:
                    shared.append(exc)

            async with trio.open_nursery() as joining:
                joining.start_soon(running.link.join, CHAT)
                await server.wait_until(lambda: bool(server.held_joins))
                nursery.start_soon(share)
                await trio.testing.wait_all_tasks_blocked()
                joining.cancel_scope.cancel()
            await server.wait_until(lambda: bool(server.frames("phx_leave")))
            assert [f[2] for f in server.frames("phx_leave")] == [CHAT]
            await server.release_joins(hold_more=False)  # the late reply
            await trio.testing.wait_all_tasks_blocked()
            assert CHAT not in running.link.statistics().joined_topics
            assert len(shared) == 1
            assert shared[0].retryable
            assert [f[2] for f in server.frames("phx_join")].count(CHAT) == 1
            await running.link.join(CHAT)
            assert CHAT in running.link.statistics().joined_topics
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
