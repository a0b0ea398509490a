"""Stopping an agent: cancellation means now, a shutdown request drains.

The whole ``Agent`` runs on the autojump clock over the in-memory platform of
:mod:`.platform_fakes`, so the durations asserted are the agent's own (virtual
time), not the speed of the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from band_trio import Agent, AgentConfig, SimpleAdapter, open_agent
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.local import HumanClient, LocalPlatform
from band_trio.testing._memory_rest import MemoryRest

from .platform_fakes import ROOM, FakeRuntime

TURN_SECONDS = 1000.0


class SlowAdapter(SimpleAdapter[HistoryProvider]):
    """Replies after ``seconds`` of (virtual) work; records what happened."""

    def __init__(self, seconds: float = TURN_SECONDS) -> None:
        super().__init__()
        self.seconds = seconds
        self.running = trio.Event()
        self.cancelled = 0
        self.finished = 0
        self.cleanups: list[str] = []
        self.cleanup_all_calls = 0
        self.hang_cleanup = False

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
        self.running.set()
        try:
            await trio.sleep(self.seconds)
        except trio.Cancelled:
            self.cancelled += 1
            raise
        await tools.send_message(f"done: {msg.content}", [msg.sender_id])
        self.finished += 1

    async def on_cleanup(self, room_id: str) -> None:
        if self.hang_cleanup:
            await trio.sleep_forever()
        self.cleanups.append(room_id)

    async def cleanup_all(self) -> None:
        self.cleanup_all_calls += 1


def _agent(
    platform: MemoryRest,
    adapter: SimpleAdapter[HistoryProvider],
    state: Path | None,
    **cfg: float,
) -> Agent:
    config = AgentConfig(state_dir=state, **cfg)  # shutdown_timeout: the default, 30 s
    return Agent(FakeRuntime(platform, config), adapter, handle_signals=False)


async def test_cancelling_serve_cancels_the_turn_at_once_and_leaves_the_message(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    platform = MemoryRest([ROOM])
    mid = platform.add("hello")
    adapter = SlowAdapter()
    agent = _agent(platform, adapter, tmp_path)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await adapter.running.wait()
        cancelled_at = trio.current_time()
        nursery.cancel_scope.cancel()
    took = trio.current_time() - cancelled_at
    # Not the 30 s shutdown_timeout, not the 10 s cleanup_timeout: the
    # cleanup hooks return at once, so nothing is waited for.
    assert took < 1.0, took
    assert adapter.cancelled == 1
    assert adapter.finished == 0
    assert adapter.cleanups == ["room-1"]
    assert adapter.cleanup_all_calls == 1
    # Left processing for the next start, with no settlement at all.
    assert platform.status[mid] == "processing"
    assert platform.settled(mid) == []
    assert platform.chat == []

    # The next start runs it again (its attempt was not charged) and settles
    # it exactly once.
    adapter2 = SlowAdapter(seconds=1.0)
    agent2 = _agent(platform, adapter2, tmp_path)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent2.serve)
        with trio.fail_after(60):
            while platform.status[mid] != "processed":  # noqa: ASYNC110 - fake platform state
                await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert adapter2.finished == 1
    assert platform.settled(mid) == ["processed"]
    assert platform.chat == ["done: hello"]


async def test_a_hanging_on_cleanup_bounds_the_cancellation_at_cleanup_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    platform.add("hello")
    adapter = SlowAdapter()
    adapter.hang_cleanup = True
    agent = _agent(platform, adapter, None, cleanup_timeout=4.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await adapter.running.wait()
        cancelled_at = trio.current_time()
        nursery.cancel_scope.cancel()
    took = trio.current_time() - cancelled_at
    assert 4.0 <= took < 5.0, took
    assert adapter.cancelled == 1
    assert adapter.cleanup_all_calls == 1  # still called, after the room's cleanup


async def test_request_shutdown_lets_the_running_turn_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    mid = platform.add("hello")
    adapter = SlowAdapter(seconds=20.0)
    agent = _agent(platform, adapter, None)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await adapter.running.wait()
        asked_at = trio.current_time()
        agent.request_shutdown()
    took = trio.current_time() - asked_at
    assert 19.0 <= took < 21.0, took
    assert adapter.finished == 1
    assert platform.settled(mid) == ["processed"]


async def test_cancelling_during_a_graceful_drain_cancels_the_turn_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    mid = platform.add("hello")
    adapter = SlowAdapter()
    agent = _agent(platform, adapter, None)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await adapter.running.wait()
        agent.request_shutdown()
        await trio.sleep(5.0)  # draining: the turn is given shutdown_timeout (30 s)
        assert adapter.cancelled == 0
        cancelled_at = trio.current_time()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - cancelled_at < 1.0
    assert adapter.cancelled == 1
    assert platform.status[mid] == "processing"
    assert platform.settled(mid) == []


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
async def test_first_signal_drains_and_a_second_one_forces(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    mid = platform.add("hello")
    adapter = SlowAdapter()
    config = AgentConfig(state_dir=None)
    agent = Agent(FakeRuntime(platform, config), adapter, handle_signals=True)
    returned = trio.Event()

    async def run() -> None:
        await agent.serve()
        returned.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await adapter.running.wait()
        os.kill(os.getpid(), signal.SIGTERM)
        await trio.sleep(5.0)
        assert not returned.is_set()  # draining, the turn still runs
        assert adapter.cancelled == 0
        forced_at = trio.current_time()
        os.kill(os.getpid(), signal.SIGINT)
        await returned.wait()  # serve returns normally: the shutdown was asked for
    assert trio.current_time() - forced_at < 1.0
    assert adapter.cancelled == 1
    assert platform.settled(mid) == []


class Gate(SimpleAdapter[HistoryProvider]):
    """Turns wait for ``release``, then reply."""

    def __init__(self) -> None:
        super().__init__()
        self.release = trio.Event()
        self.running = trio.Event()
        self.cancelled = 0

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
        self.running.set()
        try:
            await self.release.wait()
        except trio.Cancelled:
            self.cancelled += 1
            raise
        await tools.send_message(f"done: {msg.content}", [msg.sender_id])


async def _open_agent_with_a_running_turn(
    platform: LocalPlatform, adapter: Gate, *, fail: bool
) -> str:
    creds = platform.agents[0]
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        room = await human.create_room(title="embedded")
        room_id = str(room["id"])
        await human.add_participant(room_id, creds.id)
        async with trio.open_nursery() as outer:
            with contextlib.suppress(LookupError):
                async with open_agent(
                    adapter=adapter,
                    agent_id=creds.id,
                    api_key=creds.api_key,
                    rest_url=platform.rest_url,
                    ws_url=platform.ws_url,
                    config=AgentConfig(state_dir=None, shutdown_timeout=20.0),
                ):
                    sent = await human.post_message(
                        room_id, f"@{creds.handle} hi", mentions=[creds.handle]
                    )
                    await adapter.running.wait()

                    async def release_later() -> None:
                        await trio.sleep(0.3)
                        adapter.release.set()

                    outer.start_soon(release_later)
                    if fail:
                        raise LookupError("the application failed")
        room_state = platform.state.rooms[room_id]
        return str(room_state.by_id[str(sent["id"])].deliveries[creds.id].status)


async def test_leaving_open_agent_normally_lets_the_turn_finish(
    band_platform: LocalPlatform,
) -> None:
    adapter = Gate()
    with trio.fail_after(30):
        status = await _open_agent_with_a_running_turn(band_platform, adapter, fail=False)
    assert adapter.cancelled == 0
    assert "processed" in status


async def test_an_error_leaving_open_agent_cancels_the_turn_at_once(
    band_platform: LocalPlatform,
) -> None:
    adapter = Gate()
    with trio.fail_after(30):
        status = await _open_agent_with_a_running_turn(band_platform, adapter, fail=True)
    assert adapter.cancelled == 1
    assert "processing" in status


class _LinkFailsRuntime(FakeRuntime):
    def make_link(self) -> Any:
        raise OSError("no link today")


async def test_cleanup_all_runs_when_start_up_fails_after_on_started(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """Once the adapter started, it is cleaned up whatever fails next (here
    building the link), so an adapter's own resources (a thread, a client)
    never outlive ``serve``."""
    platform = MemoryRest([ROOM])
    adapter = SlowAdapter()
    agent = Agent(
        _LinkFailsRuntime(platform, AgentConfig(state_dir=tmp_path)),
        adapter,
        handle_signals=False,
    )
    with pytest.raises(OSError, match="no link today"):
        await agent.serve()
    assert adapter.cleanup_all_calls == 1
