"""send_message journals a reply intent before posting and settles it once the
outcome is known; an outcome that may have been stored leaves it open."""

from __future__ import annotations

import httpx
import pytest
import trio

from band_trio.errors import (
    BandConnectionError,
    BandProtocolError,
    BandToolError,
    InternalServerError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.tools import AgentTools
from band_trio.tools.reply_digest import reply_digest

from .conftest import RecordingHooks, ScriptedPlatform, error, ok
from .test_send import MESSAGES, sent


async def test_the_intent_is_journaled_before_the_post_and_settled_after(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    seen_at_post: list[list[str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen_at_post.append(list(hooks.intents))
        return sent("m-1")  # type: ignore[return-value]

    platform.on("POST", MESSAGES, answer)
    with trio.fail_after(5):
        await tools.send_message("hello there", ["alice"])
    digest = reply_digest("hello there")
    assert seen_at_post == [[digest]]
    assert hooks.replies == ["m-1"]
    assert hooks.settled == [digest]


@pytest.mark.parametrize(
    ("response", "raised"),
    [
        (error(422, "validation_error", "content is invalid"), UnprocessableEntityError),
        (
            error(422, "mentioned_participant_not_in_room", "mentioned_participant_not_in_room"),
            BandToolError,
        ),
        (
            error(403, "forbidden", "agent execution is stopped in this room"),
            RoomExecutionStoppedError,
        ),
    ],
)
async def test_a_refused_post_settles_the_intent(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: RecordingHooks,
    response: httpx.Response,
    raised: type[Exception],
) -> None:
    platform.on("POST", MESSAGES, response)
    with trio.fail_after(5), pytest.raises(raised):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == hooks.intents
    assert hooks.replies == []


async def test_a_5xx_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, error(500, "internal_error", "boom"))
    with trio.fail_after(5), pytest.raises(InternalServerError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_transport_failure_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset", request=request)

    platform.on("POST", MESSAGES, broken)
    with trio.fail_after(5), pytest.raises(BandConnectionError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_cancelled_post_leaves_the_intent_open(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: RecordingHooks,
    autojump_clock: trio.abc.Clock,
) -> None:
    async def hangs(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    platform.on("POST", MESSAGES, hangs)  # type: ignore[arg-type]
    with trio.move_on_after(1) as scope:
        await tools.send_message("hello", ["alice"])
    assert scope.cancelled_caught
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_blank_reply_journals_nothing(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, ok({}))
    assert await tools.send_message("   ", ["alice"]) is None
    assert hooks.intents == []


async def test_a_2xx_without_a_receipt_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    # A 2xx means the platform stored the reply; only its receipt is unreadable.
    platform.on("POST", MESSAGES, httpx.Response(201, json={"unexpected": True}))
    with trio.fail_after(5), pytest.raises(BandProtocolError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []
