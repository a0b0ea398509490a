"""The local platform's ASGI application: routing, authentication, faults.

:class:`BandApp` serves three route tables (the agent API, the human API with
its live-feed controls, and, only when enabled, the local admin API), the
WebSocket endpoint, the human live feed (Server-Sent Events) and the browser
playground. For each HTTP request it applies the fault injection rules,
authenticates the caller for the route from its headers, only then reads the
body, runs the synchronous handler, and publishes what the request changed
(pushes to the sockets and the live feed, a wake-up to
:meth:`~band_trio.local.LocalPlatform.wait_for`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections import Counter
from collections.abc import Iterator
from urllib.parse import parse_qsl

import trio

from band_trio.local._input import Query
from band_trio.local.asgi import (
    INLINE_JSON_BYTES,
    MAX_JSON_BODY,
    Auth,
    Ctx,
    Receive,
    Response,
    RouteTable,
    Scope,
    Send,
    Services,
    decode_json_off_loop,
    error_response,
    read_body,
)
from band_trio.local.faults import fault_refusal
from band_trio.local.model import AgentRecord, Principal, UserRecord
from band_trio.local.refusal import RequestRefusedError, fail, forbidden
from band_trio.local.routes import admin_api, agent_api, human_api, human_feed, playground
from band_trio.local.routes.websocket import serve_websocket

__all__ = ["UPLOAD_BYTES_IN_FLIGHT", "BandApp"]

UPLOAD_BYTES_IN_FLIGHT = 2
"""Bytes of uploads one user or agent may have in flight at once, in
``max_upload_bytes``: two of the largest (50 MB by default), so stalled
uploads cannot make the platform hold memory without bound."""

log = logging.getLogger("band_trio.local")


class BandApp:
    """The ASGI callable serving REST, WebSocket and admin for one platform.

    Args:
        services: the platform's state, hub, faults, accounts and change feed.
    """

    def __init__(self, services: Services) -> None:
        self.services = services
        # Without admin the operator's routes do not exist: they answer 404
        # like any unknown path, so a scan learns nothing from them.
        admin_routes = admin_api.ROUTES if services.admin_enabled else ()
        self._uploading: Counter[str] = Counter()
        # Large JSON bodies are decoded in a worker thread, one at a time: a
        # client sending many cannot make the loop (or the other clients) wait
        # for more than one.
        self._decoding = trio.CapacityLimiter(1)
        self.routes = RouteTable(
            (*agent_api.ROUTES, *human_api.ROUTES, *human_feed.ROUTES, *admin_routes)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await serve_websocket(self.services, scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method: str = scope["method"]
        path: str = scope["path"]
        request_id = f"req_{secrets.token_hex(8)}"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        response: Response
        try:
            try:
                if method == "GET" and path.rstrip("/") == human_feed.STREAM_PATH:
                    await self._stream(scope, receive, send, headers)
                    return
                if playground.serves(path):
                    response = playground.respond(
                        self.services, method, path, _query(scope), headers
                    )
                else:
                    response = await self._dispatch(scope, receive, method, path, headers)
            finally:
                self.services.changes.publish()
        except RequestRefusedError as exc:
            response = error_response(exc, request_id)
        except trio.BrokenResourceError:
            return
        except Exception:
            # %r: a path or method holding a newline must not forge a log line.
            log.exception("local platform: unhandled error on %r %r", method, path)
            response = error_response(fail(500, "internal server error"), request_id)
        out_headers = [(b"x-request-id", request_id.encode())]
        if not any(name == "x-content-type-options" for name, _ in response.headers):
            # A browser must never read a JSON answer as a page or a script.
            out_headers.append((b"x-content-type-options", b"nosniff"))
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
        services = self.services
        fault = services.faults.take(method, path)
        if fault is not None and fault.delay:
            await trio.sleep(fault.delay if math.isfinite(fault.delay) else math.inf)
        if fault is not None and not fault.perform:
            raise fault_refusal(fault)
        route, params = self.routes.resolve(method, path)
        # The caller is known before a byte of the body is read: a client
        # without a valid key costs the platform its headers, never its body.
        principal = self._authenticate(route.auth, headers)
        limit = services.max_upload_bytes + 1 if route.upload else MAX_JSON_BODY
        with self._upload_budget(principal if route.upload else None, headers, limit):
            body = await read_body(receive, limit)
        decoded = None
        if not route.upload and len(body) > INLINE_JSON_BYTES:
            decoded = await decode_json_off_loop(body, self._decoding)
        ctx = Ctx(
            services,
            method,
            path,
            params,
            _query(scope),
            headers,
            body,
            principal,
            decoded,
        )
        response = route.handler(ctx)
        if fault is not None:
            raise fault_refusal(fault)
        return response

    @contextlib.contextmanager
    def _upload_budget(
        self, principal: Principal | None, headers: dict[str, str], limit: int
    ) -> Iterator[None]:
        """Reserve an upload's bytes (its ``content-length``, else ``limit``)
        from its caller's budget while the body is read.

        Raises:
            RequestRefusedError: 429 ``too_many_uploads`` when the caller's
                uploads in flight would pass :data:`UPLOAD_BYTES_IN_FLIGHT`
                times the largest upload.
        """
        if principal is None:
            yield
            return
        declared = headers.get("content-length", "")
        size = min(int(declared), limit) if declared.isascii() and declared.isdigit() else limit
        budget = UPLOAD_BYTES_IN_FLIGHT * self.services.max_upload_bytes
        if self._uploading[principal.id] + size > budget:
            raise fail(
                429,
                "too many uploads in flight for this key; finish one and retry",
                code="too_many_uploads",
                retry_after=1,
            )
        self._uploading[principal.id] += size
        self.services.changes.wake()
        try:
            yield
        finally:
            self._uploading[principal.id] -= size
            if not self._uploading[principal.id]:
                del self._uploading[principal.id]
            self.services.changes.wake()

    def _authenticate(self, auth: Auth, headers: dict[str, str]) -> Principal | None:
        """The caller of a route with ``auth`` (None for the admin key).

        Raises:
            RequestRefusedError: 401 without a valid key, 403 for the wrong kind of key.
        """
        services = self.services
        if auth == "admin":
            # Compared as bytes: compare_digest refuses non-ASCII text.
            given = headers.get("x-admin-key", "").encode("latin-1")
            if not given or not secrets.compare_digest(given, services.admin_key.encode()):
                raise fail(401, "a valid x-admin-key header is required")
            return None
        principal = services.state.authenticate(headers.get("x-api-key"))
        if principal is None:
            raise fail(401, "missing or invalid API key")
        if auth == "agent" and not isinstance(principal, AgentRecord):
            raise forbidden("this endpoint needs an agent API key")
        if auth == "user" and not isinstance(principal, UserRecord):
            raise forbidden("this endpoint needs a user API key")
        return principal

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        """The live feed: authenticated by header or ``?token=``, then streamed."""
        query = _query(scope)
        user = human_feed_user(self.services, headers, query)
        human_feed.stream_room(self.services, user, query.str_("room_id"))
        await human_feed.serve_stream(self.services, user, query.str_("room_id"), receive, send)


def _query(scope: Scope) -> Query:
    return Query(
        parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    )


def human_feed_user(services: Services, headers: dict[str, str], query: Query) -> UserRecord:
    """The user of a request that may carry its key as ``?token=`` (browsers'
    ``EventSource`` cannot set headers).

    Raises:
        RequestRefusedError: 401 without a valid key, 403 for an agent key.
    """
    principal = services.state.authenticate(headers.get("x-api-key") or query.str_("token"))
    if principal is None:
        raise fail(401, "missing or invalid API key")
    if not isinstance(principal, UserRecord):
        raise forbidden("this endpoint needs a user API key")
    return principal
