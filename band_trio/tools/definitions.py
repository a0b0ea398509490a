"""The registry of the 28 agent tools and the schemas rendered from it.

Order, names, categories, capability gates, effects and room binding are those
of the official SDK's tools, so a model sees the same tool list. Schemas are rendered from the typed inputs of
:mod:`band_trio.tools.inputs`, so both provider formats carry the same text.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import attrs

from band_trio.adapter.capabilities import Capability, ToolCategory, ToolEffect
from band_trio.adapter.tool_protocol import CustomToolSet, SchemaFormat, ToolSpec
from band_trio.tools import inputs as i
from band_trio.tools._schema import Param, json_schema_for_params, params_from_attrs, unwrap_text

__all__ = [
    "DEFAULT_CAPABILITIES",
    "TOOL_DEFINITIONS",
    "Capability",
    "SchemaFormat",
    "ToolCategory",
    "ToolDefinition",
    "get_anthropic_tool_schemas",
    "get_openai_tool_schemas",
    "get_tool_definition",
    "get_tool_schemas",
    "offered_schemas",
    "render_schema",
    "select_tool_definitions",
]

DEFAULT_CAPABILITIES: frozenset[Capability] = frozenset({Capability.CONTACTS})
"""What ``capabilities=None`` means: the chat tools plus the contact tools."""


@attrs.frozen
class ToolDefinition:
    """Everything about one tool, whether a platform tool or a custom one.

    Attributes:
        name: the name the model sees.
        description: the tool's description (cleaned docstring).
        params: the arguments, in declaration order.
        category: the family of the tool.
        capability: the capability that gates it, None when always offered.
        effect: what a successful call does to the turn.
        room_bound: the tool acts on the room the tools object is bound to.
        read_only: the tool only reads.
        input_model: the attrs input class (platform tools), or None.
    """

    name: str
    description: str
    params: tuple[Param, ...]
    category: ToolCategory | None
    capability: Capability | None
    effect: ToolEffect
    room_bound: bool = False
    read_only: bool = False
    input_model: type | None = None

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (an ``object`` schema)."""
        return json_schema_for_params(self.params, self.description)


def _define(
    name: str,
    model: type,
    category: ToolCategory,
    effect: ToolEffect,
    *,
    room_bound: bool,
    read_only: bool = False,
) -> ToolDefinition:
    capability = {
        ToolCategory.CHAT: None,
        ToolCategory.CONTACTS: Capability.CONTACTS,
        ToolCategory.MEMORY: Capability.MEMORY,
        ToolCategory.FILES: Capability.FILES,
        ToolCategory.TASKS: Capability.TASKS,
    }[category]
    return ToolDefinition(
        name=name,
        description=unwrap_text(inspect.cleandoc(model.__doc__ or "")),
        params=params_from_attrs(model),
        category=category,
        capability=capability,
        effect=effect,
        room_bound=room_bound,
        read_only=read_only,
        input_model=model,
    )


_C, _K, _M, _F, _T = (
    ToolCategory.CHAT,
    ToolCategory.CONTACTS,
    ToolCategory.MEMORY,
    ToolCategory.FILES,
    ToolCategory.TASKS,
)
_OBS, _ACT, _REP, _DEC = ToolEffect.OBSERVE, ToolEffect.ACT, ToolEffect.REPLY, ToolEffect.DECLINE

TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = (
    _define("band_send_message", i.SendMessageInput, _C, _REP, room_bound=True),
    _define("band_send_event", i.SendEventInput, _C, _OBS, room_bound=True),
    _define("band_no_reply", i.NoReplyInput, _C, _DEC, room_bound=False),
    _define("band_add_participant", i.AddParticipantInput, _C, _ACT, room_bound=True),
    _define("band_remove_participant", i.RemoveParticipantInput, _C, _ACT, room_bound=True),
    _define("band_lookup_peers", i.LookupPeersInput, _C, _OBS, room_bound=True, read_only=True),
    _define(
        "band_get_participants",
        i.GetParticipantsInput,
        _C,
        _OBS,
        room_bound=True,
        read_only=True,
    ),
    _define("band_create_chatroom", i.CreateChatroomInput, _C, _ACT, room_bound=False),
    _define("band_list_contacts", i.ListContactsInput, _K, _OBS, room_bound=False, read_only=True),
    _define("band_add_contact", i.AddContactInput, _K, _ACT, room_bound=False),
    _define("band_remove_contact", i.RemoveContactInput, _K, _ACT, room_bound=False),
    _define(
        "band_list_contact_requests",
        i.ListContactRequestsInput,
        _K,
        _OBS,
        room_bound=False,
        read_only=True,
    ),
    _define(
        "band_respond_contact_request",
        i.RespondContactRequestInput,
        _K,
        _ACT,
        room_bound=False,
    ),
    _define("band_list_memories", i.ListMemoriesInput, _M, _OBS, room_bound=False, read_only=True),
    _define("band_store_memory", i.StoreMemoryInput, _M, _ACT, room_bound=False),
    _define("band_get_memory", i.GetMemoryInput, _M, _OBS, room_bound=False, read_only=True),
    _define("band_supersede_memory", i.SupersedeMemoryInput, _M, _ACT, room_bound=False),
    _define("band_archive_memory", i.ArchiveMemoryInput, _M, _ACT, room_bound=False),
    _define(
        "band_list_room_files", i.ListRoomFilesInput, _F, _OBS, room_bound=True, read_only=True
    ),
    _define("band_read_room_file", i.ReadRoomFileInput, _F, _OBS, room_bound=True, read_only=True),
    _define("band_send_room_file", i.SendRoomFileInput, _F, _REP, room_bound=True),
    _define("band_list_tasks", i.ListTasksInput, _T, _OBS, room_bound=True, read_only=True),
    _define("band_create_task", i.CreateTaskInput, _T, _ACT, room_bound=True),
    _define("band_get_task", i.GetTaskInput, _T, _OBS, room_bound=True, read_only=True),
    _define("band_update_task", i.UpdateTaskInput, _T, _ACT, room_bound=True),
    _define(
        "band_get_task_history",
        i.GetTaskHistoryInput,
        _T,
        _OBS,
        room_bound=True,
        read_only=True,
    ),
    _define("band_get_board", i.GetBoardInput, _T, _OBS, room_bound=True, read_only=True),
    _define("band_set_board", i.SetBoardInput, _T, _ACT, room_bound=True),
)

_BY_NAME: dict[str, ToolDefinition] = {d.name: d for d in TOOL_DEFINITIONS}
if len(_BY_NAME) != len(TOOL_DEFINITIONS):  # pragma: no cover - import-time guard
    raise RuntimeError("duplicate tool names in TOOL_DEFINITIONS")


def get_tool_definition(name: str) -> ToolDefinition | None:
    """The platform tool called ``name``, or None."""
    return _BY_NAME.get(name)


def _as_capabilities(capabilities: Iterable[Capability | str] | None) -> frozenset[Capability]:
    if capabilities is None:
        return DEFAULT_CAPABILITIES
    if isinstance(capabilities, Capability | str):
        capabilities = (capabilities,)
    return frozenset(Capability(c) for c in capabilities)


def _as_names(values: Iterable[str] | str | None) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return frozenset({values})
    return frozenset(values)


def select_tool_definitions(
    *,
    capabilities: Iterable[Capability | str] | None = None,
    include_tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] | None = None,
    include_categories: Iterable[ToolCategory | str] | None = None,
    force_capabilities: Iterable[Capability] = (),
) -> tuple[ToolDefinition, ...]:
    """The platform tools to offer, in registry order.

    The capability gate comes first (``None`` = :data:`DEFAULT_CAPABILITIES`, an
    explicit set replaces the default, ``frozenset()`` = the 8 chat tools only;
    ``force_capabilities`` are added on top). Then, each narrowing the previous
    result: ``include_categories``, ``include_tools``, ``exclude_tools``. A filter
    can never bring back a tool the capability gate withheld.

    Raises:
        ValueError: an unknown capability or category value.
    """
    caps = _as_capabilities(capabilities) | frozenset(force_capabilities)
    selected = [d for d in TOOL_DEFINITIONS if d.capability is None or d.capability in caps]
    if include_categories is not None:
        cats_in = (
            (include_categories,)
            if isinstance(include_categories, ToolCategory | str)
            else include_categories
        )
        cats = frozenset(ToolCategory(c) for c in cats_in)
        selected = [d for d in selected if d.category in cats]
    include = _as_names(include_tools)
    if include is not None:
        selected = [d for d in selected if d.name in include]
    exclude = _as_names(exclude_tools)
    if exclude is not None:
        selected = [d for d in selected if d.name not in exclude]
    return tuple(selected)


def render_schema(definition: ToolSpec, fmt: SchemaFormat) -> dict[str, Any]:
    """One tool in a provider's format.

    Anthropic: ``{"name", "description", "input_schema"}``. OpenAI (function
    calling): ``{"type": "function", "function": {"name", "description",
    "parameters"}}``. The argument schema is the same object in both.

    Raises:
        ValueError: ``fmt`` is not ``"anthropic"`` or ``"openai"``.
    """
    schema = definition.json_schema()
    if fmt == "anthropic":
        return {
            "name": definition.name,
            "description": definition.description,
            "input_schema": schema,
        }
    if fmt == "openai":
        return {
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": schema,
            },
        }
    raise ValueError(f"Invalid format: {fmt}. Must be 'openai' or 'anthropic'")


def get_tool_schemas(
    fmt: SchemaFormat,
    *,
    capabilities: Iterable[Capability | str] | None = None,
    include_tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] | None = None,
    include_categories: Iterable[ToolCategory | str] | None = None,
    custom_tools: CustomToolSet | None = None,
) -> list[dict[str, Any]]:
    """The platform tools (then any custom tools) in a provider's format.

    See :func:`select_tool_definitions` for the capability rule and the filters.
    Custom tools are appended after the platform tools and are not filtered.

    Raises:
        ValueError: an unknown format, capability or category.
    """
    schemas, _ = offered_schemas(
        fmt,
        capabilities=capabilities,
        include_tools=include_tools,
        exclude_tools=exclude_tools,
        include_categories=include_categories,
        custom_tools=custom_tools,
    )
    return schemas


def offered_schemas(
    fmt: SchemaFormat,
    *,
    capabilities: Iterable[Capability | str] | None = None,
    include_tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] | None = None,
    include_categories: Iterable[ToolCategory | str] | None = None,
    custom_tools: CustomToolSet | None = None,
) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """:func:`get_tool_schemas`, plus the names of the platform tools it offers
    (what a tools object then lets a model call).

    Raises:
        ValueError: an unknown format, capability or category.
    """
    if fmt not in ("anthropic", "openai"):
        raise ValueError(f"Invalid format: {fmt}. Must be 'openai' or 'anthropic'")
    selected = select_tool_definitions(
        capabilities=capabilities,
        include_tools=include_tools,
        exclude_tools=exclude_tools,
        include_categories=include_categories,
    )
    out = [render_schema(d, fmt) for d in selected]
    if custom_tools is not None:
        out.extend(render_schema(d, fmt) for d in custom_tools.definitions())
    return out, frozenset(d.name for d in selected)


def get_anthropic_tool_schemas(
    *, capabilities: Iterable[Capability | str] | None = None, **filters: Any
) -> list[dict[str, Any]]:
    """:func:`get_tool_schemas` in Anthropic's format."""
    return get_tool_schemas("anthropic", capabilities=capabilities, **filters)


def get_openai_tool_schemas(
    *, capabilities: Iterable[Capability | str] | None = None, **filters: Any
) -> list[dict[str, Any]]:
    """:func:`get_tool_schemas` in OpenAI's function-calling format."""
    return get_tool_schemas("openai", capabilities=capabilities, **filters)
