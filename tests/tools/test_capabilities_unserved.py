"""AgentTools with unserved capabilities (official runtime, "Testable behaviours" 8; "start() —
exact order", step 6): the FILES tools are never offered, whatever the caller asks for, and
calling one answers NOT_OFFERED without a request to the platform.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from band_trio.tools import AgentTools, ToolErrorKind, ToolResult
from band_trio.tools.definitions import TOOL_DEFINITIONS, Capability, ToolCategory
from band_trio.wire.rest import RestClient
from tests.scripted_platform import AGENT_ID, ROOM, ROSTER, RecordingHooks, ScriptedPlatform, ok

FILES_TOOLS = frozenset(d.name for d in TOOL_DEFINITIONS if d.capability is Capability.FILES)
ALL_CAPABILITIES = [c.value for c in Capability]

# Valid arguments for every FILES tool: without the gate each one would reach
# the platform.
FILES_CALLS: dict[str, dict[str, Any]] = {
    "band_list_room_files": {},
    "band_read_room_file": {"file_id": "f1"},
    "band_send_room_file": {"content": "hi", "filename": "a.txt", "mentions": ["alice"]},
}


def make_tools(
    rest: RestClient,
    *,
    unserved: frozenset[Capability] = frozenset(),
    capabilities: frozenset[Capability] | None = None,
    hub_room_id: str | None = None,
) -> AgentTools:
    return AgentTools(
        rest=rest,
        room_id=ROOM,
        agent_id=AGENT_ID,
        participants=ROSTER,
        hooks=RecordingHooks(),
        capabilities=capabilities,
        hub_room_id=hub_room_id,
        unserved=unserved,
    )


def names(schemas: list[dict[str, Any]], fmt: str) -> set[str]:
    if fmt == "anthropic":
        return {s["name"] for s in schemas}
    return {s["function"]["name"] for s in schemas}


async def call(tools: AgentTools, name: str, args: dict[str, Any]) -> ToolResult:
    with trio.fail_after(5):
        return await tools.execute_tool_call(name, args)


def test_the_files_tools_are_the_ones_this_file_calls() -> None:
    assert set(FILES_CALLS) == FILES_TOOLS


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_schemas_never_offer_unserved_files_tools(
    rest: RestClient, platform: ScriptedPlatform, fmt: Any
) -> None:
    pruned = make_tools(rest, unserved=frozenset({Capability.FILES}))
    full = make_tools(rest)

    every = names(pruned.get_tool_schemas(fmt, capabilities=ALL_CAPABILITIES), fmt)
    assert not every & FILES_TOOLS
    # Only FILES goes: the other capabilities asked for are all there.
    served = {d.name for d in TOOL_DEFINITIONS if d.capability is not Capability.FILES}
    assert every == served
    # The same request without the gate offers them (the test can fail).
    assert names(full.get_tool_schemas(fmt, capabilities=ALL_CAPABILITIES), fmt) >= FILES_TOOLS

    # Capability objects, categories and tool names cannot bring them back.
    by_object = pruned.get_tool_schemas(fmt, capabilities=[Capability.FILES])
    assert not names(by_object, fmt) & FILES_TOOLS
    by_category = pruned.get_tool_schemas(
        fmt, capabilities=ALL_CAPABILITIES, include_categories=[ToolCategory.FILES, "files"]
    )
    assert by_category == []
    by_name = pruned.get_tool_schemas(
        fmt, capabilities=["files"], include_tools=sorted(FILES_TOOLS)
    )
    assert by_name == []
    assert full.get_tool_schemas(fmt, capabilities=["files"], include_tools=sorted(FILES_TOOLS))

    assert pruned.offered_tools is not None
    assert not pruned.offered_tools & FILES_TOOLS
    assert platform.calls == []


async def test_construction_capabilities_cannot_bring_files_back(rest: RestClient) -> None:
    tools = make_tools(
        rest,
        unserved=frozenset({Capability.FILES}),
        capabilities=frozenset({Capability.FILES, Capability.MEMORY}),
    )
    assert tools.offered_tools is not None
    assert not tools.offered_tools & FILES_TOOLS
    assert "band_list_memories" in tools.offered_tools
    assert not names(tools.get_tool_schemas("anthropic"), "anthropic") & FILES_TOOLS


async def test_hub_room_still_prunes_files(rest: RestClient) -> None:
    tools = make_tools(rest, unserved=frozenset({Capability.FILES}), hub_room_id=ROOM)
    offered = names(tools.get_tool_schemas("openai", capabilities=["files"]), "openai")
    assert "band_list_contacts" in offered
    assert not offered & FILES_TOOLS


@pytest.mark.parametrize("tool_name", sorted(FILES_CALLS))
@pytest.mark.parametrize("asked_for_schemas", [False, True])
async def test_unserved_files_tool_call_is_not_offered_and_sends_nothing(
    rest: RestClient, platform: ScriptedPlatform, tool_name: str, asked_for_schemas: bool
) -> None:
    tools = make_tools(rest, unserved=frozenset({Capability.FILES}))
    if asked_for_schemas:
        tools.get_tool_schemas("anthropic", capabilities=ALL_CAPABILITIES)
    else:
        # Nothing requested yet: other platform tools are unrestricted, but the
        # unserved ones are still refused.
        assert tools.offered_tools is None
    result = await call(tools, tool_name, FILES_CALLS[tool_name])
    assert result.is_error
    assert result.error_kind is ToolErrorKind.NOT_OFFERED
    assert platform.calls == []

    # Same typed result (kind and wording) as any other tool never offered.
    other = make_tools(rest, capabilities=frozenset())
    refused = await call(other, "band_list_memories", {})
    assert refused.error_kind is ToolErrorKind.NOT_OFFERED
    assert result.value == refused.value.replace("band_list_memories", tool_name)
    assert platform.calls == []


async def test_served_files_tool_reaches_the_platform(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    """The control: without ``unserved`` the same call is a platform request."""
    platform.on(
        "GET",
        rf"/chats/{ROOM}/context",
        ok([], metadata={"has_more": False, "limit": 50, "next_cursor": None}),
    )
    tools = make_tools(rest)
    tools.get_tool_schemas("anthropic", capabilities=ALL_CAPABILITIES)
    result = await call(tools, "band_list_room_files", {})
    assert not result.is_error, result
    assert platform.requests_to("GET", rf"/chats/{ROOM}/context")


async def test_unserved_does_not_touch_other_tools(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("GET", r"/memories", ok([], metadata={"has_more": False, "limit": 50}))
    tools = make_tools(rest, unserved=frozenset({Capability.FILES}))
    result = await call(tools, "band_list_memories", {})
    assert result.error_kind is not ToolErrorKind.NOT_OFFERED
    assert platform.requests_to("GET", r"/memories")
