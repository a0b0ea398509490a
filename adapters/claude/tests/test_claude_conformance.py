"""ClaudeAgentAdapter passes the conformance kit on the real ``claude`` CLI.

The kit plays each scenario in one ``trio.run`` under a virtual clock; the
CLI is a real process talking to the scripted Messages API, which serves from
a thread of its own (its own ``trio.run``, real time). While the adapter's
code runs (a turn, a cleanup, an interrupt: when a CLI may be working),
virtual time jumps only once every task was blocked for ``AUTOJUMP`` real
seconds, longer than the CLI takes to start or to answer, so the CLI's work
takes no virtual time and the kit's timeouts stay meaningful; the rest of
the time (no CLI at work) it jumps after ``IDLE_JUMP``. The scripted model answers every
message with one ``band_send_message`` call mentioning the sender, then ends
its turn once it sees the tool result.

Every agent run starts real CLIs, so a scenario takes seconds of real time:
the test plays ``EXAMPLES`` scenarios of at most ``MAX_STEPS`` steps over at
most two rooms (derandomized, so every run plays the same ones), and
``FAULTS``, fixed scenarios with the kit's fault steps (REST faults, socket
drops, contact events, an interrupt) and a room's second turn on its CLI.
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
from anthropic_stub import Reply, Request
from band_trio_claude import ClaudeAgentAdapter
from claude_support import DONE, ClaudeStub, config_for, last_user_text, reply, tool_results
from hypothesis import HealthCheck, settings
from trio.testing import MockClock

from band_trio.adapter import AgentInput
from band_trio.testing.conformance import (
    AdapterConformance,
    RunOptions,
    check_adapter,
    replay,
    scenarios,
)
from band_trio.testing.conformance.steps import (
    ContactChange,
    Interrupt,
    Post,
    RestFault,
    Scenario,
    SlowTool,
    SocketDrop,
)

AUTOJUMP = 1.5
"""Real seconds every task must be blocked before virtual time jumps, while
the adapter's code runs."""
IDLE_JUMP = 0.02
"""The same, while no adapter code runs."""
PROFILE = "band-conformance-claude-cli"
EXAMPLES = 12
"""Scenarios played (a bounded number: each one runs real CLIs)."""
MAX_STEPS = 10
"""Steps per scenario at most."""

settings.register_profile(
    PROFILE,
    max_examples=EXAMPLES,
    deadline=timedelta(minutes=5),
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FAULTS = {
    "second turn after a long socket drop": Scenario(
        [Post(0, "hello"), SocketDrop(45.0), Post(0, "again")], rooms=1
    ),
    "rest faults before and after the call": Scenario(
        [
            RestFault(None, status=503, times=2),
            Post(0, "hello"),
            RestFault(0, status=502, after=True, times=2),
            Post(0, "again"),
        ],
        rooms=1,
    ),
    "contact events around a turn": Scenario(
        [ContactChange("peer", "request"), Post(0, "hello"), ContactChange("helper", "remove")],
        rooms=1,
    ),
    "interrupt mid-turn then a new turn": Scenario(
        [SlowTool(0, 3.0), Post(0, "hello"), Interrupt(0), Post(0, "again")], rooms=2
    ),
}
"""Fixed scenarios played on every run (the generated ones may miss a step kind)."""

_SENDER = re.compile(r"^\[([^\]]+)\]: ", re.M)


def _answer(body: dict[str, Any]) -> Reply:
    if tool_results(body):
        return DONE
    senders = _SENDER.findall(last_user_text(body))
    # A sender is labelled "Name (@handle)": mention the handle.
    name, _, handle = senders[-1].partition(" (@") if senders else ("", "", "")
    mentions = [handle.removesuffix(")") or name] if senders else []
    # A tool use id of its own each time (see ``call``): with one id for
    # every answer, a room's second turn looped in the CLI without end.
    return reply(f"You said {len(last_user_text(body))} characters.", mentions)


class StandingStub(ClaudeStub):
    """The stub answering every model request with :func:`_answer`."""

    def _answer(self, request: Request) -> Reply:
        if not self.script:
            self.push(_answer)
        return super()._answer(request)


@pytest.fixture(scope="module")
def stub_in_a_thread() -> Any:
    stub = StandingStub()
    ready = threading.Event()
    running: list[tuple[trio.lowlevel.TrioToken, trio.CancelScope]] = []

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stub.serve)
            running.append((trio.lowlevel.current_trio_token(), nursery.cancel_scope))
            ready.set()
            # No worker thread waits for the stop (the kit counts threads: one
            # started after its first count would look like the adapter's).

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    assert ready.wait(30)
    yield stub
    token, scope = running[0]
    trio.from_thread.run_sync(scope.cancel, trio_token=token)
    thread.join(30)


_AT_WORK: weakref.WeakKeyDictionary[MockClock, int] = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def _real_time() -> AsyncIterator[None]:
    """Virtual time waits ``AUTOJUMP`` real seconds while the body runs."""
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, MockClock):
        yield
        return
    _AT_WORK[clock] = _AT_WORK.get(clock, 0) + 1
    clock.autojump_threshold = AUTOJUMP
    try:
        yield
    finally:
        _AT_WORK[clock] -= 1
        if not _AT_WORK[clock]:
            clock.autojump_threshold = IDLE_JUMP


class ClockedClaudeAdapter(ClaudeAgentAdapter):
    """The adapter under test, holding virtual time back while its code runs
    (the hooks the runtime calls and the closing of idle CLIs)."""

    async def on_event(self, inp: AgentInput) -> None:
        async with _real_time():
            await super().on_event(inp)

    async def on_cleanup(self, room_id: str) -> None:
        async with _real_time():
            await super().on_cleanup(room_id)

    async def cleanup_all(self) -> None:
        async with _real_time():
            await super().cleanup_all()

    async def on_interrupt(self, room_id: str, mode: str) -> None:
        async with _real_time():
            await super().on_interrupt(room_id, mode)

    async def close_idle(self) -> int:
        async with _real_time():
            return await super().close_idle()


class TestClaudeAgentAdapterConformance(AdapterConformance):
    profile = PROFILE

    @pytest.fixture(autouse=True)
    def _stub(self, stub_in_a_thread: StandingStub, tmp_path: Path) -> Iterator[None]:
        self.stub = stub_in_a_thread
        # One home for the scenarios' runs: a restarted agent resumes there.
        self.home = tmp_path
        before = len(self.stub.model_bodies)
        yield
        # The scenarios really ran on the CLI.
        assert len(self.stub.model_bodies) > before

    def make_adapter(self) -> ClaudeAgentAdapter:
        return ClockedClaudeAdapter(config_for(self.stub, self.home))

    def make_options(self) -> RunOptions:
        return RunOptions(autojump_threshold=IDLE_JUMP, block_threshold=1.0)

    def test_scenarios(self) -> None:
        """Generated scenarios keep every invariant (``EXAMPLES`` of them, short)."""
        check_adapter(
            self.make_adapter,
            options=self.make_options(),
            invariants=self.invariants,
            config=self.make_config(),
            profile=self.profile,
            scenario_strategy=scenarios(max_rooms=2, max_steps=MAX_STEPS),
        )

    @pytest.mark.parametrize("name", list(FAULTS))
    def test_fault_scenarios(self, name: str) -> None:
        """The kit's fault steps, each in a scenario of its own, keep every invariant."""
        replay(
            self.make_adapter,
            FAULTS[name],
            options=self.make_options(),
            invariants=self.invariants,
            config=self.make_config(),
        )
