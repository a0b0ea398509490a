"""Band tools as pydantic-ai tools, and the tool events of a turn.

The tools a model sees are built from the schemas the turn's tools object
renders (capabilities and filters applied, numeric bounds kept), one
``pydantic_ai.Tool`` each. They are ``sequential``: pydantic-ai runs the tool
calls of one response concurrently unless a tool is a barrier, and posts
must reach the room in the order the model gave them. The arguments are not
validated by pydantic-ai: band-trio's dispatch validates them and answers
with the same texts as every adapter's.

A tool does not hold a turn: it finds the turn it runs in through a context
variable that :class:`AgentTurn` sets on the asyncio side of each turn (tasks
pydantic-ai starts inherit it). So one tool set serves every turn, and a run
abandoned after a cancel can never act on a later turn (its portal is closed).

:class:`BandEvents`, a pydantic-ai capability given to every run, posts a
``tool_call`` event before each function tool runs and a ``tool_result``
event after it (with ``Emit.TOOL_CALLS``): the model's tool call id, the
result as the JSON text the model was given, and ``is_error`` for every
failure (a failed Band tool, an exception of a plain tool, arguments that
failed validation and were sent back for a retry). An exception of a plain
tool reaches the model as a failed tool return, never as an error of the turn.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import attrs
import pydantic
import pydantic_core
from band_trio_asyncio import TrioPortal
from pydantic_ai import ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailedError, ToolRetryError
from pydantic_ai.messages import BinaryContent, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import ToolDefinition

from band_trio import AgentToolsProtocol, Emit
from band_trio.adapter import (
    CustomToolSet,
    ToolOutput,
    Usage,
    image_blocks_placeholder,
    post_thought,
    post_tool_call,
    post_tool_result,
    run_tool_call,
    tool_exception_result,
)

__all__ = [
    "AgentTurn",
    "BandEvents",
    "LoopExecutor",
    "band_tool",
    "current_turn",
    "image_contents",
]

logger = logging.getLogger("band_trio_pydantic_ai")

NO_REPLY_TOOL: Final = "band_no_reply"
SEND_MESSAGE_TOOL: Final = "band_send_message"

_TURN: contextvars.ContextVar[AgentTurn] = contextvars.ContextVar("band_trio_pydantic_ai_turn")


@attrs.define(eq=False)
class AgentTurn:
    """What the asyncio side of one turn needs: the turn's tools and portal.

    Created on Trio for each turn; :meth:`enter` makes it the current turn of
    the asyncio task running the agent (and of every task pydantic-ai starts
    from it).

    Attributes:
        tools: the turn's room-bound tools object.
        portal: calls into the turn's Trio nursery.
        emit: the adapter's emit flags.
        custom_tools: typed custom tools to dispatch with the platform tools.
        usage: token usage summed over the turn's model responses.
        replied: a ``band_send_message`` call of the turn succeeded.
        declined: a ``band_no_reply`` call of the current batch succeeded.
        failed: a tool call of the current batch failed.
    """

    tools: AgentToolsProtocol
    portal: TrioPortal
    emit: frozenset[Emit]
    custom_tools: CustomToolSet | None = None
    usage: Usage = attrs.field(factory=Usage)
    replied: bool = False
    declined: bool = False
    failed: bool = False

    def enter(self) -> None:
        """Make this the current turn of the running asyncio context."""
        _TURN.set(self)

    def new_batch(self) -> None:
        """Forget the previous batch's outcome (before a response's calls run)."""
        self.declined = self.failed = False

    @property
    def emits_tool_calls(self) -> bool:
        """``tool_call``/``tool_result`` events are posted."""
        return Emit.TOOL_CALLS in self.emit

    # -- Trio side (called through the portal)

    async def dispatch(self, name: str, args: Mapping[str, Any]) -> ToolOutput:
        """Run a platform or custom tool on Trio; never raises (its events
        are posted by :class:`BandEvents`, as for every tool)."""
        return await run_tool_call(
            self.tools, name, args, "", custom_tools=self.custom_tools, post_events=False
        )

    async def post_call(self, name: str, args: Mapping[str, Any], call_id: str) -> None:
        """Post a ``tool_call`` event (on Trio)."""
        await post_tool_call(self.tools, name, args, call_id)

    async def post_result(self, name: str, output: str, call_id: str, is_error: bool) -> None:
        """Post a ``tool_result`` event (on Trio)."""
        await post_tool_result(self.tools, name, output, call_id, is_error=is_error)

    async def post_thought(self, text: str) -> None:
        """Post a ``thought`` event (on Trio), best-effort."""
        await post_thought(self.tools, text)


def current_turn() -> AgentTurn | None:
    """The turn the running asyncio context belongs to, or None outside a turn."""
    return _TURN.get(None)


def image_contents(output: ToolOutput) -> list[BinaryContent] | None:
    """The images a tool output shows the model, as pydantic-ai content, or None."""
    if not output.images:
        return None
    try:
        return [
            BinaryContent(data=base64.b64decode(i.data, validate=True), media_type=i.mime_type)
            for i in output.images
        ]
    except ValueError:
        return None


def band_tool(name: str, description: str, parameters: Mapping[str, Any]) -> Tool[Any]:
    """The pydantic-ai tool of one Band (platform or custom) tool.

    It runs, on Trio, through the current turn's ``execute_tool_call``; a
    failed call raises :class:`~pydantic_ai.ToolFailed` with band-trio's text,
    which the model gets as a failed tool return (no retry budget spent).
    """

    async def call(**kwargs: Any) -> Any:
        turn = current_turn()
        if turn is None:
            raise ToolFailed(f"Error executing {name}: no Band turn is running")
        result = await turn.portal.run(turn.dispatch, name, kwargs)
        if result.is_error:
            raise ToolFailed(result.text)
        if name == NO_REPLY_TOOL:
            turn.declined = True
        elif name == SEND_MESSAGE_TOOL:
            turn.replied = True
        images = image_contents(result)
        return images if images is not None else result.text

    schema = dict(parameters) if parameters else {"type": "object", "properties": {}}
    return Tool.from_schema(call, name, description, schema, sequential=True)


# --------------------------------------------------------------------------- threads


class LoopExecutor(concurrent.futures.Executor):
    """Hands pydantic-ai's synchronous work to the running loop's default executor.

    pydantic-ai runs a synchronous tool (and other sync callbacks) in a worker
    thread of its own choosing, by default threads that no one joins; given
    this executor (``UseThreadExecutor(LoopExecutor())``), it runs them on the
    bridge loop's default executor instead: the bridge's bounded executor,
    whose threads show in its statistics and end when the bridge closes.
    Call :meth:`submit` on the loop thread (pydantic-ai does).
    """

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args, **kwargs)`` on the loop's default executor."""
        loop = asyncio.get_running_loop()
        result: concurrent.futures.Future[Any] = concurrent.futures.Future()
        job = loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

        def settle(done: asyncio.Future[Any]) -> None:
            if not result.set_running_or_notify_cancel():
                return  # cancelled meanwhile
            if done.cancelled():
                result.cancel()
            elif (error := done.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(done.result())

        def forward_cancel(future: concurrent.futures.Future[Any]) -> None:
            if future.cancelled():
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    loop.call_soon_threadsafe(job.cancel)

        job.add_done_callback(settle)
        result.add_done_callback(forward_cancel)
        return result


# --------------------------------------------------------------------------- events


def _output_text(value: object) -> str:
    """The JSON text of a tool's return value (a string as it is)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and all(isinstance(v, BinaryContent) for v in value):
        return image_blocks_placeholder(len(value))
    try:
        return pydantic_core.to_json(value, fallback=str).decode()
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        return str(value)


def _retry_text(part: object) -> str:
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    content = getattr(part, "content", None)
    return content if isinstance(content, str) else _output_text(content)


def _failure_text(name: str, error: BaseException) -> str:
    """The text the model gets for a failed call (as the other adapters say it)."""
    if isinstance(error, ToolFailed | ModelRetry):
        return error.message
    if isinstance(error, ToolFailedError):
        return error.tool_failed.model_response_str(wrap_if_error=False)
    if isinstance(error, ToolRetryError):
        return _retry_text(error.tool_retry)
    if isinstance(error, pydantic.ValidationError):
        details = error.errors(include_url=False, include_context=False)
        return f"Invalid arguments for {name}: {_output_text(details)}"
    return tool_exception_result(name, error).text


_NOT_FAILURES: Final = (ToolFailed, ToolFailedError, ModelRetry, ToolRetryError)


@dataclass
class BandEvents(AbstractCapability[Any]):
    """Posts the tool events of one turn and keeps plain tools from failing it.

    Given to each run by the adapter. Output tools (structured output) are
    not tool calls of the agent and post nothing.
    """

    turn: AgentTurn

    async def wrap_tool_validate(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Post a call whose arguments failed validation, with its error."""
        try:
            return await handler(args)
        except (pydantic.ValidationError, ModelRetry, ToolRetryError, ToolFailed) as exc:
            if tool_def.kind == "function":
                self.turn.failed = True
                await self._post(call, _failure_text(call.tool_name, exc), is_error=True)
            raise

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Post the call, run it, post its result; an exception becomes a failed return."""
        if tool_def.kind != "function":
            return await handler(args)
        turn = self.turn
        if turn.emits_tool_calls:
            await turn.portal.run(
                turn.post_call, call.tool_name, call.args_as_dict(), call.tool_call_id
            )
        try:
            result = await handler(args)
        except _NOT_FAILURES as exc:
            turn.failed = True
            await self._post_result(call, _failure_text(call.tool_name, exc), is_error=True)
            raise
        except Exception as exc:
            turn.failed = True
            text = _failure_text(call.tool_name, exc)
            logger.warning("tool %s failed: %s: %s", call.tool_name, type(exc).__name__, exc)
            await self._post_result(call, text, is_error=True)
            raise ToolFailed(text) from exc
        await self._post_result(call, _output_text(result), is_error=False)
        return result

    async def _post(self, call: ToolCallPart, text: str, *, is_error: bool) -> None:
        turn = self.turn
        if turn.emits_tool_calls:
            await turn.portal.run(
                turn.post_call, call.tool_name, call.args_as_dict(), call.tool_call_id
            )
        await self._post_result(call, text, is_error=is_error)

    async def _post_result(self, call: ToolCallPart, text: str, *, is_error: bool) -> None:
        turn = self.turn
        if turn.emits_tool_calls:
            await turn.portal.run(
                turn.post_result, call.tool_name, text, call.tool_call_id, is_error
            )
