"""The small ASGI core of the local platform: requests, responses, routing.

Raw ASGI keeps per-request overhead low (the platform also serves
benchmarks). A route is a row of a table (:class:`Route`): method, path
pattern, who may call it, and a synchronous handler taking a :class:`Ctx` and
returning a :class:`Response`. Every answer is JSON; every refusal carries the
platform's error body ``{"error": {"code", "message", "request_id", "details"?}}``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Literal

import attrs
import trio

from band_trio.local._input import Obj, Query
from band_trio.local.accounts import Accounts
from band_trio.local.changes import ChangeFeed
from band_trio.local.faults import FaultInjector
from band_trio.local.hub import Hub
from band_trio.local.model import JSON, AgentRecord, Principal, UserRecord
from band_trio.local.refusal import RequestRefusedError, fail, invalid
from band_trio.local.store import PlatformState

__all__ = [
    "BODY_GRACE",
    "BODY_IDLE_TIMEOUT",
    "BODY_MIN_RATE",
    "BODY_TOTAL_TIMEOUT",
    "DEPRECATION_HEADERS",
    "INLINE_JSON_BYTES",
    "MAX_JSON_BODY",
    "MAX_JSON_INTEGER_DIGITS",
    "MAX_JSON_VALUES",
    "Ctx",
    "DecodedBody",
    "Handler",
    "Receive",
    "Response",
    "Route",
    "RouteTable",
    "Scope",
    "Send",
    "Services",
    "decode_json",
    "decode_json_off_loop",
    "error_response",
    "json_bytes",
    "no_content",
    "ok",
    "read_body",
    "route",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Auth = Literal["agent", "user", "admin"]

MAX_JSON_BODY = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64
MAX_JSON_VALUES = 100_000
"""Values a JSON body may hold (an upper bound counted before decoding: its
commas, brackets and braces). Decoding 4 MiB of ``{}`` took seconds and
hundreds of MB; this keeps a body's decoding to about a tenth of a second."""
MAX_JSON_INTEGER_DIGITS = 40
"""Digits of an integer in a JSON body (more than any 128-bit integer)."""
INLINE_JSON_BYTES = 16 * 1024
"""JSON bodies up to this size are decoded on the event loop (a few
milliseconds at worst); larger ones in a worker thread, one at a time
(:func:`decode_json_off_loop`)."""
BODY_IDLE_TIMEOUT = 15.0
"""Seconds a request body may go without a byte before the request answers 408."""
BODY_TOTAL_TIMEOUT = 300.0
"""Seconds a whole request body may take (25 MB at about 85 kB/s) before 408."""
BODY_GRACE = 10.0
"""Seconds any request body may take, however slow it arrives."""
BODY_MIN_RATE = 32 * 1024
"""Bytes per second a request body must average past :data:`BODY_GRACE`
(each byte received buys ``1 / BODY_MIN_RATE`` seconds more) before 408."""
SUNSET = "Thu, 01 Oct 2026 00:00:00 GMT"
DEPRECATION_HEADERS: tuple[tuple[str, str], ...] = (("deprecation", "true"), ("sunset", SUNSET))
"""Headers of answers to the deprecated ``page``/``page_size`` pagination."""


@attrs.frozen
class Services:
    """What the handlers of one platform work with.

    Attributes:
        state: the platform's state.
        hub: the WebSocket hub.
        faults: the fault injection rules.
        accounts: user and agent creation and deletion.
        changes: publishes what a request changed (pushes, waiters).
        admin_key: the ``x-admin-key`` of ``/_local/admin``.
        max_upload_bytes: file uploads above this answer 413.
        owner_id: the pre-created user, owner of agents registered without one.
        admin_enabled: whether ``/_local/admin`` is served at all.
    """

    state: PlatformState
    hub: Hub
    faults: FaultInjector
    accounts: Accounts
    changes: ChangeFeed
    admin_key: str = attrs.field(repr=False)
    max_upload_bytes: int
    owner_id: str
    admin_enabled: bool = False


@attrs.define
class Response:
    """An HTTP answer."""

    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = attrs.Factory(list)
    content_type: str | None = "application/json"


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON.

    Raises:
        ValueError: ``value`` holds NaN or an infinity, which JSON cannot carry
            (input refuses them, so this is a bug, never an answer to send).
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def ok(
    data: Any,
    *,
    status: int = 200,
    metadata: JSON | None = None,
    headers: Iterable[tuple[str, str]] = (),
    **extra: Any,
) -> Response:
    """A ``{"data": ..., "metadata"?: ...}`` envelope."""
    doc: JSON = {"data": data}
    if metadata is not None:
        doc["metadata"] = metadata
    doc.update(extra)
    return Response(status, json_bytes(doc), list(headers))


def no_content() -> Response:
    """204 with an empty body."""
    return Response(204, b"", [], None)


@attrs.define
class Ctx:
    """Everything a handler needs about one request."""

    services: Services
    method: str
    path: str
    params: tuple[str, ...]
    query: Query
    headers: Mapping[str, str]
    body: bytes
    principal: Principal | None = None
    decoded: DecodedBody | None = None

    @property
    def state(self) -> PlatformState:
        """The platform's state."""
        return self.services.state

    @property
    def agent(self) -> AgentRecord:
        """The calling agent (on routes with ``agent`` auth)."""
        assert isinstance(self.principal, AgentRecord)
        return self.principal

    @property
    def user(self) -> UserRecord:
        """The calling user (on routes with ``user`` auth)."""
        assert isinstance(self.principal, UserRecord)
        return self.principal

    def json(self) -> Any:
        """The decoded JSON body (400 when malformed, 422 when absent).

        A body :func:`decode_json_off_loop` decoded already is not decoded again."""
        if self.decoded is not None:
            return self.decoded.unwrap()
        return decode_json(self.body)

    def obj(self) -> Obj:
        """The body as a JSON object."""
        return Obj(self.json())

    def obj_or_none(self) -> Obj | None:
        """The body as a JSON object, or None when the body is empty."""
        if not self.body.strip():
            return None
        return self.obj()


Handler = Callable[[Ctx], Response]


def decode_json(body: bytes) -> Any:
    """A request's JSON body, decoded and checked.

    Raises:
        RequestRefusedError: 422 when the body is blank, holds more than
            :data:`MAX_JSON_VALUES` values or is nested deeper than
            ``MAX_JSON_DEPTH``; 400 when it is not JSON (``NaN`` and numbers
            out of a float's range included) or has a lone surrogate escape.
    """
    if not body.strip():
        raise invalid("/", "a JSON body is required")
    if body.count(b",") + body.count(b"[") + body.count(b"{") >= MAX_JSON_VALUES:
        raise invalid("/", f"has too many values (maximum is {MAX_JSON_VALUES})")
    try:
        value = json.loads(
            body,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_short_int,
            object_pairs_hook=_object,
        )
    except _LongInteger:
        raise invalid(
            "/", f"has an integer of more than {MAX_JSON_INTEGER_DIGITS} digits"
        ) from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise fail(400, "the request body is not valid JSON", code="invalid_json") from None
    _check_tree(value, check_unicode=b"\\u" in body)
    return value


@attrs.frozen
class DecodedBody:
    """What decoding a body gave: its value, or the refusal to raise each
    time the handler asks for it."""

    value: Any = None
    refusal: RequestRefusedError | None = None

    def unwrap(self) -> Any:
        """The value.

        Raises:
            RequestRefusedError: the body was refused.
        """
        if self.refusal is not None:
            raise self.refusal
        return self.value


_gc_lock = threading.Lock()
_gc_pauses = 0


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (in any thread).

    Decoding a body of 50,000 objects ran the full collection several times
    (each a tenth of a second, holding the interpreter, so the event loop's
    thread waited); decoded with the collector off, the objects are mostly
    freed with the request before a collection sees them.
    """
    global _gc_pauses
    with _gc_lock:
        # Turned off by someone else: theirs to turn on again.
        ours = bool(_gc_pauses) or gc.isenabled()
        if ours:
            _gc_pauses += 1
            gc.disable()
    try:
        yield
    finally:
        if ours:
            with _gc_lock:
                _gc_pauses -= 1
                if not _gc_pauses:
                    gc.enable()


def _decode_body(body: bytes) -> DecodedBody:
    try:
        with _collector_paused():
            return DecodedBody(decode_json(body))
    except RequestRefusedError as exc:
        return DecodedBody(refusal=exc)


async def decode_json_off_loop(body: bytes, limiter: trio.CapacityLimiter) -> DecodedBody:
    """Decode ``body`` (as :func:`decode_json`) in a worker thread, one at a
    time per ``limiter``, so a heavy body does not stop the event loop."""
    return await trio.to_thread.run_sync(_decode_body, body, limiter=limiter)


@attrs.frozen
class Route:
    """One row of the routing table.

    Attributes:
        method: the HTTP method.
        pattern: the compiled path pattern (one group per ``{x}`` segment).
        handler: the synchronous handler.
        auth: who may call it: an agent key, a user key, or the admin key.
        upload: the body is file bytes (bounded by ``max_upload_bytes``), not JSON.
    """

    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: Auth
    upload: bool = False


def route(method: str, path: str, auth: Auth, handler: Handler, *, upload: bool = False) -> Route:
    """A :class:`Route` for ``path``, where ``{x}`` matches one segment."""
    pattern = re.compile("^" + re.sub(r"\{[a-z_]+\}", "([^/]+)", path) + r"/?\Z")
    return Route(method, pattern, handler, auth, upload)


class RouteTable:
    """Routes by method, matched in order."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self._by_method: dict[str, list[Route]] = {}
        for row in routes:
            self._by_method.setdefault(row.method, []).append(row)

    def match(self, method: str, path: str) -> tuple[Route, tuple[str, ...]] | None:
        """The first route of ``method`` matching ``path``, with its path parameters."""
        for row in self._by_method.get(method, ()):
            found = row.pattern.match(path)
            if found is not None:
                return row, found.groups()
        return None

    def resolve(self, method: str, path: str) -> tuple[Route, tuple[str, ...]]:
        """Like :meth:`match`, refusing what does not match.

        Raises:
            RequestRefusedError: 405 when the path exists for another method, else 404.
        """
        found = self.match(method, path)
        if found is not None:
            return found
        if any(self.match(other, path) for other in self._by_method if other != method):
            raise fail(405, f"method {method} is not allowed on {path}", code="method_not_allowed")
        raise fail(404, f"no route for {method} {path}")


async def read_body(
    receive: Receive,
    limit: int,
    *,
    idle_timeout: float = BODY_IDLE_TIMEOUT,
    total_timeout: float = BODY_TOTAL_TIMEOUT,
    grace: float = BODY_GRACE,
    min_rate: float = BODY_MIN_RATE,
) -> bytes:
    """The whole request body, refused once too large or too slow.

    A client that stops sending (or trickles) would otherwise hold the
    request, its buffered chunks and a connection for as long as it likes.
    The body has ``grace`` seconds, plus one second per ``min_rate`` bytes
    received, and never more than ``total_timeout``: a byte every few
    seconds is cut after about ``grace``, a body arriving at ``min_rate`` or
    faster is never cut before ``total_timeout``.

    Raises:
        RequestRefusedError: 413 once the body passes ``limit`` bytes; 408 when
            no chunk arrives for ``idle_timeout`` seconds, or the body is
            slower than the rule above.
        trio.BrokenResourceError: the client went away.
    """
    chunks: list[bytes] = []
    size = 0
    started = trio.current_time()
    last = started + total_timeout
    with trio.CancelScope(deadline=min(last, started + grace)) as body_scope:
        while True:
            message = None
            with trio.move_on_after(idle_timeout):
                message = await receive()
            if message is None:
                break
            if message["type"] == "http.disconnect":
                raise trio.BrokenResourceError("client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise fail(413, f"request body is too large (maximum is {limit} bytes)")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
            body_scope.deadline = min(last, started + grace + size / min_rate)
    raise fail(408, "the request body arrived too slowly", code="request_timeout")


def error_response(exc: RequestRefusedError, request_id: str) -> Response:
    """The HTTP answer of a refusal."""
    headers: list[tuple[str, str]] = list(exc.headers)
    if exc.retry_after is not None:
        headers.insert(0, ("retry-after", str(math.ceil(exc.retry_after))))
    if exc.status == 416:
        # band-client-rest declares the body of a 416 download as a JSON string.
        return Response(416, json_bytes(exc.message or "range not satisfiable"), headers)
    return Response(exc.status, json_bytes(exc.body(request_id)), headers)


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity, which are not JSON: echoing them back
    # would produce frames and bodies that strict clients cannot parse.
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # ``1e999`` parses to an infinity, which would be stored and then served
    # back as ``Infinity``: not JSON, so strict clients could not read it.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range")
    return value


class _LongInteger(ValueError):
    pass


def _short_int(text: str) -> int:
    # A 4,000-digit integer takes a fraction of a millisecond to convert, in
    # C, holding the interpreter: a body of them kept every other thread
    # waiting. No field of the platform carries such a number.
    if len(text.lstrip("-")) > MAX_JSON_INTEGER_DIGITS:
        raise _LongInteger(text[:40])
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Decoding calls back into Python for each object (and each number), so
    # a worker thread decoding a large body lets the event loop's thread run
    # in between instead of holding the interpreter for the whole body.
    return dict(pairs)


def _check_tree(value: Any, *, check_unicode: bool) -> None:
    """Reject bodies nested deeper than :data:`MAX_JSON_DEPTH` (422) and strings
    with lone surrogates from ``\\u`` escapes, which cannot be sent as UTF-8 (400)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise invalid("/", f"is nested too deeply (maximum depth is {MAX_JSON_DEPTH})")
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if check_unicode and isinstance(key, str):
                    _check_unicode(key)
                stack.append((child, depth + 1))
        elif check_unicode and isinstance(item, str):
            _check_unicode(item)


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise fail(
            400, "the request body has an invalid unicode escape", code="invalid_json"
        ) from None
