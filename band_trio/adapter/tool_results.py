"""What a tool call gives back to the model."""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs

from band_trio.wire import unstructure

__all__ = ["ToolErrorKind", "ToolResult", "to_jsonable"]


class ToolErrorKind(enum.Enum):
    """Why a tool call failed."""

    UNKNOWN_TOOL = "unknown_tool"
    """No platform or custom tool has that name."""
    NOT_OFFERED = "not_offered"
    """A platform tool that was not offered to the model (capability or filter)."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments failed the tool's schema or its cross-field rules."""
    TOOL_ERROR = "tool_error"
    """The tool refused the call (unknown participant, missing mention, ...)."""
    PLATFORM_ERROR = "platform_error"
    """The platform answered with an error status, or could not be reached."""
    EXECUTION_STOPPED = "execution_stopped"
    """The room's execution is stopped; the turn is being ended."""
    INTERNAL_ERROR = "internal_error"
    """An unexpected failure inside the tool (details are in the agent's logs)."""


@attrs.frozen
class ToolResult:
    """The outcome of one tool call, ready to hand to a model.

    Attributes:
        tool_name: the tool that was called.
        value: on success the tool's result as JSON-compatible data (dicts, lists,
            strings, numbers); on failure the error message (a string).
        is_error: True when the call failed.
        error_kind: why it failed, None on success.
    """

    tool_name: str
    value: Any
    is_error: bool = False
    error_kind: ToolErrorKind | None = None

    @classmethod
    def ok(cls, tool_name: str, value: Any) -> ToolResult:
        """A successful result; ``value`` is made JSON-compatible."""
        return cls(tool_name, to_jsonable(value))

    @classmethod
    def error(cls, tool_name: str, kind: ToolErrorKind, message: str) -> ToolResult:
        """A failed result carrying a message written for the model."""
        return cls(tool_name, message, is_error=True, error_kind=kind)

    @property
    def text(self) -> str:
        """The result as text: strings as they are, anything else as JSON."""
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False, default=str)


def to_jsonable(value: Any) -> Any:
    """Turn REST models (attrs classes), tuples and enums into plain JSON data.

    Empty ``extra`` mappings vanish because the shared converter flattens them.
    """
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if attrs.has(type(value)):
        return to_jsonable(unstructure(value))
    if hasattr(value, "items") and callable(value.items):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return str(value)
