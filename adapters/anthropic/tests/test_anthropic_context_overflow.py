"""A conversation that outgrows the model's context does not block the room:
after a "prompt is too long" 400 the turn trims the oldest part of the room's
conversation to fit and retries once; only when the trimmed request is still
too long does the turn fail, and then the room keeps only the turn's own part."""

from __future__ import annotations

import anthropic
import pytest
import trio
from anthropic_stub import AnthropicStub, conversation_problems, error, message, text, tool_use
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools, reported_failures

TOO_LONG = "prompt is too long: 210000 tokens > 200000 maximum"


def incoming(mid: str, text_: str) -> PlatformMessage:
    return PlatformMessage(
        id=mid,
        room_id="room-1",
        content=text_,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def turn(
    adapter: AnthropicAdapter, msg: PlatformMessage, tools: FakeAgentTools | None = None
) -> None:
    await adapter.on_message(
        msg,
        tools or FakeAgentTools(),
        [],
        None,
        None,
        is_session_bootstrap=False,
        room_id=msg.room_id,
    )


async def started(client: anthropic.AsyncAnthropic) -> AnthropicAdapter:
    adapter = AnthropicAdapter(AnthropicAdapterConfig(cache=None), client=client)
    await adapter.on_started("Claude", "a helpful agent")
    return adapter


async def test_a_too_long_prompt_trims_the_oldest_part_and_retries_once(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    # ten earlier exchanges of about equal size; the API says the request is
    # 5 % too long
    anthropic_stub.push(*[message(text(f"answer {i} " + "x" * 300)) for i in range(10)])
    anthropic_stub.push(error(400, "invalid_request_error", TOO_LONG))
    anthropic_stub.push(message(tool_use("toolu_1", "band_no_reply", {})))
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    with trio.fail_after(20):
        for i in range(10):
            await turn(adapter, incoming(f"m{i}", f"question {i} " + "y" * 300))
        await turn(adapter, incoming("m10", "the last question"), tools)

    overflowing, retry = anthropic_stub.read_bodies[-2:]
    assert len(overflowing["messages"]) == 21
    # the retry is the newest part of the same conversation, cut at a user turn
    assert retry["messages"] == overflowing["messages"][-len(retry["messages"]) :]
    assert retry["messages"][0]["content"].startswith("[Alice]: question")
    # scaled to the limit with a tenth kept free: at least one exchange went,
    # and most of the history stayed
    assert 11 <= len(retry["messages"]) <= 19
    assert retry["messages"][-1] == {"role": "user", "content": "[Alice]: the last question"}
    assert conversation_problems(retry["messages"]) == []
    # the overflow was handled: no failure report
    assert reported_failures(tools) == []
    # the room keeps the trimmed conversation with this turn
    assert adapter.history("room-1")[: len(retry["messages"])] == retry["messages"]


async def test_a_second_too_long_answer_fails_the_turn_and_keeps_only_its_part(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(text("first answer")),
        message(text("second answer")),
        error(400, "invalid_request_error", TOO_LONG),
        error(400, "invalid_request_error", TOO_LONG),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    with trio.fail_after(20):
        await turn(adapter, incoming("m1", "first"))
        await turn(adapter, incoming("m2", "second"))
        with pytest.raises(anthropic.BadRequestError):
            await turn(adapter, incoming("m3", "third"), tools)
        # the runtime retries the message: it goes alone, once
        await turn(adapter, incoming("m3", "third"))

    bodies = [b["messages"] for b in anthropic_stub.read_bodies]
    overflowing, trimmed, retry = bodies[2:]
    assert len(overflowing) == 5
    assert trimmed == overflowing[2:]
    assert retry == [{"role": "user", "content": "[Alice]: third"}]
    assert reported_failures(tools) == []  # the runtime reports a final failure


async def test_a_too_long_prompt_with_nothing_to_trim_fails_without_a_retry(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(error(400, "invalid_request_error", TOO_LONG))
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    with trio.fail_after(20), pytest.raises(anthropic.BadRequestError):
        await turn(adapter, incoming("m1", "only this"), tools)
    assert len(anthropic_stub.requests) == 1
    assert reported_failures(tools) == []


async def test_a_request_over_the_context_window_is_trimmed_to_fit() -> None:
    """With a context window the stub enforces, the retry fits without a script step."""
    stub = AnthropicStub(context_window=3000)
    async with trio.open_nursery() as nursery:
        await nursery.start(stub.serve)
        async with anthropic.AsyncAnthropic(
            base_url=stub.url, api_key="k", max_retries=0, timeout=20.0
        ) as client:
            adapter = AnthropicAdapter(
                AnthropicAdapterConfig(history_token_budget=None), client=client
            )
            await adapter.on_started("Claude", "a helpful agent")
            stub.push(*[message(text(f"answer {i} " + "x" * 800)) for i in range(12)])
            with trio.fail_after(20):
                for i in range(12):
                    await turn(adapter, incoming(f"m{i}", f"question {i} " + "y" * 800))
        nursery.cancel_scope.cancel()
    assert not stub.exhausted
    assert stub.refused == []
    # every turn was answered; some needed a trimmed retry
    assert len(stub.accounts) == 12
    assert len(stub.bodies) > 12
    assert all(a.total <= 3000 for a in stub.accounts)


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
    retry = anthropic_stub.read_bodies[2]["messages"]
    assert len(retry) == 4
    assert retry[-1] == {"role": "user", "content": "[Alice]: second"}
