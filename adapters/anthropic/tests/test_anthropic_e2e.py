"""End to end: the local Band platform, the local Anthropic stub, the real
anthropic client and a real band-trio agent running AnthropicAdapter.

Only public names are used (the ``band_platform`` fixture,
``band_trio.testing.rooms``).

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import trio
from anthropic_stub import (
    AnthropicStub,
    Reply,
    error,
    message,
    read_as_api,
    redacted_thinking,
    text,
    thinking,
    tool_use,
)
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

import band_trio
from band_trio.adapter import GENERIC_FAILURE_MESSAGE, MISSING_REPLY_MESSAGE
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms


async def test_a_human_message_gets_exactly_one_reply_through_the_tool_loop(
    band_platform: LocalPlatform,
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    user_id = band_platform.user.id

    def reply_with_the_tool(body: dict[str, Any]) -> Reply:
        last = read_as_api(body)["messages"][-1]["content"]
        assert isinstance(last, str)
        assert "what is 2+2?" in last
        args = {"content": "2+2 is 4.", "mentions": [user_id]}
        return message(tool_use("toolu_01", "band_send_message", args), usage=(120, 30))

    anthropic_stub.push(reply_with_the_tool, message(text("Answered."), usage=(160, 4)))
    config = AnthropicAdapterConfig(model="claude-test", allow_unknown_model=True)
    adapter = AnthropicAdapter(config, client=anthropic_client)

    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("what is 2+2?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)

    (reply,) = room.from_agent("text")
    assert reply.content.endswith("2+2 is 4.")
    assert [m.message_type for m in room.from_agent()] == [
        "tool_call",
        "text",
        "tool_result",
        "task",
    ]
    call = json.loads(room.from_agent("tool_call")[0].content)
    assert call["tool_call_id"] == "toolu_01"
    result = json.loads(room.from_agent("tool_result")[0].content)
    assert result["is_error"] is False
    assert json.loads(result["output"])["id"] == reply.id
    usage = room.from_agent("task")[0].metadata["band_usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (280, 34)

    first, second = anthropic_stub.read_bodies
    assert first["model"] == "claude-test"
    assert first["system"].startswith(f"You are {band_platform.agents[0].name}")
    # the first turn of the room brings the participant list as a system line
    assert any(
        isinstance(m["content"], str)
        and m["content"].startswith("[System]: ## Current Participants")
        for m in first["messages"]
    )
    assert second["messages"][-1]["content"][0]["tool_use_id"] == "toolu_01"
    assert not anthropic_stub.exhausted


async def test_a_plain_text_answer_is_judged_a_missing_reply(
    band_platform: LocalPlatform,
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    """(tools and adapters, "Testable statements" 78) end to end: the text never
    reaches the room; the runtime reports it."""
    anthropic_stub.push(message(text("Hello! (but not through a tool)")))
    adapter = AnthropicAdapter(client=anthropic_client)

    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")

    assert room.from_agent("text") == []
    (report,) = room.from_agent("error")
    assert report.content == MISSING_REPLY_MESSAGE
    assert report.metadata["failure"]["provider"] == "band-runtime"


async def test_a_provider_error_on_every_attempt_is_reported_once(
    band_platform: LocalPlatform,
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    """A message whose every attempt meets a provider error: one error event,
    posted when it fails for the last time, never one per attempt; no provider
    text in the room."""
    anthropic_stub.push(*[error(529, "overloaded_error", "Overloaded sk-ant-xyz")] * 3)
    adapter = AnthropicAdapter(client=anthropic_client)

    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, max_attempts=3, retry_delay=0.05) as [
            room
        ]:
            posted = await room.post("hi")
            # Each failed attempt marks the message failed; the last one adds
            # the error event.
            await band_platform.wait_for(lambda: bool(room.from_agent("error")))
            assert room.status(posted) == "failed"

    assert len(anthropic_stub.bodies) == 3  # the error came after every attempt ran
    (report,) = room.from_agent("error")
    assert report.content == GENERIC_FAILURE_MESSAGE
    assert "sk-ant-xyz" not in json.dumps([m.content for m in room.from_agent()])
    assert room.from_agent("text") == []


async def test_cached_thinking_turns_report_cache_usage_and_post_thoughts(
    band_platform: LocalPlatform,
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    """Two messages in one room, caching on (the default), thinking on with
    thoughts emitted: each turn's usage event carries the cache figures the
    API billed, the second turn reads the first from the cache, and the room
    sees the thinking text but never the redacted data."""
    anthropic_stub.accounting = True
    user_id = band_platform.user.id
    secret = "RU5DUllQVEVELVJFQVNPTklORw"

    def think_then_reply(body: dict[str, Any]) -> Reply:
        question = read_as_api(body)["messages"][-1]["content"]
        args = {"content": f"answering: {question[-8:]}", "mentions": [user_id]}
        return message(
            thinking(f"the user asked {question[-8:]}"),
            redacted_thinking(secret),
            tool_use(f"toolu_{len(anthropic_stub.bodies)}", "band_send_message", args),
        )

    anthropic_stub.push(
        think_then_reply,
        message(thinking("sent."), text("done")),
        think_then_reply,
        message(thinking("sent again."), text("done")),
    )
    config = AnthropicAdapterConfig(thinking_budget=2048)
    adapter = AnthropicAdapter(
        config, client=anthropic_client, emit=band_trio.Emit.THOUGHTS | band_trio.Emit.USAGE
    )

    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            first = await room.post("question one")
            await band_platform.wait_for(lambda: room.status(first) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)
            second = await room.post("question two")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 2)

    assert anthropic_stub.refused == []
    assert len(room.from_agent("text")) == 2
    thoughts = [m.content for m in room.from_agent("thought")]
    assert len(thoughts) == 4
    assert thoughts[1] == "sent."
    assert thoughts[3] == "sent again."
    assert all(secret not in (m.content + json.dumps(m.metadata)) for m in room.state.messages)

    accounts = anthropic_stub.accounts
    usages = [m.metadata["band_usage"] for m in room.from_agent("task")]
    for usage, calls in zip(usages, (accounts[:2], accounts[2:]), strict=True):
        assert usage["input_tokens"] == sum(a.input for a in calls)
        assert usage["cache_read_tokens"] == sum(a.cache_read for a in calls)
        assert usage["cache_write_tokens"] == sum(a.cache_write for a in calls)
    # the second turn starts where the first ended: read from the cache
    assert accounts[2].cache_read == accounts[1].total
    assert usages[1]["cache_read_tokens"] > usages[1]["cache_write_tokens"]
