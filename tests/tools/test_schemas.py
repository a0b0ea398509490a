"""Tool definitions and schemas: inventory, capability gate, filters, descriptions,
agreement of the two formats, and the checked-in snapshots.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from band_trio.adapter import ToolEffect
from band_trio.tools import (
    TOOL_DEFINITIONS,
    AgentTools,
    Capability,
    ToolCategory,
    get_anthropic_tool_schemas,
    get_openai_tool_schemas,
    get_tool_definition,
    get_tool_schemas,
)
from band_trio.wire.rest import RestClient

SNAPSHOTS = Path(__file__).parent / "snapshots"
ALL = frozenset(Capability)

# The tools of (tools and adapters, "Inventory"), in registry order: name, category, room-bound,
# effect.
INVENTORY = [
    ("band_send_message", "chat", True, "reply"),
    ("band_send_event", "chat", True, "observe"),
    ("band_no_reply", "chat", False, "decline"),
    ("band_add_participant", "chat", True, "act"),
    ("band_remove_participant", "chat", True, "act"),
    ("band_lookup_peers", "chat", True, "observe"),
    ("band_get_participants", "chat", True, "observe"),
    ("band_create_chatroom", "chat", False, "act"),
    ("band_list_contacts", "contacts", False, "observe"),
    ("band_add_contact", "contacts", False, "act"),
    ("band_remove_contact", "contacts", False, "act"),
    ("band_list_contact_requests", "contacts", False, "observe"),
    ("band_respond_contact_request", "contacts", False, "act"),
    ("band_list_memories", "memory", False, "observe"),
    ("band_store_memory", "memory", False, "act"),
    ("band_get_memory", "memory", False, "observe"),
    ("band_supersede_memory", "memory", False, "act"),
    ("band_archive_memory", "memory", False, "act"),
    ("band_list_room_files", "files", True, "observe"),
    ("band_read_room_file", "files", True, "observe"),
    ("band_send_room_file", "files", True, "reply"),
    ("band_list_tasks", "tasks", True, "observe"),
    ("band_create_task", "tasks", True, "act"),
    ("band_get_task", "tasks", True, "observe"),
    ("band_update_task", "tasks", True, "act"),
    ("band_get_task_history", "tasks", True, "observe"),
    ("band_get_board", "tasks", True, "observe"),
    ("band_set_board", "tasks", True, "act"),
]
CHAT = [n for n, c, _, _ in INVENTORY if c == "chat"]
CONTACTS = [n for n, c, _, _ in INVENTORY if c == "contacts"]


def names(schemas: list[dict[str, Any]]) -> list[str]:
    return [s["name"] if "name" in s else s["function"]["name"] for s in schemas]


def test_inventory_matches_the_reference_table() -> None:
    got = [
        (d.name, d.category.value if d.category else None, d.room_bound, d.effect.value)
        for d in TOOL_DEFINITIONS
    ]
    assert got == INVENTORY


def test_capability_of_each_tool_follows_its_category() -> None:
    gate = {
        "chat": None,
        "contacts": Capability.CONTACTS,
        "memory": Capability.MEMORY,
        "files": Capability.FILES,
        "tasks": Capability.TASKS,
    }
    for d in TOOL_DEFINITIONS:
        assert d.category is not None
        assert d.capability is gate[d.category.value], d.name


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_default_is_chat_plus_contacts(fmt: Any) -> None:
    assert names(get_tool_schemas(fmt)) == CHAT + CONTACTS


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_empty_capabilities_is_chat_only(fmt: Any) -> None:
    assert names(get_tool_schemas(fmt, capabilities=frozenset())) == CHAT


def test_all_capabilities_give_all_28_in_order() -> None:
    got = names(get_anthropic_tool_schemas(capabilities=ALL))
    assert got == [n for n, *_ in INVENTORY]
    assert got[0] == "band_send_message"
    assert got[-1] == "band_set_board"


def test_a_given_set_replaces_the_default() -> None:
    got = names(get_openai_tool_schemas(capabilities={Capability.MEMORY}))
    assert got == CHAT + [n for n, c, *_ in INVENTORY if c == "memory"]
    assert names(get_openai_tool_schemas(capabilities=["tasks"]))[-1] == "band_set_board"


def test_filters_narrow_in_order_and_never_add() -> None:
    assert (
        get_tool_schemas(
            "anthropic", include_categories=["chat"], include_tools=["band_store_memory"]
        )
        == []
    )
    assert names(get_tool_schemas("anthropic", include_categories=[ToolCategory.CONTACTS])) == (
        CONTACTS
    )
    got = names(get_tool_schemas("anthropic", exclude_tools=["band_create_chatroom", "nope"]))
    assert got == [n for n in CHAT + CONTACTS if n != "band_create_chatroom"]
    # memory is gated off by default: including it by name cannot bring it back
    assert get_tool_schemas("anthropic", include_tools=["band_store_memory"]) == []


def test_invalid_format_is_refused() -> None:
    with pytest.raises(ValueError, match="Invalid format: gemini"):
        get_tool_schemas("gemini")  # type: ignore[arg-type]


def test_unknown_capability_is_refused() -> None:
    with pytest.raises(ValueError, match="telepathy"):
        get_tool_schemas("anthropic", capabilities=["telepathy"])


def _walk(schema: Any, path: str = "") -> list[tuple[str, Any]]:
    out = [(path, schema)]
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                for prop, sub in value.items():
                    out += _walk(sub, f"{path}.{prop}")
            elif isinstance(value, dict | list):
                out += _walk(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            out += _walk(item, f"{path}[{i}]")
    return out


def test_every_tool_and_argument_has_a_description() -> None:
    for item in get_anthropic_tool_schemas(capabilities=ALL):
        assert item["description"].strip(), item["name"]
        assert len(item["description"]) >= 20, item["name"]
        schema = item["input_schema"]
        for prop, sub in schema["properties"].items():
            assert isinstance(sub.get("description"), str), (item["name"], prop)
            assert len(sub["description"].strip()) >= 10, (item["name"], prop)


def test_the_two_formats_agree() -> None:
    anthropic = get_anthropic_tool_schemas(capabilities=ALL)
    openai = get_openai_tool_schemas(capabilities=ALL)
    assert len(anthropic) == len(openai) == 28
    for a, o in zip(anthropic, openai, strict=True):
        assert o["type"] == "function"
        assert set(o) == {"type", "function"}
        assert set(a) == {"name", "description", "input_schema"}
        assert o["function"]["name"] == a["name"]
        assert o["function"]["description"] == a["description"]
        assert o["function"]["parameters"] == a["input_schema"]


def test_schema_shape_rules() -> None:
    for item in get_anthropic_tool_schemas(capabilities=ALL):
        schema = item["input_schema"]
        assert schema["type"] == "object"
        assert "title" not in schema
        assert schema["description"] == item["description"]
        assert set(schema["required"]) <= set(schema["properties"])
        for path, node in _walk(schema):
            if isinstance(node, dict):
                for banned in ("minimum", "maximum", "exclusiveMinimum", "const", "title"):
                    assert banned not in node, f"{item['name']}{path} has {banned}"


def test_specific_schemas() -> None:
    by_name = {s["name"]: s["input_schema"] for s in get_anthropic_tool_schemas(capabilities=ALL)}
    assert by_name["band_send_message"]["required"] == ["content", "mentions"]
    assert by_name["band_send_room_file"]["required"] == ["content", "filename", "mentions"]
    for free in ("band_no_reply", "band_get_participants", "band_set_board"):
        assert by_name[free]["required"] == []
    assert by_name["band_send_event"]["properties"]["message_type"]["enum"] == [
        "thought",
        "error",
        "task",
    ]
    role = by_name["band_add_participant"]["properties"]["role"]
    assert role["default"] == "member"
    assert role["enum"] == ["owner", "admin", "member"]
    assert by_name["band_get_task"]["properties"]["include"]["anyOf"] == [
        {"type": "string", "enum": ["history"]},
        {"type": "null"},
    ]
    page_size = by_name["band_lookup_peers"]["properties"]["page_size"]
    assert page_size["type"] == "integer"
    assert page_size["default"] == 50
    assert "at most 100" in page_size["description"]


async def test_hub_room_always_offers_contacts(rest: RestClient) -> None:
    hub = AgentTools(rest=rest, room_id="hub", agent_id="a", participants=(), hub_room_id="hub")
    assert names(hub.get_tool_schemas("anthropic", capabilities=frozenset())) == CHAT + CONTACTS
    room = AgentTools(rest=rest, room_id="r", agent_id="a", participants=(), hub_room_id="hub")
    assert names(room.get_tool_schemas("anthropic", capabilities=frozenset())) == CHAT


async def test_constructor_capabilities_are_the_default_for_schemas(rest: RestClient) -> None:
    tools = AgentTools(
        rest=rest,
        room_id="r",
        agent_id="a",
        participants=(),
        capabilities=frozenset({Capability.TASKS}),
    )
    got = names(tools.get_openai_tool_schemas())
    assert got == CHAT + [n for n, c, *_ in INVENTORY if c == "tasks"]


def test_get_tool_definition() -> None:
    d = get_tool_definition("band_no_reply")
    assert d is not None
    assert d.effect is ToolEffect.DECLINE
    assert get_tool_definition("band_list_my_agents") is None


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_schemas_match_the_checked_in_snapshot(fmt: Any) -> None:
    current = get_tool_schemas(fmt, capabilities=ALL)
    path = SNAPSHOTS / f"{fmt}.json"
    text = json.dumps(current, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("BAND_TRIO_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, (
        f"{path.name} is stale; rerun with BAND_TRIO_UPDATE_SNAPSHOTS=1 and review the diff"
    )
