"""A reply post whose answer may hide a stored message (OutcomeUnknownError)
keeps its reply intent open, and a model is told not to repeat it blindly."""

from __future__ import annotations

import httpx
import pytest
import trio

from band_trio.errors import OutcomeUnknownError
from band_trio.tools import AgentTools, ToolErrorKind
from band_trio.tools.reply_digest import reply_digest
from tests.scripted_platform import ROOM, RecordingHooks, ScriptedPlatform, error

MESSAGES = rf"/chats/{ROOM}/messages"


def _reset(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadError("connection reset", request=request)


@pytest.mark.parametrize(
    "answer",
    [
        error(408, "request_timeout", "too slow"),
        error(502, "bad_gateway", "upstream"),
        error(503, "unavailable", "no Retry-After"),
        error(504, "gateway_timeout", "upstream"),
        _reset,
    ],
    ids=["408", "502", "503", "504", "reset"],
)
async def test_an_unknown_outcome_leaves_the_intent_open(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: RecordingHooks,
    answer: httpx.Response,
) -> None:
    platform.on("POST", MESSAGES, answer)
    with trio.fail_after(5), pytest.raises(OutcomeUnknownError):
        await tools.send_message("hello", ["alice"])
    assert len(platform.requests_to("POST", MESSAGES)) == 1
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []
    assert hooks.replies == []


@pytest.mark.parametrize(
    "answer",
    [error(503, "unavailable", "no Retry-After"), _reset],
    ids=["503", "reset"],
)
async def test_a_model_is_told_the_write_may_have_landed(
    tools: AgentTools, platform: ScriptedPlatform, answer: httpx.Response
) -> None:
    platform.on("POST", MESSAGES, answer)
    with trio.fail_after(5):
        result = await tools.execute_tool_call(
            "band_send_message", {"content": "hello", "mentions": ["alice"]}
        )
    assert result.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "may have been applied anyway: check before repeating it" in result.text
    assert "try again later" not in result.text.lower()
