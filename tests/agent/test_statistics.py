"""``Agent.statistics()``: the rooms' counters, the link's and the REST client's
statistics, and turn duration percentiles over a bounded window."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from band_trio import Agent, AgentConfig, SimpleAdapter, open_agent
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.local import HumanClient, LocalPlatform
from band_trio.runtime.core.turn_durations import TurnDurations, TurnDurationStatistics
from band_trio.testing._memory_rest import MemoryRest
from band_trio.wire.link import LinkStatistics
from band_trio.wire.rest import RestStatistics

from .platform_fakes import ROOM, FakeRuntime


def test_percentiles_are_nearest_rank_over_the_recent_window() -> None:
    durations = TurnDurations(window=100)
    assert durations.statistics() == TurnDurationStatistics()
    for seconds in range(1, 101):
        durations.record(float(seconds))
    stats = durations.statistics()
    assert (stats.count, stats.window) == (100, 100)
    assert (stats.p50, stats.p90, stats.p99, stats.longest) == (50.0, 90.0, 99.0, 100.0)


def test_memory_is_bounded_by_the_window_and_the_longest_is_kept() -> None:
    durations = TurnDurations(window=10)
    durations.record(500.0)
    for _ in range(1000):
        durations.record(1.0)
    stats = durations.statistics()
    assert stats.count == 1001
    assert stats.window == 10
    assert stats.p99 == 1.0  # the old slow turn left the window ...
    assert stats.longest == 500.0  # ... but is still the longest


class Timed(SimpleAdapter[HistoryProvider]):
    """Each turn takes as many (virtual) seconds as its message says."""

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await trio.sleep(float(msg.content.split()[-1]))
        await tools.send_message("ok", [msg.sender_id])


async def test_turn_durations_are_reported(autojump_clock: trio.testing.MockClock) -> None:
    platform = MemoryRest([ROOM])
    ids = [platform.add(str(seconds)) for seconds in (3, 1, 2)]
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None)), Timed())
    assert agent.statistics().turn_durations.count == 0
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        with trio.fail_after(60):
            while any(platform.status[m] != "processed" for m in ids):  # noqa: ASYNC110
                await trio.sleep(0.1)
        stats = agent.statistics().turn_durations
        nursery.cancel_scope.cancel()
    assert stats.count == 3
    assert stats.p50 == pytest.approx(2.0, abs=0.01)
    assert stats.longest == pytest.approx(3.0, abs=0.01)


async def test_statistics_reach_the_link_and_the_rest_client(band_platform: LocalPlatform) -> None:
    creds = band_platform.agents[0]
    with trio.fail_after(30):
        async with HumanClient(
            base_url=band_platform.rest_url, api_key=band_platform.user.api_key
        ) as human:
            room = await human.create_room(title="counted")
            await human.add_participant(room["id"], creds.id)
            async with open_agent(
                adapter=Timed(),
                agent_id=creds.id,
                api_key=creds.api_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=AgentConfig(state_dir=None),
            ) as agent:
                await human.post_message(room["id"], f"@{creds.handle} 0", mentions=[creds.handle])
                while agent.statistics().completed < 1:  # noqa: ASYNC110 - counters
                    await trio.sleep(0.01)
                stats = agent.statistics()
    assert isinstance(stats.link, LinkStatistics)
    assert stats.link.connected
    assert stats.link.frames_in > 0
    assert str(room["id"]) in " ".join(stats.link.joined_topics)
    assert isinstance(stats.rest, RestStatistics)
    assert stats.rest.calls >= 4  # me, chats, processing, the reply, processed...
    assert stats.turn_durations.count == 1
    # Not serving: nothing to reach.
    assert agent.statistics().link is None
    assert agent.statistics().rest is None
