"""The local-only admin API (``/_local/admin/...``): fault injection and control.

Every route needs the platform's ``x-admin-key``. It lets a test or a
separate process play the platform operator: push ``agent.control``, drop
sockets, inject faults, create users and agents, delete rooms.
"""

from __future__ import annotations

import attrs

from band_trio.local._input import Obj
from band_trio.local.asgi import (
    Ctx,
    Handler,
    Response,
    Route,
    no_content,
    ok,
    route,
)
from band_trio.local.directory import check_name
from band_trio.local.refusal import invalid, not_found

__all__ = ["ROUTES"]

PREFIX = "/_local/admin"


def _route(method: str, path: str, handler: Handler, *, upload: bool = False) -> Route:
    return route(method, PREFIX + path, "admin", handler, upload=upload)


# ------------------------------------------------------------ admin (local only)


def admin_state(ctx: Ctx) -> Response:
    snapshot = ctx.state.snapshot()
    snapshot["hub"] = attrs.asdict(ctx.services.hub.statistics())
    return ok(snapshot)


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


def admin_drop(ctx: Ctx) -> Response:
    if ctx.params[0] not in ctx.state.agents:
        raise not_found("agent")
    abnormal = (ctx.obj_or_none() or Obj({})).bool_("abnormal")
    dropped = len(ctx.services.hub.drop(ctx.params[0], abnormal=abnormal is not False))
    return ok({"dropped": dropped})


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
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise invalid(f"/{name}", "must be a number")
    try:
        fault = ctx.services.faults.add(
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


def admin_clear_faults(ctx: Ctx) -> Response:
    ctx.services.faults.clear()
    return no_content()


def admin_create_user(ctx: Ctx) -> Response:
    body = ctx.obj()
    name = body.req_str("name")
    try:
        check_name(name, "a user's name")
    except ValueError as exc:
        raise invalid("/name", str(exc)) from None
    try:
        creds = ctx.services.accounts.create_user(name, body.req_str("handle"))
    except ValueError as exc:
        raise invalid("/handle", str(exc)) from None
    return ok(attrs.asdict(creds), status=201)


def admin_register_agent(ctx: Ctx) -> Response:
    body = ctx.obj()
    owner_id = body.str_("owner_id")
    if owner_id is not None and owner_id not in ctx.state.users:
        raise not_found("user")
    try:
        creds = ctx.services.accounts.register_agent(
            body.req_str("name"),
            body.str_("description") or "",
            owner_id=owner_id or ctx.services.owner_id,
        )
    except ValueError as exc:
        raise invalid("/name", str(exc)) from None
    return ok(attrs.asdict(creds), status=201)


def admin_delete_room(ctx: Ctx) -> Response:
    if ctx.params[0] not in ctx.state.rooms:
        raise not_found("chat room")
    ctx.state.delete_room(ctx.params[0])
    return no_content()


ROUTES: tuple[Route, ...] = (
    # admin (local only)
    _route("GET", "/state", admin_state),
    _route("POST", "/control", admin_control),
    _route("POST", "/agents/{id}/drop", admin_drop),
    _route("POST", "/faults", admin_add_fault),
    _route("DELETE", "/faults", admin_clear_faults),
    _route("POST", "/users", admin_create_user),
    _route("POST", "/agents", admin_register_agent),
    _route("DELETE", "/rooms/{id}", admin_delete_room),
)
