"""The local platform's ASGI application: a small regex router over raw ASGI.

Raw ASGI keeps per-request overhead low (the platform also serves benchmarks).
Every answer is JSON; every error carries the §4.2 body
``{"error": {"code", "message", "request_id", "details"?}}``. Handlers are
synchronous calls into :class:`~band_trio.local.store.PlatformState`; after
each request the pushes it caused are handed to the :class:`~band_trio.local.hub.Hub`.
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import attrs
import trio

from band_trio.errors import APIStatusError
from band_trio.local import contacts, delegation, files, memories, tasks
from band_trio.local._input import Obj, Query
from band_trio.local._paging import cursor_page, offset_page, uses_offset
from band_trio.local.hub import CloseRequest, Connection
from band_trio.local.model import (
    JSON,
    AgentRecord,
    Message,
    Principal,
    RoomRecord,
    UserRecord,
    now_ts,
)
from band_trio.local.refusal import fail, forbidden, invalid, not_found
from band_trio.local.store import PlatformState

if TYPE_CHECKING:
    from band_trio.local.platform import LocalPlatform

__all__ = ["BandApp"]

log = logging.getLogger("band_trio.local")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

WS_PATH = "/api/v1/socket/websocket"
MAX_JSON_BODY = 4 * 1024 * 1024
SUNSET = "Thu, 01 Oct 2026 00:00:00 GMT"
_DEPRECATION = [("deprecation", "true"), ("sunset", SUNSET)]


# The machine codes the platform puts on refused WebSocket upgrades (protocol.md
# §1.4); REST errors of the same status use the generic codes of ``_input``.
_UPGRADE_REFUSAL_CODES = {429: "too_many_requests", 503: "tracking_failed"}


@attrs.define
class Response:
    """An HTTP answer."""

    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = attrs.Factory(list)
    content_type: str | None = "application/json"


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def ok(
    data: Any,
    *,
    status: int = 200,
    metadata: JSON | None = None,
    headers: list[tuple[str, str]] | None = None,
    **extra: Any,
) -> Response:
    """A ``{"data": ..., "metadata"?: ...}`` envelope."""
    doc: JSON = {"data": data}
    if metadata is not None:
        doc["metadata"] = metadata
    doc.update(extra)
    return Response(status, _json_bytes(doc), headers or [])


def no_content() -> Response:
    """204 with an empty body."""
    return Response(204, b"", [], None)


@attrs.define
class Ctx:
    """Everything a handler needs about one request."""

    app: BandApp
    method: str
    path: str
    params: tuple[str, ...]
    query: Query
    headers: Mapping[str, str]
    body: bytes
    principal: Principal | None = None

    @property
    def state(self) -> PlatformState:
        return self.app.platform.state

    @property
    def agent(self) -> AgentRecord:
        assert isinstance(self.principal, AgentRecord)
        return self.principal

    @property
    def user(self) -> UserRecord:
        assert isinstance(self.principal, UserRecord)
        return self.principal

    def json(self) -> Any:
        """The decoded JSON body (400 when malformed, 422 when absent)."""
        if not self.body.strip():
            raise invalid("/", "a JSON body is required")
        try:
            value = json.loads(self.body, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise fail(400, "the request body is not valid JSON", code="invalid_json") from None
        _check_tree(value, check_unicode=b"\\u" in self.body)
        return value

    def obj(self) -> Obj:
        """The body as a JSON object."""
        return Obj(self.json())

    def obj_or_none(self) -> Obj | None:
        """The body as a JSON object, or None when the body is empty."""
        if not self.body.strip():
            return None
        return self.obj()


Handler = Callable[[Ctx], Response]


@attrs.frozen
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: str  # agent | user | admin


class BandApp:
    """The ASGI callable serving REST, WebSocket and admin for a :class:`LocalPlatform`."""

    def __init__(self, platform: LocalPlatform) -> None:
        self.platform = platform
        self.routes: dict[str, list[Route]] = {}
        _register_routes(self)

    def route(self, method: str, path: str, auth: str) -> Callable[[Handler], Handler]:
        """Register ``handler`` for ``method`` on ``path`` (``{x}`` = one segment)."""
        pattern = re.compile("^" + re.sub(r"\{[a-z_]+\}", "([^/]+)", path) + "/?$")

        def register(handler: Handler) -> Handler:
            self.routes.setdefault(method, []).append(Route(method, pattern, handler, auth))
            return handler

        return register

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    # ------------------------------------------------------------------ HTTP

    def _match(self, method: str, path: str) -> tuple[Route, tuple[str, ...]] | None:
        for route in self.routes.get(method, ()):
            m = route.pattern.match(path)
            if m is not None:
                return route, m.groups()
        return None

    async def _read_body(self, receive: Receive, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise trio.BrokenResourceError("client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise fail(413, f"request body is too large (maximum is {limit} bytes)")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        platform = self.platform
        method: str = scope["method"]
        path: str = scope["path"]
        request_id = f"req_{secrets.token_hex(8)}"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        response: Response
        try:
            try:
                response = await self._dispatch(scope, receive, method, path, headers)
            finally:
                platform._flush()
        except APIStatusError as exc:
            response = self.error_response(exc, request_id)
        except trio.BrokenResourceError:
            return
        except Exception:
            log.exception("local platform: unhandled error on %s %s", method, path)
            response = self.error_response(fail(500, "internal server error"), request_id)
        out_headers = [(b"x-request-id", request_id.encode())]
        if response.content_type is not None:
            out_headers.append((b"content-type", response.content_type.encode()))
        out_headers.append((b"content-length", str(len(response.body)).encode()))
        out_headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers)
        await send(
            {"type": "http.response.start", "status": response.status, "headers": out_headers}
        )
        await send(
            {"type": "http.response.body", "body": response.body if method != "HEAD" else b""}
        )

    async def _dispatch(
        self, scope: Scope, receive: Receive, method: str, path: str, headers: dict[str, str]
    ) -> Response:
        platform = self.platform
        fault = platform.faults.take(method, path)
        if fault is not None and fault.delay:
            await trio.sleep(fault.delay if math.isfinite(fault.delay) else math.inf)
        if fault is not None and not fault.perform:
            raise self.fault_error(fault.status, fault.code, fault.message, fault.retry_after)
        found = self._match(method, path)
        if found is None:
            if any(self._match(other, path) for other in self.routes if other != method):
                raise fail(
                    405, f"method {method} is not allowed on {path}", code="method_not_allowed"
                )
            raise fail(404, f"no route for {method} {path}")
        route, params = found
        limit = platform.max_upload_bytes + 1 if route.handler is _upload_file else MAX_JSON_BODY
        body = await self._read_body(receive, limit)
        ctx = Ctx(
            self,
            method,
            path,
            params,
            Query(
                parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            ),
            headers,
            body,
        )
        if route.auth == "admin":
            if not secrets.compare_digest(headers.get("x-admin-key", ""), platform.admin_key):
                raise fail(401, "a valid x-admin-key header is required")
        else:
            principal = platform.state.authenticate(headers.get("x-api-key"))
            if principal is None:
                raise fail(401, "missing or invalid API key")
            if route.auth == "agent" and not isinstance(principal, AgentRecord):
                raise forbidden("this endpoint needs an agent API key")
            if route.auth == "user" and not isinstance(principal, UserRecord):
                raise forbidden("this endpoint needs a user API key")
            ctx.principal = principal
        response = route.handler(ctx)
        if fault is not None:
            raise self.fault_error(fault.status, fault.code, fault.message, fault.retry_after)
        return response

    @staticmethod
    def fault_error(
        status: int, code: str | None, message: str | None, retry_after: float | None
    ) -> APIStatusError:
        return fail(
            status, message or f"injected fault (HTTP {status})", code=code, retry_after=retry_after
        )

    @staticmethod
    def error_body(exc: APIStatusError, request_id: str | None) -> JSON:
        error: JSON = {
            "code": exc.code or "error",
            "message": exc.message or "error",
            "request_id": request_id,
        }
        if exc.details or exc.status_code == 422:
            error["details"] = dict(exc.details)
        if exc.retry_after is not None:
            error["retry_after"] = math.ceil(exc.retry_after)
        return {"error": error}

    def error_response(self, exc: APIStatusError, request_id: str) -> Response:
        headers: list[tuple[str, str]] = []
        if exc.retry_after is not None:
            headers.append(("retry-after", str(math.ceil(exc.retry_after))))
        if exc.status_code == 416:
            # band-client-rest declares the 416 body of #20 as a JSON string.
            for value in exc.details.get("content_range", ()):
                headers.append(("content-range", value))
            return Response(416, _json_bytes(exc.message or "range not satisfiable"), headers)
        return Response(exc.status_code, _json_bytes(self.error_body(exc, request_id)), headers)

    # ------------------------------------------------------------------ WebSocket

    async def _refuse(
        self, scope: Scope, send: Send, exc: APIStatusError, request_id: str | None
    ) -> None:
        if "websocket.http.response" in scope.get("extensions", {}):
            body = _json_bytes(self.error_body(exc, request_id))
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]
            if exc.retry_after is not None:
                headers.append((b"retry-after", str(math.ceil(exc.retry_after)).encode()))
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": exc.status_code,
                    "headers": headers,
                }
            )
            await send({"type": "websocket.http.response.body", "body": body})
        else:  # pragma: no cover - servers without the extension answer 403
            await send({"type": "websocket.close", "code": 1008})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        platform = self.platform
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        request_id = f"req_{secrets.token_hex(8)}"
        if scope["path"].rstrip("/") != WS_PATH:
            await self._refuse(scope, send, fail(404, f"no route for {scope['path']}"), request_id)
            return
        fault = platform.faults.take("GET", scope["path"])
        if fault is not None:
            if fault.delay:
                await trio.sleep(fault.delay if math.isfinite(fault.delay) else math.inf)
            await self._refuse(
                scope,
                send,
                self.fault_error(
                    fault.status,
                    fault.code or _UPGRADE_REFUSAL_CODES.get(fault.status),
                    fault.message,
                    fault.retry_after,
                ),
                request_id,
            )
            return
        query = dict(
            parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        )
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        principal = platform.state.authenticate(headers.get("x-api-key") or query.get("api_key"))
        agent_id = query.get("agent_id")
        if principal is None:
            await self._refuse(
                scope, send, fail(403, "invalid API key", code="forbidden"), request_id
            )
            return
        if agent_id is not None and principal.id != agent_id:
            await self._refuse(
                scope, send, fail(403, "the API key does not belong to this agent"), request_id
            )
            return
        if agent_id is None and isinstance(principal, AgentRecord):
            await self._refuse(
                scope, send, fail(403, "agent connections must pass agent_id"), request_id
            )
            return
        on_conflict = query.get("on_conflict")
        if on_conflict is not None and on_conflict not in ("supersede", "reject"):
            await self._refuse(
                scope,
                send,
                fail(400, "on_conflict must be supersede or reject", code="invalid_on_conflict"),
                request_id,
            )
            return
        if on_conflict == "reject" and platform.hub.connections(principal.id):
            await self._refuse(
                scope,
                send,
                fail(
                    409,
                    "an active connection already exists for this agent",
                    code="connection_conflict",
                ),
                None,
            )
            return
        await send({"type": "websocket.accept"})
        conn: Connection | None = None
        try:
            with trio.CancelScope() as cancel_scope:
                conn = platform.hub.open(
                    principal,
                    cancel_scope,
                    client=_addr(scope.get("client")),
                    server=_addr(scope.get("server")),
                )
                platform._flush()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._ws_writer, conn, send, nursery.cancel_scope)
                    while True:
                        message = await receive()
                        if message["type"] == "websocket.disconnect":
                            break
                        text = message.get("text")
                        if text is not None:
                            platform.hub.handle_frame(conn, text)
                            platform._flush()
                        else:
                            platform.hub.bad_frames += 1
                    nursery.cancel_scope.cancel()
        finally:
            if conn is not None:
                platform.hub.close(conn)
                platform._flush()

    async def _ws_writer(self, conn: Connection, send: Send, done: trio.CancelScope) -> None:
        async for item in conn.inbox:
            if isinstance(item, CloseRequest):
                await send({"type": "websocket.close", "code": item.code})
                break
            await send({"type": "websocket.send", "text": item})
        else:
            return
        done.cancel()


MAX_JSON_DEPTH = 64


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity, which are not JSON: echoing them back
    # would produce frames and bodies that strict clients cannot parse.
    raise ValueError(f"{name} is not valid JSON")


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


def _addr(value: Any) -> tuple[str, int] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return (str(value[0]), int(value[1]))
    return None


# ====================================================================== handlers


def _msgs(state: PlatformState, rows: list[Message]) -> list[JSON]:
    return [state.message_json(m) for m in rows]


def _upload_file(ctx: Ctx) -> Response:
    data = files.upload(
        ctx.state,
        ctx.agent,
        ctx.params[0],
        ctx.body,
        ctx.headers,
        max_bytes=ctx.app.platform.max_upload_bytes,
    )
    return ok(data, status=201)


def _register_routes(app: BandApp) -> None:
    A = "/api/v1/agent"
    M = "/api/v1/me"
    route = app.route

    # ------------------------------------------------------------ agent: identity, peers, chats
    @route("GET", f"{A}/me", "agent")
    def agent_me(ctx: Ctx) -> Response:
        return ok(ctx.state.agent_me(ctx.agent))

    @route("GET", f"{A}/peers", "agent")
    def agent_peers(ctx: Ctx) -> Response:
        rows = ctx.state.peers(ctx.agent, not_in_chat=ctx.query.str_("not_in_chat"))
        page, meta = offset_page(
            rows,
            ctx.query.int_("page", default=1),
            ctx.query.int_("page_size", default=50, maximum=100),
        )
        return ok(page, metadata=meta)

    @route("GET", f"{A}/chats", "agent")
    def agent_chats(ctx: Ctx) -> Response:
        state = ctx.state
        rooms = state.rooms_of(ctx.agent.id)
        page, meta = offset_page(
            rooms,
            ctx.query.int_("page", default=1),
            ctx.query.int_("page_size", default=50, maximum=100),
        )
        rows = []
        for room in page:
            row = state.room_json(room)
            if "participants" in ctx.query.includes:
                members = list(room.members.values())
                row["participants"] = [state.participant_json(m) for m in members[:100]]
                row["participant_count"] = len(members)
                row["participants_truncated"] = len(members) > 100
            rows.append(row)
        return ok(rows, metadata=meta)

    @route("POST", f"{A}/chats", "agent")
    def agent_create_chat(ctx: Ctx) -> Response:
        room = ctx.state.create_room(ctx.agent, ctx.obj_or_none())
        return ok(ctx.state.room_json(room), status=201)

    @route("GET", f"{A}/chats/{{id}}", "agent")
    def agent_get_chat(ctx: Ctx) -> Response:
        return ok(ctx.state.room_json(ctx.state.room_for(ctx.agent, ctx.params[0])))

    @route("PATCH", f"{A}/chats/{{id}}", "agent")
    def agent_rename_chat(ctx: Ctx) -> Response:
        room = ctx.state.rename_room(ctx.agent, ctx.params[0], ctx.obj())
        return ok(ctx.state.room_json(room))

    # ------------------------------------------------------------ agent: participants
    @route("GET", f"{A}/chats/{{id}}/participants", "agent")
    def agent_participants(ctx: Ctx) -> Response:
        return ok(ctx.state.participants(ctx.agent, ctx.params[0]))

    @route("POST", f"{A}/chats/{{id}}/participants", "agent")
    def agent_add_participant(ctx: Ctx) -> Response:
        return ok(ctx.state.add_participant(ctx.agent, ctx.params[0], ctx.obj()), status=201)

    @route("DELETE", f"{A}/chats/{{id}}/participants/{{pid}}", "agent")
    def agent_remove_participant(ctx: Ctx) -> Response:
        return ok(ctx.state.remove_participant(ctx.agent, ctx.params[0], ctx.params[1]))

    # ------------------------------------------------------------ agent: messages and lifecycle
    @route("GET", f"{A}/chats/{{id}}/messages/next", "agent")
    def agent_next(ctx: Ctx) -> Response:
        data = ctx.state.next_message(ctx.agent, ctx.params[0])
        return no_content() if data is None else ok(data)

    @route("GET", f"{A}/chats/{{id}}/messages", "agent")
    def agent_messages(ctx: Ctx) -> Response:
        q = ctx.query
        status = q.str_("status", choices=("pending", "processing", "processed", "failed", "all"))
        offset = uses_offset(q)
        order = q.str_("sort_order", choices=("asc", "desc"), default="asc")
        rows = ctx.state.work_list(ctx.agent, ctx.params[0], status)
        if offset:
            size = q.int_("page_size", default=20, maximum=100)
            page_no = q.int_("page", default=1)
            if order == "desc":
                rows = rows[::-1]
            page, meta = offset_page(rows, page_no, size)
            meta.update(has_more=page_no * size < len(rows), limit=size, next_cursor=None)
            headers = list(_DEPRECATION)
        else:
            limit = q.int_("limit", default=20, maximum=100)
            page, cursor, more = cursor_page(
                rows, lambda m: m.seq, q.str_("cursor"), limit, descending=order == "desc"
            )
            meta = {"has_more": more, "limit": limit, "next_cursor": cursor}
            headers = []
        if status is not None:
            meta["status_filter"] = status
        return ok(_msgs(ctx.state, page), metadata=meta, headers=headers)

    @route("POST", f"{A}/chats/{{id}}/messages", "agent")
    def agent_send(ctx: Ctx) -> Response:
        return ok(ctx.state.post_message(ctx.agent, ctx.params[0], ctx.obj()), status=201)

    def lifecycle(fn_name: str) -> Handler:
        def handler(ctx: Ctx) -> Response:
            fn = getattr(ctx.state, fn_name)
            if fn_name == "mark_failed":
                data = fn(ctx.agent, ctx.params[0], ctx.params[1], ctx.obj_or_none())
            else:
                data = fn(ctx.agent, ctx.params[0], ctx.params[1])
            return no_content() if data is None else ok(data)

        return handler

    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/processing", "agent")(
        lifecycle("mark_processing")
    )
    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/processed", "agent")(
        lifecycle("mark_processed")
    )
    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/failed", "agent")(lifecycle("mark_failed"))

    @route("POST", f"{A}/chats/{{id}}/events", "agent")
    def agent_event(ctx: Ctx) -> Response:
        return ok(ctx.state.post_event(ctx.agent, ctx.params[0], ctx.obj()), status=201)

    @route("GET", f"{A}/chats/{{id}}/context", "agent")
    def agent_context(ctx: Ctx) -> Response:
        q = ctx.query
        rows = ctx.state.context_list(ctx.agent, ctx.params[0])
        if uses_offset(q):
            size = q.int_("page_size", default=50, maximum=100)
            page_no = q.int_("page", default=1)
            page, meta = offset_page(rows, page_no, size)
            meta.update(has_more=page_no * size < len(rows), limit=size, next_cursor=None)
            return ok(
                _msgs(ctx.state, page), metadata=meta, meta=dict(meta), headers=list(_DEPRECATION)
            )
        limit = q.int_("limit", default=50, maximum=100)
        page, cursor, more = cursor_page(rows, lambda m: m.seq, q.str_("cursor"), limit)
        return ok(
            _msgs(ctx.state, page),
            metadata={"has_more": more, "limit": limit, "next_cursor": cursor},
        )

    @route("POST", f"{A}/chats/{{id}}/activity", "agent")
    def agent_activity(ctx: Ctx) -> Response:
        return ok(ctx.state.report_activity(ctx.agent, ctx.params[0], ctx.obj()))

    # ------------------------------------------------------------ agent: files
    route("PUT", f"{A}/chats/{{id}}/files", "agent")(_upload_file)

    @route("GET", f"{A}/chats/{{id}}/files/{{fid}}", "agent")
    def agent_download(ctx: Ctx) -> Response:
        status, headers, data = files.download(
            ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.headers.get("range")
        )
        content_type = dict(headers).pop("content-type")
        return Response(status, data, [h for h in headers if h[0] != "content-type"], content_type)

    # ------------------------------------------------------------ agent: tasks and board
    @route("GET", f"{A}/chats/{{id}}/tasks", "agent")
    def agent_tasks(ctx: Ctx) -> Response:
        rows, meta = tasks.list_tasks(ctx.state, ctx.agent, ctx.params[0], ctx.query)
        return ok(rows, metadata=meta)

    @route("POST", f"{A}/chats/{{id}}/tasks", "agent")
    def agent_create_task(ctx: Ctx) -> Response:
        return ok(tasks.create_task(ctx.state, ctx.agent, ctx.params[0], ctx.obj()), status=201)

    @route("GET", f"{A}/chats/{{id}}/tasks/{{tid}}", "agent")
    def agent_get_task(ctx: Ctx) -> Response:
        return ok(tasks.get_task(ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.query))

    @route("POST", f"{A}/chats/{{id}}/tasks/{{tid}}", "agent")
    def agent_update_task(ctx: Ctx) -> Response:
        return ok(tasks.update_task(ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.obj()))

    @route("GET", f"{A}/chats/{{id}}/tasks/{{tid}}/history", "agent")
    def agent_task_history(ctx: Ctx) -> Response:
        rows, meta = tasks.task_history(
            ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.query
        )
        return ok(rows, metadata=meta)

    @route("GET", f"{A}/chats/{{id}}/board", "agent")
    def agent_board(ctx: Ctx) -> Response:
        return ok(tasks.get_board(ctx.state, ctx.agent, ctx.params[0], ctx.query))

    @route("PUT", f"{A}/chats/{{id}}/board", "agent")
    def agent_put_board(ctx: Ctx) -> Response:
        return ok(tasks.put_board(ctx.state, ctx.agent, ctx.params[0], ctx.obj()))

    # ------------------------------------------------------------ agent: contacts
    @route("GET", f"{A}/contacts", "agent")
    def agent_contacts(ctx: Ctx) -> Response:
        rows, meta = contacts.agent_contacts(ctx.state, ctx.agent, ctx.query)
        return ok(rows, metadata=meta)

    @route("POST", f"{A}/contacts/add", "agent")
    def agent_add_contact(ctx: Ctx) -> Response:
        return ok(contacts.add_contact(ctx.state, ctx.agent, ctx.obj()))

    @route("POST", f"{A}/contacts/remove", "agent")
    def agent_remove_contact(ctx: Ctx) -> Response:
        return ok(contacts.remove_contact(ctx.state, ctx.agent, ctx.obj()))

    @route("GET", f"{A}/contacts/requests", "agent")
    def agent_contact_requests(ctx: Ctx) -> Response:
        data, meta = contacts.agent_requests(ctx.state, ctx.agent, ctx.query)
        return ok(data, metadata=meta)

    @route("POST", f"{A}/contacts/requests/respond", "agent")
    def agent_respond(ctx: Ctx) -> Response:
        return ok(contacts.respond(ctx.state, ctx.agent, ctx.obj()))

    # ------------------------------------------------------------ agent: memories, delegation
    @route("GET", f"{A}/memories", "agent")
    def agent_memories(ctx: Ctx) -> Response:
        rows, meta, offset = memories.list_memories(ctx.state, ctx.agent, ctx.query)
        if offset:
            return ok(rows, metadata=meta, meta=dict(meta), headers=list(_DEPRECATION))
        return ok(rows, metadata=meta)

    @route("POST", f"{A}/memories", "agent")
    def agent_create_memory(ctx: Ctx) -> Response:
        return ok(memories.create(ctx.state, ctx.agent, ctx.obj()), status=201)

    @route("GET", f"{A}/memories/{{id}}", "agent")
    def agent_memory(ctx: Ctx) -> Response:
        return ok(memories.get(ctx.state, ctx.agent, ctx.params[0]))

    @route("POST", f"{A}/memories/{{id}}/supersede", "agent")
    def agent_supersede(ctx: Ctx) -> Response:
        return ok(memories.supersede(ctx.state, ctx.agent, ctx.params[0]))

    @route("POST", f"{A}/memories/{{id}}/archive", "agent")
    def agent_archive(ctx: Ctx) -> Response:
        return ok(memories.archive(ctx.state, ctx.agent, ctx.params[0]))

    @route("POST", f"{A}/delegation/token", "agent")
    def agent_delegation(ctx: Ctx) -> Response:
        data = delegation.exchange(ctx.state, ctx.agent, ctx.obj())
        return Response(200, _json_bytes(data))

    # ------------------------------------------------------------ human: agents
    @route("POST", f"{M}/agents/register", "user")
    def me_register(ctx: Ctx) -> Response:
        req = ctx.obj().req_obj("agent")
        name = req.req_str("name", max_len=100).strip()
        if not name:
            raise invalid(req.at("name"), "can't be blank")
        description = (req.str_("description", max_len=2000) or "").strip()
        agent = ctx.state.register_agent(ctx.user, name, description)
        data = {
            "agent": {
                "id": agent.id,
                "name": agent.name,
                "description": agent.description,
                "owner_id": agent.owner_id,
                "inserted_at": agent.inserted_at,
                "handle": agent.handle,
                "slug": agent.slug,
            },
            "credentials": {"api_key": agent.api_key},
        }
        return ok(data, status=201)

    @route("GET", f"{M}/agents", "user")
    def me_agents(ctx: Ctx) -> Response:
        q = ctx.query
        name = (q.str_("name") or "").lower()
        sort = q.str_("sort", choices=("name", "inserted_at", "updated_at"), default="inserted_at")
        order = q.str_("order", choices=("asc", "desc"), default="asc")
        mine = [
            a
            for a in ctx.state.agents.values()
            if a.owner_id == ctx.user.id and name in a.name.lower()
        ]
        mine.sort(key=lambda a: (getattr(a, sort or "inserted_at"), a.id), reverse=order == "desc")
        indexed = list(enumerate(mine, start=1))
        limit = q.int_("limit", default=50, maximum=100)
        page, cursor, more = cursor_page(indexed, lambda pair: pair[0], q.str_("cursor"), limit)
        rows = [
            {
                "id": a.id,
                "name": a.name,
                "description": a.description,
                "slug": a.slug,
                "is_external": False,
                "inserted_at": a.inserted_at,
                "updated_at": a.updated_at,
                "listed_in_directory": a.listed_in_directory,
                "tags": list(a.tags),
            }
            for _, a in page
        ]
        meta = {
            "has_more": more,
            "limit": limit,
            "next_cursor": cursor,
            "available_filters": [{"param": "name", "label": "Name", "type": "string"}],
            "sortable_fields": [
                {"param": "name", "label": "Name"},
                {"param": "inserted_at", "label": "Created"},
                {"param": "updated_at", "label": "Updated"},
            ],
        }
        return ok(rows, metadata=meta)

    @route("DELETE", f"{M}/agents/{{id}}", "user")
    def me_delete_agent(ctx: Ctx) -> Response:
        force = ctx.query.bool_("force") or False
        return ok(ctx.app.platform._delete_agent(ctx.user, ctx.params[0], force=force))

    @route("POST", f"{M}/agents/bulk-delete", "user")
    def me_bulk_delete_agents(ctx: Ctx) -> Response:
        body = ctx.obj()
        ids = body.str_list("ids", nullable=False) or []
        force = body.bool_("force") or False
        return ok(ctx.app.platform._bulk_delete(ctx.user, "agent", ids, force=force), status=202)

    @route("POST", f"{M}/chats/bulk-delete", "user")
    def me_bulk_delete_chats(ctx: Ctx) -> Response:
        ids = ctx.obj().str_list("ids", nullable=False) or []
        return ok(ctx.app.platform._bulk_delete(ctx.user, "chat", ids, force=False), status=202)

    @route("GET", f"{M}/bulk-deletions/{{id}}", "user")
    def me_bulk_job(ctx: Ctx) -> Response:
        job = ctx.state.bulk_jobs.get(ctx.params[0])
        if job is None or job["owner_id"] != ctx.user.id:
            raise not_found("bulk deletion")
        return ok({k: v for k, v in job.items() if k != "owner_id"})

    # ------------------------------------------------------------ human: chats
    @route("GET", f"{M}/chats", "user")
    def me_chats(ctx: Ctx) -> Response:
        q = ctx.query
        state = ctx.state
        status = q.str_("status", choices=("active", "archived", "closed"))
        kind = q.str_("type", choices=("direct", "group", "task"))
        rooms = [
            r
            for r in state.rooms_of(ctx.user.id)
            if (status is None or r.status == status) and (kind is None or r.type == kind)
        ]
        q.str_("sort_by", choices=("inserted_at", "updated_at"))
        q.str_("order", choices=("asc", "desc"))

        def render(room: RoomRecord) -> JSON:
            row = state.me_room_json(room, ctx.user)
            if "participants" in q.includes:
                members = list(room.members.values())
                row["participants"] = [state.participant_json(m) for m in members[:100]]
                row["participant_count"] = len(members)
                row["participants_truncated"] = len(members) > 100
            if "last_message" in q.includes and room.messages:
                row["last_message"] = state.message_json(room.messages[-1])
            return row

        if uses_offset(q):
            page, meta = offset_page(
                rooms, q.int_("page", default=1), q.int_("page_size", default=50, maximum=100)
            )
            return ok([render(r) for r in page], metadata=meta, headers=list(_DEPRECATION))
        indexed = list(enumerate(rooms, start=1))
        limit = q.int_("limit", default=50, maximum=100)
        chunk, cursor, more = cursor_page(indexed, lambda pair: pair[0], q.str_("cursor"), limit)
        meta = {"has_more": more, "limit": limit, "next_cursor": cursor}
        if "total_count" in q.includes:
            meta["total_count"] = len(rooms)
        return ok([render(r) for _, r in chunk], metadata=meta)

    @route("POST", f"{M}/chats", "user")
    def me_create_chat(ctx: Ctx) -> Response:
        room = ctx.state.create_room(ctx.user, ctx.obj_or_none())
        return ok(ctx.state.me_room_json(room, ctx.user), status=201)

    @route("GET", f"{M}/chats/{{id}}", "user")
    def me_get_chat(ctx: Ctx) -> Response:
        state = ctx.state
        room = state.room_for(ctx.user, ctx.params[0])
        data = state.me_room_json(room, ctx.user)
        if "message_counts" in ctx.query.includes:
            counts: dict[str, int] = {}
            for m in room.messages:
                counts[m.message_type] = counts.get(m.message_type, 0) + 1
            data["message_counts"] = counts
        return ok(data)

    @route("GET", f"{M}/chats/{{id}}/messages", "user")
    def me_messages(ctx: Ctx) -> Response:
        q = ctx.query
        room = ctx.state.room_for(ctx.user, ctx.params[0])
        only = {t for t in (q.str_("message_types") or "").split(",") if t}
        if q.str_("message_type"):
            only.add(q.str_("message_type") or "")
        exclude = {t for t in (q.str_("exclude_message_types") or "").split(",") if t}
        rows = [
            m
            for m in room.messages
            if (not only or m.message_type in only) and m.message_type not in exclude
        ]
        if uses_offset(q):
            size = q.int_("page_size", default=50, maximum=100)
            page_no = q.int_("page", default=1)
            page, meta = offset_page(rows, page_no, size)
            meta.update(has_more=page_no * size < len(rows), limit=size)
            return ok(_msgs(ctx.state, page), metadata=meta, headers=list(_DEPRECATION))
        limit = q.int_("limit", default=50, maximum=100)
        page, cursor, more = cursor_page(rows, lambda m: m.seq, q.str_("cursor"), limit)
        return ok(
            _msgs(ctx.state, page),
            metadata={"has_more": more, "limit": limit, "next_cursor": cursor},
        )

    @route("POST", f"{M}/chats/{{id}}/messages", "user")
    def me_send(ctx: Ctx) -> Response:
        return ok(ctx.state.post_message(ctx.user, ctx.params[0], ctx.obj()), status=201)

    @route("GET", f"{M}/chats/{{id}}/participants", "user")
    def me_participants(ctx: Ctx) -> Response:
        kind = ctx.query.str_("participant_type", choices=("User", "Agent"))
        rows = [
            p
            for p in ctx.state.participants(ctx.user, ctx.params[0], details=True)
            if kind is None or p["type"] == kind
        ]
        limit = ctx.query.int_("limit", default=100, maximum=100)
        return ok(
            rows[:limit],
            metadata={"has_more": len(rows) > limit, "limit": limit, "total_count": len(rows)},
        )

    @route("POST", f"{M}/chats/{{id}}/participants", "user")
    def me_add_participant(ctx: Ctx) -> Response:
        return ok(ctx.state.add_participant(ctx.user, ctx.params[0], ctx.obj()), status=201)

    @route("DELETE", f"{M}/chats/{{id}}/participants/{{pid}}", "user")
    def me_remove_participant(ctx: Ctx) -> Response:
        return ok(ctx.state.remove_participant(ctx.user, ctx.params[0], ctx.params[1]))

    # ------------------------------------------------------------ human: contacts
    @route("GET", f"{M}/contacts", "user")
    def me_contacts(ctx: Ctx) -> Response:
        rows, meta = contacts.human_contacts(ctx.state, ctx.user, ctx.query)
        return ok(rows, metadata=meta)

    @route("POST", f"{M}/contacts/remove", "user")
    def me_remove_contact(ctx: Ctx) -> Response:
        return ok(contacts.remove_contact(ctx.state, ctx.user, ctx.obj()))

    @route("POST", f"{M}/contacts/resolve", "user")
    def me_resolve(ctx: Ctx) -> Response:
        return ok(contacts.resolve_handle(ctx.state, ctx.obj()))

    @route("GET", f"{M}/contacts/requests", "user")
    def me_requests(ctx: Ctx) -> Response:
        rows, meta = contacts.human_requests(ctx.state, ctx.user, ctx.query, sent=False)
        return ok(rows, metadata=meta)

    @route("GET", f"{M}/contacts/requests/sent", "user")
    def me_sent_requests(ctx: Ctx) -> Response:
        rows, meta = contacts.human_requests(ctx.state, ctx.user, ctx.query, sent=True)
        return ok(rows, metadata=meta)

    @route("POST", f"{M}/contacts/requests", "user")
    def me_create_request(ctx: Ctx) -> Response:
        return ok(contacts.human_create_request(ctx.state, ctx.user, ctx.obj()), status=201)

    @route("POST", f"{M}/contacts/requests/{{id}}/approve", "user")
    def me_approve(ctx: Ctx) -> Response:
        return ok(contacts.human_settle(ctx.state, ctx.user, ctx.params[0], "approve"))

    @route("POST", f"{M}/contacts/requests/{{id}}/reject", "user")
    def me_reject(ctx: Ctx) -> Response:
        return ok(contacts.human_settle(ctx.state, ctx.user, ctx.params[0], "reject"))

    @route("DELETE", f"{M}/contacts/requests/{{id}}", "user")
    def me_cancel(ctx: Ctx) -> Response:
        return ok(contacts.human_settle(ctx.state, ctx.user, ctx.params[0], "cancel"))

    # ------------------------------------------------------------ human: memories
    @route("GET", f"{M}/memories", "user")
    def me_memories(ctx: Ctx) -> Response:
        rows, meta, offset = memories.human_list(ctx.state, ctx.user, ctx.query)
        if offset:
            return ok(rows, metadata=meta, meta=dict(meta), headers=list(_DEPRECATION))
        return ok(rows, metadata=meta)

    @route("GET", f"{M}/memories/{{id}}", "user")
    def me_memory(ctx: Ctx) -> Response:
        return ok(memories.human_get(ctx.state, ctx.user, ctx.params[0]))

    @route("DELETE", f"{M}/memories/{{id}}", "user")
    def me_delete_memory(ctx: Ctx) -> Response:
        memories.human_delete(ctx.state, ctx.user, ctx.params[0])
        return no_content()

    for action in ("supersede", "archive", "restore"):

        def transition(ctx: Ctx, action: str = action) -> Response:
            return ok(memories.human_transition(ctx.state, ctx.user, ctx.params[0], action))

        route("POST", f"{M}/memories/{{id}}/{action}", "user")(transition)

    # ------------------------------------------------------------ human: peers, profile
    @route("GET", f"{M}/peers", "user")
    def me_peers(ctx: Ctx) -> Response:
        kind = ctx.query.str_("type", choices=("User", "Agent"))
        rows = ctx.state.peers(ctx.user, not_in_chat=ctx.query.str_("not_in_chat"), kind=kind)
        page, meta = offset_page(
            rows,
            ctx.query.int_("page", default=1),
            ctx.query.int_("page_size", default=50, maximum=100),
        )
        return ok(page, metadata=meta)

    def profile_json(user: UserRecord) -> JSON:
        return {
            "id": user.id,
            "email": user.email,
            "handle": user.handle,
            "role": "user",
            "first_name": user.first_name,
            "last_name": user.last_name,
            "listed_in_directory": False,
            "local_credential_required": False,
        }

    @route("GET", f"{M}/profile", "user")
    def me_profile(ctx: Ctx) -> Response:
        return ok(profile_json(ctx.user))

    @route("PUT", f"{M}/profile", "user")
    def me_update_profile(ctx: Ctx) -> Response:
        req = ctx.obj().req_obj("user")
        first = req.str_("first_name", max_len=100)
        last = req.str_("last_name", max_len=100)
        user = ctx.user
        if first is not None:
            user.first_name = first.strip()
        if last is not None:
            user.last_name = last.strip()
        user.updated_at = now_ts()
        return ok(profile_json(user))

    # ------------------------------------------------------------ admin (local only)
    X = "/_local/admin"

    @route("GET", f"{X}/state", "admin")
    def admin_state(ctx: Ctx) -> Response:
        snapshot = ctx.state.snapshot()
        snapshot["hub"] = attrs.asdict(ctx.app.platform.hub.statistics())
        return ok(snapshot)

    @route("POST", f"{X}/control", "admin")
    def admin_control(ctx: Ctx) -> Response:
        body = ctx.obj()
        payload = ctx.state.control(
            body.req_str("agent_id"),
            body.req_str("mode"),
            room_id=body.str_("room_id"),
            scope=body.str_("scope"),
            reason=body.str_("reason") if body.has("reason") else "user_requested",
            execution_id=body.str_("execution_id"),
            correlation_id=body.str_("correlation_id"),
        )
        return ok(payload)

    @route("POST", f"{X}/agents/{{id}}/drop", "admin")
    def admin_drop(ctx: Ctx) -> Response:
        if ctx.params[0] not in ctx.state.agents:
            raise not_found("agent")
        abnormal = (ctx.obj_or_none() or Obj({})).bool_("abnormal")
        dropped = ctx.app.platform._drop_sockets(ctx.params[0], abnormal=abnormal is not False)
        return ok({"dropped": dropped})

    @route("POST", f"{X}/faults", "admin")
    def admin_add_fault(ctx: Ctx) -> Response:
        body = ctx.obj()
        status = body.raw("status")
        count = body.raw("count") if body.raw("count") is not None else 1
        retry_after = body.raw("retry_after")
        delay = body.raw("delay")
        if not isinstance(status, int) or isinstance(status, bool):
            raise invalid("/status", "must be an integer")
        if not isinstance(count, int) or isinstance(count, bool):
            raise invalid("/count", "must be an integer")
        for name, value in (("retry_after", retry_after), ("delay", delay)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise invalid(f"/{name}", "must be a number")
        try:
            fault = ctx.app.platform.faults.add(
                body.str_("method") or "*",
                body.req_str("path"),
                status,
                count,
                retry_after=retry_after,
                perform=body.bool_("perform") or False,
                delay=delay,
                code=body.str_("code"),
                message=body.str_("message"),
            )
        except ValueError as exc:
            raise invalid("/", str(exc)) from None
        return ok(
            {
                "method": fault.method,
                "path": fault.path.pattern,
                "status": fault.status,
                "count": fault.remaining,
            },
            status=201,
        )

    @route("DELETE", f"{X}/faults", "admin")
    def admin_clear_faults(ctx: Ctx) -> Response:
        ctx.app.platform.faults.clear()
        return no_content()

    @route("POST", f"{X}/users", "admin")
    def admin_create_user(ctx: Ctx) -> Response:
        body = ctx.obj()
        try:
            creds = ctx.app.platform.create_user(body.req_str("name"), body.req_str("handle"))
        except ValueError as exc:
            raise invalid("/handle", str(exc)) from None
        return ok(attrs.asdict(creds), status=201)

    @route("POST", f"{X}/agents", "admin")
    def admin_register_agent(ctx: Ctx) -> Response:
        body = ctx.obj()
        owner_id = body.str_("owner_id")
        if owner_id is not None and owner_id not in ctx.state.users:
            raise not_found("user")
        creds = ctx.app.platform.register_agent(
            body.req_str("name"), body.str_("description") or "", owner=owner_id
        )
        return ok(attrs.asdict(creds), status=201)

    @route("DELETE", f"{X}/rooms/{{id}}", "admin")
    def admin_delete_room(ctx: Ctx) -> Response:
        if ctx.params[0] not in ctx.state.rooms:
            raise not_found("chat room")
        ctx.state.delete_room(ctx.params[0])
        return no_content()
