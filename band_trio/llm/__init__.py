"""The pieces every LLM adapter shares, with no LLM library involved.

* :class:`Emit` and :class:`AdapterFeatures`: what an adapter posts on its own
  and which tools it offers (the ``emit=``, ``capabilities=`` and filter knobs
  of :class:`~band_trio.runtime.types.SimpleAdapter`).
* :class:`AgentFailure` / :func:`report_failure`, :class:`Usage` /
  :func:`emit_usage`, :func:`post_tool_call` / :func:`post_tool_result`: the
  events of tools_adapters.md §3.3, best-effort.
* :func:`render_system_prompt`: the system prompt of §4.4.

Adapters for a given framework live in their own distributions and build on
these; the core never imports an LLM framework.
"""

from band_trio.llm.events import (
    FAILURE_METADATA_KEY,
    GENERIC_FAILURE_MESSAGE,
    MISSING_REPLY_MESSAGE,
    USAGE_EVENT_TYPE,
    USAGE_METADATA_KEY,
    AgentFailure,
    Usage,
    emit_usage,
    image_blocks_placeholder,
    is_usage_event,
    post_tool_call,
    post_tool_result,
    report_failure,
    tool_call_content,
    tool_result_content,
)
from band_trio.llm.features import AdapterFeatures, Emit, resolve_features
from band_trio.llm.prompt import CAPABILITY_SECTIONS, render_system_prompt

__all__ = [
    "CAPABILITY_SECTIONS",
    "FAILURE_METADATA_KEY",
    "GENERIC_FAILURE_MESSAGE",
    "MISSING_REPLY_MESSAGE",
    "USAGE_EVENT_TYPE",
    "USAGE_METADATA_KEY",
    "AdapterFeatures",
    "AgentFailure",
    "Emit",
    "Usage",
    "emit_usage",
    "image_blocks_placeholder",
    "is_usage_event",
    "post_tool_call",
    "post_tool_result",
    "render_system_prompt",
    "report_failure",
    "resolve_features",
    "tool_call_content",
    "tool_result_content",
]
