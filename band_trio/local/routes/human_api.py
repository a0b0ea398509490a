"""The human REST API (``/api/v1/me/...``): what a person's client calls.

Every route needs a user API key. Where the platform's documented behaviour
leaves it open, the local platform chooses: the message list ignores
``since``/``after``/``before``/``around``, and the room list ignores
``sort_by``/``order`` (oldest first, cursor paged).
"""

from __future__ import annotations

import band_trio.local.contact_book as contact_book
import band_trio.local.memories as memories
from band_trio.local._paging import cursor_page, offset_page, uses_offset
from band_trio.local.asgi import (
    DEPRECATION_HEADERS,
    Ctx,
    Handler,
    Response,
    Route,
    no_content,
    ok,
    route,
)
from band_trio.local.directory import check_name
from band_trio.local.model import JSON, RoomRecord, UserRecord, now_ts
from band_trio.local.refusal import invalid, not_found

__all__ = ["ROUTES"]

PREFIX = "/api/v1/me"


def _route(method: str, path: str, handler: Handler, *, upload: bool = False) -> Route:
    return route(method, PREFIX + path, "user", handler, upload=upload)


# ------------------------------------------------------------ human: agents


def me_register(ctx: Ctx) -> Response:
    req = ctx.obj().req_obj("agent")
    name = req.req_str("name", max_len=100).strip()
    if not name:
        raise invalid(req.at("name"), "can't be blank")
    description = (req.str_("description", max_len=2000) or "").strip()
    try:
        agent = ctx.state.register_agent(ctx.user, name, description)
    except ValueError as exc:
        raise invalid(req.at("name"), str(exc)) from None
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


def me_agents(ctx: Ctx) -> Response:
    q = ctx.query
    name = (q.str_("name") or "").lower()
    sort = q.str_("sort", choices=("name", "inserted_at", "updated_at"), default="inserted_at")
    order = q.str_("order", choices=("asc", "desc"), default="asc")
    mine = [
        a for a in ctx.state.agents.values() if a.owner_id == ctx.user.id and name in a.name.lower()
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


def me_delete_agent(ctx: Ctx) -> Response:
    force = ctx.query.bool_("force") or False
    return ok(ctx.services.accounts.delete_agent(ctx.user, ctx.params[0], force=force))


def me_bulk_delete_agents(ctx: Ctx) -> Response:
    body = ctx.obj()
    ids = body.str_list("ids", nullable=False) or []
    force = body.bool_("force") or False
    return ok(ctx.services.accounts.bulk_delete(ctx.user, "agent", ids, force=force), status=202)


def me_bulk_delete_chats(ctx: Ctx) -> Response:
    ids = ctx.obj().str_list("ids", nullable=False) or []
    return ok(ctx.services.accounts.bulk_delete(ctx.user, "chat", ids, force=False), status=202)


def me_bulk_job(ctx: Ctx) -> Response:
    job = ctx.state.bulk_jobs.get(ctx.params[0])
    if job is None or job["owner_id"] != ctx.user.id:
        raise not_found("bulk deletion")
    return ok({k: v for k, v in job.items() if k != "owner_id"})


# ------------------------------------------------------------ human: chats


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
        return ok([render(r) for r in page], metadata=meta, headers=DEPRECATION_HEADERS)
    indexed = list(enumerate(rooms, start=1))
    limit = q.int_("limit", default=50, maximum=100)
    chunk, cursor, more = cursor_page(indexed, lambda pair: pair[0], q.str_("cursor"), limit)
    meta = {"has_more": more, "limit": limit, "next_cursor": cursor}
    if "total_count" in q.includes:
        meta["total_count"] = len(rooms)
    return ok([render(r) for _, r in chunk], metadata=meta)


def me_create_chat(ctx: Ctx) -> Response:
    room = ctx.state.create_room(ctx.user, ctx.obj_or_none())
    return ok(ctx.state.me_room_json(room, ctx.user), status=201)


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
        return ok(
            [ctx.state.message_json(m) for m in page], metadata=meta, headers=DEPRECATION_HEADERS
        )
    limit = q.int_("limit", default=50, maximum=100)
    page, cursor, more = cursor_page(rows, lambda m: m.seq, q.str_("cursor"), limit)
    return ok(
        [ctx.state.message_json(m) for m in page],
        metadata={"has_more": more, "limit": limit, "next_cursor": cursor},
    )


def me_send(ctx: Ctx) -> Response:
    return ok(ctx.state.post_message(ctx.user, ctx.params[0], ctx.obj()), status=201)


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


def me_add_participant(ctx: Ctx) -> Response:
    return ok(ctx.state.add_participant(ctx.user, ctx.params[0], ctx.obj()), status=201)


def me_remove_participant(ctx: Ctx) -> Response:
    return ok(ctx.state.remove_participant(ctx.user, ctx.params[0], ctx.params[1]))


# ------------------------------------------------------------ human: contacts


def me_contacts(ctx: Ctx) -> Response:
    rows, meta = contact_book.human_contacts(ctx.state, ctx.user, ctx.query)
    return ok(rows, metadata=meta)


def me_remove_contact(ctx: Ctx) -> Response:
    return ok(contact_book.remove_contact(ctx.state, ctx.user, ctx.obj()))


def me_resolve(ctx: Ctx) -> Response:
    return ok(contact_book.resolve_handle(ctx.state, ctx.obj()))


def me_requests(ctx: Ctx) -> Response:
    rows, meta = contact_book.human_requests(ctx.state, ctx.user, ctx.query, sent=False)
    return ok(rows, metadata=meta)


def me_sent_requests(ctx: Ctx) -> Response:
    rows, meta = contact_book.human_requests(ctx.state, ctx.user, ctx.query, sent=True)
    return ok(rows, metadata=meta)


def me_create_request(ctx: Ctx) -> Response:
    return ok(contact_book.human_create_request(ctx.state, ctx.user, ctx.obj()), status=201)


def me_approve(ctx: Ctx) -> Response:
    return ok(contact_book.human_settle(ctx.state, ctx.user, ctx.params[0], "approve"))


def me_reject(ctx: Ctx) -> Response:
    return ok(contact_book.human_settle(ctx.state, ctx.user, ctx.params[0], "reject"))


def me_cancel(ctx: Ctx) -> Response:
    return ok(contact_book.human_settle(ctx.state, ctx.user, ctx.params[0], "cancel"))


# ------------------------------------------------------------ human: memories


def me_memories(ctx: Ctx) -> Response:
    rows, meta, offset = memories.human_list(ctx.state, ctx.user, ctx.query)
    if offset:
        return ok(rows, metadata=meta, meta=dict(meta), headers=DEPRECATION_HEADERS)
    return ok(rows, metadata=meta)


def me_memory(ctx: Ctx) -> Response:
    return ok(memories.human_get(ctx.state, ctx.user, ctx.params[0]))


def me_delete_memory(ctx: Ctx) -> Response:
    memories.human_delete(ctx.state, ctx.user, ctx.params[0])
    return no_content()


def me_supersede_memory(ctx: Ctx) -> Response:
    return ok(memories.human_transition(ctx.state, ctx.user, ctx.params[0], "supersede"))


def me_archive_memory(ctx: Ctx) -> Response:
    return ok(memories.human_transition(ctx.state, ctx.user, ctx.params[0], "archive"))


def me_restore_memory(ctx: Ctx) -> Response:
    return ok(memories.human_transition(ctx.state, ctx.user, ctx.params[0], "restore"))


# ------------------------------------------------------------ human: peers, profile


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


def me_profile(ctx: Ctx) -> Response:
    return ok(profile_json(ctx.user))


def me_update_profile(ctx: Ctx) -> Response:
    req = ctx.obj().req_obj("user")
    first = req.str_("first_name", max_len=100)
    last = req.str_("last_name", max_len=100)
    for key, value in (("first_name", first), ("last_name", last)):
        try:
            check_name(value or "", "a user's name")
        except ValueError as exc:
            raise invalid(req.at(key), str(exc)) from None
    user = ctx.user
    if first is not None:
        user.first_name = first.strip()
    if last is not None:
        user.last_name = last.strip()
    user.updated_at = now_ts()
    return ok(profile_json(user))


ROUTES: tuple[Route, ...] = (
    # human: agents
    _route("POST", "/agents/register", me_register),
    _route("GET", "/agents", me_agents),
    _route("DELETE", "/agents/{id}", me_delete_agent),
    _route("POST", "/agents/bulk-delete", me_bulk_delete_agents),
    _route("POST", "/chats/bulk-delete", me_bulk_delete_chats),
    _route("GET", "/bulk-deletions/{id}", me_bulk_job),
    # human: chats
    _route("GET", "/chats", me_chats),
    _route("POST", "/chats", me_create_chat),
    _route("GET", "/chats/{id}", me_get_chat),
    _route("GET", "/chats/{id}/messages", me_messages),
    _route("POST", "/chats/{id}/messages", me_send),
    _route("GET", "/chats/{id}/participants", me_participants),
    _route("POST", "/chats/{id}/participants", me_add_participant),
    _route("DELETE", "/chats/{id}/participants/{pid}", me_remove_participant),
    # human: contacts
    _route("GET", "/contacts", me_contacts),
    _route("POST", "/contacts/remove", me_remove_contact),
    _route("POST", "/contacts/resolve", me_resolve),
    _route("GET", "/contacts/requests", me_requests),
    _route("GET", "/contacts/requests/sent", me_sent_requests),
    _route("POST", "/contacts/requests", me_create_request),
    _route("POST", "/contacts/requests/{id}/approve", me_approve),
    _route("POST", "/contacts/requests/{id}/reject", me_reject),
    _route("DELETE", "/contacts/requests/{id}", me_cancel),
    # human: memories
    _route("GET", "/memories", me_memories),
    _route("GET", "/memories/{id}", me_memory),
    _route("DELETE", "/memories/{id}", me_delete_memory),
    _route("POST", "/memories/{id}/supersede", me_supersede_memory),
    _route("POST", "/memories/{id}/archive", me_archive_memory),
    _route("POST", "/memories/{id}/restore", me_restore_memory),
    # human: peers, profile
    _route("GET", "/peers", me_peers),
    _route("GET", "/profile", me_profile),
    _route("PUT", "/profile", me_update_profile),
)
