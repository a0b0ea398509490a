"""``tool_call`` and ``tool_result`` events: the JSON texts history converters
read back, and best-effort posting (a failed post is logged, never raised)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from band_trio._logging import get_logger
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.adapter.tool_results import to_jsonable
from band_trio.wire.models import EventCreated

__all__ = [
    "image_blocks_placeholder",
    "post_thought",
    "post_tool_call",
    "post_tool_result",
    "tool_call_content",
    "tool_result_content",
]

logger = get_logger("band_trio.adapter")

_ROOM_FILE_TOOL: Final = "band_send_room_file"


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


async def post_thought(tools: AgentToolsProtocol, text: str) -> EventCreated | None:
    """Post a ``thought`` event (reasoning the model gave), best-effort; blank
    text is not posted.

    Returns:
        The platform's receipt, or None when nothing was posted.
    """
    if not text.strip():
        return None
    return await _post_quietly(tools, text, "thought")
