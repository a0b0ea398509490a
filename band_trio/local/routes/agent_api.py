"""The agent REST API (``/api/v1/agent/...``): what an agent's SDK calls.

Every route needs an agent API key. Handlers turn the request into one call
on the platform's state or a feature module and shape its answer.
"""

from __future__ import annotations

import band_trio.local.contact_book as contact_book
import band_trio.local.delegation as delegation
import band_trio.local.files as files
import band_trio.local.memories as memories
import band_trio.local.tasks as tasks
from band_trio.local._paging import cursor_page, offset_page, uses_offset
from band_trio.local.asgi import (
    DEPRECATION_HEADERS,
    Ctx,
    Handler,
    Response,
    Route,
    json_bytes,
    no_content,
    ok,
    route,
)

__all__ = ["ROUTES"]

PREFIX = "/api/v1/agent"


def _route(method: str, path: str, handler: Handler, *, upload: bool = False) -> Route:
    return route(method, PREFIX + path, "agent", handler, upload=upload)


# ------------------------------------------------------------ agent: identity, peers, chats


def agent_me(ctx: Ctx) -> Response:
    return ok(ctx.state.agent_me(ctx.agent))


def agent_peers(ctx: Ctx) -> Response:
    rows = ctx.state.peers(ctx.agent, not_in_chat=ctx.query.str_("not_in_chat"))
    page, meta = offset_page(
        rows,
        ctx.query.int_("page", default=1),
        ctx.query.int_("page_size", default=50, maximum=100),
    )
    return ok(page, metadata=meta)


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


def agent_create_chat(ctx: Ctx) -> Response:
    room = ctx.state.create_room(ctx.agent, ctx.obj_or_none())
    return ok(ctx.state.room_json(room), status=201)


def agent_get_chat(ctx: Ctx) -> Response:
    return ok(ctx.state.room_json(ctx.state.room_for(ctx.agent, ctx.params[0])))


def agent_rename_chat(ctx: Ctx) -> Response:
    room = ctx.state.rename_room(ctx.agent, ctx.params[0], ctx.obj())
    return ok(ctx.state.room_json(room))


# ------------------------------------------------------------ agent: participants


def agent_participants(ctx: Ctx) -> Response:
    return ok(ctx.state.participants(ctx.agent, ctx.params[0]))


def agent_add_participant(ctx: Ctx) -> Response:
    return ok(ctx.state.add_participant(ctx.agent, ctx.params[0], ctx.obj()), status=201)


def agent_remove_participant(ctx: Ctx) -> Response:
    return ok(ctx.state.remove_participant(ctx.agent, ctx.params[0], ctx.params[1]))


# ------------------------------------------------------------ agent: messages and lifecycle


def agent_next(ctx: Ctx) -> Response:
    data = ctx.state.next_message(ctx.agent, ctx.params[0])
    return no_content() if data is None else ok(data)


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
        headers = DEPRECATION_HEADERS
    else:
        limit = q.int_("limit", default=20, maximum=100)
        page, cursor, more = cursor_page(
            rows, lambda m: m.seq, q.str_("cursor"), limit, descending=order == "desc"
        )
        meta = {"has_more": more, "limit": limit, "next_cursor": cursor}
        headers = ()
    if status is not None:
        meta["status_filter"] = status
    return ok([ctx.state.message_json(m) for m in page], metadata=meta, headers=headers)


def agent_send(ctx: Ctx) -> Response:
    return ok(ctx.state.post_message(ctx.agent, ctx.params[0], ctx.obj()), status=201)


def agent_mark_processing(ctx: Ctx) -> Response:
    data = ctx.state.mark_processing(ctx.agent, ctx.params[0], ctx.params[1])
    return no_content() if data is None else ok(data)


def agent_mark_processed(ctx: Ctx) -> Response:
    data = ctx.state.mark_processed(ctx.agent, ctx.params[0], ctx.params[1])
    return no_content() if data is None else ok(data)


def agent_mark_failed(ctx: Ctx) -> Response:
    data = ctx.state.mark_failed(ctx.agent, ctx.params[0], ctx.params[1], ctx.obj_or_none())
    return no_content() if data is None else ok(data)


def agent_event(ctx: Ctx) -> Response:
    return ok(ctx.state.post_event(ctx.agent, ctx.params[0], ctx.obj()), status=201)


def agent_context(ctx: Ctx) -> Response:
    q = ctx.query
    rows = ctx.state.context_list(ctx.agent, ctx.params[0])
    if uses_offset(q):
        size = q.int_("page_size", default=50, maximum=100)
        page_no = q.int_("page", default=1)
        page, meta = offset_page(rows, page_no, size)
        meta.update(has_more=page_no * size < len(rows), limit=size, next_cursor=None)
        return ok(
            [ctx.state.message_json(m) for m in page],
            metadata=meta,
            meta=dict(meta),
            headers=DEPRECATION_HEADERS,
        )
    limit = q.int_("limit", default=50, maximum=100)
    page, cursor, more = cursor_page(rows, lambda m: m.seq, q.str_("cursor"), limit)
    return ok(
        [ctx.state.message_json(m) for m in page],
        metadata={"has_more": more, "limit": limit, "next_cursor": cursor},
    )


def agent_activity(ctx: Ctx) -> Response:
    return ok(ctx.state.report_activity(ctx.agent, ctx.params[0], ctx.obj()))


# ------------------------------------------------------------ agent: files


def agent_upload_file(ctx: Ctx) -> Response:
    data = files.upload(
        ctx.state,
        ctx.agent,
        ctx.params[0],
        ctx.body,
        ctx.headers,
        max_bytes=ctx.services.max_upload_bytes,
    )
    return ok(data, status=201)


def agent_download(ctx: Ctx) -> Response:
    status, headers, data = files.download(
        ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.headers.get("range")
    )
    content_type = dict(headers).pop("content-type")
    return Response(status, data, [h for h in headers if h[0] != "content-type"], content_type)


# ------------------------------------------------------------ agent: tasks and board


def agent_tasks(ctx: Ctx) -> Response:
    rows, meta = tasks.list_tasks(ctx.state, ctx.agent, ctx.params[0], ctx.query)
    return ok(rows, metadata=meta)


def agent_create_task(ctx: Ctx) -> Response:
    return ok(tasks.create_task(ctx.state, ctx.agent, ctx.params[0], ctx.obj()), status=201)


def agent_get_task(ctx: Ctx) -> Response:
    return ok(tasks.get_task(ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.query))


def agent_update_task(ctx: Ctx) -> Response:
    return ok(tasks.update_task(ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.obj()))


def agent_task_history(ctx: Ctx) -> Response:
    rows, meta = tasks.task_history(ctx.state, ctx.agent, ctx.params[0], ctx.params[1], ctx.query)
    return ok(rows, metadata=meta)


def agent_board(ctx: Ctx) -> Response:
    return ok(tasks.get_board(ctx.state, ctx.agent, ctx.params[0], ctx.query))


def agent_put_board(ctx: Ctx) -> Response:
    return ok(tasks.put_board(ctx.state, ctx.agent, ctx.params[0], ctx.obj()))


# ------------------------------------------------------------ agent: contacts


def agent_contacts(ctx: Ctx) -> Response:
    rows, meta = contact_book.agent_contacts(ctx.state, ctx.agent, ctx.query)
    return ok(rows, metadata=meta)


def agent_add_contact(ctx: Ctx) -> Response:
    return ok(contact_book.add_contact(ctx.state, ctx.agent, ctx.obj()))


def agent_remove_contact(ctx: Ctx) -> Response:
    return ok(contact_book.remove_contact(ctx.state, ctx.agent, ctx.obj()))


def agent_contact_requests(ctx: Ctx) -> Response:
    data, meta = contact_book.agent_requests(ctx.state, ctx.agent, ctx.query)
    return ok(data, metadata=meta)


def agent_respond(ctx: Ctx) -> Response:
    return ok(contact_book.respond(ctx.state, ctx.agent, ctx.obj()))


# ------------------------------------------------------------ agent: memories, delegation


def agent_memories(ctx: Ctx) -> Response:
    rows, meta, offset = memories.list_memories(ctx.state, ctx.agent, ctx.query)
    if offset:
        return ok(rows, metadata=meta, meta=dict(meta), headers=DEPRECATION_HEADERS)
    return ok(rows, metadata=meta)


def agent_create_memory(ctx: Ctx) -> Response:
    return ok(memories.create(ctx.state, ctx.agent, ctx.obj()), status=201)


def agent_memory(ctx: Ctx) -> Response:
    return ok(memories.get(ctx.state, ctx.agent, ctx.params[0]))


def agent_supersede(ctx: Ctx) -> Response:
    return ok(memories.supersede(ctx.state, ctx.agent, ctx.params[0]))


def agent_archive(ctx: Ctx) -> Response:
    return ok(memories.archive(ctx.state, ctx.agent, ctx.params[0]))


def agent_delegation(ctx: Ctx) -> Response:
    data = delegation.exchange(ctx.state, ctx.agent, ctx.obj())
    return Response(200, json_bytes(data))


ROUTES: tuple[Route, ...] = (
    # agent: identity, peers, chats
    _route("GET", "/me", agent_me),
    _route("GET", "/peers", agent_peers),
    _route("GET", "/chats", agent_chats),
    _route("POST", "/chats", agent_create_chat),
    _route("GET", "/chats/{id}", agent_get_chat),
    _route("PATCH", "/chats/{id}", agent_rename_chat),
    # agent: participants
    _route("GET", "/chats/{id}/participants", agent_participants),
    _route("POST", "/chats/{id}/participants", agent_add_participant),
    _route("DELETE", "/chats/{id}/participants/{pid}", agent_remove_participant),
    # agent: messages and lifecycle
    _route("GET", "/chats/{id}/messages/next", agent_next),
    _route("GET", "/chats/{id}/messages", agent_messages),
    _route("POST", "/chats/{id}/messages", agent_send),
    _route("POST", "/chats/{id}/messages/{mid}/processing", agent_mark_processing),
    _route("POST", "/chats/{id}/messages/{mid}/processed", agent_mark_processed),
    _route("POST", "/chats/{id}/messages/{mid}/failed", agent_mark_failed),
    _route("POST", "/chats/{id}/events", agent_event),
    _route("GET", "/chats/{id}/context", agent_context),
    _route("POST", "/chats/{id}/activity", agent_activity),
    # agent: files
    _route("PUT", "/chats/{id}/files", agent_upload_file, upload=True),
    _route("GET", "/chats/{id}/files/{fid}", agent_download),
    # agent: tasks and board
    _route("GET", "/chats/{id}/tasks", agent_tasks),
    _route("POST", "/chats/{id}/tasks", agent_create_task),
    _route("GET", "/chats/{id}/tasks/{tid}", agent_get_task),
    _route("POST", "/chats/{id}/tasks/{tid}", agent_update_task),
    _route("GET", "/chats/{id}/tasks/{tid}/history", agent_task_history),
    _route("GET", "/chats/{id}/board", agent_board),
    _route("PUT", "/chats/{id}/board", agent_put_board),
    # agent: contacts
    _route("GET", "/contacts", agent_contacts),
    _route("POST", "/contacts/add", agent_add_contact),
    _route("POST", "/contacts/remove", agent_remove_contact),
    _route("GET", "/contacts/requests", agent_contact_requests),
    _route("POST", "/contacts/requests/respond", agent_respond),
    # agent: memories, delegation
    _route("GET", "/memories", agent_memories),
    _route("POST", "/memories", agent_create_memory),
    _route("GET", "/memories/{id}", agent_memory),
    _route("POST", "/memories/{id}/supersede", agent_supersede),
    _route("POST", "/memories/{id}/archive", agent_archive),
    _route("POST", "/delegation/token", agent_delegation),
)
