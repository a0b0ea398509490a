"""FakeAgentTools.send_failure and reported_failures (tools and adapters, "Testable statements"
117).

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import attrs

from band_trio import AgentFailure
from band_trio.adapter import ToolEffect, report_failure
from band_trio.testing import FakeAgentTools, reported_failures


@attrs.define
class Hooks:
    message_id: str | None = "m-1"
    reported: int = 0

    def reply_sent(self, reply_id: str) -> None: ...

    def reply_intent(self, digest: str) -> None: ...

    def reply_settled(self, digest: str) -> None: ...

    def failure_reported(self) -> None:
        self.reported += 1

    def execution_stopped(self) -> None: ...

    def record_effect(self, effect: ToolEffect) -> None: ...


async def test_reported_failures_lists_only_error_events_with_failure_metadata() -> None:
    hooks = Hooks()
    tools = FakeAgentTools(hooks=hooks)
    await tools.send_event("plain error", "error")
    await tools.send_event("a thought", "thought", {"failure": {"provider": "x"}})
    await report_failure(tools, AgentFailure("anthropic", "overloaded", code="529"))
    [failure] = reported_failures(tools)
    assert failure.content == "overloaded"
    assert failure.metadata == {
        "failure": {"provider": "anthropic", "code": "529", "message": "overloaded", "detail": None}
    }
    assert tools.failures_reported == 1
    assert hooks.reported == 1
