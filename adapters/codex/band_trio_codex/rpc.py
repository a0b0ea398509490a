"""One ``codex app-server`` child process and its JSON-RPC connection.

The wire is newline-delimited JSON on the child's stdin and stdout, without a
``"jsonrpc"`` member: requests ``{"id", "method", "params"}``, answers
``{"id", "result"}`` or ``{"id", "error": {"code", "message"}}``,
notifications ``{"method", "params"}``; both sides send requests.

:class:`CodexProcess` starts the child in a process group of its own, and one
reader task reads its output for the child's whole life. Answers to our
requests go to their pending slot (an id mapped to an event and a value);
every request has a deadline. The server's requests and notifications go to
the turn listening (:meth:`CodexProcess.listen`) through a bounded channel:
when the turn falls behind, the reader stops reading and the server waits
(back-pressure), nothing is dropped. With no turn listening, a server request
gets an explicit error answer.

The reader is a Trio system task (the process outlives the turn that opened
it); it ends when the child's output ends, which :meth:`CodexProcess.close`
brings about in bounded steps: stdin closed, SIGTERM, SIGKILL of the group.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from band_trio import BandError
from band_trio.adapter import kill_process_group

__all__ = [
    "METHOD_NOT_FOUND",
    "NO_TURN",
    "CodexProcess",
    "CodexRequestTimeout",
    "CodexRpcError",
    "CodexTransportClosed",
    "Incoming",
    "TransportEnd",
]

logger = logging.getLogger("band_trio_codex")

METHOD_NOT_FOUND: Final = -32601
"""The JSON-RPC error code of a server request the adapter does not handle."""
NO_TURN: Final = -32000
"""The error code answering a server request that arrives with no turn running."""


class CodexRpcError(BandError):
    """The app-server answered a request with an error.

    Attributes:
        code: the JSON-RPC error code.
        rpc_message: the app-server's message.
    """

    def __init__(self, code: object, message: str) -> None:
        super().__init__(f"Codex JSON-RPC error {code}: {message}")
        self.code = code
        self.rpc_message = message


class CodexRequestTimeout(BandError):
    """A request to the app-server was not answered within its deadline."""


class CodexTransportClosed(BandError):
    """The app-server's connection ended (the process exited or was closed)."""


@attrs.frozen
class Incoming:
    """A server request (``id`` set) or notification from the app-server.

    Attributes:
        method: the method.
        params: its parameters (an empty mapping when absent).
        id: the request id, or None for a notification.
    """

    method: str
    params: Mapping[str, Any]
    id: int | str | None = None

    @property
    def turn_id(self) -> str | None:
        """The turn the message belongs to, when it says."""
        value = self.params.get("turnId")
        if isinstance(value, str):
            return value
        turn = self.params.get("turn")
        if isinstance(turn, Mapping) and isinstance(turn.get("id"), str):
            return str(turn["id"])
        return None


@attrs.frozen
class TransportEnd:
    """The app-server's output ended: no more messages will come."""


@attrs.define(eq=False)
class _Slot:
    done: trio.Event = attrs.field(factory=trio.Event)
    message: Mapping[str, Any] | None = None

    def settle(self, message: Mapping[str, Any] | None) -> None:
        if not self.done.is_set():
            self.message = message
            self.done.set()


class CodexProcess:
    """A ``codex app-server`` child of one room.

    Args:
        room_id: the room (for logs).
        argv: the command line.
        env: the child's whole environment.
        cwd: its working directory (None: ours).
        request_timeout: the default deadline of a request, in seconds.
        max_line_bytes: the longest line of output accepted.
        event_buffer: server messages buffered for a turn before reading stops.
        stderr_path: a file for the child's standard error (None: discarded).
    """

    def __init__(
        self,
        room_id: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path | None,
        *,
        request_timeout: float,
        max_line_bytes: int,
        event_buffer: int,
        stderr_path: Path | None = None,
    ) -> None:
        self.room_id = room_id
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.request_timeout = request_timeout
        self.max_line_bytes = max_line_bytes
        self.event_buffer = event_buffer
        self.stderr_path = stderr_path
        self.process: trio.Process | None = None
        self.thread_id: str | None = None
        self.broken = False  # exited, killed, or its output ended
        self.reader_done = trio.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Slot] = {}
        self._write_lock = trio.Lock()
        self._sink: trio.MemorySendChannel[Incoming | TransportEnd] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id (None before :meth:`open`)."""
        return None if self.process is None else self.process.pid

    @property
    def pending_requests(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._pending)

    # ------------------------------------------------------------------ life

    async def open(self) -> None:
        """Start the child in its own process group and its reader task.

        Raises:
            OSError: the command could not be started.
        """
        stderr: Any = subprocess.DEVNULL
        opened = None
        if self.stderr_path is not None:
            opened = stderr = self.stderr_path.open("ab")
        try:
            self.process = await trio.lowlevel.open_process(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=self.env,
                cwd=None if self.cwd is None else str(self.cwd),
                start_new_session=True,
            )
        finally:
            if opened is not None:
                opened.close()
        trio.lowlevel.spawn_system_task(self._read, name=f"codex reader {self.room_id}")

    def alive(self) -> bool:
        """The child has not exited."""
        return self.process is not None and self.process.returncode is None

    def kill(self) -> None:
        """SIGKILL the child's process group; its output then ends."""
        self.broken = True
        if self.process is not None and self.process.returncode is None:
            kill_process_group(self.process.pid)

    async def close(self, grace: float) -> None:
        """End the child in bounded steps: close its input and wait ``grace``
        seconds, SIGTERM its group and wait ``grace`` more, SIGKILL the group.
        Then wait (bounded) for the reader to end. Shielded."""
        process = self.process
        if process is None:
            return
        self.broken = True
        with trio.CancelScope(shield=True):
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                if process.stdin is not None:
                    await process.stdin.aclose()
            with trio.move_on_after(grace):
                await process.wait()
            if process.returncode is None:
                logger.info(
                    "room %s: the app-server ignored its closed input; SIGTERM", self.room_id
                )
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGTERM)
                with trio.move_on_after(grace):
                    await process.wait()
            if process.returncode is None:
                logger.warning("room %s: the app-server ignored SIGTERM; killed", self.room_id)
                kill_process_group(process.pid)
                await process.wait()
            with trio.move_on_after(grace):
                await self.reader_done.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
            await self.reader_done.wait()

    # ------------------------------------------------------------------ reading

    async def _read(self) -> None:
        process = self.process
        assert process is not None
        assert process.stdout is not None
        buffer = bytearray()
        try:
            while True:
                try:
                    chunk = await process.stdout.receive_some(65536)
                except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                    chunk = b""
                if not chunk:
                    break
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if line.strip():
                        await self._dispatch(line)
                if len(buffer) > self.max_line_bytes:
                    logger.error("room %s: an app-server line exceeds the limit", self.room_id)
                    self.kill()
                    break
        except Exception as exc:  # a system task must not raise
            logger.error("room %s: the Codex reader failed: %r", self.room_id, exc)
        finally:
            self.broken = True
            for slot in self._pending.values():
                slot.settle(None)
            self._pending.clear()
            sink = self._sink
            if sink is not None:
                with contextlib.suppress(
                    trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
                ):
                    sink.send_nowait(TransportEnd())
            self.reader_done.set()

    async def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            logger.warning("room %s: the app-server wrote a line that is not JSON", self.room_id)
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if not isinstance(method, str):
            ident = message.get("id")
            slot = self._pending.pop(ident, None) if isinstance(ident, int) else None
            if slot is not None:
                slot.settle(message)
            return
        params = message.get("params")
        ident = message.get("id")
        incoming = Incoming(
            method,
            params if isinstance(params, Mapping) else {},
            ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None,
        )
        sink = self._sink
        if sink is not None:
            try:
                await sink.send(incoming)  # back-pressure: wait for the turn
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        if incoming.id is not None:
            await self.respond_error(incoming.id, NO_TURN, "no turn is running in this room")
        else:
            logger.debug("room %s: %s outside a turn", self.room_id, incoming.method)

    def listen(
        self,
    ) -> tuple[
        trio.MemorySendChannel[Incoming | TransportEnd],
        trio.MemoryReceiveChannel[Incoming | TransportEnd],
    ]:
        """Route the server's messages to a new bounded channel (a turn's);
        close the send side to stop. A closed child gives a :class:`TransportEnd` at once."""
        send, receive = trio.open_memory_channel[Incoming | TransportEnd](self.event_buffer)
        self._sink = send
        if self.reader_done.is_set():
            send.send_nowait(TransportEnd())
        return send, receive

    def unlisten(self, send: trio.MemorySendChannel[Incoming | TransportEnd]) -> None:
        """Stop routing to ``send`` (closed); later server requests get an error answer."""
        if self._sink is send:
            self._sink = None
        send.close()

    # ------------------------------------------------------------------ writing

    async def _write(self, message: Mapping[str, Any]) -> None:
        process = self.process
        if process is None or process.stdin is None or self.broken:
            raise CodexTransportClosed("the Codex app-server is not running")
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            try:
                await process.stdin.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.broken = True
                raise CodexTransportClosed("Codex transport closed unexpectedly") from exc

    async def request(
        self, method: str, params: Mapping[str, Any], *, seconds: float | None = None
    ) -> Any:
        """Send a request and wait for its result, within ``seconds``
        (default: the process's ``request_timeout``).

        Raises:
            CodexRpcError: the server answered with an error.
            CodexRequestTimeout: no answer in time.
            CodexTransportClosed: the connection ended first.
        """
        ident = next(self._ids)
        slot = _Slot()
        self._pending[ident] = slot
        limit = self.request_timeout if seconds is None else seconds
        try:
            with trio.move_on_after(limit) as scope:
                await self._write({"id": ident, "method": method, "params": dict(params)})
                await slot.done.wait()
        finally:
            self._pending.pop(ident, None)
        if scope.cancelled_caught:
            raise CodexRequestTimeout(f"Codex did not answer {method} within {limit}s")
        message = slot.message
        if message is None:
            raise CodexTransportClosed("Codex transport closed unexpectedly")
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, Mapping) else None
            text = error.get("message") if isinstance(error, Mapping) else str(error)
            raise CodexRpcError(code, str(text))
        return message.get("result")

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (bounded by the request timeout)."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = dict(params)
        with trio.move_on_after(self.request_timeout):
            await self._write(message)

    async def respond(self, ident: int | str, result: Mapping[str, Any]) -> bool:
        """Answer a server request; False when the answer could not be written."""
        return await self._answer({"id": ident, "result": dict(result)})

    async def respond_error(self, ident: int | str, code: int, message: str) -> bool:
        """Answer a server request with an error; False when it could not be written."""
        return await self._answer({"id": ident, "error": {"code": code, "message": message}})

    async def _answer(self, message: Mapping[str, Any]) -> bool:
        with trio.move_on_after(self.request_timeout):
            try:
                await self._write(message)
            except CodexTransportClosed:
                return False
            return True
        logger.warning("room %s: an answer to the app-server could not be written", self.room_id)
        return False
