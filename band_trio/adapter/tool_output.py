"""What a model gets back from a tool call, in a form every adapter maps to its own.

:func:`run_tool_call` is the one way an LLM adapter runs a model's tool call:
it posts the ``tool_call`` event, dispatches the call through the turn's tools
object (platform or custom tool), turns anything the tools object raises into
an error result with the same text for every adapter, and posts the
``tool_result`` event. Its :class:`ToolOutput` holds the text and any
:class:`ImageBlock` (a ``band_read_room_file`` image) the model is shown, and
whether the call failed; the adapter maps that to its framework's tool-result
message (Anthropic: :meth:`ToolOutput.to_anthropic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from band_trio._logging import get_logger
from band_trio.adapter.tool_events import (
    image_blocks_placeholder,
    post_tool_call,
    post_tool_result,
)
from band_trio.adapter.tool_protocol import AgentToolsProtocol, CustomToolSet
from band_trio.adapter.tool_results import ToolErrorKind, ToolResult

__all__ = [
    "ImageBlock",
    "ToolOutput",
    "run_tool_call",
    "tool_exception_result",
]

logger = get_logger("band_trio.adapter")

_READ_FILE: Final = "band_read_room_file"


@attrs.frozen
class ImageBlock:
    """An image a model is shown, framework-neutral.

    Attributes:
        mime_type: e.g. ``"image/png"``.
        data: the image bytes, base64-encoded.
    """

    mime_type: str
    data: str

    @property
    def data_url(self) -> str:
        """``data:<mime_type>;base64,<data>`` (OpenAI-style image URLs)."""
        return f"data:{self.mime_type};base64,{self.data}"

    def to_anthropic(self) -> dict[str, Any]:
        """The Messages API image block (base64 source)."""
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": self.mime_type, "data": self.data},
        }

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions image part (a data URL)."""
        return {"type": "image_url", "image_url": {"url": self.data_url}}


def _image_blocks_of(value: object) -> tuple[ImageBlock, ...] | None:
    """The images of a ``band_read_room_file`` result value, or None when the
    value is not a non-empty list of image items (``{"type": "image", "data",
    "mimeType"}``)."""
    if not isinstance(value, Mapping):
        return None
    items = value.get("content")
    if not isinstance(items, list) or not items:
        return None
    blocks: list[ImageBlock] = []
    for item in items:
        if not (
            isinstance(item, Mapping)
            and item.get("type") == "image"
            and isinstance(item.get("data"), str)
            and isinstance(item.get("mimeType"), str)
        ):
            return None
        blocks.append(ImageBlock(mime_type=item["mimeType"], data=item["data"]))
    return tuple(blocks)


@attrs.frozen
class ToolOutput:
    """One tool call's outcome as the model is shown it.

    Attributes:
        result: the :class:`ToolResult` the tools object returned.
        images: the images the model is shown instead of :attr:`text` (a
            successful ``band_read_room_file`` of an image); empty otherwise.
    """

    result: ToolResult
    images: tuple[ImageBlock, ...] = ()

    @classmethod
    def of(cls, result: ToolResult) -> ToolOutput:
        """The output of ``result``, with its images when it has some."""
        images = None
        if not result.is_error and result.tool_name == _READ_FILE:
            images = _image_blocks_of(result.value)
        return cls(result, images or ())

    @property
    def tool_name(self) -> str:
        """The tool that was called."""
        return self.result.tool_name

    @property
    def is_error(self) -> bool:
        """True when the call failed (give the model ``is_error``/an error status)."""
        return self.result.is_error

    @property
    def text(self) -> str:
        """The result as text (strings as they are, data as JSON, errors as
        the message written for the model)."""
        return self.result.text

    @property
    def event_output(self) -> str:
        """What the ``tool_result`` event records: the text, or
        ``"<N image content block(s)>"`` for images."""
        return image_blocks_placeholder(len(self.images)) if self.images else self.text

    def to_anthropic(self, tool_use_id: str) -> dict[str, Any]:
        """The Messages API ``tool_result`` block answering ``tool_use_id``."""
        content: str | list[dict[str, Any]] = (
            [i.to_anthropic() for i in self.images] if self.images else self.text
        )
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content,
            "is_error": self.is_error,
        }


def tool_exception_result(name: str, exc: BaseException) -> ToolResult:
    """The error result of a tool call that raised instead of returning a
    :class:`ToolResult`: ``"Error executing <name>: <Type>: <message>"``."""
    return ToolResult.error(
        name, ToolErrorKind.INTERNAL_ERROR, f"Error executing {name}: {type(exc).__name__}: {exc}"
    )


async def run_tool_call(
    tools: AgentToolsProtocol,
    name: str,
    args: Mapping[str, Any] | None,
    call_id: str,
    *,
    custom_tools: CustomToolSet | None = None,
    post_events: bool = True,
) -> ToolOutput:
    """Run one model tool call on the turn's tools, with its events.

    Args:
        tools: the turn's tools object.
        name: the tool the model called.
        args: its arguments (anything but a mapping counts as none).
        call_id: the model's tool call id (carried by both events).
        custom_tools: the adapter's custom tools, dispatched after the platform tools.
        post_events: post ``tool_call`` before and ``tool_result`` after the call
            (best-effort; pass ``adapter.features.emits(Emit.TOOL_CALLS)``).

    Returns:
        The output; a failure is an error output, never an exception (but
        ``trio.Cancelled``).
    """
    arguments: Mapping[str, Any] = args if isinstance(args, Mapping) else {}
    if post_events:
        await post_tool_call(tools, name, arguments, call_id)
    try:
        if custom_tools is not None:
            value = await tools.execute_tool_call(name, arguments, custom_tools=custom_tools)
        else:
            value = await tools.execute_tool_call(name, arguments)
    except Exception as exc:
        # AgentTools never raises here; another tools object might.
        logger.exception("tool %s raised", name)
        value = tool_exception_result(name, exc)
    result = value if isinstance(value, ToolResult) else ToolResult.ok(name, value)
    output = ToolOutput.of(result)
    if post_events:
        await post_tool_result(tools, name, output.event_output, call_id, is_error=output.is_error)
    return output
