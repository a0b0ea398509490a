"""One room's Claude client: the CLI process, the room's in-process MCP
server, the conversation id, and the turn that runs on them.

The platform tools reach Claude through an SDK MCP server of the room's own
(``mcp__band__band_*``): no port, nothing another process can dial. Its
handlers do not run the tools themselves: they hand each call to the room's
running turn, which runs it in its own task (the turn's cancel scope, ledger
and context) after posting the ``tool_call`` event of the call. Between turns
a call is refused.

claude-agent-sdk runs its background work (the reader, the MCP bridge) as
Trio system tasks, so the client is opened in the turn that first needs it
and closed by whoever ends it (a later turn, the idle timer, ``on_cleanup``,
``cleanup_all``); closing is bounded: the CLI's input is ended and its output
read to the end (so the SDK's reader runs out and nothing is left for the
garbage collector), and a CLI still running after ``close_timeout`` is killed
with its process group.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import trio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    Message,
    ResultMessage,
    SdkMcpTool,
    ToolUseBlock,
    create_sdk_mcp_server,
    tool,
)

from band_trio.adapter import ToolOutput, ToolSchema, kill_process_group

__all__ = ["MCP_PREFIX", "MCP_SERVER", "RoomClient", "ToolRunner", "strip_prefix"]

logger = logging.getLogger("band_trio_claude")

MCP_SERVER: Final = "band"
"""The name of each room's in-process MCP server."""
MCP_PREFIX: Final = f"mcp__{MCP_SERVER}__"
"""What Claude puts before the name of a Band tool."""

ANNOUNCE_WAIT: Final = 1.0
"""Seconds an MCP call waits for the message announcing it before it runs anyway."""

OUTPUT_END_WAIT: Final = 2.0
"""Seconds a closing CLI's output may take to end after it was killed."""

ToolRunner = Callable[[str, Mapping[str, Any]], Awaitable[ToolOutput]]
"""Runs one tool call in the turn and returns its result (never raises)."""


def strip_prefix(name: str) -> str:
    """A Band tool's own name from Claude's ``mcp__band__<name>``."""
    return name.removeprefix(MCP_PREFIX)


def _mcp_content(output: ToolOutput) -> list[dict[str, Any]]:
    """The MCP content of a tool call's output: its images, else the text
    every adapter gives the model."""
    if output.images:
        return [{"type": "image", "data": i.data, "mimeType": i.mime_type} for i in output.images]
    return [{"type": "text", "text": output.text}]


@attrs.define(eq=False)
class _Call:
    """One MCP tool call waiting for the turn to run it."""

    name: str
    args: dict[str, Any]
    done: trio.Event = attrs.field(factory=trio.Event)
    answer: dict[str, Any] | None = None

    def settle(self, answer: dict[str, Any]) -> None:
        if not self.done.is_set():
            self.answer = answer
            self.done.set()


def _refusal(name: str, why: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": f"Error executing {name}: {why}"}],
        "is_error": True,
    }


Event = Message | _Call


class RoomClient:
    """The Claude client of one room and the turn that uses it.

    Args:
        room_id: the room.
        tool_schemas: the tools to serve, by their Band names (``band_send_message``).
        options: the client's options, without the MCP server (added here).
        session_id: the Claude conversation to resume, or None.
    """

    def __init__(
        self,
        room_id: str,
        tool_schemas: Sequence[ToolSchema],
        options: ClaudeAgentOptions,
        session_id: str | None,
    ) -> None:
        self.room_id = room_id
        self.session_id = session_id
        self.tool_names = tuple(schema.name for schema in tool_schemas)
        self.broken = False
        self._events: trio.MemorySendChannel[Event] | None = None
        server = create_sdk_mcp_server(
            MCP_SERVER, tools=[self._mcp_tool(schema) for schema in tool_schemas]
        )
        options.mcp_servers = {MCP_SERVER: server}
        if session_id is not None:
            options.resume = session_id
        self.client = ClaudeSDKClient(options)
        self.pid: int | None = None
        self._stream: AsyncIterator[Message] | None = None

    def _mcp_tool(self, schema: ToolSchema) -> SdkMcpTool[Any]:
        name = schema.name

        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            return await self._hand_over(name, args)

        return tool(name, schema.description, dict(schema.input_schema))(handler)

    async def _hand_over(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Give a call to the running turn and wait for its answer."""
        events = self._events
        if events is None:
            return _refusal(name, "no turn is running in this room; end without tool calls.")
        call = _Call(name, dict(args))
        try:
            events.send_nowait(call)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            return _refusal(name, "the turn has ended; end without further tool calls.")
        await call.done.wait()
        assert call.answer is not None
        return call.answer

    # ------------------------------------------------------------------ life

    async def open(self) -> None:
        """Start the CLI (raises what the SDK raises; the client is then closed)."""
        await self.client.connect()
        transport = getattr(self.client, "_transport", None)
        process = getattr(transport, "_process", None)
        pid = getattr(process, "pid", None)
        self.pid = pid if isinstance(pid, int) else None

    def kill(self) -> None:
        """SIGKILL the CLI (its process group when it leads one); its
        conversation id is kept for a later resume."""
        self.broken = True
        if self.pid is not None and self._alive():
            kill_process_group(self.pid)

    def _alive(self) -> bool:
        transport = getattr(self.client, "_transport", None)
        process = getattr(transport, "_process", None)
        return process is not None and getattr(process, "returncode", 0) is None

    async def close(self, grace: float) -> None:
        """End the CLI's input and read its output to the end (it exits), then
        disconnect; a CLI still running after ``grace`` seconds is killed.
        Shielded, bounded.

        Reading to the end lets the SDK's reader of the CLI's output run out
        by itself: a reader cancelled halfway would be left to the garbage
        collector, which finalizes it outside any task.
        """
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:

                async def watchdog() -> None:
                    await trio.sleep(grace)
                    if self._alive():
                        logger.warning(
                            "room %s: the Claude CLI did not exit within %ss; killed",
                            self.room_id,
                            grace,
                        )
                        self.kill()

                nursery.start_soon(watchdog)
                with trio.move_on_after(grace + OUTPUT_END_WAIT):
                    await self._read_to_end()
                try:
                    await self.client.disconnect()
                except Exception as exc:
                    logger.warning("room %s: closing the Claude CLI failed: %r", self.room_id, exc)
                nursery.cancel_scope.cancel()

    async def _read_to_end(self) -> None:
        transport = getattr(self.client, "_transport", None)
        if transport is None:  # never connected
            return
        stream, self._stream = self._stream, None
        try:
            await transport.end_input()
            if stream is None:
                stream = aiter(self.client.receive_messages())
            while True:
                await anext(stream)
        except StopAsyncIteration:
            pass
        except Exception as exc:  # the CLI's exit status, a broken pipe
            logger.debug("room %s: the Claude CLI's output ended: %r", self.room_id, exc)

    # ------------------------------------------------------------------ turns

    async def converse(
        self,
        prompt: str,
        on_message: Callable[[Message], Awaitable[None]],
        run_tool: ToolRunner,
    ) -> ResultMessage | None:
        """Send ``prompt`` and handle what comes back until the turn's result.

        Messages reach ``on_message`` in order; each MCP call runs (through
        ``run_tool``) only once the message announcing it was handled, so a
        ``tool_call`` event always precedes the tool's effects.

        Returns:
            The turn's result, or None when the CLI's output ended first.
        """
        send, receive = trio.open_memory_channel[Event](math.inf)
        self._events = send
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward, send.clone())
                await self.client.query(prompt)
                return await self._consume(receive, on_message, run_tool)
        finally:
            self._events = None
            send.close()
            self._refuse_pending(receive, "the turn has ended")

    async def drain(self) -> ResultMessage | None:
        """Read the CLI's output to the end of the turn in flight (after an
        interrupt), refusing the tool calls it still makes."""
        send, receive = trio.open_memory_channel[Event](math.inf)
        self._events = send
        result: ResultMessage | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward, send.clone())
                with receive:
                    async for event in receive:
                        if isinstance(event, _Call):
                            event.settle(_refusal(event.name, "the turn was interrupted."))
                        elif isinstance(event, ResultMessage):
                            result = event
                            break
                nursery.cancel_scope.cancel()
            return result
        finally:
            self._events = None
            send.close()

    async def _forward(self, send: trio.MemorySendChannel[Event]) -> None:
        """Move the CLI's messages into the turn's channel, up to the result.

        One iterator of the SDK's messages serves the client's whole life:
        it is never dropped half-read (an async generator dropped unfinished
        is finalized behind Trio's back). Cancellation ends it, and the next
        read starts another.
        """
        async with send:
            while True:
                if self._stream is None:
                    self._stream = aiter(self.client.receive_messages())
                try:
                    message = await anext(self._stream)
                except StopAsyncIteration:
                    self._stream = None
                    self.broken = True  # the CLI's output ended
                    return
                except BaseException:
                    self._stream = None
                    raise
                await send.send(message)
                if isinstance(message, ResultMessage):
                    return

    async def _consume(
        self,
        receive: trio.MemoryReceiveChannel[Event],
        on_message: Callable[[Message], Awaitable[None]],
        run_tool: ToolRunner,
    ) -> ResultMessage | None:
        announced: list[tuple[str, str]] = []  # (name, input JSON) of tool uses seen, not run
        waiting: list[_Call] = []

        async def run(call: _Call) -> None:
            output = await run_tool(call.name, call.args)
            call.settle({"content": _mcp_content(output), "is_error": output.is_error})

        with receive:
            while True:
                try:
                    if waiting:
                        with trio.move_on_after(ANNOUNCE_WAIT) as waited:
                            event = await receive.receive()
                        if waited.cancelled_caught:
                            # Not announced after all (a message the SDK did
                            # not parse, say): run it rather than stall Claude.
                            for call in waiting:
                                await run(call)
                            waiting.clear()
                            continue
                    else:
                        event = await receive.receive()
                except trio.EndOfChannel:
                    break
                if isinstance(event, _Call):
                    key = (event.name, _key(event.args))
                    if key in announced:
                        announced.remove(key)
                        await run(event)
                    else:
                        waiting.append(event)
                    continue
                await on_message(event)
                if isinstance(event, AssistantMessage):
                    for block in event.content:
                        if isinstance(block, ToolUseBlock) and block.name.startswith(MCP_PREFIX):
                            announced.append((strip_prefix(block.name), _key(block.input)))
                    for call in list(waiting):
                        key = (call.name, _key(call.args))
                        if key in announced:
                            announced.remove(key)
                            waiting.remove(call)
                            await run(call)
                if isinstance(event, ResultMessage):
                    self.session_id = event.session_id or self.session_id
                    return event
        for call in waiting:
            await run(call)
        return None

    @staticmethod
    def _refuse_pending(receive: trio.MemoryReceiveChannel[Event], why: str) -> None:
        while True:
            try:
                event = receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return
            if isinstance(event, _Call):
                event.settle(_refusal(event.name, why + "."))


def _key(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)
