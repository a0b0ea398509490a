"""A local Anthropic-compatible Messages API for tests: a small Trio + h11 server
on 127.0.0.1 that answers ``POST /v1/messages`` from a script and records
every request. The real ``anthropic`` client talks to it through ``base_url``.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import h11
import trio

_ids = itertools.count(1)


@attrs.frozen
class Reply:
    """One scripted HTTP answer."""

    status: int
    body: Any
    headers: Sequence[tuple[str, str]] = ()


HANG = Reply(0, None)
"""Never answer (the request waits until the client gives up or is cancelled)."""

Script = Reply | Callable[[dict[str, Any]], Reply]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def message(
    *content: dict[str, Any],
    stop_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> Reply:
    """A 200 Messages API answer; ``stop_reason`` defaults to ``tool_use`` when
    a tool_use block is present, else ``end_turn``."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return Reply(
        200,
        {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage[0],
                "output_tokens": usage[1],
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    )


def error(status: int, kind: str, text_: str) -> Reply:
    """An API error answer with the Messages API's error body."""
    return Reply(
        status,
        {"type": "error", "error": {"type": kind, "message": text_}},
        (("request-id", f"req_{next(_ids)}"),),
    )


@attrs.frozen
class Request:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class AnthropicStub:
    """Serves scripted replies in order; an exhausted script answers 500 and
    sets :attr:`exhausted`."""

    def __init__(self) -> None:
        self.script: deque[Script] = deque()
        self.requests: list[Request] = []
        self.exhausted = False
        self.url = ""
        self._changed = trio.Event()

    def push(self, *replies: Script) -> None:
        self.script.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    async def wait_for_requests(self, count: int) -> None:
        while len(self.requests) < count:
            await self._changed.wait()

    async def serve(self, *, task_status: trio.TaskStatus[AnthropicStub]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(self)

    def _answer(self, request: Request) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != "/v1/messages":
            return Reply(404, {"type": "error", "error": {"type": "not_found_error"}})
        if not self.script:
            self.exhausted = True
            return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "x"}})
        step = self.script.popleft()
        return step if isinstance(step, Reply) else step(request.body)

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read(conn, stream)
                if request is None:
                    return
                self.requests.append(request)
                self._changed.set()
                self._changed = trio.Event()
                reply = self._answer(request)
                if reply is HANG:
                    await trio.sleep_forever()
                data = json.dumps(reply.body).encode()
                headers = [
                    ("content-type", "application/json"),
                    ("content-length", str(len(data))),
                    *reply.headers,
                ]
                await stream.send_all(
                    conn.send(h11.Response(status_code=reply.status, headers=headers)) or b""
                )
                await stream.send_all(conn.send(h11.Data(data=data)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            await stream.aclose()

    @staticmethod
    async def _read(conn: h11.Connection, stream: trio.SocketStream) -> Request | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                headers = {k.decode().lower(): v.decode() for k, v in head.headers}
                return Request(
                    head.method.decode(),
                    head.target.decode(),
                    headers,
                    json.loads(body) if body else None,
                )
            else:  # ConnectionClosed, PAUSED
                return None
