"""End to end on the local platform: an adapter built only on ``band_trio.adapter`` posts tool
events, usage and failure reports, and the platform stores them with the exact shapes of (tools
and adapters, "Event shapes the two adapters post"). Also: the runtime's FILES pruning reaches
the adapter's features before ``on_started`` (official runtime, "Testable behaviours" 8).

Reference: docs/reference/official-runtime.rst, docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import enum
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from band_trio import (
    AgentFailure,
    AgentToolsProtocol,
    Capability,
    Emit,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
)
from band_trio.adapter import (
    GENERIC_FAILURE_MESSAGE,
    MISSING_REPLY_MESSAGE,
    Usage,
    post_tool_call,
    post_tool_result,
    render_system_prompt,
    report_failure,
)
from band_trio.local import HumanClient, LocalPlatform

from ..agent.harness import Scene, fast_config, scene, serving


class Mode(enum.Enum):
    REPLY = "reply"
    FAIL = "fail"  # report a failure, then raise
    REPORT_ONLY = "report_only"  # report a failure, then return
    OBSERVE_ONLY = "observe_only"  # tool events and a read, but no reply


class ScriptedLLMAdapter(SimpleAdapter[HistoryProvider]):
    """A stand-in for an LLM adapter: the "model" is a script, everything
    else is the shared pieces an Anthropic or LangGraph adapter uses."""

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE})
    SUPPORTED_CAPABILITIES = frozenset(Capability)

    def __init__(self, **features: Any) -> None:
        super().__init__(**features)
        self.mode = Mode.REPLY
        self.prompt = ""
        self.started_with: frozenset[Capability] | None = None
        self.offered: list[list[str]] = []

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        self.started_with = self.features.capabilities
        self.prompt = render_system_prompt(
            agent_name, agent_description, capabilities=self.features.capabilities
        )

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        usage = Usage()
        try:
            schemas = tools.get_tool_schemas("anthropic", **self.features.tool_schema_options())
            self.offered.append([s["name"] for s in schemas])
            usage += Usage(100, 20)  # the first model call
            if self.mode is Mode.OBSERVE_ONLY:
                await post_tool_call(tools, "band_get_participants", {}, "toolu_0")
                result = await tools.execute_tool_call("band_get_participants", {})
                await post_tool_result(tools, "band_get_participants", result.text, "toolu_0")
                return
            if self.mode is not Mode.REPLY:
                await report_failure(
                    tools,
                    AgentFailure("scripted", "", code=529, detail={"type": "overloaded_error"}),
                )
                if self.mode is Mode.FAIL:
                    raise RuntimeError("provider overloaded")
                return
            args = {"content": f"done: {msg.content}", "mentions": [msg.sender_id]}
            if self.features.emits(Emit.TOOL_CALLS):
                await post_tool_call(tools, "band_send_message", args, "toolu_1")
            result = await tools.execute_tool_call("band_send_message", args)
            if self.features.emits(Emit.TOOL_CALLS):
                await post_tool_result(
                    tools, "band_send_message", result.text, "toolu_1", is_error=result.is_error
                )
            usage += Usage(130, 8, cache_read_tokens=50)  # the second model call
        finally:
            await self.emit_usage(tools, usage)


def agent_messages(s: Scene, room_id: str) -> list[Any]:
    return [m for m in s.room_state(room_id).messages if m.sender_id == s.agent_id]


async def test_tool_events_usage_and_failures_are_stored_with_exact_shapes(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = ScriptedLLMAdapter()
            agent = s.make_agent(adapter, fast_config(max_attempts=1))
            async with serving(agent):
                # 1. a reply through a tool call, with tool events and usage
                replied = await s.post(room_id, "hello")
                await s.wait_for(lambda: s.processed(room_id, replied))
                await s.wait_for(lambda: len(s.agent_events(room_id, "task")) == 1)
                first = agent_messages(s, room_id)
                # 2. a provider failure reported by the adapter, which then raises
                adapter.mode = Mode.FAIL
                failed = await s.post(room_id, "fail please")
                await s.wait_for(lambda: s.status(room_id, failed) == "failed")
                await s.wait_for(lambda: len(s.agent_events(room_id, "task")) == 2)
                # 3. a failure reported, then a normal return: not a missing reply
                adapter.mode = Mode.REPORT_ONLY
                reported = await s.post(room_id, "report only")
                await s.wait_for(lambda: s.processed(room_id, reported))
                await s.wait_for(lambda: len(s.agent_events(room_id, "task")) == 3)

    sender = band_platform.user.id
    # -- 1: tool_call, the reply, tool_result, usage; in that order
    assert [m.message_type for m in first] == ["tool_call", "text", "tool_result", "task"]
    call, text, result, usage = first
    assert call.content == json.dumps(
        {
            "name": "band_send_message",
            "args": {"content": f"done: @{s.agent_handle} hello", "mentions": [sender]},
            "tool_call_id": "toolu_1",
        },
        ensure_ascii=False,
    )
    assert not call.metadata
    output = json.loads(result.content)
    assert list(output) == ["name", "output", "tool_call_id", "is_error"]
    assert output["name"] == "band_send_message"
    assert output["tool_call_id"] == "toolu_1"
    assert output["is_error"] is False
    assert json.loads(output["output"])["id"] == text.id
    assert usage.content == "Token usage: input=230 output=28"
    assert usage.metadata == {
        "band_usage": {
            "input_tokens": 230,
            "output_tokens": 28,
            "cache_read_tokens": 50,
            "cache_write_tokens": 0,
        }
    }
    # -- 2 and 3: exactly one error event each, the adapter's (no runtime
    # generic error, no missing-reply report); usage still emitted on failure
    errors = s.agent_events(room_id, "error")
    assert len(errors) == 2
    for event in errors:
        assert event.content == "scripted failed without an error message."
        assert event.metadata == {
            "failure": {
                "provider": "scripted",
                "code": "529",
                "message": "scripted failed without an error message.",
                "detail": {"type": "overloaded_error"},
            }
        }
    contents = {m.content for m in agent_messages(s, room_id)}
    assert GENERIC_FAILURE_MESSAGE not in contents
    assert MISSING_REPLY_MESSAGE not in contents
    assert [u.content for u in s.agent_events(room_id, "task")[1:]] == [
        "Token usage: input=100 output=20"
    ] * 2
    assert len(s.delivery(room_id, failed).attempts) == 1
    assert s.agent_texts(room_id) == [text.content]


async def test_events_alone_do_not_answer_a_message(band_platform: LocalPlatform) -> None:
    """The shared pieces of (tools and adapters, "Testable statements" 64): tool events, usage
    and a read (observe effects only) leave the turn a missing reply: one runtime error event."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = ScriptedLLMAdapter()
            adapter.mode = Mode.OBSERVE_ONLY
            async with serving(s.make_agent(adapter)):
                mid = await s.post(room_id, "look only")
                await s.wait_for(lambda: s.status(room_id, mid) == "failed")
                await s.wait_for(lambda: len(s.agent_events(room_id, "error")) == 1)
                await s.wait_for(lambda: len(s.agent_events(room_id, "task")) == 1)
    assert [m.message_type for m in agent_messages(s, room_id)][:2] == ["tool_call", "tool_result"]
    [error] = s.agent_events(room_id, "error")
    assert error.content == MISSING_REPLY_MESSAGE
    assert error.metadata["failure"]["provider"] == "band-runtime"
    assert s.agent_texts(room_id) == []


async def test_emit_flags_off_post_no_tool_or_usage_events(band_platform: LocalPlatform) -> None:
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = ScriptedLLMAdapter(emit=())
            async with serving(s.make_agent(adapter)):
                mid = await s.post(room_id, "quiet")
                await s.wait_for(lambda: s.processed(room_id, mid))
    assert [m.message_type for m in agent_messages(s, room_id)] == ["text"]


@asynccontextmanager
async def flagged_scene(
    platform: LocalPlatform, feature_flags: dict[str, bool]
) -> AsyncIterator[Scene]:
    creds = platform.register_agent("Flagged", "a flagged agent", feature_flags=feature_flags)
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        yield Scene(platform, human, creds.id, creds.api_key, creds.handle)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"ff_file_transfer": False}, {Capability.MEMORY}),
        ({"ff_file_transfer": True}, {Capability.MEMORY, Capability.FILES}),
    ],
)
async def test_unserved_files_are_pruned_from_features_before_on_started(
    band_platform: LocalPlatform, flags: dict[str, bool], expected: set[Capability]
) -> None:
    """The FILES tools are "removed from the adapter's features" before on_started, so the
    prompt and the offered tools agree with what the deployment serves (official runtime,
    "Testable behaviours" 8)."""
    with trio.fail_after(30):
        async with flagged_scene(band_platform, flags) as s:
            room_id = await s.new_room()
            adapter = ScriptedLLMAdapter(capabilities=[Capability.FILES, Capability.MEMORY])
            async with serving(s.make_agent(adapter)):
                mid = await s.post(room_id, "which tools?")
                await s.wait_for(lambda: s.processed(room_id, mid))
    assert adapter.started_with == expected
    assert adapter.features.capabilities == expected
    files_on = Capability.FILES in expected
    assert ("## Room File Tools" in adapter.prompt) is files_on
    assert "## Memory Tools" in adapter.prompt
    [offered] = adapter.offered
    assert ("band_read_room_file" in offered) is files_on
    assert "band_store_memory" in offered
    assert "band_list_contacts" not in offered  # capabilities are opt-in
