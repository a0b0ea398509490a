"""The events LLM adapters post to a room (tools_adapters.md §3.3).

* :class:`AgentFailure` and :func:`report_failure`: one ``error`` event carrying
  ``{"failure": {...}}`` metadata, which also marks the turn as reported so the
  runtime posts no second error for it.
* :class:`Usage` and :func:`emit_usage`: one ``task`` event per turn with
  ``{"band_usage": {...}}`` metadata (the platform has no ``usage`` type).
* :func:`post_tool_call` / :func:`post_tool_result`: ``tool_call`` and
  ``tool_result`` events whose JSON content history converters read back.

Everything that posts is best-effort: a failed post is logged and never breaks
the turn (only ``trio.Cancelled`` and, for failures, a stopped room propagate).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

import attrs
import trio

from band_trio.errors import RoomExecutionStoppedError
from band_trio.runtime.room import ERROR_EVENT_TEXT, MISSING_REPLY_TEXT
from band_trio.runtime.types import AgentToolsProtocol
from band_trio.tools.content import is_visible
from band_trio.tools.results import to_jsonable
from band_trio.wire.models import EventCreated

__all__ = [
    "FAILURE_METADATA_KEY",
    "GENERIC_FAILURE_MESSAGE",
    "MISSING_REPLY_MESSAGE",
    "USAGE_EVENT_TYPE",
    "USAGE_METADATA_KEY",
    "AgentFailure",
    "Usage",
    "emit_usage",
    "image_blocks_placeholder",
    "is_usage_event",
    "post_tool_call",
    "post_tool_result",
    "report_failure",
    "tool_call_content",
    "tool_result_content",
]

logger = logging.getLogger("band_trio.llm")

USAGE_EVENT_TYPE: Final = "task"
"""Usage rides a ``task`` event: the platform has no ``usage`` event type."""
USAGE_METADATA_KEY: Final = "band_usage"
"""The metadata key that tells a usage event from a task lifecycle event."""
FAILURE_METADATA_KEY: Final = "failure"
"""The metadata key of a failure report on an ``error`` event."""
GENERIC_FAILURE_MESSAGE: Final = ERROR_EVENT_TEXT
"""The room-visible text for a failure whose details belong in the agent's logs."""
MISSING_REPLY_MESSAGE: Final = MISSING_REPLY_TEXT
"""What the runtime posts (provider ``band-runtime``) for a judged turn without a reply."""

_ROOM_FILE_TOOL: Final = "band_send_room_file"


# --------------------------------------------------------------------------- failures


def _code(value: object) -> str | None:
    return None if value is None else str(value)


@attrs.frozen
class AgentFailure:
    """A failure of the model provider (or the adapter) to report in the room.

    Args:
        provider: who failed, e.g. ``"anthropic"``, ``"langgraph"``.
        message: the room-visible text; blank means ``"<provider> failed
            without an error message."``. Keep provider internals and secrets
            out of it (:meth:`generic` gives the neutral text).
        code: a short code (an HTTP status such as ``"429"``), or None.
        detail: JSON-compatible detail (a provider's error body), or None.
    """

    provider: str
    message: str
    code: str | None = attrs.field(default=None, converter=_code)
    detail: Any = None

    @classmethod
    def generic(cls, provider: str, *, code: object = None) -> AgentFailure:
        """A failure with the generic text ``"Internal error while processing
        message; see agent logs."`` and no detail."""
        return cls(provider, GENERIC_FAILURE_MESSAGE, code=_code(code))

    @property
    def content(self) -> str:
        """The event's text: the message, or the fallback when it is blank."""
        if isinstance(self.message, str) and is_visible(self.message):
            return self.message
        return f"{self.provider} failed without an error message."

    def metadata(self) -> dict[str, Any]:
        """``{"failure": {"provider", "code", "message", "detail"}}``."""
        return {
            FAILURE_METADATA_KEY: {
                "provider": self.provider,
                "code": self.code,
                "message": self.content,
                "detail": to_jsonable(self.detail),
            }
        }


async def report_failure(tools: AgentToolsProtocol, failure: AgentFailure) -> EventCreated | None:
    """Post ``failure`` as the turn's ``error`` event, best-effort.

    With a :class:`band_trio.tools.AgentTools` this is its ``send_failure``: a
    posted report marks the turn as reported, so the runtime neither judges it
    a missing reply nor posts its own generic error for it. Other tools objects
    (fakes) get a plain ``send_event``.

    Returns:
        The platform's receipt, or None when the post failed (logged).

    Raises:
        RoomExecutionStoppedError: the room's execution is stopped (the turn is
            being ended).
    """
    send_failure = getattr(tools, "send_failure", None)
    if callable(send_failure):
        result: EventCreated | None = await send_failure(failure)
        return result
    try:
        return await tools.send_event(failure.content, "error", failure.metadata())
    except RoomExecutionStoppedError:
        raise
    except Exception as exc:
        logger.warning("could not post the %s failure report: %r", failure.provider, exc)
        return None


# --------------------------------------------------------------------------- usage


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"token counts are non-negative integers; got {value!r}")
    return value


@attrs.frozen
class Usage:
    """Token counts of one or more model calls; ``+`` and ``sum()`` add them up.

    Attributes:
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        cache_read_tokens: prompt tokens read from the provider's cache.
        cache_write_tokens: prompt tokens written to the provider's cache.
    """

    input_tokens: int = attrs.field(default=0, converter=_count)
    output_tokens: int = attrs.field(default=0, converter=_count)
    cache_read_tokens: int = attrs.field(default=0, converter=_count)
    cache_write_tokens: int = attrs.field(default=0, converter=_count)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def __radd__(self, other: object) -> Usage:
        # sum() starts from 0.
        if other == 0 and not isinstance(other, bool):
            return self
        return NotImplemented

    @property
    def is_zero(self) -> bool:
        """True when all four counts are zero."""
        return not (
            self.input_tokens
            or self.output_tokens
            or self.cache_read_tokens
            or self.cache_write_tokens
        )

    @property
    def content(self) -> str:
        """``"Token usage: input=<in> output=<out>"``."""
        return f"Token usage: input={self.input_tokens} output={self.output_tokens}"

    def metadata(self) -> dict[str, Any]:
        """``{"band_usage": {input_tokens, output_tokens, cache_read_tokens, cache_write_tokens}}``."""
        return {
            USAGE_METADATA_KEY: {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            }
        }


def is_usage_event(metadata: Mapping[str, Any] | None) -> bool:
    """True for the metadata of a usage event (a ``task`` event that is not a
    task lifecycle event)."""
    return isinstance(metadata, Mapping) and isinstance(metadata.get(USAGE_METADATA_KEY), Mapping)


def _being_cancelled() -> bool:
    # -inf once an enclosing (unshielded) scope was cancelled; a deadline in the
    # past means the next checkpoint cancels.
    return trio.current_effective_deadline() <= trio.current_time()


async def emit_usage(tools: AgentToolsProtocol, usage: Usage) -> EventCreated | None:
    """Post the turn's token usage as a ``task`` event, best-effort.

    Nothing is posted when all counts are zero or when the turn is being
    cancelled (an enclosing cancel scope was cancelled or its deadline passed;
    inside a shielded scope the turn does not count as being cancelled): call
    it from a ``finally`` block. A failed post is logged, never raised.

    Cancellation:
        Skipping never raises ``trio.Cancelled``; a post in progress can be
        cancelled like any other request.

    Returns:
        The platform's receipt, or None when nothing was posted.
    """
    if usage.is_zero or _being_cancelled():
        # A schedule point that never raises Cancelled: called from a
        # ``finally`` block, skipping must not replace the error in flight.
        await trio.lowlevel.cancel_shielded_checkpoint()
        return None
    try:
        return await tools.send_event(usage.content, USAGE_EVENT_TYPE, usage.metadata())
    except Exception as exc:
        logger.warning("could not post the usage event: %r", exc)
        return None


# --------------------------------------------------------------------------- tool events


def image_blocks_placeholder(count: int) -> str:
    """The tool-result output standing in for image blocks: ``"<N image content block(s)>"``."""
    return f"<{count} image content block(s)>"


def _redacted_args(name: str, args: Mapping[str, Any] | None) -> Any:
    if not isinstance(args, Mapping):
        return to_jsonable(args) if args is not None else {}
    out = dict(args)
    if name == _ROOM_FILE_TOOL and "content" in out:
        content = out["content"]
        text = content if isinstance(content, str) else str(content)
        out["content"] = f"<{len(text.encode('utf-8'))} byte file content>"
    return to_jsonable(out)


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_call_content(name: str, args: Mapping[str, Any] | None, tool_call_id: str) -> str:
    """The JSON text of a ``tool_call`` event: ``{"name", "args", "tool_call_id"}``.

    The ``content`` argument of ``band_send_room_file`` is replaced by
    ``"<N byte file content>"`` (N: its UTF-8 size).
    """
    return _dumps({"name": name, "args": _redacted_args(name, args), "tool_call_id": tool_call_id})


def tool_result_content(name: str, output: Any, tool_call_id: str, *, is_error: bool) -> str:
    """The JSON text of a ``tool_result`` event:
    ``{"name", "output", "tool_call_id", "is_error"}``.

    ``output`` is the text given to the model (other values are kept as JSON
    data); pass :func:`image_blocks_placeholder` for images.
    """
    return _dumps(
        {
            "name": name,
            "output": output if isinstance(output, str) else to_jsonable(output),
            "tool_call_id": tool_call_id,
            "is_error": bool(is_error),
        }
    )


async def _post_quietly(tools: AgentToolsProtocol, content: str, kind: str) -> EventCreated | None:
    try:
        return await tools.send_event(content, kind)
    except Exception as exc:
        logger.warning("could not post a %s event: %r", kind, exc)
        return None


async def post_tool_call(
    tools: AgentToolsProtocol, name: str, args: Mapping[str, Any] | None, tool_call_id: str
) -> EventCreated | None:
    """Post a ``tool_call`` event before a tool runs, best-effort (logged, never raised).

    Returns:
        The platform's receipt, or None when the post failed.
    """
    return await _post_quietly(tools, tool_call_content(name, args, tool_call_id), "tool_call")


async def post_tool_result(
    tools: AgentToolsProtocol,
    name: str,
    output: Any,
    tool_call_id: str,
    *,
    is_error: bool = False,
) -> EventCreated | None:
    """Post a ``tool_result`` event after a tool ran, best-effort (logged, never raised).

    Returns:
        The platform's receipt, or None when the post failed.
    """
    content = tool_result_content(name, output, tool_call_id, is_error=is_error)
    return await _post_quietly(tools, content, "tool_result")
