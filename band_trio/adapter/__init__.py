"""The adapter contract: what an adapter author implements and calls, and what
both the tools and the runtime build on.

* Messages and history: :class:`PlatformMessage`, :class:`HistoryItem`,
  :class:`HistoryConverter`, :class:`HistoryProvider`, the room :class:`Roster`.
* Turns: :class:`AgentInput`, :class:`TurnContext`, :class:`TurnHooks`.
* Protocols: :class:`FrameworkAdapter`, :class:`Preprocessor`, the optional
  hooks (:class:`InterruptHandler`, :class:`AllRoomsCleanup`,
  :class:`TurnJudging`, :class:`ReportsStuckThreads`, :class:`BackgroundWork`) and :class:`AgentToolsProtocol`, every tool an adapter
  may call. :class:`SimpleAdapter` implements the adapter side with defaults.
* Tool families and effects: :class:`Capability`, :class:`ToolCategory`,
  :class:`ToolEffect`; results: :class:`ToolResult`.
* What an adapter emits and offers: :class:`Emit`, :class:`AdapterFeatures`.
* Best-effort posts: :class:`AgentFailure` / :func:`report_failure` (and the
  failure texts the runtime posts), :class:`Usage` / :func:`emit_usage`,
  :func:`post_tool_call` / :func:`post_tool_result`.
* What every LLM adapter needs once (see docs, "Writing an adapter package"):
  :class:`PromptSettings` / :func:`render_system_prompt` and
  :func:`render_turn_lines` (the system prompt and a turn's input lines);
  :func:`offered_tool_schemas` / :class:`ToolSchema` (the tools to offer, in
  the model's format); :func:`run_tool_call` / :class:`ToolOutput` /
  :class:`ImageBlock` (a tool call with its events, and what the model gets
  back); :func:`post_thought`; :func:`read_history` (a room's history as
  tool calls, results and text, other senders labelled by
  :func:`sender_label`: name and unique handle);
  :class:`ResumableHistoryConverter` / :class:`ResumableHistory` (for a
  framework that keeps its own conversation: the history as text and the
  conversation id recorded in the room).
* Settings: the field checks of :mod:`band_trio.adapter.config_checks`
  (:func:`positive_int`, :func:`seconds`, :func:`text`, :func:`flag`,
  :func:`one_of`, :func:`instance_of`, :func:`string_map`, :func:`function`,
  :func:`optional`; the converters :func:`as_path` and :func:`as_dict`);
  :func:`config_or_default` and :func:`check_tool_names` for a constructor's
  ``config`` and tools; :class:`PromptFields` / :meth:`PromptSettings.of` for
  the three prompt fields.
* Per-room child processes: :class:`Residents` (which rooms hold one, which
  to close: idle, over the limit), :func:`kill_process_group` and
  :func:`room_workdir`.

This layer sits below the tools and the runtime and imports neither; adapters
for a given LLM framework live in their own distributions and build on it.
"""

from band_trio.adapter.capabilities import Capability, ToolCategory, ToolEffect
from band_trio.adapter.config_checks import (
    FieldCheck,
    as_dict,
    as_path,
    check_tool_names,
    config_or_default,
    flag,
    function,
    instance_of,
    one_of,
    optional,
    positive_int,
    seconds,
    string_map,
    text,
)
from band_trio.adapter.content import (
    EVENT_CONTENT_LIMIT,
    TRUNCATION_MARKER,
    is_visible,
    truncate_event_content,
)
from band_trio.adapter.failures import (
    ERROR_EVENT_TEXT,
    FAILURE_METADATA_KEY,
    GENERIC_FAILURE_MESSAGE,
    MISSING_REPLY_LABEL,
    MISSING_REPLY_MESSAGE,
    MISSING_REPLY_TEXT,
    AgentFailure,
    FailureReporter,
    report_failure,
)
from band_trio.adapter.features import AdapterFeatures, Emit, resolve_features
from band_trio.adapter.history_records import (
    INTERRUPTED_TOOL_RESULT,
    HistoryRecord,
    HistoryText,
    HistoryToolCall,
    HistoryToolResult,
    read_history,
)
from band_trio.adapter.messages import (
    HistoryConverter,
    HistoryItem,
    HistoryProvider,
    HistoryRole,
    NamedHistoryConverter,
    PlatformMessage,
    sender_label,
)
from band_trio.adapter.prompt import (
    CAPABILITY_SECTIONS,
    HISTORY_START,
    PromptFields,
    PromptSettings,
    TurnLine,
    render_system_prompt,
    render_turn_lines,
    system_line,
)
from band_trio.adapter.protocols import (
    AllRoomsCleanup,
    BackgroundWork,
    FrameworkAdapter,
    InterruptHandler,
    Preprocessor,
    ReportsStuckThreads,
    TurnJudging,
)
from band_trio.adapter.residents import (
    Residents,
    ResidentsStatistics,
    kill_process_group,
    room_workdir,
)
from band_trio.adapter.resumable import ResumableHistory, ResumableHistoryConverter
from band_trio.adapter.roster import Roster, available_handles, resolve_mention
from band_trio.adapter.simple import SimpleAdapter
from band_trio.adapter.tool_events import (
    image_blocks_placeholder,
    post_thought,
    post_tool_call,
    post_tool_result,
    tool_call_content,
    tool_result_content,
)
from band_trio.adapter.tool_offer import ToolSchema, offered_neutral_tools, offered_tool_schemas
from band_trio.adapter.tool_output import (
    ImageBlock,
    ToolOutput,
    run_tool_call,
    tool_exception_result,
)
from band_trio.adapter.tool_protocol import (
    AgentToolsProtocol,
    CustomToolSet,
    SchemaFormat,
    ToolSpec,
)
from band_trio.adapter.tool_results import ToolErrorKind, ToolResult, to_jsonable
from band_trio.adapter.turns import AgentInput, TurnContext, TurnHooks
from band_trio.adapter.usage import (
    USAGE_EVENT_TYPE,
    USAGE_METADATA_KEY,
    Usage,
    emit_usage,
    is_usage_event,
)

__all__ = [
    "CAPABILITY_SECTIONS",
    "ERROR_EVENT_TEXT",
    "EVENT_CONTENT_LIMIT",
    "FAILURE_METADATA_KEY",
    "GENERIC_FAILURE_MESSAGE",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "MISSING_REPLY_LABEL",
    "MISSING_REPLY_MESSAGE",
    "MISSING_REPLY_TEXT",
    "TRUNCATION_MARKER",
    "USAGE_EVENT_TYPE",
    "USAGE_METADATA_KEY",
    "AdapterFeatures",
    "AgentFailure",
    "AgentInput",
    "AgentToolsProtocol",
    "AllRoomsCleanup",
    "BackgroundWork",
    "Capability",
    "CustomToolSet",
    "Emit",
    "FailureReporter",
    "FieldCheck",
    "FrameworkAdapter",
    "HistoryConverter",
    "HistoryItem",
    "HistoryProvider",
    "HistoryRecord",
    "HistoryRole",
    "HistoryText",
    "HistoryToolCall",
    "HistoryToolResult",
    "ImageBlock",
    "InterruptHandler",
    "NamedHistoryConverter",
    "PlatformMessage",
    "Preprocessor",
    "PromptFields",
    "PromptSettings",
    "ReportsStuckThreads",
    "Residents",
    "ResidentsStatistics",
    "ResumableHistory",
    "ResumableHistoryConverter",
    "Roster",
    "SchemaFormat",
    "SimpleAdapter",
    "ToolCategory",
    "ToolEffect",
    "ToolErrorKind",
    "ToolOutput",
    "ToolResult",
    "ToolSchema",
    "ToolSpec",
    "TurnContext",
    "TurnHooks",
    "TurnJudging",
    "TurnLine",
    "Usage",
    "as_dict",
    "as_path",
    "available_handles",
    "check_tool_names",
    "config_or_default",
    "emit_usage",
    "flag",
    "function",
    "image_blocks_placeholder",
    "instance_of",
    "is_usage_event",
    "is_visible",
    "kill_process_group",
    "offered_neutral_tools",
    "offered_tool_schemas",
    "one_of",
    "optional",
    "positive_int",
    "post_thought",
    "post_tool_call",
    "post_tool_result",
    "read_history",
    "render_system_prompt",
    "render_turn_lines",
    "report_failure",
    "resolve_features",
    "resolve_mention",
    "room_workdir",
    "run_tool_call",
    "seconds",
    "sender_label",
    "string_map",
    "system_line",
    "text",
    "to_jsonable",
    "tool_call_content",
    "tool_exception_result",
    "tool_result_content",
    "truncate_event_content",
]
