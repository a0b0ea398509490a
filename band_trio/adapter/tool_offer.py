"""The tools an LLM adapter offers its model in one turn, in the model's format.

Schemas are always asked of the turn's tools object: it records what it
offered (and refuses any other platform tool afterwards), it knows the room's
tool set (a hub room adds the contact tools; capabilities the deployment does
not serve are left out), and custom tools come after the platform tools.
:func:`offered_tool_schemas` applies an adapter's capabilities and
include/exclude/category filters (:class:`~band_trio.adapter.AdapterFeatures`)
and returns them in the Anthropic or OpenAI format; :func:`offered_neutral_tools`
returns the framework-neutral :class:`ToolSchema` (name, description, input
JSON schema) that MCP, PydanticAI or any other tool format is built from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.adapter.features import AdapterFeatures
from band_trio.adapter.tool_protocol import AgentToolsProtocol, CustomToolSet, SchemaFormat

__all__ = ["ToolSchema", "offered_neutral_tools", "offered_tool_schemas"]


@attrs.frozen
class ToolSchema:
    """One offered tool, framework-neutral.

    Attributes:
        name: the name the model calls it by.
        description: what it does, for the model.
        input_schema: the JSON schema of its arguments (an ``object`` schema,
            numeric bounds and enums included).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = attrs.field(hash=False)

    @classmethod
    def from_anthropic(cls, schema: Mapping[str, Any]) -> ToolSchema:
        """The tool of one Anthropic-format schema (``name``, ``description``,
        ``input_schema``)."""
        return cls(
            name=str(schema["name"]),
            description=str(schema.get("description") or ""),
            input_schema=dict(schema.get("input_schema") or {"type": "object", "properties": {}}),
        )

    @classmethod
    def from_openai(cls, schema: Mapping[str, Any]) -> ToolSchema:
        """The tool of one OpenAI-format schema (``{"type": "function",
        "function": {name, description, parameters}}``)."""
        function = schema["function"]
        return cls(
            name=str(function["name"]),
            description=str(function.get("description") or ""),
            input_schema=dict(function.get("parameters") or {"type": "object", "properties": {}}),
        )

    def to_anthropic(self) -> dict[str, Any]:
        """The Anthropic format (``name``, ``description``, ``input_schema``)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.input_schema),
            },
        }


def offered_tool_schemas(
    tools: AgentToolsProtocol,
    features: AdapterFeatures,
    fmt: SchemaFormat,
    *,
    custom_tools: CustomToolSet | None = None,
) -> list[dict[str, Any]]:
    """The tools to offer this turn in ``fmt`` (``"anthropic"`` or ``"openai"``).

    Args:
        tools: the turn's tools object (it records what was offered).
        features: the adapter's features: capabilities and tool filters.
        fmt: the model's schema format.
        custom_tools: the adapter's custom tools, offered last (unfiltered).

    Raises:
        ValueError: an unknown format.
    """
    options = features.tool_schema_options()
    if custom_tools is not None:
        options["custom_tools"] = custom_tools
    return tools.get_tool_schemas(fmt, **options)


def offered_neutral_tools(
    tools: AgentToolsProtocol,
    features: AdapterFeatures,
    *,
    custom_tools: CustomToolSet | None = None,
) -> list[ToolSchema]:
    """:func:`offered_tool_schemas` as framework-neutral :class:`ToolSchema` objects."""
    schemas = offered_tool_schemas(tools, features, "anthropic", custom_tools=custom_tools)
    return [ToolSchema.from_anthropic(s) for s in schemas]
