"""Review: a retry of a failed message that is itself cancelled (a turn
timeout) must not make the next retry add the message a second time
(tools_adapters.md §10 item 9)."""

from __future__ import annotations

import anthropic
import pytest
import trio
from anthropic_stub import HANG, AnthropicStub, error, message, tool_use
from band_trio_anthropic import AnthropicAdapter

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools


def incoming() -> PlatformMessage:
    return PlatformMessage(
        id="m1",
        room_id="room-1",
        content="hello",
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def turn(adapter: AnthropicAdapter, tools: FakeAgentTools) -> None:
    msg = incoming()
    await adapter.on_message(
        msg, tools, [], None, None, is_session_bootstrap=False, room_id=msg.room_id
    )


async def test_a_cancelled_retry_keeps_the_retry_point(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        error(529, "overloaded_error", "overloaded"),
        HANG,
        message(tool_use("toolu_1", "band_no_reply", {})),
    )
    adapter = AnthropicAdapter(client=anthropic_client)
    await adapter.on_started("Claude", "a helpful agent")
    with trio.fail_after(20):
        # attempt 1: the provider fails
        with pytest.raises(anthropic.APIStatusError):
            await turn(adapter, FakeAgentTools())
        # attempt 2: the turn is cancelled while the model call is in flight
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn, adapter, FakeAgentTools())
            await anthropic_stub.wait_for_requests(2)
            nursery.cancel_scope.cancel()
        assert nursery.cancel_scope.cancelled_caught
        # attempt 3: the message is in the conversation once
        await turn(adapter, FakeAgentTools())
    expected = [{"role": "user", "content": "[Alice]: hello"}]
    assert [r["messages"] for r in anthropic_stub.bodies] == [expected] * 3
