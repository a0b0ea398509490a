"""The human live feed and controls (``/api/v1/me/...``): watch and steer agents.

Three local-platform conveniences for a person talking to agents:

* ``GET /api/v1/me/stream[?room_id=R]``: Server-Sent Events, one event per
  change (``event: <type>``, ``data: {"type", "room_id", "data"}``) and a
  ``: keep-alive`` comment when nothing was sent for a while. The first event
  is ``resync`` (list the state now); a reader that falls behind the feed's
  bound gets another ``resync`` after the dropped events.
* ``POST /api/v1/me/chats/{id}/control``: send ``agent.control``
  (interrupt, stop, play) to one agent of the room or to every agent in it;
  answers ``{"sent": [agents told], "running": [agents with a turn to
  interrupt]}``. The live feed's ``message_status`` of an interrupted turn
  says ``"interrupted": true``.
* ``GET /api/v1/me/agents/status``: each of the user's agents with its
  connection, working state and delivery counts.

A browser's ``EventSource`` cannot set headers, so the stream also accepts the
user key as ``?token=``. A user is reported online (``online`` of participants
and contacts) while they follow the stream, as while they hold a WebSocket.
"""

from __future__ import annotations

import json
import math

import trio

from band_trio.local.asgi import Ctx, Handler, Receive, Response, Route, Send, Services, ok, route
from band_trio.local.directory import ACTIVITY_TTL
from band_trio.local.live_feed import FeedEvent, FeedSubscription
from band_trio.local.model import JSON, AgentRecord, RoomRecord, UserRecord
from band_trio.local.refusal import not_found

__all__ = ["KEEP_ALIVE", "ROUTES", "STREAM_PATH", "agent_status_json", "serve_stream"]

PREFIX = "/api/v1/me"
STREAM_PATH = PREFIX + "/stream"
KEEP_ALIVE = 15.0
"""Seconds of silence after which the stream sends a ``: keep-alive`` comment."""

CONTROL_ACTIONS = ("interrupt", "stop", "play")


def _route(method: str, path: str, handler: Handler) -> Route:
    return route(method, PREFIX + path, "user", handler)


# ------------------------------------------------------------ control


def me_control(ctx: Ctx) -> Response:
    room = ctx.state.room_for(ctx.user, ctx.params[0])
    body = ctx.obj()
    action = body.req_str("action", choices=CONTROL_ACTIONS)
    agent_id = body.str_("agent_id")
    agents = [pid for pid, m in room.members.items() if m.type == "Agent"]
    if agent_id is not None:
        if agent_id not in agents:
            raise not_found("agent in this chat room")
        agents = [agent_id]
    running = [a for a in agents if _mark_interrupted(room, a)] if action == "interrupt" else []
    for target in agents:
        ctx.state.control(target, action, room_id=room.id, scope="room")
    return ok({"sent": agents, "running": running})


def _mark_interrupted(room: RoomRecord, agent_id: str) -> bool:
    """Mark the agent's open attempts in the room as interrupted (the live feed
    then says so when they end); False when it had none."""
    found = False
    for message in room.inbox.get(agent_id, ()):
        attempt = message.deliveries[agent_id].active_attempt
        if attempt is not None:
            attempt.interrupted = found = True
    return found


# ------------------------------------------------------------ agent view


def agent_status_json(ctx: Ctx, agent: AgentRecord) -> JSON:
    """An agent's connection, working state and delivery counts over its rooms."""
    state = ctx.state
    now = state.clock()
    counts = dict.fromkeys(("delivered", "processing", "processed", "failed"), 0)
    working = False
    stopped_rooms = []
    for room in state.rooms_of(agent.id):
        for message in room.inbox.get(agent.id, ()):
            status = message.deliveries[agent.id].status
            counts[status] = counts.get(status, 0) + 1
        report = room.activity.get(agent.id)
        working = working or (report is not None and now - report["at"] < ACTIVITY_TTL)
        if agent.id in room.stopped:
            stopped_rooms.append(room.id)
    return {
        "id": agent.id,
        "name": agent.name,
        "handle": agent.handle,
        "connected": state.is_online(agent.id),
        "status": "working" if working else "idle",
        "stopped_rooms": stopped_rooms,
        "messages": counts,
    }


def me_agents_status(ctx: Ctx) -> Response:
    room_id = ctx.query.str_("room_id")
    if room_id is not None:
        room = ctx.state.room_for(ctx.user, room_id)
        agents = [ctx.state.agents[pid] for pid in room.members if pid in ctx.state.agents]
    else:
        agents = [a for a in ctx.state.agents.values() if a.owner_id == ctx.user.id]
    return ok([agent_status_json(ctx, agent) for agent in agents])


ROUTES: tuple[Route, ...] = (
    _route("POST", "/chats/{id}/control", me_control),
    _route("GET", "/agents/status", me_agents_status),
)


# ------------------------------------------------------------ the stream


def stream_room(services: Services, user: UserRecord, room_id: str | None) -> None:
    """Check that ``user`` may watch ``room_id`` (None: every room of the user).

    Raises:
        RequestRefusedError: 404 for a room the user is not in.
    """
    if room_id is not None:
        services.state.room_for(user, room_id)


def sse_bytes(event: FeedEvent) -> bytes:
    """One event in the Server-Sent Events format (compact JSON has no newline)."""
    data = json.dumps(event.as_json(), separators=(",", ":"), ensure_ascii=False)
    return f"event: {event.type}\ndata: {data}\n\n".encode()


async def serve_stream(
    services: Services,
    user: UserRecord,
    room_id: str | None,
    receive: Receive,
    send: Send,
    *,
    keep_alive: float | None = None,
) -> None:
    """Stream the feed of ``user`` (one room, or all) until the client leaves.

    The subscription exists before the response starts, so once a client has
    the headers every later change reaches it.

    Args:
        keep_alive: seconds of silence before a keep-alive comment
            (default :data:`KEEP_ALIVE`).

    Cancellation: ends the response where it is (the server is shutting down).
    """
    keep_alive = KEEP_ALIVE if keep_alive is None else keep_alive
    live = services.changes.live
    subscription = live.subscribe(user.id, room_id)
    # A person following the feed (the playground, the terminal chat) is online.
    services.state.set_online(user.id, +1)
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, services, subscription, send, keep_alive)
            while (await receive())["type"] != "http.disconnect":
                pass
            nursery.cancel_scope.cancel()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        services.state.set_online(user.id, -1)
        live.unsubscribe(subscription)


async def _pump(
    services: Services, subscription: FeedSubscription, send: Send, keep_alive: float
) -> None:
    live = services.changes.live
    last_sent = trio.current_time()
    while True:
        expiry = live.next_expiry()
        quiet = last_sent + keep_alive - trio.current_time()
        # A working report ends without any request: wake when the first one expires.
        wake = min(quiet, expiry + 0.01) if expiry is not None else quiet
        with trio.move_on_after(max(0.0, wake) if math.isfinite(wake) else math.inf):
            await subscription.wait()
        events = subscription.take()
        if not events and expiry is not None:
            live.refresh()
            events = subscription.take()
        if events:
            body = b"".join(sse_bytes(e) for e in events)
        elif trio.current_time() - last_sent >= keep_alive:
            body = b": keep-alive\n\n"
        else:
            continue
        await send({"type": "http.response.body", "body": body, "more_body": True})
        last_sent = trio.current_time()
