"""``AgentTools.send_failure``: the failure report is room-bound, best-effort, and marks the
turn reported (tools and adapters, "Python-only methods on AgentTools"; "Event shapes the two
adapters post"; "Lifecycle").

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import attrs
import pytest
import trio

from band_trio import AgentFailure
from band_trio.adapter import ToolEffect, report_failure
from band_trio.errors import RoomExecutionStoppedError
from band_trio.runtime.core._turn_effects import TurnEffects, TurnVerdict
from band_trio.tools import AgentTools
from band_trio.wire.rest import RestClient
from tests.scripted_platform import AGENT_ID, ROOM, ROSTER, ScriptedPlatform, error, ok

EVENTS = rf"/chats/{ROOM}/events"


@attrs.define
class LedgerHooks:
    """Turn hooks that keep a TurnEffects, like the engine's turn."""

    message_id: str | None = "msg-1"
    effects: TurnEffects = attrs.Factory(TurnEffects)
    stopped: int = 0

    def reply_sent(self, reply_id: str) -> None: ...

    def reply_intent(self, digest: str) -> None: ...

    def reply_settled(self, digest: str) -> None: ...

    def failure_reported(self) -> None:
        self.effects.note_reported()

    def execution_stopped(self) -> None:
        self.stopped += 1

    def record_effect(self, effect: ToolEffect) -> None:
        self.effects.record_effect(effect)


@pytest.fixture
def hooks() -> LedgerHooks:
    return LedgerHooks()


@pytest.fixture
def tools(rest: RestClient, hooks: LedgerHooks) -> AgentTools:
    return AgentTools(rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER, hooks=hooks)


async def test_send_failure_posts_the_error_event_and_marks_the_turn(
    tools: AgentTools, platform: ScriptedPlatform, hooks: LedgerHooks
) -> None:
    platform.on("POST", EVENTS, ok({"id": "e-1", "message_type": "error", "success": True}))
    assert hooks.effects.verdict is TurnVerdict.MISSING_REPLY
    with trio.fail_after(5):
        receipt = await tools.send_failure(
            AgentFailure("anthropic", "overloaded", code=529, detail={"type": "overloaded"})
        )
    assert receipt is not None
    assert receipt.id == "e-1"
    [call] = platform.requests_to("POST", EVENTS)
    assert call.body == {
        "event": {
            "content": "overloaded",
            "message_type": "error",
            "metadata": {
                "failure": {
                    "provider": "anthropic",
                    "code": "529",
                    "message": "overloaded",
                    "detail": {"type": "overloaded"},
                }
            },
        }
    }
    # Only an observe effect (the event), yet the turn is complete: reported.
    assert hooks.effects.effects == (ToolEffect.OBSERVE,)
    assert hooks.effects.reported
    assert hooks.effects.verdict is TurnVerdict.COMPLETE
    assert tools.failure_reported


async def test_report_failure_uses_send_failure(
    tools: AgentTools, platform: ScriptedPlatform, hooks: LedgerHooks
) -> None:
    platform.on("POST", EVENTS, ok({"id": "e-2", "message_type": "error", "success": True}))
    with trio.fail_after(5):
        await report_failure(tools, AgentFailure("langgraph", ""))
    [call] = platform.requests_to("POST", EVENTS)
    assert call.body["event"]["content"] == "langgraph failed without an error message."
    assert hooks.effects.reported


async def test_a_failed_post_is_logged_and_leaves_the_turn_unreported(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: LedgerHooks,
    caplog: pytest.LogCaptureFixture,
) -> None:
    platform.on("POST", EVENTS, error(422, "invalid", "nope"))
    with trio.fail_after(5):
        assert await tools.send_failure(AgentFailure("anthropic", "boom")) is None
    assert not hooks.effects.reported
    assert not tools.failure_reported
    assert "could not post the anthropic failure report" in caplog.text
    assert "do-not-leak" not in caplog.text


async def test_a_stopped_room_propagates(
    tools: AgentTools, platform: ScriptedPlatform, hooks: LedgerHooks
) -> None:
    platform.on("POST", EVENTS, error(403, "forbidden", "Agent execution is stopped"))
    with trio.fail_after(5), pytest.raises(RoomExecutionStoppedError):
        await tools.send_failure(AgentFailure("anthropic", "boom"))
    assert hooks.stopped == 1
    assert not hooks.effects.reported


async def test_without_hooks_the_tools_still_remember(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("POST", EVENTS, ok({"id": "e-3", "message_type": "error", "success": True}))
    bare = AgentTools(rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER)
    with trio.fail_after(5):
        await bare.send_failure(AgentFailure("x", "y"))
    assert bare.failure_reported
