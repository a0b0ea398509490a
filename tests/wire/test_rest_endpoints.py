"""Every one of the 38 agent endpoints: request shape (method, path, query, body,
headers) and response parsing, against httpx.MockTransport."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import pytest
import trio

from band_trio.wire import models as m
from band_trio.wire.rest import RestClient, encode_query

from .rest_mock import (
    ACTOR,
    API_KEY,
    ATTACHMENT,
    BOARD,
    CONTACT,
    CURSOR_META,
    ME,
    MEMORY,
    MESSAGE,
    PARTICIPANT,
    PEER,
    ROOM,
    TASK,
    TASK_EVENT,
    TOKEN,
    Recorder,
    json_body,
    make_client,
    ok,
    query_of,
    raw_path_of,
)

A = "/api/v1/agent"
NO_BODY = object()


@attrs.frozen
class Case:
    method_name: str
    call: Callable[[RestClient], Awaitable[Any]]
    http_method: str
    path: str
    response: httpx.Response
    check: Callable[[Any], bool]
    query: dict[str, str] = attrs.field(factory=dict)
    body: Any = NO_BODY
    headers: dict[str, str] = attrs.field(factory=dict)


def _raw(content: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=content)


CASES: list[Case] = [
    Case(
        "get_me",
        lambda r: r.get_me(),
        "GET",
        f"{A}/me",
        ok(ME),
        lambda x: isinstance(x, m.AgentMe) and x.feature_flags["ff_room_tasks"] is True,
    ),
    Case(
        "list_peers",
        lambda r: r.list_peers(not_in_chat="room-1", page=2, page_size=10),
        "GET",
        f"{A}/peers",
        ok([PEER], metadata={"page": 2, "page_size": 10, "total_count": 11, "total_pages": 2}),
        lambda x: x.items[0].handle == "alice/other" and x.meta.total_pages == 2,
        query={"not_in_chat": "room-1", "page": "2", "page_size": "10"},
    ),
    Case(
        "list_chats",
        lambda r: r.list_chats(include_participants=True),
        "GET",
        f"{A}/chats",
        ok(
            [{**ROOM, "participants": [PARTICIPANT], "participant_count": 1}],
            metadata={"page": 1, "total_pages": 1},
        ),
        lambda x: x.items[0].participants[0].name == "Alice" and x.items[0].participant_count == 1,
        query={"page": "1", "page_size": "100", "include": "participants"},
    ),
    Case(
        "create_chat",
        lambda r: r.create_chat(title="Planning"),
        "POST",
        f"{A}/chats",
        ok(ROOM, 201),
        lambda x: isinstance(x, m.ChatRoom) and x.id == "room-1",
        body={"chat": {"title": "Planning"}},
    ),
    Case(
        "get_chat",
        lambda r: r.get_chat("room 1/../x"),
        "GET",
        f"{A}/chats/room%201%2F..%2Fx",
        ok(ROOM),
        lambda x: x.title == "Room",
    ),
    Case(
        "update_chat",
        lambda r: r.update_chat("room-1", title="New"),
        "PATCH",
        f"{A}/chats/room-1",
        ok({**ROOM, "title": "New", "title_locked": True}),
        lambda x: x.title == "New" and x.extra == {"title_locked": True},
        body={"chat": {"title": "New"}},
    ),
    Case(
        "list_participants",
        lambda r: r.list_participants("room-1"),
        "GET",
        f"{A}/chats/room-1/participants",
        ok([PARTICIPANT, {**PARTICIPANT, "id": "agent-1", "type": "Agent"}]),
        lambda x: isinstance(x, list) and [p.id for p in x] == ["user-1", "agent-1"],
    ),
    Case(
        "add_participant",
        lambda r: r.add_participant("room-1", "agent-2", role="admin"),
        "POST",
        f"{A}/chats/room-1/participants",
        ok({**PARTICIPANT, "id": "agent-2", "role": "admin"}, 201),
        lambda x: x.role == "admin",
        body={"participant": {"participant_id": "agent-2", "role": "admin"}},
    ),
    Case(
        "remove_participant",
        lambda r: r.remove_participant("room-1", "agent-2"),
        "DELETE",
        f"{A}/chats/room-1/participants/agent-2",
        ok({**PARTICIPANT, "id": "agent-2"}),
        lambda x: x.id == "agent-2",
    ),
    Case(
        "list_messages",
        lambda r: r.list_messages(
            "room-1", status="pending", cursor="c1", sort_order="asc", limit=100
        ),
        "GET",
        f"{A}/chats/room-1/messages",
        ok([MESSAGE], metadata={"has_more": True, "limit": 100, "next_cursor": "c2"}),
        lambda x: x.items[0].id == "msg-1" and x.has_more and x.next_cursor == "c2",
        query={"status": "pending", "cursor": "c1", "sort_order": "asc", "limit": "100"},
    ),
    Case(
        "send_message",
        lambda r: r.send_message(
            "room-1",
            "@alice hello",
            [m.MentionRequest(id="user-1", handle="alice"), m.MentionRequest(handle="bob")],
            attachment_ids=["file-1"],
        ),
        "POST",
        f"{A}/chats/room-1/messages",
        ok({"id": "msg-2", "success": True, "recipients": [{"id": "user-1", "handle": "alice"}]}),
        lambda x: isinstance(x, m.MessageSent) and x.recipients[0].handle == "alice",
        body={
            "message": {
                "content": "@alice hello",
                "mentions": [{"id": "user-1", "handle": "alice"}, {"handle": "bob"}],
                "attachment_ids": ["file-1"],
            }
        },
    ),
    Case(
        "next_message",
        lambda r: r.next_message("room-1"),
        "GET",
        f"{A}/chats/room-1/messages/next",
        ok(MESSAGE),
        lambda x: isinstance(x, m.ChatMessage) and x.mentions[0]["id"] == "agent-1",
    ),
    Case(
        "mark_processing",
        lambda r: r.mark_processing("room-1", "msg-1"),
        "POST",
        f"{A}/chats/room-1/messages/msg-1/processing",
        ok({"id": "msg-1", "status": "processing", "attempt_number": 2, "success": True}),
        lambda x: isinstance(x, m.MessageStatus) and x.attempt_number == 2,
        body=None,
    ),
    Case(
        "mark_processed",
        lambda r: r.mark_processed("room-1", "msg-1"),
        "POST",
        f"{A}/chats/room-1/messages/msg-1/processed",
        ok({"id": "msg-1", "status": "processed", "attempt_number": 1, "success": True}),
        lambda x: x.status == "processed",
        body=None,
    ),
    Case(
        "mark_failed",
        lambda r: r.mark_failed("room-1", "msg-1", "boom"),
        "POST",
        f"{A}/chats/room-1/messages/msg-1/failed",
        ok({"id": "msg-1", "status": "failed", "attempt_number": 1, "success": True}),
        lambda x: x.status == "failed",
        body={"error": "boom"},
    ),
    Case(
        "send_event",
        lambda r: r.send_event("room-1", "thinking", "thought", {"step": 1}),
        "POST",
        f"{A}/chats/room-1/events",
        ok({"id": "ev-1", "message_type": "thought", "success": True}, 201),
        lambda x: isinstance(x, m.EventCreated) and x.message_type == "thought",
        body={"event": {"content": "thinking", "message_type": "thought", "metadata": {"step": 1}}},
    ),
    Case(
        "get_context",
        lambda r: r.get_context("room-1", cursor="c1", limit=50),
        "GET",
        f"{A}/chats/room-1/context",
        ok([MESSAGE], metadata=CURSOR_META, meta={"has_more": False}),
        lambda x: len(x.items) == 1 and not x.has_more and x.limit == 50,
        query={"cursor": "c1", "limit": "50"},
    ),
    Case(
        "report_activity",
        lambda r: r.report_activity(
            "room-1", True, m.ActivityDetail(kind="tool_call", name="search")
        ),
        "POST",
        f"{A}/chats/room-1/activity",
        ok({"working": False}),
        lambda x: x is False,
        body={"working": True, "activity": {"kind": "tool_call", "name": "search"}},
    ),
    Case(
        "upload_file",
        lambda r: r.upload_file("room-1", b"hello", filename="a.txt", content_type="text/plain"),
        "PUT",
        f"{A}/chats/room-1/files",
        ok(ATTACHMENT),
        lambda x: isinstance(x, m.Attachment) and x.bytes == 5,
        body=b"hello",
        headers={
            "x-file-name": "a.txt",
            "x-file-sha256": hashlib.sha256(b"hello").hexdigest(),
            "content-type": "text/plain",
        },
    ),
    Case(
        "download_file",
        lambda r: r.download_file("room-1", "file-1", byte_range="bytes=0-2"),
        "GET",
        f"{A}/chats/room-1/files/file-1",
        _raw(b"hel", 206),
        lambda x: x == b"hel",
        headers={"range": "bytes=0-2"},
    ),
    Case(
        "list_tasks",
        lambda r: r.list_tasks("room-1", state="all", cursor="c", limit=10),
        "GET",
        f"{A}/chats/room-1/tasks",
        ok([TASK], metadata={"has_more": False, "limit": 10}),
        lambda x: x.items[0].number == 3 and x.next_cursor is None,
        query={"state": "all", "cursor": "c", "limit": "10"},
    ),
    Case(
        "create_task",
        lambda r: r.create_task("room-1", "Write", detail="the docs", supersedes_id=2),
        "POST",
        f"{A}/chats/room-1/tasks",
        ok(TASK, 201),
        lambda x: isinstance(x, m.Task) and x.created_by.handle == "alice/echo",
        body={"subject": "Write", "detail": "the docs", "supersedes_id": 2},
    ),
    Case(
        "get_task",
        lambda r: r.get_task("room-1", 3, include_history=True),
        "GET",
        f"{A}/chats/room-1/tasks/3",
        ok({**TASK, "history": [TASK_EVENT], "history_truncated": False}),
        lambda x: x.history is not None and x.history[0].event == "created",
        query={"include": "history"},
    ),
    Case(
        "update_task",
        lambda r: r.update_task("room-1", "task-1", status="completed", state="archived"),
        "POST",
        f"{A}/chats/room-1/tasks/task-1",
        ok({**TASK, "state": "archived"}),
        lambda x: x.state == "archived",
        body={"status": "completed", "state": "archived"},
    ),
    Case(
        "get_task_history",
        lambda r: r.get_task_history("room-1", 3, cursor="c", limit=5),
        "GET",
        f"{A}/chats/room-1/tasks/3/history",
        ok([TASK_EVENT], metadata={"has_more": True, "limit": 5, "next_cursor": "d"}),
        lambda x: x.items[0].actor.id == ACTOR["id"] and x.next_cursor == "d",
        query={"cursor": "c", "limit": "5"},
    ),
    Case(
        "get_board",
        lambda r: r.get_board("room-1", include_history=True),
        "GET",
        f"{A}/chats/room-1/board",
        ok({**BOARD, "history": [], "history_truncated": False}),
        lambda x: isinstance(x, m.Board) and x.goal_title == "Ship" and x.history == (),
        query={"include": "history"},
    ),
    Case(
        "set_board",
        lambda r: r.set_board("room-1", goal_title="Ship"),
        "PUT",
        f"{A}/chats/room-1/board",
        ok(BOARD),
        lambda x: x.goal_summary is None,
        body={"goal_title": "Ship"},
    ),
    Case(
        "list_contacts",
        lambda r: r.list_contacts(page=1, page_size=20),
        "GET",
        f"{A}/contacts",
        ok([CONTACT], metadata={"page": 1, "page_size": 20, "total_count": 1, "total_pages": 1}),
        lambda x: x.items[0].handle == "bob" and not x.has_next,
        query={"page": "1", "page_size": "20"},
    ),
    Case(
        "add_contact",
        lambda r: r.add_contact("bob", message="hi!"),
        "POST",
        f"{A}/contacts/add",
        ok({"id": "req-1", "status": "pending"}),
        lambda x: isinstance(x, m.ContactAddResult) and x.status == "pending",
        body={"handle": "bob", "message": "hi!"},
    ),
    Case(
        "remove_contact",
        lambda r: r.remove_contact(handle="bob"),
        "POST",
        f"{A}/contacts/remove",
        ok({"status": "removed"}),
        lambda x: x.status == "removed",
        body={"handle": "bob"},
    ),
    Case(
        "list_contact_requests",
        lambda r: r.list_contact_requests(page=1, page_size=10, sent_status="all"),
        "GET",
        f"{A}/contacts/requests",
        ok(
            {
                "received": [
                    {"id": "r1", "inserted_at": "t", "status": "pending", "from_handle": "bob"}
                ],
                "sent": [{"id": "s1", "inserted_at": "t", "status": "approved", "to_handle": "c"}],
            },
            metadata={"page": 1, "page_size": 10, "received": {"total": 1, "total_pages": 1}},
        ),
        lambda x: (
            x.received[0].from_handle == "bob"
            and x.sent[0].to_handle == "c"
            and x.meta["page"] == 1
        ),
        query={"page": "1", "page_size": "10", "sent_status": "all"},
    ),
    Case(
        "respond_contact_request",
        lambda r: r.respond_contact_request("approve", handle="bob"),
        "POST",
        f"{A}/contacts/requests/respond",
        ok({"id": "r1", "status": "approved"}),
        lambda x: isinstance(x, m.ContactResponseResult) and x.status == "approved",
        body={"action": "approve", "handle": "bob"},
    ),
    Case(
        "list_memories",
        lambda r: r.list_memories(
            scope="subject", subject_id="user-2", memory_scope="me", status="all", limit=5
        ),
        "GET",
        f"{A}/memories",
        ok([MEMORY], metadata={"has_more": True, "limit": 5, "next_cursor": "m2"}),
        lambda x: x.items[0].subject_id == "user-2" and x.next_cursor == "m2",
        query={
            "scope": "subject",
            "subject_id": "user-2",
            "memory_scope": "me",
            "status": "all",
            "limit": "5",
        },
    ),
    Case(
        "create_memory",
        lambda r: r.create_memory(
            "Bob likes tea",
            system="long_term",
            type="semantic",
            segment="user",
            thought="worth keeping",
            subject_id="user-2",
            tags=["tea"],
        ),
        "POST",
        f"{A}/memories",
        ok(MEMORY, 201),
        lambda x: isinstance(x, m.AgentMemory) and x.scope == "subject",
        body={
            "memory": {
                "content": "Bob likes tea",
                "system": "long_term",
                "type": "semantic",
                "segment": "user",
                "thought": "worth keeping",
                "subject_id": "user-2",
                "metadata": {"tags": ["tea"]},
            }
        },
    ),
    Case(
        "get_memory",
        lambda r: r.get_memory("mem-1"),
        "GET",
        f"{A}/memories/mem-1",
        ok(MEMORY),
        lambda x: x.id == "mem-1",
    ),
    Case(
        "supersede_memory",
        lambda r: r.supersede_memory("mem-1"),
        "POST",
        f"{A}/memories/mem-1/supersede",
        ok({**MEMORY, "status": "superseded"}),
        lambda x: x.status == "superseded",
        body=None,
    ),
    Case(
        "archive_memory",
        lambda r: r.archive_memory("mem-1"),
        "POST",
        f"{A}/memories/mem-1/archive",
        ok({**MEMORY, "status": "archived"}),
        lambda x: x.status == "archived",
        body=None,
    ),
    Case(
        "exchange_delegation_token",
        lambda r: r.exchange_delegation_token("aud-1", "msg-1"),
        "POST",
        f"{A}/delegation/token",
        httpx.Response(200, json=TOKEN),
        lambda x: isinstance(x, m.DelegationToken) and x.obo.audience == "aud-1",
        body={"audience": "aud-1", "message_id": "msg-1"},
    ),
]


def test_the_table_covers_all_38_endpoints() -> None:
    endpoints = {(c.http_method, c.path.split("?")[0]) for c in CASES}
    assert len(CASES) == 38
    assert len(endpoints) == 38
    assert len({c.method_name for c in CASES}) == 38


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.method_name)
async def test_request_shape_and_response_parsing(case: Case) -> None:
    recorder = Recorder([case.response])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            result = await case.call(rest)
    assert recorder.count == 1
    request = recorder.last
    assert request.method == case.http_method
    assert raw_path_of(request) == case.path
    assert query_of(request) == case.query
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["user-agent"].startswith("band-trio/")
    if case.body is NO_BODY or case.body is None:
        # GETs, DELETEs and the bodiless POSTs send nothing and no content-type.
        assert request.content == b""
        assert "content-type" not in request.headers
    elif isinstance(case.body, bytes):
        assert request.content == case.body
    else:
        assert request.headers["content-type"] == "application/json"
        assert json_body(request) == case.body
    for name, value in case.headers.items():
        assert request.headers[name] == value
    assert case.check(result), result


async def test_send_event_without_metadata_omits_it() -> None:
    recorder = Recorder([ok({"id": "e", "message_type": "error", "success": True})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            await rest.send_event("room-1", "oops", "error")
    assert json_body(recorder.last) == {"event": {"content": "oops", "message_type": "error"}}


async def test_report_activity_false_sends_only_working() -> None:
    recorder = Recorder([ok({"working": False})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            assert await rest.report_activity("room-1", False) is False
    assert json_body(recorder.last) == {"working": False}


async def test_create_chat_without_fields_sends_empty_chat() -> None:
    recorder = Recorder([ok(ROOM)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            await rest.create_chat()
    assert json_body(recorder.last) == {"chat": {}}


async def test_list_chats_without_participants_has_no_include() -> None:
    recorder = Recorder([ok([ROOM], metadata={"page": 1, "total_pages": 1})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            page = await rest.list_chats(page=3, page_size=7)
    assert query_of(recorder.last) == {"page": "3", "page_size": "7"}
    assert page.items[0].participants is None


async def test_list_memories_without_metadata() -> None:
    recorder = Recorder([ok([MEMORY])])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            page = await rest.list_memories()
    assert query_of(recorder.last) == {}
    assert len(page.items) == 1
    assert not page.has_more
    assert page.limit is None


async def test_list_memories_reads_deprecated_meta() -> None:
    recorder = Recorder([ok([], meta={"has_more": True, "limit": 3, "next_cursor": "x"})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            page = await rest.list_memories(page=1, page_size=3)
    assert page.has_more
    assert page.next_cursor == "x"


async def test_data_optional_endpoints_tolerate_missing_data() -> None:
    recorder = Recorder([httpx.Response(200, json={})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            contacts = await rest.list_contacts()
            requests = await rest.list_contact_requests()
    assert contacts.items == ()
    assert requests.received == ()
    assert requests.sent == ()


async def test_update_task_needs_a_field() -> None:
    recorder = Recorder([ok(TASK)])
    async with make_client(recorder) as rest:
        with pytest.raises(ValueError, match="at least one"):
            await rest.update_task("room-1", 3)
    assert recorder.count == 0


async def test_remove_contact_and_respond_need_an_identifier() -> None:
    recorder = Recorder([ok({})])
    async with make_client(recorder) as rest:
        with pytest.raises(ValueError, match="contact_id or handle"):
            await rest.remove_contact()
        with pytest.raises(ValueError, match="handle or request_id"):
            await rest.respond_contact_request("approve")
    assert recorder.count == 0


async def test_empty_id_is_refused_before_sending() -> None:
    recorder = Recorder([ok(ROOM)])
    async with make_client(recorder) as rest:
        with pytest.raises(ValueError, match="must not be empty"):
            await rest.get_chat("")
    assert recorder.count == 0


def test_encode_query_rules() -> None:
    assert encode_query(
        {"a": None, "b": True, "c": False, "d": ["x", "y"], "e": ("z",), "f": 3, "g": "s"}
    ) == {"b": "true", "c": "false", "d": "x,y", "e": "z", "f": "3", "g": "s"}


async def test_base_url_with_a_path_prefix_is_kept() -> None:
    recorder = Recorder([ok(ME)])
    rest = RestClient(
        base_url="https://band.test/proxy/",
        api_key=API_KEY,
        transport=httpx.MockTransport(recorder),
    )
    async with rest:
        await rest.get_me()
    assert raw_path_of(recorder.last) == "/proxy/api/v1/agent/me"
    assert rest.base_url == "https://band.test/proxy"


@pytest.mark.parametrize("metadata", [{"when": object()}, {"x": float("nan")}])
async def test_unserialisable_body_is_a_config_error(metadata: dict[str, Any]) -> None:
    recorder = Recorder([ok({})])
    async with make_client(recorder) as rest:
        with pytest.raises(ValueError, match="not valid JSON"):
            await rest.send_event("room-1", "x", "thought", metadata)
    assert recorder.count == 0


@pytest.mark.parametrize("bad", [None, True, 1.5, b"room"])
async def test_non_string_id_is_refused(bad: Any) -> None:
    recorder = Recorder([ok(ROOM)])
    async with make_client(recorder) as rest:
        with pytest.raises(ValueError, match="must be a string"):
            await rest.get_chat(bad)
    assert recorder.count == 0
