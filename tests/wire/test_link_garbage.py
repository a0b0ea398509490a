"""Garbage on the socket costs one frame, not the connection.

A frame that is not a Phoenix v2 frame is counted, logged and skipped; only a
burst of them within ``LinkConfig.malformed_frame_window`` closes the socket
(1002), and the reconnect that follows is not held down as if the platform
were flapping. Everything runs under ``autojump_clock``: both ends live in this
Trio run, so the clock only jumps when no socket has data pending, and every
elapsed time asserted below is a wait the link chose.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from band_trio.wire.backoff import ReconnectPolicy
from band_trio.wire.events import AgentControl, MessageCreated
from band_trio.wire.link import LinkConfig, LinkReconnected

from .phoenix_server import CHAT, CONTROL, CONTROL_PUSH, MESSAGE, FakePhoenix, make_link, start

GARBAGE = [
    "not json",
    '{"an": "object"}',
    '["1", null, "t"]',
    '[null, null, "", "e", {}]',
    '[null, null, "t", 5, {}]',
    '[{}, null, "t", "e", {}]',
    b"\xff\xfe binary",
]


def _steady(random: float = 1.0) -> ReconnectPolicy:
    # Deterministic jitter: the delay is the nominal one.
    return ReconnectPolicy(random=lambda: random)


@pytest.mark.parametrize("bad", GARBAGE, ids=range(len(GARBAGE)))
async def test_one_malformed_frame_is_skipped(
    server: FakePhoenix,
    autojump_clock: trio.testing.MockClock,
    bad: str | bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await running.link.join(CHAT)
            t0 = trio.current_time()
            with caplog.at_level(logging.WARNING, "band_trio.wire.link"):
                await server.conn.ws.send_message(bad)
                await server.push(CHAT, "message_created", MESSAGE)
                event = await running.next()
            # The push right behind the garbage arrives at once, on the same socket.
            assert isinstance(event, MessageCreated)
            assert trio.current_time() == t0
            stats = running.link.statistics()
            assert (stats.malformed_frames, stats.malformed_closes) == (1, 0)
            assert stats.connected
            assert stats.reconnects == 0
            assert len(server.conns) == 1
            assert not server.conn.closed
            assert any("skipped a malformed frame" in r.getMessage() for r in caplog.records)
            nursery.cancel_scope.cancel()


async def test_two_bad_frames_in_a_row_leave_the_agent_connected(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    """The case that used to cost a reconnect and a hold-down: the next
    message is delivered without any wait."""
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, LinkConfig()))
            await running.link.join(CHAT)
            t0 = trio.current_time()
            await server.conn.ws.send_message("garbage one")
            await server.conn.ws.send_message('["garbage", "two"]')
            await server.push(CHAT, "message_created", MESSAGE)
            assert isinstance(await running.next(), MessageCreated)
            assert trio.current_time() == t0
            # Heartbeats still flow on the same socket afterwards.
            await server.wait_until(lambda: len(server.frames("heartbeat")) >= 2)
            stats = running.link.statistics()
            assert stats.malformed_frames == 2
            assert stats.heartbeat_acks >= 1
            assert stats.dead_connections == 0
            assert len(server.conns) == 1
            nursery.cancel_scope.cancel()


async def test_garbage_spread_out_never_closes_the_socket(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    config = LinkConfig(malformed_frame_limit=3, malformed_frame_window=10.0)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            for _ in range(12):
                await server.conn.ws.send_message("garbage")
                # Two per window at most: 6 s apart with a 10 s window.
                await trio.sleep(6.0)
            await server.push(CONTROL, "agent.control", CONTROL_PUSH)
            assert isinstance(await running.next(), AgentControl)
            stats = running.link.statistics()
            assert (stats.malformed_frames, stats.malformed_closes) == (12, 0)
            assert len(server.conns) == 1
            nursery.cancel_scope.cancel()


async def test_a_burst_of_garbage_closes_and_reconnects_without_hold_down(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    config = LinkConfig(malformed_frame_limit=3, reconnect_policy=_steady)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            await running.link.join(CHAT)
            for _ in range(3):
                await server.conn.ws.send_message("garbage")
            t0 = trio.current_time()
            reconnected = await running.next()
            assert isinstance(reconnected, LinkReconnected)
            assert server.conns[0].close_code == 1002
            # The base delay (0.5 s), though the socket was up for no time at all.
            assert trio.current_time() - t0 == pytest.approx(0.5)
            assert set(reconnected.rejoined) >= {CONTROL, CHAT}
            stats = running.link.statistics()
            assert (stats.malformed_frames, stats.malformed_closes) == (3, 1)
            await server.push(CHAT, "message_created", MESSAGE)
            assert isinstance(await running.next(), MessageCreated)
            nursery.cancel_scope.cancel()


async def test_repeated_bursts_back_off_but_are_never_held_down(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    """A platform that keeps sending garbage right after every reconnect: the
    waits grow exponentially (0.5, 1, 2, 4 s) instead of the rapid-drop floors
    (2, 10, 60, 90 s) of a platform that drops us."""
    config = LinkConfig(malformed_frame_limit=2, reconnect_policy=_steady)
    waits = []
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            for n in range(4):
                await server.conn.ws.send_message("garbage")
                await server.conn.ws.send_message("garbage")
                t0 = trio.current_time()
                assert isinstance(await running.next(), LinkReconnected)
                waits.append(trio.current_time() - t0)
                assert len(server.conns) == n + 2
            stats = running.link.statistics()
            assert stats.malformed_closes == 4
            assert stats.reconnects == 4
            nursery.cancel_scope.cancel()
    assert waits == pytest.approx([0.5, 1.0, 2.0, 4.0])


async def test_a_limit_of_one_closes_on_the_first_malformed_frame(
    server: FakePhoenix, autojump_clock: trio.testing.MockClock
) -> None:
    config = LinkConfig(malformed_frame_limit=1, reconnect_policy=_steady)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, make_link(server, config))
            await server.conn.ws.send_message("garbage")
            assert isinstance(await running.next(), LinkReconnected)
            assert server.conns[0].close_code == 1002
            assert running.link.statistics().malformed_closes == 1
            nursery.cancel_scope.cancel()
