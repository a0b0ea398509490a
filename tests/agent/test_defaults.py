"""Operational defaults: a finite turn timeout, bounded "working" keep-alives,
configuration from the environment in ``Agent.create``, and one signal-handling
rule for every way of running an agent."""

from __future__ import annotations

import signal
from typing import Any

import pytest
import trio
import trio.testing

from band_trio import Agent, AgentConfig, BandConfigError, SimpleAdapter
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.runtime.config import DEFAULT_MAX_WORKING_STATE, DEFAULT_TURN_TIMEOUT
from band_trio.testing._memory_rest import MemoryRest

from .platform_fakes import KEY, ROOM, FakeRuntime

ENV = {"BAND_AGENT_ID": "agent-1", "BAND_API_KEY": KEY, "BAND_REST_URL": "http://127.0.0.1:9"}


class Hang(SimpleAdapter[HistoryProvider]):
    def __init__(self) -> None:
        super().__init__()
        self.started_at: list[float] = []
        self.cancelled_at: list[float] = []
        self.on_turn: Any = None

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
        self.started_at.append(trio.current_time())
        if self.on_turn is not None:
            self.on_turn()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled_at.append(trio.current_time())
            raise


def test_the_default_turn_timeout_is_above_the_model_clients_own() -> None:
    config = AgentConfig()
    # The Anthropic and OpenAI clients time a request out after 10 minutes.
    assert config.turn_timeout == DEFAULT_TURN_TIMEOUT
    assert config.turn_timeout > 600.0
    assert config.max_working_state == DEFAULT_MAX_WORKING_STATE


async def test_a_hung_turn_is_ended_by_the_default_turn_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    mid = platform.add("hello")
    adapter = Hang()
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None, max_attempts=1)), adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        with trio.fail_after(DEFAULT_TURN_TIMEOUT + 60):
            while platform.status[mid] != "failed":  # noqa: ASYNC110 - fake platform state
                await trio.sleep(1.0)
        nursery.cancel_scope.cancel()
    (start,), (end,) = adapter.started_at, adapter.cancelled_at
    assert end - start == pytest.approx(DEFAULT_TURN_TIMEOUT)
    assert platform.settled(mid) == ["failed"]


async def test_working_keep_alives_stop_by_default_even_without_a_turn_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    platform = MemoryRest([ROOM])
    platform.add("hello")
    adapter = Hang()
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None, turn_timeout=None)), adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await trio.sleep(3 * DEFAULT_MAX_WORKING_STATE)
        assert adapter.cancelled_at == []  # no turn timeout: still running
        nursery.cancel_scope.cancel()
    (start,) = adapter.started_at
    reports = [t for t, name in platform.calls if name == "activity"]
    assert reports
    working = [t - start for t in reports if t - start < 2 * DEFAULT_MAX_WORKING_STATE]
    assert max(working) <= DEFAULT_MAX_WORKING_STATE


def test_create_reads_the_config_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ENV, "BAND_TURN_TIMEOUT": "120", "BAND_MAX_ATTEMPTS": "5"}.items():
        monkeypatch.setenv(name, value)
    agent = Agent.create(adapter=Hang())
    assert agent.runtime.config.turn_timeout == 120.0
    assert agent.runtime.config.max_attempts == 5
    assert agent.runtime.config.shutdown_timeout == 30.0  # not set: the default


def test_an_explicit_config_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ENV, "BAND_TURN_TIMEOUT": "120"}.items():
        monkeypatch.setenv(name, value)
    agent = Agent.create(adapter=Hang(), config=AgentConfig(turn_timeout=60.0))
    assert agent.runtime.config.turn_timeout == 60.0
    combined = Agent.create(adapter=Hang(), config=AgentConfig.from_env(max_attempts=2))
    assert combined.runtime.config.turn_timeout == 120.0
    assert combined.runtime.config.max_attempts == 2


def test_a_bad_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ENV, "BAND_TURN_TIMEOUT": "soon"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(BandConfigError, match="BAND_TURN_TIMEOUT"):
        Agent.create(adapter=Hang())


async def test_an_embedded_agent_leaves_the_signals_to_the_application() -> None:
    """Started with nursery.start (the default for every entry point), the
    agent installs no signal handler: Ctrl+C stays the application's."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    platform = MemoryRest([ROOM])
    platform.add("hello")
    adapter = Hang()
    running = trio.Event()
    adapter.on_turn = running.set
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None)), adapter)
    assert agent.handle_signals is None
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await running.wait()
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
        nursery.cancel_scope.cancel()


async def test_handle_signals_true_installs_the_handlers_when_embedded() -> None:
    before = signal.getsignal(signal.SIGTERM)
    platform = MemoryRest([ROOM])
    platform.add("hello")
    adapter = Hang()
    running = trio.Event()
    adapter.on_turn = running.set
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None)), adapter, handle_signals=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        await running.wait()
        assert signal.getsignal(signal.SIGTERM) != before
        nursery.cancel_scope.cancel()
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_agent_run_as_the_program_handles_the_signals() -> None:
    """``trio.run(agent.serve)``: the default handles SIGINT/SIGTERM (graceful)."""
    before = signal.getsignal(signal.SIGTERM)
    platform = MemoryRest([ROOM])
    platform.add("hello")
    adapter = Hang()
    agent = Agent(FakeRuntime(platform, AgentConfig(state_dir=None)), adapter)
    seen: list[object] = []

    def on_turn() -> None:
        seen.append(signal.getsignal(signal.SIGTERM))
        agent.request_shutdown()

    adapter.on_turn = on_turn
    # The hanging turn is cancelled after the shutdown timeout (virtual time).
    trio.run(agent.serve, clock=trio.testing.MockClock(autojump_threshold=0))
    assert seen
    assert seen[0] != before
    assert signal.getsignal(signal.SIGTERM) == before
