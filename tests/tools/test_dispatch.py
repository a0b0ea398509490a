"""execute_tool_call: validation, structured errors, effects, and the promise that
nothing but trio.Cancelled ever escapes (Hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.adapter import ToolEffect
from band_trio.tools import TOOL_DEFINITIONS, AgentTools, Capability, ToolErrorKind, ToolResult
from band_trio.wire.rest import RestClient
from tests.scripted_platform import (
    AGENT_ID,
    API_KEY,
    ROOM,
    ROSTER,
    RecordingHooks,
    ScriptedPlatform,
    error,
    ok,
)

TASK = {
    "id": "t-1",
    "number": 12,
    "chat_room_id": ROOM,
    "subject": "Write",
    "detail": "",
    "state": "active",
    "overall_status": "pending",
    "assignments": [],
    "created_by": {"id": AGENT_ID, "name": "Me", "type": "Agent"},
    "inserted_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}
NO_TASKS = ok([], metadata={"has_more": False, "limit": 100})


async def call(tools: AgentTools, name: str, args: Any) -> ToolResult:
    with trio.fail_after(5):
        return await tools.execute_tool_call(name, args)


async def test_unknown_tool(tools: AgentTools, platform: ScriptedPlatform) -> None:
    result = await call(tools, "band_unknown", {})
    assert result.is_error
    assert result.error_kind is ToolErrorKind.UNKNOWN_TOOL
    assert result.text == "Unknown tool: band_unknown"
    # a human-surface tool of the official SDK is simply unknown here
    assert (await call(tools, "band_list_my_agents", {})).error_kind is ToolErrorKind.UNKNOWN_TOOL
    assert platform.calls == []


async def test_missing_required_argument(tools: AgentTools, platform: ScriptedPlatform) -> None:
    result = await call(tools, "band_send_message", {"content": "hi"})
    assert result.is_error
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert result.text == (
        "Invalid arguments for band_send_message: mentions: required argument is missing"
    )
    assert platform.calls == []


async def test_all_problems_are_listed(tools: AgentTools) -> None:
    result = await call(tools, "band_send_message", {"content": 5, "mentions": "alice"})
    assert result.text == (
        "Invalid arguments for band_send_message: content: must be a string, got an integer; "
        "mentions: must be an array, got a string"
    )


async def test_blank_content_is_an_argument_error(tools: AgentTools) -> None:
    result = await call(tools, "band_send_message", {"content": " \u200b ", "mentions": ["alice"]})
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "content: can't be blank" in result.text


async def test_empty_mentions_is_a_tool_error_with_handles(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    result = await call(tools, "band_send_message", {"content": "hi", "mentions": []})
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert result.text.startswith("Error executing band_send_message: At least one mention")
    assert "@alice" in result.text
    assert hooks.effects == []
    assert platform.calls == []


async def test_unknown_mention_makes_no_post(tools: AgentTools, platform: ScriptedPlatform) -> None:
    platform.on("GET", rf"/chats/{ROOM}/participants", ok([]))
    result = await call(tools, "band_send_message", {"content": "hi", "mentions": ["carol"]})
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert "Unknown participant 'carol'" in result.text
    assert platform.requests_to("POST", rf"/chats/{ROOM}/messages") == []


async def test_successful_send_message_result(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on(
        "POST",
        rf"/chats/{ROOM}/messages",
        ok({"id": "m-1", "success": True, "recipients": [{"id": "user-alice", "handle": "alice"}]}),
    )
    result = await call(tools, "band_send_message", {"content": "hi", "mentions": ["@alice"]})
    assert not result.is_error
    assert result.value == {
        "id": "m-1",
        "success": True,
        "recipients": [{"id": "user-alice", "handle": "alice", "name": None}],
    }
    assert json.loads(result.text)["id"] == "m-1"
    assert hooks.effects == [ToolEffect.REPLY]
    assert hooks.replies == ["m-1"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"page": 0}, "page: must be at least 1, got 0"),
        ({"page_size": 101}, "page_size: must be at most 100, got 101"),
        ({"page": True}, "page: must be an integer, got a boolean"),
    ],
)
async def test_bounds_are_enforced(tools: AgentTools, args: Any, fragment: str) -> None:
    result = await call(tools, "band_lookup_peers", args)
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert fragment in result.text


async def test_lax_integers_and_ignored_extra_keys(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("GET", "/peers", ok([], metadata={"page": 2, "total_pages": 2}))
    result = await call(tools, "band_lookup_peers", {"page": "2", "page_size": 10.0, "junk": 1})
    assert not result.is_error
    [req] = platform.requests_to("GET", "/peers")
    assert req.params == {"page": "2", "page_size": "10", "not_in_chat": ROOM}


async def test_alias_name_for_identifier(tools: AgentTools, platform: ScriptedPlatform) -> None:
    platform.on(
        "GET",
        rf"/chats/{ROOM}/participants",
        ok(
            [
                {
                    "id": "user-alice",
                    "role": "member",
                    "status": "active",
                    "type": "User",
                    "name": "Alice",
                    "handle": "alice",
                }
            ]
        ),
    )
    result = await call(tools, "band_add_participant", {"name": "ALICE"})
    assert result.value == {
        "id": "user-alice",
        "name": "Alice",
        "role": "member",
        "status": "already_in_room",
    }
    assert platform.requests_to("POST", rf"/chats/{ROOM}/participants") == []


async def test_enum_error_lists_allowed_values(tools: AgentTools) -> None:
    result = await call(tools, "band_send_event", {"content": "x", "message_type": "usage"})
    assert "message_type: must be one of 'thought', 'error', 'task'; got 'usage'" in result.text


async def test_memory_type_must_belong_to_system(tools: AgentTools) -> None:
    args = {
        "content": "c",
        "system": "sensory",
        "type": "semantic",
        "segment": "user",
        "thought": "t",
        "scope": "agent",
    }
    result = await call(tools, "band_store_memory", args)
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "expected one of: iconic, echoic, haptic" in result.text


async def test_subject_scope_needs_subject_id(tools: AgentTools) -> None:
    args = {
        "content": "c",
        "system": "long_term",
        "type": "semantic",
        "segment": "user",
        "thought": "t",
        "scope": "subject",
    }
    result = await call(tools, "band_store_memory", args)
    assert "retry with scope 'agent'" in result.text


async def test_update_task_needs_a_field(tools: AgentTools) -> None:
    result = await call(tools, "band_update_task", {"id": "#3"})
    assert result.text == (
        "Invalid arguments for band_update_task: At least one of status, active_form, comment, "
        "subject, detail, or state must be set"
    )


async def test_task_refs_strip_the_hash(tools: AgentTools, platform: ScriptedPlatform) -> None:
    platform.on("GET", rf"/chats/{ROOM}/tasks/12", ok(TASK))
    result = await call(tools, "band_get_task", {"id": "#12"})
    assert not result.is_error
    assert result.value["number"] == 12
    bad = await call(tools, "band_get_task", {"id": "../x"})
    assert bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "id: must contain only ASCII letters" in bad.text


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("band_read_room_file", {"file_id": "a/b"}),
        ("band_get_memory", {"memory_id": "x y"}),
        ("band_archive_memory", {"memory_id": ""}),
    ],
)
async def test_resource_ids_are_checked(
    tools: AgentTools, platform: ScriptedPlatform, name: str, args: Any
) -> None:
    result = await call(tools, name, args)
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert platform.calls == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("band_remove_contact", "Either handle or contact_id must be provided"),
        ("band_respond_contact_request", "Either handle or request_id must be provided"),
        ("band_set_board", "At least one of goal_title or goal_summary must be set"),
    ],
)
async def test_either_or_arguments(tools: AgentTools, name: str, message: str) -> None:
    args = {"action": "approve"} if name == "band_respond_contact_request" else {}
    result = await call(tools, name, args)
    assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert message in result.text


@pytest.mark.parametrize("args", [None, [], "text", 5])
async def test_arguments_that_are_not_an_object(tools: AgentTools, args: Any) -> None:
    result = await call(tools, "band_get_board", args)
    if args is None:
        # no arguments at all is fine for a tool without required ones
        assert result.error_kind is not ToolErrorKind.INVALID_ARGUMENTS
    else:
        assert result.error_kind is ToolErrorKind.INVALID_ARGUMENTS
        assert "arguments must be an object" in result.text


async def test_platform_errors_carry_no_headers_or_key(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("GET", r"/memories/m-1", error(404, "not_found", "memory not found"))
    result = await call(tools, "band_get_memory", {"memory_id": "m-1"})
    assert result.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 404 not_found" in result.text
    assert "memory not found" in result.text
    for secret in ("do-not-leak", "x-secret-header", API_KEY, "headers"):
        assert secret not in result.text


async def test_org_scope_rejection_becomes_guidance(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    # The platform refuses both the read before the write and the write.
    for method in ("GET", "POST"):
        platform.on(
            method,
            "/memories",
            error(422, "org_scope_requires_organization", "no organization"),
        )
    args = {
        "content": "c",
        "system": "long_term",
        "type": "semantic",
        "segment": "user",
        "thought": "t",
        "scope": "organization",
    }
    result = await call(tools, "band_store_memory", args)
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert 'Retry with scope="agent" instead.' in result.text


async def test_no_reply_is_local_and_declines(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    result = await call(tools, "band_no_reply", {"reason": "not for me"})
    assert result.value == {"status": "no_reply"}
    assert platform.calls == []
    assert hooks.effects == [ToolEffect.DECLINE]


async def test_failed_calls_record_no_effect(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("GET", rf"/chats/{ROOM}/tasks", NO_TASKS)
    platform.on("POST", rf"/chats/{ROOM}/tasks", error(422, "validation_error", "bad"))
    result = await call(tools, "band_create_task", {"subject": "x"})
    assert result.is_error
    assert "HTTP 422" in result.text
    assert hooks.effects == []


async def test_effects_follow_the_table(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("GET", rf"/chats/{ROOM}/participants", ok([]))
    platform.on("GET", rf"/chats/{ROOM}/tasks", NO_TASKS)
    platform.on("POST", rf"/chats/{ROOM}/tasks", ok(TASK))
    assert not (await call(tools, "band_get_participants", {})).is_error
    assert hooks.effects == [ToolEffect.OBSERVE]
    assert not (await call(tools, "band_create_task", {"subject": "Write"})).is_error
    assert hooks.effects == [ToolEffect.OBSERVE, ToolEffect.ACT]


async def test_without_any_offer_every_tool_runs(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    # No capabilities at construction and no schemas requested: nothing to hold
    # the call against, so it runs.
    assert tools.offered_tools is None
    platform.on("GET", "/memories", ok([], metadata={"has_more": False, "limit": 50}))
    result = await call(tools, "band_list_memories", {})
    assert not result.is_error
    assert result.value == {
        "data": [],
        "metadata": {"has_more": False, "limit": 50, "next_cursor": None},
    }


async def test_tools_never_offered_are_refused(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    tools.get_tool_schemas("anthropic", exclude_tools=["band_create_chatroom"])
    memory = await call(tools, "band_list_memories", {})
    excluded = await call(tools, "band_create_chatroom", {})
    for result in (memory, excluded):
        assert result.error_kind is ToolErrorKind.NOT_OFFERED
        assert "not available" in result.text
    assert platform.calls == []
    # offering more later widens what may run
    tools.get_tool_schemas("openai", capabilities=[Capability.MEMORY])
    assert "band_list_memories" in (tools.offered_tools or ())
    assert "band_create_chatroom" in (tools.offered_tools or ())


async def test_constructor_capabilities_gate_dispatch(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    tools = AgentTools(
        rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER, capabilities=frozenset()
    )
    assert (await call(tools, "band_list_contacts", {})).error_kind is ToolErrorKind.NOT_OFFERED
    assert (await call(tools, "band_no_reply", {})).value == {"status": "no_reply"}
    hub = AgentTools(
        rest=rest,
        room_id="hub",
        agent_id=AGENT_ID,
        participants=(),
        hub_room_id="hub",
        capabilities=frozenset(),
    )
    assert "band_respond_contact_request" in (hub.offered_tools or ())


async def test_internal_errors_are_contained(tools: AgentTools, platform: ScriptedPlatform) -> None:
    def boom(_req: httpx.Request) -> httpx.Response:
        raise RuntimeError("kaboom with sk-secret")

    platform.on("GET", rf"/chats/{ROOM}/board", boom)
    result = await call(tools, "band_get_board", {})
    assert result.is_error
    assert "sk-secret" not in result.text


# ------------------------------------------------------------------ Hypothesis

TOOL_NAMES = [d.name for d in TOOL_DEFINITIONS]
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
arg_names = st.sampled_from(
    sorted({p.name for d in TOOL_DEFINITIONS for p in d.params} | {"name", "junk"})
)
arguments = st.dictionaries(arg_names, json_values, max_size=6) | json_values
names = st.sampled_from(TOOL_NAMES) | st.text(max_size=30)
responses = st.sampled_from(
    [
        ok({}),
        ok([]),
        ok(None),
        ok({"id": "x", "success": True, "recipients": []}),
        httpx.Response(200, text="not json"),
        httpx.Response(204),
        error(400, "bad_request", "no"),
        error(403, "forbidden", "execution is stopped"),
        error(404, "not_found", "gone"),
        error(409, "conflict", "exists"),
        error(422, "validation_error", "mentioned_participant_not_in_room"),
        error(500, "internal", "boom"),
    ]
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=names, args=arguments, answer=responses)
async def test_nothing_escapes_execute_tool_call(
    autojump_clock: trio.abc.Clock, name: str, args: Any, answer: httpx.Response
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        # every answer, success or error, carries a header that must never surface
        headers = {**answer.headers, "x-secret-header": "do-not-leak"}
        return httpx.Response(answer.status_code, content=answer.content, headers=headers)

    hooks = RecordingHooks()
    async with RestClient(
        base_url="https://band.test", api_key=API_KEY, transport=httpx.MockTransport(handler)
    ) as rest:
        tools = AgentTools(
            rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER, hooks=hooks
        )
        with trio.fail_after(600):
            result = await tools.execute_tool_call(name, args)
    assert isinstance(result, ToolResult)
    if result.is_error:
        assert isinstance(result.value, str)
        assert result.error_kind is not None
        for secret in (API_KEY, "do-not-leak", "x-secret-header", "headers:"):
            assert secret not in result.value
        assert hooks.effects == []
    else:
        json.dumps(result.value)  # always JSON-compatible
        assert len(hooks.effects) == 1


@pytest.mark.parametrize("name", [None, 5, b"band_no_reply", ""])
async def test_names_that_are_not_tool_names(tools: AgentTools, name: Any) -> None:
    result = await call(tools, name, {})
    assert result.error_kind is ToolErrorKind.UNKNOWN_TOOL
    assert result.text == f"Unknown tool: {name}"


async def test_missing_arguments_object_for_a_tool_with_required_ones(tools: AgentTools) -> None:
    result = await call(tools, "band_get_memory", None)
    assert (
        result.text
        == "Invalid arguments for band_get_memory: memory_id: required argument is missing"
    )
