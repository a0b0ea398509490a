"""A local, scripted OpenAI Responses API for the real ``codex`` binary: a
small Trio + h11 server on 127.0.0.1 that answers ``POST /v1/responses`` with
the Responses server-sent events (``response.created``, per output item
``response.output_item.added``, its deltas and ``response.output_item.done``,
then ``response.completed`` with the output and usage; every event with a
``sequence_number``) and records every request.

A script step is a list of output items (:func:`function_call`,
:func:`message_item`, :func:`reasoning_item`), a function of the request body
returning one, or :data:`HANG` (never answer). An exhausted script answers
with a short text message, so Codex's side requests never stall a test.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

import h11
import trio

_ids = itertools.count(1)

HANG: Final = "hang"
"""Never answer (the request waits until Codex gives up or is stopped)."""

Output = list[dict[str, Any]]
Step = Output | Callable[[dict[str, Any]], Any] | str


def function_call(name: str, args: Mapping[str, Any], call_id: str | None = None) -> dict[str, Any]:
    n = next(_ids)
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": call_id or f"call_{n}",
        "name": name,
        "arguments": json.dumps(dict(args)),
        "status": "completed",
    }


def message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{next(_ids)}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def reasoning_item(summary: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": f"rs_{next(_ids)}",
        "summary": [{"type": "summary_text", "text": summary}],
    }


def function_outputs(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``function_call_output`` items of a request's input."""
    items = body.get("input") or []
    return [i for i in items if isinstance(i, Mapping) and i.get("type") == "function_call_output"]


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """The texts of the user messages of a request's input."""
    texts: list[str] = []
    for item in body.get("input") or []:
        if isinstance(item, Mapping) and item.get("role") == "user":
            for part in item.get("content") or []:
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
    return texts


def _events(output: Output, usage: Mapping[str, int]) -> bytes:
    response_id = f"resp_{next(_ids)}"
    base = {"id": response_id, "object": "response", "created_at": 0, "model": "stub-model"}
    seq = itertools.count()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}},
        {
            "type": "response.in_progress",
            "response": {**base, "status": "in_progress", "output": []},
        },
    ]
    for index, item in enumerate(output):
        if item["type"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "item_id": item["id"],
                    "delta": item["arguments"],
                }
            )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "output_index": index,
                    "item_id": item["id"],
                    "arguments": item["arguments"],
                }
            )
        elif item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"output_index": index, "item_id": item["id"], "content_index": 0}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": [], "status": "in_progress"},
                }
            )
            events.append({"type": "response.content_part.added", **where, "part": part})
            events.append({"type": "response.output_text.delta", **where, "delta": text})
            events.append({"type": "response.output_text.done", **where, "text": text})
            events.append(
                {"type": "response.content_part.done", **where, "part": {**part, "text": text}}
            )
        else:
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": item}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append(
        {
            "type": "response.completed",
            "response": {
                **base,
                "status": "completed",
                "output": output,
                "usage": {
                    "input_tokens": usage["input"],
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": usage["output"],
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": usage["input"] + usage["output"],
                },
            },
        }
    )
    chunks = []
    for event in events:
        event["sequence_number"] = next(seq)
        chunks.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(chunks).encode()


class ResponsesStub:
    """Serves scripted Responses turns in order and records the requests.

    Attributes:
        bodies: the bodies of the ``/v1/responses`` requests, in order.
        url: the base URL (``http://127.0.0.1:PORT/v1``) once serving.
    """

    def __init__(self) -> None:
        self.script: deque[Step] = deque()
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.url = ""
        self.usage = {"input": 20, "output": 5}
        self.default: Callable[[dict[str, Any]], Any] | None = None

    def push(self, *steps: Step) -> None:
        self.script.extend(steps)

    @property
    def model_bodies(self) -> list[dict[str, Any]]:
        """The requests that offered the Band tools (the agent's own turns)."""
        return [
            b
            for b in self.bodies
            if any("band_send_message" in json.dumps(t) for t in b.get("tools") or [])
        ]

    async def serve(self, *, task_status: trio.TaskStatus[ResponsesStub]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(self)

    def _next(self, body: dict[str, Any]) -> Any:
        if self.script:
            step = self.script.popleft()
        elif self.default is not None:
            step = self.default
        else:
            return [message_item("Done.")]
        return step(body) if callable(step) else step

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                head, body = await self._read(conn, stream)
                if head is None:
                    return
                path = head.target.decode().split("?")[0]
                self.paths.append(path)
                if head.method == b"POST" and path.endswith("/responses"):
                    self.bodies.append(body)
                    output = self._next(body)
                    if output == HANG:
                        await trio.sleep_forever()
                    data = _events(output, self.usage)
                    status, kind = 200, "text/event-stream"
                else:
                    data = json.dumps({"error": {"message": "not found"}}).encode()
                    status, kind = 404, "application/json"
                headers = [("content-type", kind), ("content-length", str(len(data)))]
                await stream.send_all(
                    conn.send(h11.Response(status_code=status, headers=headers)) or b""
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
    async def _read(conn: h11.Connection, stream: trio.SocketStream) -> tuple[Any, Any]:
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
                return head, json.loads(body) if body else None
            else:
                return None, None
