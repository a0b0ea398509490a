"""Band tools as LangChain tools, run on Trio through the turn's portal.

The tools a graph sees are built from the same schemas the Anthropic and
OpenAI paths use (``get_tool_schemas("openai", ...)`` of the turn's tools
object), so names, descriptions and argument schemas cannot drift. A tool
object does not hold a turn: it finds the turn it runs in through a context
variable that :class:`TurnState` sets on the asyncio side of each turn. So one
compiled graph serves every turn of its room, and a graph abandoned after a
cancel can never act on a later turn (its portal is closed).

Every call, platform, custom or a plain LangChain tool, posts a
``tool_call`` event before it runs and a ``tool_result`` event after it (with
``Emit.TOOL_CALLS``), carrying the model's tool call id and the text given
back to the model, with ``is_error`` for every failed call. Failures reach the
model as ``ToolMessage(status="error")``; no tool failure ends the turn.
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import attrs
from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

from band_trio import (
    AgentToolsProtocol,
    Emit,
    ToolErrorKind,
    ToolResult,
)
from band_trio.adapter import (
    CustomToolSet,
    Usage,
    post_tool_call,
    post_tool_result,
)
from band_trio_langgraph._core_names import image_blocks_placeholder
from band_trio_langgraph.bridge import TrioPortal

__all__ = ["BandTool", "LangChainToolWrapper", "TurnState", "current_turn"]

logger = logging.getLogger("band_trio_langgraph")

NO_REPLY_TOOL: Final = "band_no_reply"
_READ_FILE: Final = "band_read_room_file"

_TURN: contextvars.ContextVar[TurnState] = contextvars.ContextVar("band_trio_langgraph_turn")
_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "band_trio_langgraph_call_id", default=None
)


@attrs.define(eq=False)
class TurnState:
    """What the asyncio side of one turn needs: the turn's tools and portal.

    Created on Trio for each turn; :meth:`enter` makes it the current turn of
    the asyncio task running the graph (and of every task LangGraph starts
    from it).

    Attributes:
        tools: the turn's room-bound tools object.
        portal: calls into the turn's Trio nursery.
        emit: the adapter's emit flags.
        custom_tools: typed custom tools to dispatch with the platform tools.
        usage: token usage summed over the turn's model calls.
    """

    tools: AgentToolsProtocol
    portal: TrioPortal
    emit: frozenset[Emit]
    custom_tools: CustomToolSet | None = None
    usage: Usage = attrs.field(factory=Usage)

    def enter(self) -> None:
        """Make this the current turn of the running asyncio context."""
        _TURN.set(self)

    # -- Trio side (called through the portal)

    async def execute(self, name: str, args: Mapping[str, Any], call_id: str) -> ToolResult:
        """Run a platform or custom tool with its events (on Trio)."""
        emit = Emit.TOOL_CALLS in self.emit
        if emit:
            await post_tool_call(self.tools, name, args, call_id)
        result = await self._dispatch(name, args)
        if emit:
            images = image_blocks(result)
            output = image_blocks_placeholder(len(images)) if images is not None else result.text
            await post_tool_result(self.tools, name, output, call_id, is_error=result.is_error)
        return result

    async def _dispatch(self, name: str, args: Mapping[str, Any]) -> ToolResult:
        try:
            if self.custom_tools is not None:
                value = await self.tools.execute_tool_call(
                    name, args, custom_tools=self.custom_tools
                )
            else:
                value = await self.tools.execute_tool_call(name, args)
        except Exception as exc:
            # AgentTools never raises here; another tools object might.
            logger.exception("tool %s raised", name)
            return ToolResult.error(
                name, ToolErrorKind.INTERNAL_ERROR, f"Error executing {name}: {exc}"
            )
        return value if isinstance(value, ToolResult) else ToolResult.ok(name, value)

    async def post_call(self, name: str, args: Mapping[str, Any], call_id: str) -> None:
        """Post a ``tool_call`` event (on Trio) when ``Emit.TOOL_CALLS`` is on."""
        if Emit.TOOL_CALLS in self.emit:
            await post_tool_call(self.tools, name, args, call_id)

    async def post_result(self, name: str, output: str, call_id: str, is_error: bool) -> None:
        """Post a ``tool_result`` event (on Trio) when ``Emit.TOOL_CALLS`` is on."""
        if Emit.TOOL_CALLS in self.emit:
            await post_tool_result(self.tools, name, output, call_id, is_error=is_error)

    async def post_thought(self, text: str) -> None:
        """Post a ``thought`` event (on Trio), best-effort."""
        try:
            await self.tools.send_event(text, "thought")
        except Exception as exc:
            logger.warning("could not post a thought event: %r", exc)


def current_turn() -> TurnState | None:
    """The turn the running asyncio context belongs to, or None outside a turn."""
    return _TURN.get(None)


def image_blocks(result: ToolResult) -> list[dict[str, Any]] | None:
    """LangChain image blocks of a ``band_read_room_file`` image result, or None."""
    value = result.value
    if result.is_error or result.tool_name != _READ_FILE or not isinstance(value, Mapping):
        return None
    items = value.get("content")
    if not isinstance(items, list) or not items:
        return None
    blocks: list[dict[str, Any]] = []
    for item in items:
        if not (
            isinstance(item, Mapping)
            and item.get("type") == "image"
            and isinstance(item.get("data"), str)
            and isinstance(item.get("mimeType"), str)
        ):
            return None
        blocks.append({"type": "image", "base64": item["data"], "mime_type": item["mimeType"]})
    return blocks


def _is_tool_call(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("type") == "tool_call"
        and "args" in value
        and "id" in value
    )


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


class BandTool(BaseTool):
    """A platform or custom band-trio tool as a LangChain tool (async only).

    Built from one OpenAI-format schema; runs through the current turn's
    ``execute_tool_call`` on Trio. A failed call raises :class:`ToolException`
    inside LangChain, which turns it into ``ToolMessage(status="error")``
    carrying the message band-trio wrote for the model.
    """

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any]) -> BandTool:
        """The tool of one ``{"type": "function", "function": {...}}`` schema."""
        function = schema["function"]
        return cls(
            name=str(function["name"]),
            description=str(function.get("description") or ""),
            args_schema=dict(function.get("parameters") or {"type": "object", "properties": {}}),
            handle_tool_error=True,
        )

    async def ainvoke(
        self,
        input: str | dict[str, Any] | ToolCall,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the tool; with a ``ToolCall`` the result is a ``ToolMessage``."""
        # The call id reaches _arun through a context variable: LangChain runs
        # _arun in a copy of this context and passes it no call id of its own.
        call_id = str(input["id"]) if _is_tool_call(input) else None  # type: ignore[index]
        token = _CALL_ID.set(call_id)
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Band tools run only asynchronously, inside a turn")

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        turn = current_turn()
        if turn is None:
            raise ToolException(f"Error executing {self.name}: no Band turn is running")
        call_id = _CALL_ID.get() or _new_call_id()
        result = await turn.portal.run(turn.execute, self.name, dict(kwargs), call_id)
        if result.is_error:
            raise ToolException(result.text)
        images = image_blocks(result)
        return images if images is not None else result.text


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, Mapping) else ""
            for p in content
        ]
        return "".join(parts)
    return str(content)


class LangChainToolWrapper(BaseTool):
    """A plain LangChain tool given to the adapter, with events and no crash.

    Runs the wrapped tool on the asyncio side as it is; posts the tool events
    on Trio; any exception of the tool (validation included) becomes an error
    ``ToolMessage`` that reaches the model, never an error of the turn.
    """

    inner: BaseTool

    @classmethod
    def wrap(cls, tool: BaseTool) -> LangChainToolWrapper:
        """Wrap ``tool`` (same name, description and argument schema)."""
        return cls(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema,
            return_direct=tool.return_direct,
            inner=tool,
        )

    @property
    def tool_call_schema(self) -> Any:
        """The schema the model sees: the wrapped tool's."""
        return self.inner.tool_call_schema

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("wrapped tools run only asynchronously")

    async def ainvoke(
        self,
        input: str | dict[str, Any] | ToolCall,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the wrapped tool; failures come back as error ``ToolMessage``s."""
        if not _is_tool_call(input):
            return await self.inner.ainvoke(input, config, **kwargs)
        call = cast(Mapping[str, Any], input)
        call_id = str(call["id"] or _new_call_id())
        args = call.get("args")
        args = dict(args) if isinstance(args, Mapping) else {}
        turn = current_turn()
        if turn is not None:
            await turn.portal.run(turn.post_call, self.name, args, call_id)
        try:
            output = await self.inner.ainvoke(
                {**call, "id": call_id, "args": args}, config, **kwargs
            )
        except Exception as exc:
            logger.warning("tool %s failed: %s: %s", self.name, type(exc).__name__, exc)
            output = ToolMessage(
                content=f"Error executing {self.name}: {type(exc).__name__}: {exc}",
                tool_call_id=call_id,
                name=self.name,
                status="error",
            )
        if isinstance(output, ToolMessage):
            text, is_error = _message_text(output.content), output.status == "error"
        else:
            text, is_error = _message_text(output), False
        if turn is not None:
            await turn.portal.run(turn.post_result, self.name, text, call_id, is_error)
        return output


def wrap_tools(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """Plain LangChain tools wrapped for events and error handling."""
    return [
        t if isinstance(t, BandTool | LangChainToolWrapper) else LangChainToolWrapper.wrap(t)
        for t in tools
    ]
