"""One Codex turn on a room's app-server: :class:`CodexTurn`.

The turn listens to the process's server messages, starts the native turn
(``turn/start``) and handles what comes until that turn's
``turn/completed``: tool calls run here (on Trio, in the room's turn), every
other server request gets an explicit answer, reasoning items become
thoughts, Codex's own items become tool events, token usage is added up.
A turn that is cancelled or runs out of time is interrupted
(``turn/interrupt``) and drained, within ``interrupt_timeout``; an app-server
that does not end the turn by then is killed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from band_trio import AgentToolsProtocol, BandError, Emit, PlatformMessage
from band_trio.adapter import ToolOutput, Usage, post_tool_call, post_tool_result, run_tool_call
from band_trio_codex.rpc import (
    METHOD_NOT_FOUND,
    CodexProcess,
    CodexRpcError,
    Incoming,
    TransportEnd,
)

if TYPE_CHECKING:
    from band_trio_codex.adapter import CodexAdapter

__all__ = ["APPROVAL_METHODS", "CodexTurn", "TurnOutcome", "UsageAnchor"]

logger = logging.getLogger("band_trio_codex")

TOOL_CALL: Final = "item/tool/call"
APPROVAL_METHODS: Final = frozenset(
    {
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
        "execCommandApproval",
        "applyPatchApproval",
    }
)
"""The server requests asking for an approval the adapter answers."""
_LEGACY_DECISIONS: Final = {"accept": "approved", "decline": "denied"}
INTERRUPTED: Final = -32001
"""The error code answering a server request that arrives while the turn is being interrupted."""


@attrs.frozen
class TurnOutcome:
    """How a native turn ended.

    Attributes:
        status: ``completed``, ``interrupted``, ``failed`` (Codex's), or
            ``timeout`` / ``transport_closed`` (the adapter's).
        error: Codex's error message, when it gave one.
        error_code: Codex's error type (``codexErrorInfo``), when it gave one.
    """

    status: str
    error: str | None = None
    error_code: str | None = None


@attrs.define
class UsageAnchor:
    """A thread's token total before the current turn.

    Codex reports a thread's running total. A new thread starts from zero
    (``known_total``); a thread resumed by a new process has an unknown
    total, so the first report of a turn is anchored by its last model
    call's usage: totals are never counted twice and a delta is never negative.
    """

    known_total: bool = False
    total: Usage = attrs.field(factory=Usage)


def _counts(value: Any) -> Usage:
    if not isinstance(value, Mapping):
        return Usage()
    return Usage.reported(
        input_tokens=value.get("inputTokens"),
        output_tokens=_int(value.get("outputTokens")) + _int(value.get("reasoningOutputTokens")),
        cache_read_tokens=value.get("cachedInputTokens"),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=max(0, a.input_tokens - b.input_tokens),
        output_tokens=max(0, a.output_tokens - b.output_tokens),
        cache_read_tokens=max(0, a.cache_read_tokens - b.cache_read_tokens),
        cache_write_tokens=max(0, a.cache_write_tokens - b.cache_write_tokens),
    )


def _content_items(output: ToolOutput) -> list[dict[str, str]]:
    if output.images:
        return [{"type": "inputImage", "imageUrl": image.data_url} for image in output.images]
    return [{"type": "inputText", "text": output.text}]


def _reasoning_text(item: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for key in ("summary", "content"):
        value = item.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Sequence):
            parts += [p if isinstance(p, str) else str(p.get("text", "")) for p in value if p]
        if parts:
            break
    return "\n".join(p for p in parts if p.strip())


def _native_call(item: Mapping[str, Any]) -> tuple[str, dict[str, Any], str, bool] | None:
    """A Codex item of its own tools as (name, args, output, is_error)."""
    kind = item.get("type")
    if kind == "commandExecution":
        exit_code = item.get("exitCode")
        return (
            "command_execution",
            {"command": item.get("command")},
            str(item.get("aggregatedOutput") or ""),
            exit_code not in (0, None) or item.get("status") == "failed",
        )
    if kind == "fileChange":
        changes = item.get("changes") or []
        paths = [c.get("path") for c in changes if isinstance(c, Mapping)]
        return (
            "file_change",
            {"paths": paths},
            str(item.get("status", "")),
            item.get("status") == "failed",
        )
    if kind == "mcpToolCall":
        name = f"{item.get('server')}.{item.get('tool')}"
        error = item.get("error")
        output = json.dumps(error if error else item.get("result"), default=str)
        return (name, dict(item.get("arguments") or {}), output, bool(error))
    if kind == "webSearch":
        return ("web_search", {"query": item.get("query")}, "", False)
    return None


class CodexTurn:
    """One turn of a room on its app-server.

    Args:
        adapter: the adapter (features, custom tools, config).
        tools: the turn's tools object.
        process: the room's app-server, holding the thread.
        anchor: the thread's usage anchor (updated as totals arrive).
    """

    def __init__(
        self,
        adapter: CodexAdapter,
        tools: AgentToolsProtocol,
        process: CodexProcess,
        anchor: UsageAnchor,
    ) -> None:
        self.adapter = adapter
        self.tools = tools
        self.process = process
        self.anchor = anchor
        self.thread_id = process.thread_id
        self.turn_id: str | None = None
        self.usage = Usage()
        self.answered = 0
        self.killed = False
        self.sender: PlatformMessage | None = None  # whose message the turn answers
        self._start_total: Usage | None = anchor.total if anchor.known_total else None
        self._error: tuple[str, str | None] | None = None
        self._start_error: BandError | None = None

    async def run(self, items: list[dict[str, Any]], seconds: float) -> TurnOutcome:
        """Start the native turn and handle it to its end (or ``seconds`` pass).

        Raises:
            BandError: ``turn/start`` failed (a JSON-RPC error, no answer in time,
                the process ended).
            trio.Cancelled: the turn was cancelled (Codex was interrupted first).
        """
        process = self.process
        send, receive = process.listen()
        outcome: TurnOutcome | None = None
        try:
            with trio.move_on_after(seconds) as deadline:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._start, items, nursery.cancel_scope)
                    outcome = await self._consume(receive)
                    nursery.cancel_scope.cancel()
            if self._start_error is not None:
                raise self._start_error
            if outcome is None and deadline.cancelled_caught:
                await self._stop(receive)
                return TurnOutcome("timeout")
            assert outcome is not None
            return outcome
        except BaseException as exc:
            if outcome is None and not isinstance(exc, CodexRpcError):
                with trio.CancelScope(shield=True):
                    await self._stop(receive)
            raise
        finally:
            process.unlisten(send)
            with trio.CancelScope(shield=True):
                await self._refuse_rest(receive)

    async def _start(self, items: list[dict[str, Any]], scope: trio.CancelScope) -> None:
        # A failure ends the turn from here, kept for run() to raise outside
        # the nursery (which would wrap it in a group).
        try:
            result = await self.process.request(
                "turn/start", {"threadId": self.thread_id, "input": items}
            )
            turn = result.get("turn") if isinstance(result, Mapping) else None
            ident = turn.get("id") if isinstance(turn, Mapping) else None
            if not isinstance(ident, str):
                raise CodexRpcError(None, "Codex did not give the turn an id")
        except BandError as exc:
            self._start_error = exc
            scope.cancel()
            return
        self.turn_id = ident

    def _ours(self, message: Incoming) -> bool:
        thread = message.params.get("threadId")
        if isinstance(thread, str) and thread != self.thread_id:
            return False
        turn = message.turn_id
        return turn is None or self.turn_id is None or turn == self.turn_id

    async def _consume(
        self, receive: trio.MemoryReceiveChannel[Incoming | TransportEnd]
    ) -> TurnOutcome:
        while True:
            message = await receive.receive()
            if isinstance(message, TransportEnd):
                return TurnOutcome("transport_closed")
            if message.id is not None:
                await self._answer(message)
                continue
            if not self._ours(message):
                continue
            if message.method == "turn/completed":
                if self.turn_id is None:
                    continue  # not ours: ours has not started yet
                return self._completed(message.params)
            await self._notification(message)

    def _completed(self, params: Mapping[str, Any]) -> TurnOutcome:
        turn = params.get("turn")
        if not isinstance(turn, Mapping):
            turn = {}
        status = str(turn.get("status", "completed"))
        error = turn.get("error")
        if isinstance(error, Mapping):
            info = error.get("codexErrorInfo")
            code = info.get("type") if isinstance(info, Mapping) else info
            return TurnOutcome(
                status, str(error.get("message", "")), None if code is None else str(code)
            )
        if self._error is not None and status != "completed":
            return TurnOutcome(status, self._error[0], self._error[1])
        return TurnOutcome(status)

    # ------------------------------------------------------------------ requests

    async def _answer(self, message: Incoming) -> None:
        assert message.id is not None
        process = self.process
        if message.method == TOOL_CALL and self._ours(message):
            params = message.params
            name = str(params.get("tool", ""))
            call_id = str(params.get("callId", ""))
            adapter = self.adapter
            output = await run_tool_call(
                self.tools,
                name,
                params.get("arguments"),
                call_id,
                custom_tools=adapter.custom_tools,
                post_events=adapter.features.emits(Emit.TOOL_CALLS),
            )
            await process.respond(
                message.id, {"contentItems": _content_items(output), "success": not output.is_error}
            )
        elif message.method in APPROVAL_METHODS and self._ours(message):
            assert self.sender is not None
            decision = await self.adapter.approval_decision(self.tools, message, self.sender)
            if message.method in ("execCommandApproval", "applyPatchApproval"):
                decision = _LEGACY_DECISIONS[decision]
            await process.respond(message.id, {"decision": decision})
        else:
            await process.respond_error(
                message.id, METHOD_NOT_FOUND, f"band-trio does not handle {message.method}"
            )
        self.answered += 1

    # ------------------------------------------------------------------ notifications

    async def _notification(self, message: Incoming) -> None:
        params = message.params
        features = self.adapter.features
        if message.method == "thread/tokenUsage/updated":
            self._count(params.get("tokenUsage"))
        elif message.method == "error":
            error = params.get("error")
            if not isinstance(error, Mapping):
                error = {}
            if not params.get("willRetry"):
                info = error.get("codexErrorInfo")
                code = info.get("type") if isinstance(info, Mapping) else info
                self._error = (str(error.get("message", "")), None if code is None else str(code))
        elif message.method == "item/completed":
            item = params.get("item")
            if not isinstance(item, Mapping):
                return
            kind = item.get("type")
            if kind == "reasoning":
                text = _reasoning_text(item)
                if text:
                    await self.adapter.post_thought(self.tools, text)
            elif kind == "plan" and features.emits(Emit.TASK_EVENTS):
                text = str(item.get("text", "")).strip()
                if text:
                    try:
                        await self.tools.send_event(text, "task", {"codex_item_id": item.get("id")})
                    except Exception as exc:
                        logger.warning("could not post Codex's plan: %r", exc)
            elif kind == "agentMessage":
                logger.debug("Codex's final text (not posted): %s", item.get("text"))
            elif features.emits(Emit.TOOL_CALLS):
                native = _native_call(item)
                if native is not None:
                    name, args, output, is_error = native
                    ident = str(item.get("id", ""))
                    await post_tool_call(self.tools, name, args, ident)
                    await post_tool_result(self.tools, name, output, ident, is_error=is_error)

    def _count(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        total = _counts(usage.get("total"))
        if self._start_total is None:
            # A resumed thread: its total before this turn is unknown. The
            # last model call is this turn's, so the total before it is the anchor.
            self._start_total = _minus(total, _counts(usage.get("last")))
        self.usage = _minus(total, self._start_total)
        self.anchor.total = total
        self.anchor.known_total = True

    # ------------------------------------------------------------------ stopping

    async def _stop(self, receive: trio.MemoryReceiveChannel[Incoming | TransportEnd]) -> None:
        """Interrupt the native turn and read to its end, within
        ``interrupt_timeout``; kill the app-server when it does not comply."""
        process = self.process
        ended = False
        if not process.broken and self.turn_id is not None:
            with trio.move_on_after(self.adapter.config.interrupt_timeout):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._interrupt)
                    ended = await self._drain(receive)
                    nursery.cancel_scope.cancel()
        if not ended and not process.broken:
            logger.warning("room %s: Codex did not end its turn; killed", process.room_id)
            self.killed = True
            process.kill()

    async def _interrupt(self) -> None:
        try:
            await self.process.request(
                "turn/interrupt", {"threadId": self.thread_id, "turnId": self.turn_id}
            )
        except BandError as exc:
            logger.warning("room %s: turn/interrupt failed: %r", self.process.room_id, exc)

    async def _drain(self, receive: trio.MemoryReceiveChannel[Incoming | TransportEnd]) -> bool:
        while True:
            message = await receive.receive()
            if isinstance(message, TransportEnd):
                return False
            if message.id is not None:
                await self.process.respond_error(
                    message.id, INTERRUPTED, "the turn was interrupted"
                )
                self.answered += 1
            elif message.method == "turn/completed" and self._ours(message):
                return True
            elif message.method == "thread/tokenUsage/updated":
                self._count(message.params.get("tokenUsage"))

    async def _refuse_rest(
        self, receive: trio.MemoryReceiveChannel[Incoming | TransportEnd]
    ) -> None:
        with receive:
            while True:
                try:
                    message = receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    return
                if isinstance(message, Incoming) and message.id is not None:
                    await self.process.respond_error(message.id, INTERRUPTED, "the turn has ended")
                    self.answered += 1
