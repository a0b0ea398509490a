"""End to end with the real ``claude`` CLI: the local Band platform, the
scripted Messages API the CLI streams from, claude-agent-sdk, and a real
band-trio agent running ClaudeAgentAdapter. The whole path is real: the
model's tool use goes through the CLI's MCP routing to the room's in-process
server and from there to the platform."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from anthropic_stub import message, text, thinking, tool_use
from band_trio_claude import SESSION_METADATA_KEY, ClaudeAgentAdapter
from claude_support import (
    NO_REPLY,
    SEND,
    ClaudeStub,
    agent_in_rooms,
    config_for,
    last_user_text,
)

from band_trio.local import LocalPlatform

TIMEOUT = 60


async def test_a_message_is_answered_through_the_band_tool(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Any:
        seen.append(body)
        assert "what is 2+2?" in last_user_text(body)
        return message(
            thinking("Simple arithmetic."),
            tool_use("toolu_01", SEND, {"content": "2+2 is 4.", "mentions": [user_id]}),
            usage=(120, 30),
        )

    claude_stub.push(answer, message(text("Answered."), usage=(160, 4)))
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("what is 2+2?")
            assert await room.settled(posted) == "processed"
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 2)
            session_id = adapter.session_id(room.room_id)

    (sent,) = room.from_agent("text")
    assert sent.content.endswith("2+2 is 4.")
    kinds = [m.message_type for m in room.from_agent()]
    assert kinds == ["thought", "tool_call", "text", "tool_result", "task", "task"]
    call = json.loads(room.from_agent("tool_call")[0].content)
    assert call == {
        "name": "band_send_message",
        "args": {"content": "2+2 is 4.", "mentions": [user_id]},
        "tool_call_id": "toolu_01",
    }
    result = json.loads(room.from_agent("tool_result")[0].content)
    assert result["tool_call_id"] == "toolu_01"
    assert result["is_error"] is False
    assert room.from_agent("thought")[0].content == "Simple arithmetic."
    session, usage = sorted(room.from_agent("task"), key=lambda m: "band_usage" in m.metadata)
    assert session_id is not None
    assert session.metadata[SESSION_METADATA_KEY] == session_id
    assert usage.metadata["band_usage"]["input_tokens"] == 280
    # Claude was offered the Band tools only, under their MCP names.
    names = {t["name"] for t in seen[0]["tools"]}
    assert SEND in names
    assert NO_REPLY in names
    assert all(name.startswith("mcp__band__") for name in names)
    # The CLI is gone once the agent stopped.
    assert adapter.live_rooms() == []
