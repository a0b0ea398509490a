"""The shared plumbing of LLM adapters: prompt settings, turn lines, tool
schemas, tool calls with their events and the output a model is shown."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from band_trio import BandConfigError, CustomTools, Emit, ToolErrorKind, ToolResult
from band_trio.adapter import (
    HISTORY_START,
    AdapterFeatures,
    Capability,
    ImageBlock,
    PlatformMessage,
    PromptSettings,
    SimpleAdapter,
    ToolCategory,
    ToolOutput,
    ToolSchema,
    offered_neutral_tools,
    offered_tool_schemas,
    post_thought,
    render_system_prompt,
    render_turn_lines,
    run_tool_call,
    system_line,
)
from band_trio.testing import FakeAgentTools
from band_trio.wire.models import ChatParticipant

ALICE = ChatParticipant(
    id="u-alice", role="member", status="active", name="Alice", handle="alice", type="User"
)


def _msg(content: str = "hi") -> PlatformMessage:
    return PlatformMessage(
        id="m1",
        room_id="r1",
        content=content,
        sender_id="u-alice",
        sender_type="User",
        sender_name="Alice",
    )


# ------------------------------------------------------------------ prompt


def test_prompt_settings_render_the_band_prompt_with_capabilities() -> None:
    settings = PromptSettings(custom_section="Be brief.")
    text = settings.render("Bot", "a helper", capabilities=[Capability.MEMORY])
    assert text == render_system_prompt(
        "Bot", "a helper", custom_section="Be brief.", capabilities=[Capability.MEMORY]
    )
    assert "## Memory Tools" in text
    assert text.endswith("## Developer Instructions\nBe brief.")


def test_prompt_settings_complete_prompt_wins() -> None:
    settings = PromptSettings(system_prompt="Only this.", custom_section="ignored")
    assert settings.render("Bot", "a helper", capabilities=["memory"]) == "Only this."


@pytest.mark.parametrize(
    ("field", "value"),
    [("system_prompt", 3), ("custom_section", None), ("include_base_instructions", "yes")],
)
def test_prompt_settings_reject_wrong_types(field: str, value: object) -> None:
    with pytest.raises(BandConfigError, match=field):
        PromptSettings(**{field: value})  # type: ignore[arg-type]


def test_turn_lines_put_system_updates_before_the_message() -> None:
    lines = render_turn_lines(_msg(), "## Current Participants\n- @alice", "contact added")
    assert [line.kind for line in lines] == ["participants", "contacts", "message"]
    assert lines[0].text == "[System]: ## Current Participants\n- @alice"
    assert lines[1].text == system_line("contact added") == "[System]: contact added"
    assert lines[2].text == _msg().format_for_llm()
    assert [line.kind for line in render_turn_lines(_msg(), None, "")] == ["message"]
    assert HISTORY_START.startswith("[System]: ")


class _Llm(SimpleAdapter[Any]):
    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.THOUGHTS})
    SUPPORTED_CAPABILITIES = frozenset({Capability.MEMORY, Capability.FILES})


async def test_simple_adapter_renders_its_prompt_with_identity_and_final_features() -> None:
    adapter = _Llm(capabilities=["memory", "files"], prompt=PromptSettings(custom_section="X"))
    adapter.apply_effective_features(adapter.features.without_capabilities([Capability.FILES]))
    await adapter.on_started("Bot", "a helper")
    assert adapter.system_prompt.startswith("You are Bot, a helper.")
    assert "## Memory Tools" in adapter.system_prompt
    assert "## Room File Tools" not in adapter.system_prompt


def test_simple_adapter_rejects_a_bad_prompt_or_tool_set() -> None:
    with pytest.raises(BandConfigError, match="prompt must be a PromptSettings"):
        _Llm(prompt="text")  # type: ignore[arg-type]
    with pytest.raises(BandConfigError, match="custom_tools must be a CustomTools"):
        _Llm(custom_tools=[])  # type: ignore[arg-type]


# ------------------------------------------------------------------ schemas


def test_offered_schemas_apply_capabilities_and_filters() -> None:
    tools = FakeAgentTools(participants=[ALICE])
    features = AdapterFeatures(
        capabilities=frozenset({Capability.MEMORY}),
        include_categories=(ToolCategory.MEMORY, ToolCategory.CHAT),
        exclude_tools=("band_archive_memory",),
    )
    names = [s["name"] for s in offered_tool_schemas(tools, features, "anthropic")]
    assert "band_store_memory" in names
    assert "band_send_message" in names
    assert "band_archive_memory" not in names
    assert not any(n.startswith("band_list_contacts") for n in names)
    openai = offered_tool_schemas(tools, features, "openai")
    assert [s["function"]["name"] for s in openai] == names


def test_neutral_tools_carry_name_description_and_schema_in_both_formats() -> None:
    custom = CustomTools()

    @custom.tool
    async def roll(sides: int) -> int:
        """Roll a die.

        Args:
            sides: how many sides the die has.
        """
        return sides

    tools = FakeAgentTools(participants=[ALICE])
    neutral = offered_neutral_tools(tools, AdapterFeatures(), custom_tools=custom)
    assert neutral[-1].name == "roll"
    assert neutral[-1].description.startswith("Roll a die.")
    assert neutral[-1].input_schema["properties"]["sides"]["type"] == "integer"
    anthropic = offered_tool_schemas(tools, AdapterFeatures(), "anthropic", custom_tools=custom)
    openai = offered_tool_schemas(tools, AdapterFeatures(), "openai", custom_tools=custom)
    assert [t.to_anthropic() for t in neutral] == anthropic
    assert [t.to_openai() for t in neutral] == openai
    assert [ToolSchema.from_openai(s) for s in openai] == neutral


def test_simple_adapter_schemas_record_what_was_offered() -> None:
    adapter = _Llm(include_tools=["band_send_message", "band_no_reply"])
    tools = FakeAgentTools(participants=[ALICE])
    names = [s["name"] for s in adapter.tool_schemas(tools, "anthropic")]
    assert names == ["band_send_message", "band_no_reply"]
    assert [t.name for t in adapter.neutral_tools(tools)] == names
    assert tools.offered_tools == frozenset(names)


# ------------------------------------------------------------------ tool calls


def _events(tools: FakeAgentTools) -> list[tuple[str, dict[str, Any]]]:
    return [(e.message_type, json.loads(e.content)) for e in tools.events_sent]


async def test_run_tool_call_posts_both_events_with_the_call_id() -> None:
    tools = FakeAgentTools(participants=[ALICE])
    output = await run_tool_call(
        tools, "band_send_message", {"content": "hi", "mentions": ["@alice"]}, "call-1"
    )
    assert not output.is_error
    assert tools.chat == ["hi"]
    (k1, call), (k2, result) = _events(tools)
    assert (k1, call["name"], call["tool_call_id"]) == ("tool_call", "band_send_message", "call-1")
    assert (k2, result["tool_call_id"], result["is_error"]) == ("tool_result", "call-1", False)
    assert result["output"] == output.text


async def test_run_tool_call_failure_is_an_error_output_with_is_error() -> None:
    tools = FakeAgentTools(participants=[ALICE])
    output = await run_tool_call(tools, "band_send_message", {"content": "hi"}, "call-2")
    assert output.is_error
    assert output.result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert output.to_anthropic("call-2") == {
        "type": "tool_result",
        "tool_use_id": "call-2",
        "content": output.text,
        "is_error": True,
    }
    assert _events(tools)[1][1]["is_error"] is True


class _Raising(FakeAgentTools):
    async def execute_tool_call(
        self, name: str, args: Mapping[str, Any] | None, *, custom_tools: Any = None
    ) -> ToolResult:
        raise RuntimeError("broken")


async def test_a_tools_object_that_raises_gives_the_shared_error_text() -> None:
    tools = _Raising(participants=[ALICE])
    output = await run_tool_call(tools, "band_no_reply", {}, "c", post_events=False)
    assert output.is_error
    assert output.result.error_kind is ToolErrorKind.INTERNAL_ERROR
    assert output.text == "Error executing band_no_reply: RuntimeError: broken"
    assert tools.events_sent == []


def _image_result(items: Sequence[object]) -> ToolResult:
    return ToolResult.ok("band_read_room_file", {"content": list(items)})


def test_image_results_become_image_blocks() -> None:
    result = _image_result([{"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    output = ToolOutput.of(result)
    assert output.images == (ImageBlock(mime_type="image/png", data="AAAA"),)
    assert output.event_output == "<1 image content block(s)>"
    block = output.to_anthropic("c1")
    assert block["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    ]
    assert output.images[0].to_openai() == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
    }


@pytest.mark.parametrize(
    "result",
    [
        _image_result([{"type": "text", "text": "x"}]),
        _image_result([]),
        _image_result([{"type": "image", "data": "AAAA"}]),
        ToolResult.ok(
            "band_list_room_files",
            {"content": [{"type": "image", "data": "A", "mimeType": "image/png"}]},
        ),
        ToolResult.error("band_read_room_file", ToolErrorKind.TOOL_ERROR, "no such file"),
    ],
)
def test_other_results_stay_text(result: ToolResult) -> None:
    output = ToolOutput.of(result)
    assert output.images == ()
    assert output.event_output == output.text == result.text


async def test_simple_adapter_tool_events_follow_emit() -> None:
    quiet, loud = _Llm(emit=()), _Llm(emit=[Emit.TOOL_CALLS, Emit.THOUGHTS])
    for adapter, expected in ((quiet, 0), (loud, 2)):
        tools = FakeAgentTools(participants=[ALICE])
        await adapter.run_tool_call(tools, "band_no_reply", {}, "c1")
        assert len(tools.events_sent) == expected
    tools = FakeAgentTools(participants=[ALICE])
    assert await quiet.post_thought(tools, "hmm") is None
    assert await loud.post_thought(tools, "hmm") is not None
    assert await post_thought(tools, "  ") is None
    assert [(e.message_type, e.content) for e in tools.events_sent] == [("thought", "hmm")]
