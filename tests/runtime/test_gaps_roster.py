"""Rosters are refreshed after a reconnect (issue 3 item 6, beats runtime.md
§2.14 / §9 item 11): a participant added while the agent's socket was down (so
its ``participant_added`` push was never seen) shows up in the next turn's
``participants_msg``.

The reconnect is held back with a fault on the WebSocket upgrade until the
participant is added, so the push is really missed.
"""

from __future__ import annotations

from typing import Any

import trio

from band_trio.agent import Agent
from band_trio.local.faults import Fault
from band_trio.runtime.config import AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.wire.backoff import ReconnectPolicy
from band_trio.wire.link import LinkConfig

from .agent_harness import (
    FAST_REST,
    RecordingAdapter,
    Scene,
    fast_config,
    scene,
    serving,
    token,
    wait_until,
)

UPGRADE = r"/api/v1/socket/websocket$"
ROOM_LISTING = r"/api/v1/agent/chats$"


def _fast_reconnect() -> ReconnectPolicy:
    # Reconnect within a fraction of a second (the policy is tested in tests/wire).
    return ReconnectPolicy(base=0.05, cap=0.2, rapid_uptime=0.0)


def _agent(s: Scene, adapter: Any) -> Agent:
    settings = AgentSettings(
        agent_id=s.agent_id,
        api_key=s.agent_key,
        rest_url=s.platform.rest_url,
        ws_url=s.platform.ws_url,
    )
    runtime = PlatformRuntime(
        settings,
        fast_config(),
        rest_options={"config": FAST_REST},
        link_options={"config": LinkConfig(reconnect_policy=_fast_reconnect)},
    )
    return Agent(runtime, adapter, handle_signals=False)


async def _add_while_disconnected(
    s: Scene, room_id: str, *, slow_listing: bool = False
) -> Fault | None:
    """Drop the agent's socket, add a participant (a second agent of the same
    owner) to the room while it cannot reconnect, then let it reconnect.

    With ``slow_listing``, the room listing that follows the reconnect hangs
    for 3 s (the fault rule is returned)."""
    platform = s.platform
    refused = platform.faults.add("GET", UPGRADE, 503, 10_000, retry_after=0.1)
    await platform.drop_agent_sockets(s.agent_id)
    await wait_until(lambda: refused.hits >= 1)  # a reconnect was refused
    other = platform.register_agent("Zed Zulu", "a helper")
    await s.human.add_participant(room_id, other.id)
    platform.faults.clear()
    if slow_listing:
        # No checkpoint since the clear: the reconnect cannot have listed yet.
        return platform.faults.add("GET", ROOM_LISTING, 503, 1, delay=3.0)
    return None


async def test_participant_added_while_disconnected_reaches_the_next_turn(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = _agent(s, adapter)
            async with serving(agent):
                first = await s.post(room_id, token("before"))
                await wait_until(lambda: s.processed(room_id, first))
                before = adapter.calls[0].participants_msg
                assert before is not None
                assert "Zed Zulu" not in before
                await _add_while_disconnected(s, room_id)
                await wait_until(lambda: agent.statistics().reconnects >= 1)
                await wait_until(lambda: band_platform.connected(s.agent_id))
                second = await s.post(room_id, token("after"))
                await wait_until(lambda: s.processed(room_id, second))
            (_, call) = adapter.calls
            assert call.participants_msg is not None
            assert "Zed Zulu (Agent)" in call.participants_msg


async def test_message_right_after_reconnect_sees_the_refreshed_roster(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The roster is owed from the moment the socket is back, not only once the
    room listing (slow here) has been re-read: a message that arrives in
    between still gets the new participant."""
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = _agent(s, adapter)
            async with serving(agent):
                first = await s.post(room_id, token("before"))
                await wait_until(lambda: s.processed(room_id, first))
                # The re-listing after the reconnect hangs for a while.
                slow = await _add_while_disconnected(s, room_id, slow_listing=True)
                assert slow is not None
                await wait_until(lambda: agent.statistics().reconnects >= 1)
                await wait_until(lambda: slow.hits == 1)
                await wait_until(lambda: band_platform.connected(s.agent_id))
                second = await s.post(room_id, token("after"))
                await wait_until(lambda: s.processed(room_id, second))
            (_, call) = adapter.calls
            assert call.participants_msg is not None
            assert "Zed Zulu (Agent)" in call.participants_msg
