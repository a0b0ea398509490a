"""Review: another agent's tool events are not this agent's tool calls.

The runtime gives role ``assistant`` only to this agent's own messages, and the
converter recognises own text by that role; tool events must follow the same
rule, or in a room with two agents each model is told it made the other's
calls (e.g. that it already sent the other agent's reply)."""

from __future__ import annotations

import json
from typing import Any

from band_trio_anthropic import AnthropicHistoryConverter

from band_trio import HistoryItem


def tool_event(kind: str, call_id: str, *, own: bool) -> HistoryItem:
    payload: dict[str, Any] = {"name": "band_send_message", "tool_call_id": call_id}
    if kind == "tool_call":
        payload["args"] = {"content": "I will handle it", "mentions": ["alice"]}
    else:
        payload["output"] = "sent"
    return HistoryItem(
        role="assistant" if own else "user",
        content=json.dumps(payload),
        sender_name="Claude" if own else "Bob-bot",
        sender_type="Agent",
        message_type=kind,
    )


def said(content: str, name: str) -> HistoryItem:
    return HistoryItem(role="user", content=content, sender_name=name, sender_type="User")


def test_another_agents_tool_events_are_not_own_tool_calls() -> None:
    items = [
        said("who can help?", "Alice"),
        tool_event("tool_call", "toolu_bob", own=False),
        HistoryItem(
            role="user",
            content="I will handle it",
            sender_name="Bob-bot",
            sender_type="Agent",
        ),
        tool_event("tool_result", "toolu_bob", own=False),
    ]
    out = AnthropicHistoryConverter("Claude").convert(items)
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Alice]: who can help?"},
                {"type": "text", "text": "[Bob-bot]: I will handle it"},
            ],
        }
    ]


def test_own_tool_events_next_to_another_agents_pair_as_before() -> None:
    items = [
        said("go", "Alice"),
        tool_event("tool_call", "toolu_own", own=True),
        tool_event("tool_call", "toolu_bob", own=False),
        tool_event("tool_result", "toolu_bob", own=False),
        tool_event("tool_result", "toolu_own", own=True),
    ]
    out = AnthropicHistoryConverter("Claude").convert(items)
    uses = [
        b["id"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    results = [
        b["tool_use_id"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert uses == ["toolu_own"]
    assert results == ["toolu_own"]
