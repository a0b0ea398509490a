"""The platform tools an agent's model calls, defined once.

* :class:`AgentTools` — the room-bound tools object of one turn: Python methods
  (``send_message``, ``send_event``, ...) and :meth:`AgentTools.execute_tool_call`
  for model tool calls, which never raises (errors come back as a
  :class:`ToolResult` with ``is_error``).
* :func:`get_tool_schemas` — the 28 tools in Anthropic or OpenAI format, gated by
  :class:`Capability` and narrowed by include/exclude/category filters.
* :class:`CustomTools` — typed Python functions offered next to the platform tools.
* :class:`ContactTools` — the agent-level contact operations (not tied to a room).

Contact-event handling (``ContactEventConfig``, ``ContactEventHandler``) is a
runtime service: :mod:`band_trio.runtime.contact_events`.
"""

from band_trio._generated_source import forget_generated_source
from band_trio.adapter.content import (
    EVENT_CONTENT_LIMIT,
    TRUNCATION_MARKER,
    is_visible,
    truncate_event_content,
)
from band_trio.adapter.tool_results import ToolErrorKind, ToolResult
from band_trio.tools.agent_tools import AgentTools
from band_trio.tools.contact_tools import ContactTools
from band_trio.tools.custom import CustomTools
from band_trio.tools.definitions import (
    DEFAULT_CAPABILITIES,
    TOOL_DEFINITIONS,
    Capability,
    ToolCategory,
    ToolDefinition,
    get_anthropic_tool_schemas,
    get_openai_tool_schemas,
    get_tool_definition,
    get_tool_schemas,
    select_tool_definitions,
)

forget_generated_source(__name__)

__all__ = [
    "DEFAULT_CAPABILITIES",
    "EVENT_CONTENT_LIMIT",
    "TOOL_DEFINITIONS",
    "TRUNCATION_MARKER",
    "AgentTools",
    "Capability",
    "ContactTools",
    "CustomTools",
    "ToolCategory",
    "ToolDefinition",
    "ToolErrorKind",
    "ToolResult",
    "get_anthropic_tool_schemas",
    "get_openai_tool_schemas",
    "get_tool_definition",
    "get_tool_schemas",
    "is_visible",
    "select_tool_definitions",
    "truncate_event_content",
]
