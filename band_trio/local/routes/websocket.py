"""The WebSocket endpoint: Phoenix Channels v2 over one ASGI WebSocket.

The upgrade is authenticated like the real platform does it (an ``x-api-key``
header or ``api_key`` query parameter, ``agent_id`` for agents,
``on_conflict`` for a second connection of the same agent), and one with an
``Origin`` header (a browser's) is refused with 403 unless the origin is the
platform's own; a refused upgrade
answers with an HTTP error body when the server supports it. Once accepted,
frames go to the :class:`~band_trio.local.hub.Hub` and the socket's queued
frames are written by a second task.
"""

from __future__ import annotations

import math
import secrets
from typing import Any
from urllib.parse import parse_qsl

import trio

from band_trio.local.asgi import Receive, Scope, Send, Services, json_bytes
from band_trio.local.faults import fault_refusal
from band_trio.local.hub import CloseRequest, Connection
from band_trio.local.model import AgentRecord
from band_trio.local.refusal import RequestRefusedError, fail

__all__ = ["WEBSOCKET_IDLE_TIMEOUT", "WS_PATH", "serve_websocket"]

WS_PATH = "/api/v1/socket/websocket"
WEBSOCKET_IDLE_TIMEOUT = 60.0
"""Seconds a socket may go without a whole frame (a heartbeat every 30 s keeps
it open, as on Phoenix) before it is closed with 1001."""

# The machine codes the platform puts on refused WebSocket upgrades; REST
# errors of the same status use the generic codes of ``refusal``.
_UPGRADE_REFUSAL_CODES = {429: "too_many_requests", 503: "tracking_failed"}


async def _refuse(
    scope: Scope, send: Send, exc: RequestRefusedError, request_id: str | None
) -> None:
    if "websocket.http.response" in scope.get("extensions", {}):
        body = json_bytes(exc.body(request_id))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if exc.retry_after is not None:
            headers.append((b"retry-after", str(math.ceil(exc.retry_after)).encode()))
        await send(
            {
                "type": "websocket.http.response.start",
                "status": exc.status,
                "headers": headers,
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # pragma: no cover - servers without the extension answer 403
        await send({"type": "websocket.close", "code": 1008})


async def serve_websocket(services: Services, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one WebSocket: authenticate the upgrade, then Phoenix frames until
    either side closes. A refused upgrade answers with the platform's error body.
    """
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    request_id = f"req_{secrets.token_hex(8)}"
    if scope["path"].rstrip("/") != WS_PATH:
        await _refuse(scope, send, fail(404, f"no route for {scope['path']}"), request_id)
        return
    fault = services.faults.take("GET", scope["path"])
    if fault is not None:
        if fault.delay:
            await trio.sleep(fault.delay if math.isfinite(fault.delay) else math.inf)
        await _refuse(
            scope,
            send,
            fault_refusal(fault, default_code=_UPGRADE_REFUSAL_CODES.get(fault.status)),
            request_id,
        )
        services.changes.publish()  # the rule's hit count changed: wake the waiters
        return
    query = dict(
        parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    )
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    origin = headers.get("origin")
    if (
        origin is not None
        and origin.rstrip("/").lower() != f"http://{headers.get('host', '')}".lower()
    ):
        # A browser says where the page that opens the socket comes from: a page
        # of another site must not use a key it got hold of from this machine.
        await _refuse(
            scope, send, fail(403, "cross-origin WebSocket upgrades are refused"), request_id
        )
        return
    principal = services.state.authenticate(headers.get("x-api-key") or query.get("api_key"))
    agent_id = query.get("agent_id")
    if principal is None:
        await _refuse(scope, send, fail(403, "invalid API key", code="forbidden"), request_id)
        return
    if agent_id is not None and principal.id != agent_id:
        await _refuse(
            scope, send, fail(403, "the API key does not belong to this agent"), request_id
        )
        return
    if agent_id is None and isinstance(principal, AgentRecord):
        await _refuse(scope, send, fail(403, "agent connections must pass agent_id"), request_id)
        return
    on_conflict = query.get("on_conflict")
    if on_conflict is not None and on_conflict not in ("supersede", "reject"):
        await _refuse(
            scope,
            send,
            fail(400, "on_conflict must be supersede or reject", code="invalid_on_conflict"),
            request_id,
        )
        return
    if on_conflict == "reject" and services.hub.connections(principal.id):
        await _refuse(
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
            conn = services.hub.open(
                principal,
                cancel_scope,
                client=_addr(scope.get("client")),
                server=_addr(scope.get("server")),
            )
            services.changes.publish()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_write_frames, services, conn, send, nursery.cancel_scope)
                while True:
                    message = None
                    with trio.move_on_after(WEBSOCKET_IDLE_TIMEOUT):
                        message = await receive()
                    if message is None:
                        # No heartbeat, no frame: a dead client, or a message
                        # held unfinished (its fragments buffered) on purpose.
                        services.hub.idle_closes += 1
                        await send({"type": "websocket.close", "code": 1001})
                        break
                    if message["type"] == "websocket.disconnect":
                        break
                    text = message.get("text")
                    freeze = services.faults.frozen(conn.id)
                    if freeze is not None:
                        freeze.dropped_in += 1  # an injected half-open socket
                    elif text is not None:
                        services.hub.handle_frame(conn, text)
                        services.changes.publish()
                    else:
                        services.hub.bad_frames += 1
                nursery.cancel_scope.cancel()
    finally:
        if conn is not None:
            services.hub.close(conn)
            services.changes.publish()


async def _write_frames(
    services: Services, conn: Connection, send: Send, done: trio.CancelScope
) -> None:
    async for item in conn.inbox:
        freeze = services.faults.frozen(conn.id)
        if freeze is not None:
            freeze.dropped_out += 1  # an injected half-open socket
            continue
        if isinstance(item, CloseRequest):
            await send({"type": "websocket.close", "code": item.code})
            break
        await send({"type": "websocket.send", "text": item})
    else:
        return
    done.cancel()


def _addr(value: Any) -> tuple[str, int] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return (str(value[0]), int(value[1]))
    return None
