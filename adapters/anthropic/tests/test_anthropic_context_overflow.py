"""A conversation that outgrows the model's context does not block the room:
after a "prompt is too long" 400 the room's kept history is dropped, and the
retry sends only its own message."""

from __future__ import annotations

import anthropic
import pytest
import trio
from anthropic_stub import AnthropicStub, error, message, tool_use
from band_trio_anthropic import AnthropicAdapter

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools


def incoming(mid: str, text: str) -> PlatformMessage:
    return PlatformMessage(
        id=mid,
        room_id="room-1",
        content=text,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def turn(adapter: AnthropicAdapter, msg: PlatformMessage) -> None:
    await adapter.on_message(
        msg, FakeAgentTools(), [], None, None, is_session_bootstrap=False, room_id=msg.room_id
    )


async def test_a_too_long_prompt_drops_the_rooms_history(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_no_reply", {})),
        error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = AnthropicAdapter(client=anthropic_client)
    await adapter.on_started("Claude", "a helpful agent")
    with trio.fail_after(20):
        await turn(adapter, incoming("m1", "first"))
        with pytest.raises(anthropic.BadRequestError):
            await turn(adapter, incoming("m2", "second"))
        await turn(adapter, incoming("m2", "second"))
    _first, overflowing, retry = (r["messages"] for r in anthropic_stub.bodies)
    assert len(overflowing) == 4  # first turn (3 messages) + the new one
    assert retry == [{"role": "user", "content": "[Alice]: second"}]


async def test_other_bad_requests_keep_the_history(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_no_reply", {})),
        error(400, "invalid_request_error", "tools.0: something else is wrong"),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = AnthropicAdapter(client=anthropic_client)
    await adapter.on_started("Claude", "a helpful agent")
    with trio.fail_after(20):
        await turn(adapter, incoming("m1", "first"))
        with pytest.raises(anthropic.BadRequestError):
            await turn(adapter, incoming("m2", "second"))
        await turn(adapter, incoming("m2", "second"))
    retry = anthropic_stub.bodies[2]["messages"]
    assert len(retry) == 4
    assert retry[-1] == {"role": "user", "content": "[Alice]: second"}
