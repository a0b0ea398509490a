"""The agent REST API (``/api/v1/agent/...``): what an agent's SDK calls.

Every route needs an agent API key. Handlers turn the request into one call
on the platform's state or a feature module and shape its answer.
"""

from __future__ import annotations

import band_trio.local.contacts as contacts
import band_trio.local.delegation as delegation
import band_trio.local.files as files
import band_trio.local.memories as memories
import band_trio.local.tasks as tasks
from band_trio.local._paging import cursor_page, offset_page, uses_offset
from band_trio.local.asgi import (
    DEPRECATION_HEADERS,
    Ctx,
    Response,
    Route,
    json_bytes,
    no_content,
    ok,
    route,
)
from band_trio.local.model import JSON, Message
from band_trio.local.store import PlatformState

__all__ = ["ROUTES"]

A = "/api/v1/agent"


def _messages_json(state: PlatformState, rows: list[Message]) -> list[JSON]:
    return [state.message_json(m) for m in rows]


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
    return ok(_messages_json(ctx.state, page), metadata=meta, headers=headers)


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
            _messages_json(ctx.state, page),
            metadata=meta,
            meta=dict(meta),
            headers=DEPRECATION_HEADERS,
        )
    limit = q.int_("limit", default=50, maximum=100)
    page, cursor, more = cursor_page(rows, lambda m: m.seq, q.str_("cursor"), limit)
    return ok(
        _messages_json(ctx.state, page),
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
    rows, meta = contacts.agent_contacts(ctx.state, ctx.agent, ctx.query)
    return ok(rows, metadata=meta)


def agent_add_contact(ctx: Ctx) -> Response:
    return ok(contacts.add_contact(ctx.state, ctx.agent, ctx.obj()))


def agent_remove_contact(ctx: Ctx) -> Response:
    return ok(contacts.remove_contact(ctx.state, ctx.agent, ctx.obj()))


def agent_contact_requests(ctx: Ctx) -> Response:
    data, meta = contacts.agent_requests(ctx.state, ctx.agent, ctx.query)
    return ok(data, metadata=meta)


def agent_respond(ctx: Ctx) -> Response:
    return ok(contacts.respond(ctx.state, ctx.agent, ctx.obj()))


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
    route("GET", f"{A}/me", "agent", agent_me),
    route("GET", f"{A}/peers", "agent", agent_peers),
    route("GET", f"{A}/chats", "agent", agent_chats),
    route("POST", f"{A}/chats", "agent", agent_create_chat),
    route("GET", f"{A}/chats/{{id}}", "agent", agent_get_chat),
    route("PATCH", f"{A}/chats/{{id}}", "agent", agent_rename_chat),
    # agent: participants
    route("GET", f"{A}/chats/{{id}}/participants", "agent", agent_participants),
    route("POST", f"{A}/chats/{{id}}/participants", "agent", agent_add_participant),
    route("DELETE", f"{A}/chats/{{id}}/participants/{{pid}}", "agent", agent_remove_participant),
    # agent: messages and lifecycle
    route("GET", f"{A}/chats/{{id}}/messages/next", "agent", agent_next),
    route("GET", f"{A}/chats/{{id}}/messages", "agent", agent_messages),
    route("POST", f"{A}/chats/{{id}}/messages", "agent", agent_send),
    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/processing", "agent", agent_mark_processing),
    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/processed", "agent", agent_mark_processed),
    route("POST", f"{A}/chats/{{id}}/messages/{{mid}}/failed", "agent", agent_mark_failed),
    route("POST", f"{A}/chats/{{id}}/events", "agent", agent_event),
    route("GET", f"{A}/chats/{{id}}/context", "agent", agent_context),
    route("POST", f"{A}/chats/{{id}}/activity", "agent", agent_activity),
    # agent: files
    route("PUT", f"{A}/chats/{{id}}/files", "agent", agent_upload_file, upload=True),
    route("GET", f"{A}/chats/{{id}}/files/{{fid}}", "agent", agent_download),
    # agent: tasks and board
    route("GET", f"{A}/chats/{{id}}/tasks", "agent", agent_tasks),
    route("POST", f"{A}/chats/{{id}}/tasks", "agent", agent_create_task),
    route("GET", f"{A}/chats/{{id}}/tasks/{{tid}}", "agent", agent_get_task),
    route("POST", f"{A}/chats/{{id}}/tasks/{{tid}}", "agent", agent_update_task),
    route("GET", f"{A}/chats/{{id}}/tasks/{{tid}}/history", "agent", agent_task_history),
    route("GET", f"{A}/chats/{{id}}/board", "agent", agent_board),
    route("PUT", f"{A}/chats/{{id}}/board", "agent", agent_put_board),
    # agent: contacts
    route("GET", f"{A}/contacts", "agent", agent_contacts),
    route("POST", f"{A}/contacts/add", "agent", agent_add_contact),
    route("POST", f"{A}/contacts/remove", "agent", agent_remove_contact),
    route("GET", f"{A}/contacts/requests", "agent", agent_contact_requests),
    route("POST", f"{A}/contacts/requests/respond", "agent", agent_respond),
    # agent: memories, delegation
    route("GET", f"{A}/memories", "agent", agent_memories),
    route("POST", f"{A}/memories", "agent", agent_create_memory),
    route("GET", f"{A}/memories/{{id}}", "agent", agent_memory),
    route("POST", f"{A}/memories/{{id}}/supersede", "agent", agent_supersede),
    route("POST", f"{A}/memories/{{id}}/archive", "agent", agent_archive),
    route("POST", f"{A}/delegation/token", "agent", agent_delegation),
)
