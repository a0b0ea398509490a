"""Extended thinking: opt-in with a budget; thinking and redacted thinking blocks
go back unchanged within a tool loop; with ``Emit.THOUGHTS`` the thinking text
(never redacted data) is posted as ``thought`` events."""

from __future__ import annotations

import json
import logging
from typing import Any

import anthropic
import pytest
import trio
from anthropic_stub import (
    AnthropicStub,
    message,
    redacted_thinking,
    text,
    thinking,
    tool_use,
)
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import BandConfigError, Emit, PlatformMessage
from band_trio.testing import FakeAgentTools

SEND = {"content": "hi Alice", "mentions": ["user-1"]}
SECRET = "RkFLRS1FTkNSWVBURUQtUkVBU09OSU5H"


def incoming(content: str = "hello", *, id: str = "m1") -> PlatformMessage:
    return PlatformMessage(
        id=id,
        room_id="room-1",
        content=content,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def started(client: anthropic.AsyncAnthropic, **kwargs: Any) -> AnthropicAdapter:
    adapter = AnthropicAdapter(
        AnthropicAdapterConfig(thinking_budget=2048), client=client, **kwargs
    )
    await adapter.on_started("Claude", "a helpful agent")
    return adapter


async def run_turn(adapter: AnthropicAdapter, msg: PlatformMessage) -> FakeAgentTools:
    tools = FakeAgentTools()
    with trio.fail_after(20):
        await adapter.on_message(
            msg, tools, [], None, None, is_session_bootstrap=False, room_id=msg.room_id
        )
    return tools


def push_thinking_turn(stub: AnthropicStub, tag: str) -> tuple[dict[str, Any], ...]:
    first = thinking(f"{tag}: who is here? I should look first.")
    hidden = redacted_thinking(SECRET)
    second = thinking(f"{tag}: Alice is here; answer her.")
    stub.push(
        message(first, hidden, tool_use(f"toolu_{tag}_1", "band_get_participants", {})),
        message(second, tool_use(f"toolu_{tag}_2", "band_send_message", SEND)),
        message(thinking(f"{tag}: replied."), text("done")),
    )
    return first, hidden, second


async def test_thinking_blocks_go_back_unchanged_within_the_tool_loop(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    first, hidden, second = push_thinking_turn(anthropic_stub, "a")
    adapter = await started(anthropic_client)
    tools = await run_turn(adapter, incoming())

    assert tools.chat == ["hi Alice"]
    assert anthropic_stub.refused == []
    bodies = anthropic_stub.bodies
    assert len(bodies) == 3
    assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in bodies)
    # round 2 carries round 1's assistant message: thinking first, byte for byte
    assistant = bodies[1]["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        first,
        hidden,
        {"type": "tool_use", "id": "toolu_a_1", "name": "band_get_participants", "input": {}},
    ]
    # round 3 carries both rounds
    assert bodies[2]["messages"][1]["content"][:2] == [first, hidden]
    assert bodies[2]["messages"][3]["content"][0] == second
    # the kept conversation holds them for the next turn as well
    kept = adapter.history("room-1")
    assert kept[1]["content"][:2] == [first, hidden]
    assert kept[-1] == {"role": "assistant", "content": "done"}


async def test_a_later_turn_after_a_thinking_loop_is_a_valid_request(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    push_thinking_turn(anthropic_stub, "a")
    push_thinking_turn(anthropic_stub, "b")
    adapter = await started(anthropic_client)
    await run_turn(adapter, incoming("one", id="m1"))
    await run_turn(adapter, incoming("two", id="m2"))
    assert anthropic_stub.refused == []
    assert len(anthropic_stub.bodies) == 6
    assert not anthropic_stub.exhausted


async def test_with_emit_thoughts_the_thinking_text_is_posted_never_redacted_data(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    push_thinking_turn(anthropic_stub, "a")
    adapter = await started(anthropic_client, emit=Emit.THOUGHTS | Emit.TOOL_CALLS)
    tools = await run_turn(adapter, incoming())

    thoughts = [e.content for e in tools.events_sent if e.message_type == "thought"]
    assert thoughts == [
        "a: who is here? I should look first.",
        "a: Alice is here; answer her.",
        "a: replied.",
    ]
    everything = json.dumps(
        [(e.content, e.metadata) for e in tools.events_sent] + tools.chat, default=str
    )
    assert SECRET not in everything
    # each round's thought comes before its tool events
    kinds = [e.message_type for e in tools.events_sent]
    assert kinds == [
        "thought",
        "tool_call",
        "tool_result",
        "thought",
        "tool_call",
        "tool_result",
        "thought",
    ]


async def test_thoughts_are_not_posted_unless_asked_for(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    push_thinking_turn(anthropic_stub, "a")
    adapter = await started(anthropic_client)
    assert not adapter.features.emits(Emit.THOUGHTS)
    tools = await run_turn(adapter, incoming())
    assert [e for e in tools.events_sent if e.message_type == "thought"] == []


async def test_thinking_is_off_by_default(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("hi")))
    adapter = AnthropicAdapter(client=anthropic_client)
    await adapter.on_started("Claude", "a helpful agent")
    await run_turn(adapter, incoming())
    assert "thinking" not in anthropic_stub.bodies[0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thinking_budget": 1023},
        {"thinking_budget": True},
        {"thinking_budget": 2048.0},
        {"thinking_budget": 4096},
        {"thinking_budget": 3000, "max_tokens": 2000},
    ],
)
def test_a_thinking_budget_must_fit_the_api(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BandConfigError):
        AnthropicAdapterConfig(**kwargs)


def test_the_client_discouraging_a_fixed_budget_for_a_model_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from anthropic._data import MODELS_TO_WARN_WITH_THINKING_ENABLED

    model = next(iter(MODELS_TO_WARN_WITH_THINKING_ENABLED))
    with caplog.at_level(logging.WARNING, logger="band_trio_anthropic"):
        AnthropicAdapterConfig(model=model, thinking_budget=2048)
    assert any("discourages thinking with a fixed budget" in r.message for r in caplog.records)
