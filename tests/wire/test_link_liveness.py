"""BandLink keeping the connection alive: heartbeats, dead connections, reconnects,
supersede and bad frames.

Tests that involve heartbeats, dead deadlines or backoff waits run under
``autojump_clock`` (both ends live in this Trio run, so the clock only jumps
when no socket has data pending); the others run on the real clock with fast
backoff policies, and every test is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from band_trio.errors import (
    BandConnectionError,
    SupersededError,
)
from band_trio.wire.events import AgentControl, MessageCreated, RoomAdded, Supersede
from band_trio.wire.link import (
    LinkConfig,
    LinkReconnected,
    TopicLost,
)
from band_trio.wire.link._band_link import _REJOIN_WINDOW

from .phoenix_server import (
    CHAT,
    CONTROL,
    CONTROL_PUSH,
    FAST,
    MESSAGE,
    PARTICIPANTS,
    ROOMS,
    FakePhoenix,
    make_link,
    serve_until_error,
    start,
)

# --------------------------------------------------------------------------- heartbeat and liveness


async def test_heartbeat_every_25_seconds_with_acks(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            t0 = trio.current_time()
            await server.wait_until(lambda: len(server.frames("heartbeat")) >= 3)
            assert trio.current_time() - t0 == pytest.approx(75.0, abs=0.5)
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
            # The first heartbeat (at 25 s) unanswered for 10 s, then a short backoff.
            assert 35.0 <= trio.current_time() - t0 <= 40.0
            stats = running.link.statistics()
            assert stats.dead_connections == 1
            assert stats.reconnects == 1
            assert set(reconnected.rejoined) == {CONTROL, ROOMS, CHAT}
            nursery.cancel_scope.cancel()


async def test_without_a_heartbeat_timeout_only_dead_after_applies(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    server.answer_heartbeats = False
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery,
                make_link(server, LinkConfig(heartbeat_interval=30.0, heartbeat_timeout=None)),
            )
            t0 = trio.current_time()
            assert isinstance(await running.next(), LinkReconnected)
            # The official client's watchdog: 60 s without an ack.
            assert 60.0 <= trio.current_time() - t0 <= 65.0
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


async def test_rejoins_after_a_reconnect_are_pipelined_in_a_bounded_window(
    server: FakePhoenix,
) -> None:
    rooms = [f"chat_room:r{i}" for i in range(3 * _REJOIN_WINDOW)]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server))
            for topic in rooms:
                await running.link.join(topic)
            server.held_joins = []
            await server.conn.ws.aclose(1000)
            # Nothing is answered yet: the link has sent as many joins as its
            # window allows, and no more.
            await server.wait_until(lambda: len(server.held_joins or ()) >= _REJOIN_WINDOW)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert len(server.held_joins or ()) == _REJOIN_WINDOW
            # Each answer lets one more join out.
            await server.release_joins(hold_more=True)
            await server.wait_until(lambda: len(server.held_joins or ()) >= _REJOIN_WINDOW)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert len(server.held_joins or ()) == _REJOIN_WINDOW
            await server.release_joins(hold_more=False)
            reconnected = await running.next()
            assert reconnected == LinkReconnected(1, (CONTROL, ROOMS, *rooms), ())
            assert set(server.conn.joins) == {CONTROL, ROOMS, *rooms}
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
async def test_malformed_frames_past_the_limit_force_a_reconnect(
    server: FakePhoenix, bad: str
) -> None:
    config = attrs.evolve(FAST, malformed_frame_limit=2)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            await server.conn.ws.send_message(bad)
            await server.conn.ws.send_message(bad)
            assert isinstance(await running.next(), LinkReconnected)
            assert server.conns[0].close_code == 1002
            stats = running.link.statistics()
            assert (stats.malformed_frames, stats.malformed_closes) == (2, 1)
            nursery.cancel_scope.cancel()
