"""The Messages API stub enforces what the adapter's tests rely on: it refuses
invalid conversations and too many breakpoints, checks thinking signatures,
bills by the cache rules and counts tokens. (Tests that assert "the stub
refused nothing" are only as good as these refusals.)"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
import trio
from anthropic_stub import (
    Account,
    AnthropicStub,
    block_tokens,
    message,
    text,
    thinking,
    tool_use,
)

MARK = {"type": "ephemeral"}
LONG_SYSTEM = "You are a careful agent. " * 200  # well over 1,024 stub tokens


async def create(client: anthropic.AsyncAnthropic, **request: Any) -> Any:
    with trio.fail_after(10):
        return await client.messages.create(model="claude-test", max_tokens=16, **request)


USE = tool_use("toolu_1", "lookup", {})
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


@pytest.mark.parametrize(
    ("messages", "thinking_on", "problem"),
    [
        ([{"role": "assistant", "content": "hi"}], False, "first message"),
        ([{"role": "user", "content": ""}], False, "empty content"),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": [USE]}],
            False,
            "without tool_result",
        ),
        ([{"role": "user", "content": [RESULT]}], False, "unexpected tool_use_id"),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [RESULT]},
            ],
            True,
            "must start with a thinking block",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{**thinking("a"), "thinking": "b"}, USE]},
                {"role": "user", "content": [RESULT]},
            ],
            True,
            "invalid signature",
        ),
    ],
)
async def test_invalid_conversations_are_refused(
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
    messages: list[dict[str, Any]],
    thinking_on: bool,
    problem: str,
) -> None:
    anthropic_stub.push(message(text("never sent")))
    extra: dict[str, Any] = {}
    if thinking_on:
        extra["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    with pytest.raises(anthropic.BadRequestError, match=problem):
        await create(anthropic_client, messages=messages, **extra)
    assert len(anthropic_stub.refused) == 1
    assert anthropic_stub.script  # the scripted answer was not used


async def test_a_valid_tool_loop_with_thinking_passes(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("ok")))
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [thinking("a"), USE]},
        {"role": "user", "content": [RESULT]},
    ]
    await create(
        anthropic_client, messages=messages, thinking={"type": "enabled", "budget_tokens": 1024}
    )
    assert anthropic_stub.refused == []


async def test_more_than_four_breakpoints_are_refused(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("never sent")))
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": MARK} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks"):
        await create(anthropic_client, messages=[{"role": "user", "content": blocks}])


async def test_usage_follows_the_cache_rules(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.accounting = True
    anthropic_stub.push(*[message(text("ok")) for _ in range(4)])
    system = [{"type": "text", "text": LONG_SYSTEM, "cache_control": MARK}]
    system_tokens = block_tokens(system[0])
    question = {"role": "user", "content": "q"}

    first = await create(anthropic_client, system=system, messages=[question])
    assert first.usage.cache_creation_input_tokens == system_tokens
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.input_tokens == block_tokens({"type": "text", "text": "q"})

    second = await create(anthropic_client, system=system, messages=[question])
    assert second.usage.cache_read_input_tokens == system_tokens
    assert second.usage.cache_creation_input_tokens == 0

    # a prefix under the minimum is not cached
    short = [{"type": "text", "text": "short", "cache_control": MARK}]
    await create(anthropic_client, system=short, messages=[question])
    await create(anthropic_client, system=short, messages=[question])
    assert anthropic_stub.accounts[2:] == [Account(anthropic_stub.accounts[2].total, 0, 0, 1)] * 2

    anthropic_stub.forget_cache()
    assert anthropic_stub.account({"system": system, "messages": [question]}).cache_read == 0


async def test_token_counts_and_the_context_window(
    anthropic_client: anthropic.AsyncAnthropic, anthropic_stub: AnthropicStub
) -> None:
    messages = [{"role": "user", "content": "x" * 400}]
    with trio.fail_after(10):
        counted = await anthropic_client.messages.count_tokens(
            model="claude-test",
            messages=messages,  # type: ignore[arg-type]
        )
    assert counted.input_tokens == block_tokens({"type": "text", "text": "x" * 400})
    assert anthropic_stub.count_requests == [{"model": "claude-test", "messages": messages}]
    assert anthropic_stub.bodies == []

    anthropic_stub.context_window = 50
    anthropic_stub.push(message(text("never sent")))
    with pytest.raises(anthropic.BadRequestError, match=r"prompt is too long: \d+ tokens > 50"):
        await create(anthropic_client, messages=messages)
    assert anthropic_stub.script
