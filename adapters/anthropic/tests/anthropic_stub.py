"""A local Anthropic-compatible Messages API for tests: a small Trio + h11 server
on 127.0.0.1 that answers ``POST /v1/messages`` from a script and records
every request. The real ``anthropic`` client talks to it through ``base_url``.

Beyond the script, the stub does what the API does with a request:

* it refuses an invalid conversation with a 400 (:func:`conversation_problems`:
  pairing of tool_use and tool_result, roles, empty text, thinking blocks
  passed back unchanged within a tool loop) and counts it in
  :attr:`AnthropicStub.refused`;
* it keeps **usage accounts** (:class:`Account`) modelled on the prompt-cache
  rules: a request is read in the order tools, system, messages; at most four
  blocks may carry ``cache_control`` (more is a 400); the prefix up to a
  marked block is written to the cache when it has at least
  ``min_cacheable_tokens``; a marked block finds a cached prefix ending at it
  or up to ``lookback_blocks`` blocks before it. Tokens read from the cache
  are ``cache_read``, tokens written ``cache_write``, and the rest
  ``input``, billed in full. With ``accounting`` on, a scripted answer's
  usage is replaced by the account;
* ``POST /v1/messages/count_tokens`` answers the request's token count;
* with ``context_window`` set, a request larger than it gets the API's
  "prompt is too long" 400, without using the script;
* a request with ``"stream": true`` gets its answer as the Messages API's
  server-sent events (:func:`sse_events`), as the ``claude`` CLI asks for it.

Tokens are counted by :func:`block_tokens`: one per four characters of a
block's JSON form (a stand-in for the real tokenizer, which the adapter
does not know either).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
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


def _path(request: Request) -> str:
    return request.path.split("?")[0]


HANG = Reply(0, None)
"""Never answer (the request waits until the client gives up or is cancelled)."""

Script = Reply | Callable[[dict[str, Any]], Reply]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def signature_of(thinking_text: str) -> str:
    """The signature the stub gives a thinking block (and checks when it comes back)."""
    return "sig-" + hashlib.sha256(thinking_text.encode()).hexdigest()[:16]


def thinking(value: str) -> dict[str, Any]:
    """A thinking block with a valid signature."""
    return {"type": "thinking", "thinking": value, "signature": signature_of(value)}


def redacted_thinking(data: str) -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


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


def _block_events(index: int, block: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The stream events of one content block: start, its deltas, stop."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas.append({"type": "text_delta", "text": block["text"]})
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas.append({"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:  # redacted thinking and anything else: whole in its start event
        start = dict(block)
    events = [("content_block_start", {"index": index, "content_block": start})]
    events += [("content_block_delta", {"index": index, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"index": index}))
    return events


def sse_events(body: Mapping[str, Any]) -> bytes:
    """A Messages API answer ``body`` as the stream of server-sent events that
    carries it (``message_start``, each block's events, ``message_delta``,
    ``message_stop``)."""
    usage = dict(body.get("usage") or {})
    head = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    head["usage"] = {**usage, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": head})]
    for index, block in enumerate(body.get("content") or []):
        events += _block_events(index, block)
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": None}
    events.append(("message_delta", {"delta": delta, "usage": usage}))
    events.append(("message_stop", {}))
    return b"".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
        for name, data in events
    )


@attrs.frozen
class Request:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@attrs.frozen
class Account:
    """How the input tokens of one Messages request were billed.

    Attributes:
        input: tokens billed at the full price.
        cache_read: tokens read from the cache (a tenth of the price).
        cache_write: tokens written to the cache (a quarter more than the price).
        breakpoints: how many blocks carried ``cache_control``.
    """

    input: int
    cache_read: int
    cache_write: int
    breakpoints: int

    @property
    def total(self) -> int:
        return self.input + self.cache_read + self.cache_write


# ---------------------------------------------------------------- the API's rules


def _canonical(block: Any) -> Any:
    """A block as the API reads it: no cache marker; a string is one text block."""
    if isinstance(block, Mapping):
        return {k: _canonical(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, list):
        return [_canonical(b) for b in block]
    return block


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def block_tokens(block: Any) -> int:
    """The stub's token count of one block."""
    text = json.dumps(_canonical(block), sort_keys=True, ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4))


def request_blocks(body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The request as (section, block) pairs in the order the cache reads them."""
    out: list[tuple[str, Any]] = [("tool", t) for t in body.get("tools") or []]
    system = body.get("system")
    if system:
        out += [("system", b) for b in _content_blocks(system)]
    for message_ in body.get("messages") or []:
        role = message_.get("role") if isinstance(message_, Mapping) else None
        out += [(str(role), b) for b in _content_blocks(message_.get("content"))]
    return out


def request_tokens(body: Mapping[str, Any]) -> int:
    return sum(block_tokens(b) for _, b in request_blocks(body))


def read_as_api(body: Mapping[str, Any]) -> dict[str, Any]:
    """A request as the model reads it: cache markers removed, and a content
    of one text block written as its string (the API reads both forms alike).
    Compare conversations with this; assert markers on the raw body."""
    out = dict(_canonical(body))
    system = out.get("system")
    if isinstance(system, list) and len(system) == 1 and system[0].get("type") == "text":
        out["system"] = system[0]["text"]
    messages = []
    for m in out.get("messages") or []:
        content = m.get("content")
        if (
            isinstance(content, list)
            and len(content) == 1
            and isinstance(content[0], Mapping)
            and set(content[0]) == {"type", "text"}
            and content[0]["type"] == "text"
        ):
            m = {**m, "content": content[0]["text"]}
        messages.append(m)
    out["messages"] = messages
    return out


def _merged(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Consecutive messages of one role as one (the API merges them)."""
    out: list[tuple[str, list[Any]]] = []
    for m in messages:
        role = m.get("role")
        blocks = _content_blocks(m.get("content"))
        if out and out[-1][0] == role:
            out[-1][1].extend(blocks)
        else:
            out.append((str(role), blocks))
    return out


def conversation_problems(
    messages: Sequence[Mapping[str, Any]], *, thinking_on: bool = False, system_role: bool = False
) -> list[str]:
    """What makes ``messages`` an invalid Messages API conversation (empty: valid).

    With ``system_role``, messages with the role ``system`` (which the
    ``claude`` CLI adds to a conversation) are accepted and left out of the checks.
    """
    if system_role:
        messages = [m for m in messages if m.get("role") != "system"]
    problems: list[str] = []
    if not messages:
        return ["messages: at least one message is required"]
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant"):
            problems.append(f"messages.{i}: unexpected role {m.get('role')!r}")
        content = m.get("content")
        if isinstance(content, str) and not content:
            problems.append(f"messages.{i}: empty content")
        for block in _content_blocks(content):
            if block.get("type") == "text" and not block.get("text"):
                problems.append(f"messages.{i}: text content blocks must be non-empty")
            if block.get("type") == "thinking" and block.get("signature") != signature_of(
                str(block.get("thinking"))
            ):
                problems.append(f"messages.{i}: invalid signature in thinking block")
    merged = _merged(messages)
    if merged[0][0] != "user":
        problems.append("messages: the first message must use the user role")
    seen_ids: set[str] = set()
    for index, (role, blocks) in enumerate(merged):
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if role == "assistant":
            if results:
                problems.append(f"turn {index}: tool_result in an assistant message")
            for call_id in uses:
                if call_id in seen_ids:
                    problems.append(f"turn {index}: tool_use ids must be unique ({call_id})")
                seen_ids.add(call_id)
            if uses:
                after = merged[index + 1] if index + 1 < len(merged) else None
                answered = (
                    []
                    if after is None
                    else [b.get("tool_use_id") for b in after[1] if b.get("type") == "tool_result"]
                )
                missing = set(uses) - set(answered)
                if missing:
                    problems.append(
                        f"turn {index}: tool_use ids without tool_result blocks "
                        f"immediately after: {sorted(missing)}"
                    )
        else:
            if uses:
                problems.append(f"turn {index}: tool_use in a user message")
            if results:
                before = merged[index - 1] if index > 0 else None
                called = (
                    set()
                    if before is None or before[0] != "assistant"
                    else {b["id"] for b in before[1] if b.get("type") == "tool_use"}
                )
                unknown = [r for r in results if r not in called]
                if unknown:
                    problems.append(
                        f"turn {index}: unexpected tool_use_id in tool_result blocks: {unknown}"
                    )
                first_kinds = [b.get("type") for b in blocks[: len(results)]]
                if any(k != "tool_result" for k in first_kinds):
                    problems.append(f"turn {index}: tool_result blocks must come first")
    if thinking_on and len(merged) >= 2 and merged[-1][0] == "user":
        # Continuing a tool loop: the assistant message must start with its thinking.
        last_user = merged[-1][1]
        if last_user and last_user[0].get("type") == "tool_result":
            assistant = merged[-2][1]
            if not assistant or assistant[0].get("type") not in ("thinking", "redacted_thinking"):
                problems.append(
                    "the final assistant message must start with a thinking block "
                    "when thinking is enabled"
                )
    return problems


class AnthropicStub:
    """Serves scripted replies in order; an exhausted script answers 500 and
    sets :attr:`exhausted`.

    Args:
        min_cacheable_tokens: the smallest prefix the cache keeps.
        lookback_blocks: how many blocks before a marked block a cached
            prefix is still found.
        context_window: requests larger than this get "prompt is too long"
            (None: no limit).
        accounting: replace scripted usage by the stub's accounts.
        system_role: accept messages with the role ``system`` in a conversation.
    """

    def __init__(
        self,
        *,
        min_cacheable_tokens: int = 1024,
        lookback_blocks: int = 20,
        context_window: int | None = None,
        accounting: bool = False,
        system_role: bool = False,
    ) -> None:
        self.script: deque[Script] = deque()
        self.requests: list[Request] = []
        self.accounts: list[Account] = []
        self.refused: list[list[str]] = []
        self.count_requests: list[Any] = []
        self.exhausted = False
        self.url = ""
        self.min_cacheable_tokens = min_cacheable_tokens
        self.lookback_blocks = lookback_blocks
        self.context_window = context_window
        self.accounting = accounting
        self.system_role = system_role
        self._cache: set[str] = set()
        self._changed = trio.Event()

    def push(self, *replies: Script) -> None:
        self.script.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        """The bodies of the Messages requests (not token counts), in order."""
        return [r.body for r in self.requests if _path(r) == "/v1/messages"]

    @property
    def read_bodies(self) -> list[dict[str, Any]]:
        """:attr:`bodies` as the model reads them (:func:`read_as_api`)."""
        return [read_as_api(b) for b in self.bodies]

    def forget_cache(self) -> None:
        """Drop every cached prefix (as when entries expire)."""
        self._cache.clear()

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

    def account(self, body: Mapping[str, Any]) -> Account:
        """Bill a request's input under the cache rules and update the cache."""
        blocks = request_blocks(body)
        prefix_hashes: list[str] = []
        cumulative: list[int] = []
        digest = hashlib.sha256(str(body.get("model")).encode())
        total = 0
        for section, block in blocks:
            digest.update(section.encode())
            digest.update(json.dumps(_canonical(block), sort_keys=True).encode())
            prefix_hashes.append(digest.copy().hexdigest())
            total += block_tokens(block)
            cumulative.append(total)
        marked = [
            i for i, (_, b) in enumerate(blocks) if isinstance(b, Mapping) and "cache_control" in b
        ]
        read_end = -1
        for position in marked:
            for back in range(position, max(-1, position - self.lookback_blocks), -1):
                if prefix_hashes[back] in self._cache:
                    read_end = max(read_end, back)
                    break
        read = cumulative[read_end] if read_end >= 0 else 0
        written_end = -1
        for position in marked:
            if cumulative[position] >= self.min_cacheable_tokens:
                self._cache.add(prefix_hashes[position])
                written_end = max(written_end, position)
        write = cumulative[written_end] - read if written_end > read_end else 0
        return Account(total - read - write, read, write, len(marked))

    def _answer(self, request: Request) -> Reply:
        path = _path(request)
        if request.method == "POST" and path == "/v1/messages/count_tokens":
            self.count_requests.append(request.body)
            return Reply(200, {"input_tokens": request_tokens(request.body)})
        if request.method != "POST" or path != "/v1/messages":
            return Reply(404, {"type": "error", "error": {"type": "not_found_error"}})
        body = request.body
        problems = conversation_problems(
            body.get("messages") or [],
            thinking_on=bool(body.get("thinking")),
            system_role=self.system_role,
        )
        marks = sum(
            1 for _, b in request_blocks(body) if isinstance(b, Mapping) and "cache_control" in b
        )
        if marks > 4:
            problems.append(
                f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
            )
        if problems:
            self.refused.append(problems)
            return error(400, "invalid_request_error", "; ".join(problems))
        size = request_tokens(body)
        if self.context_window is not None and size > self.context_window:
            return error(
                400,
                "invalid_request_error",
                f"prompt is too long: {size} tokens > {self.context_window} maximum",
            )
        if not self.script:
            self.exhausted = True
            return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "x"}})
        step = self.script.popleft()
        reply = step if isinstance(step, Reply) else step(body)
        if reply.status != 200:
            return reply  # a failed request neither reads nor writes the cache
        account = self.account(body)
        self.accounts.append(account)
        if self.accounting and isinstance(reply.body, dict):
            usage = dict(reply.body.get("usage") or {})
            usage.update(
                input_tokens=account.input,
                cache_read_input_tokens=account.cache_read,
                cache_creation_input_tokens=account.cache_write,
            )
            reply = attrs.evolve(reply, body={**reply.body, "usage": usage})
        return reply

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
                streamed = (
                    reply.status == 200
                    and isinstance(request.body, Mapping)
                    and request.body.get("stream") is True
                    and _path(request) == "/v1/messages"
                )
                data = sse_events(reply.body) if streamed else json.dumps(reply.body).encode()
                headers = [
                    ("content-type", "text/event-stream" if streamed else "application/json"),
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
