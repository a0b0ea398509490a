"""Pagination helpers: offset pages (total_pages, cap 50, de-dup) and cursor pages
(next_cursor while has_more)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from band_trio.errors import BandProtocolError
from band_trio.wire.rest import MAX_PAGES

from .rest_mock import (
    CONTACT,
    MEMORY,
    MESSAGE,
    PEER,
    ROOM,
    TASK,
    Recorder,
    make_client,
    ok,
    query_of,
)


def _rooms_by_page(total_pages: int | None, per_page: int = 2) -> Any:
    def respond(request: httpx.Request) -> httpx.Response:
        page = int(query_of(request)["page"])
        rooms = [{**ROOM, "id": f"room-{page}-{i}"} for i in range(per_page)]
        if page == 2:
            rooms.append({**ROOM, "id": "room-1-0"})  # shifted row seen twice
        meta: dict[str, Any] = {"page": page, "page_size": per_page}
        if total_pages is not None:
            meta["total_pages"] = total_pages
        return ok(rooms, metadata=meta)

    return respond


async def test_iter_chats_follows_total_pages_and_dedupes() -> None:
    recorder = Recorder([_rooms_by_page(3)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            ids = [room.id async for room in rest.iter_chats(include_participants=True)]
    assert ids == ["room-1-0", "room-1-1", "room-2-0", "room-2-1", "room-3-0", "room-3-1"]
    assert [query_of(r)["page"] for r in recorder.requests] == ["1", "2", "3"]
    assert all(query_of(r)["page_size"] == "100" for r in recorder.requests)
    assert all(query_of(r)["include"] == "participants" for r in recorder.requests)


async def test_iter_chats_stops_after_one_page_without_total_pages() -> None:
    recorder = Recorder([_rooms_by_page(None)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            ids = [room.id async for room in rest.iter_chats()]
    assert ids == ["room-1-0", "room-1-1"]
    assert recorder.count == 1


async def test_iter_chats_is_capped_at_max_pages() -> None:
    recorder = Recorder([_rooms_by_page(10_000, per_page=1)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            rooms = [room async for room in rest.iter_chats()]
    assert recorder.count == MAX_PAGES == 50
    assert len(rooms) == MAX_PAGES


async def test_iter_chats_stops_on_empty_page() -> None:
    recorder = Recorder([ok([], metadata={"page": 1, "total_pages": 5})])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            rooms = [room async for room in rest.iter_chats()]
    assert rooms == []
    assert recorder.count == 1


async def test_iter_peers_and_contacts_page_through() -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        page = int(query_of(request)["page"])
        if request.url.path.endswith("/peers"):
            return ok([{**PEER, "id": f"p{page}"}], metadata={"page": page, "total_pages": 2})
        return ok([{**CONTACT, "id": f"c{page}"}], metadata={"page": page, "total_pages": 2})

    recorder = Recorder([respond])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            peers = [p.id async for p in rest.iter_peers(not_in_chat="room-1")]
            contacts = [c.id async for c in rest.iter_contacts(page_size=1)]
    assert peers == ["p1", "p2"]
    assert contacts == ["c1", "c2"]
    assert query_of(recorder.requests[0])["not_in_chat"] == "room-1"


def _cursor_pages(item: dict[str, Any], pages: int) -> Any:
    def respond(request: httpx.Request) -> httpx.Response:
        cursor = query_of(request).get("cursor")
        index = 0 if cursor is None else int(cursor.removeprefix("cur-"))
        more = index + 1 < pages
        meta = {"has_more": more, "limit": 1, "next_cursor": f"cur-{index + 1}" if more else None}
        return ok([{**item, "id": f"x{index}"}], metadata=meta)

    return respond


@pytest.mark.parametrize("which", ["messages", "context", "tasks", "memories"])
async def test_cursor_iterators_follow_next_cursor(which: str) -> None:
    items: dict[str, dict[str, Any]] = {
        "messages": MESSAGE,
        "context": MESSAGE,
        "tasks": TASK,
        "memories": MEMORY,
    }
    item = items[which]
    recorder = Recorder([_cursor_pages(item, 4)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            it: AsyncIterator[Any]
            if which == "messages":
                it = rest.iter_messages("room-1", status="all", sort_order="asc")
            elif which == "context":
                it = rest.iter_context("room-1")
            elif which == "tasks":
                it = rest.iter_tasks("room-1", state="all")
            else:
                it = rest.iter_memories(scope="agent", limit=1)
            ids = [x.id async for x in it]
    assert ids == ["x0", "x1", "x2", "x3"]
    assert [query_of(r).get("cursor") for r in recorder.requests] == [
        None,
        "cur-1",
        "cur-2",
        "cur-3",
    ]


async def test_iter_messages_passes_filters_and_limit() -> None:
    recorder = Recorder([_cursor_pages(MESSAGE, 1)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            [m async for m in rest.iter_messages("room-1", status="pending", sort_order="asc")]
    assert query_of(recorder.last) == {"status": "pending", "sort_order": "asc", "limit": "100"}


async def test_cursor_iterator_respects_max_pages() -> None:
    recorder = Recorder([_cursor_pages(MESSAGE, 100)])
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            ids = [m.id async for m in rest.iter_context("room-1", max_pages=3)]
    assert ids == ["x0", "x1", "x2"]
    assert recorder.count == 3


async def test_cursor_iterator_stops_when_has_more_without_cursor() -> None:
    recorder = Recorder(
        [ok([MESSAGE], metadata={"has_more": True, "limit": 1, "next_cursor": None})]
    )
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            items = [m async for m in rest.iter_messages("room-1")]
    assert len(items) == 1
    assert recorder.count == 1


async def test_repeated_cursor_is_a_protocol_error() -> None:
    recorder = Recorder(
        [ok([MESSAGE], metadata={"has_more": True, "limit": 1, "next_cursor": "same"})]
    )
    with trio.fail_after(5):
        async with make_client(recorder) as rest:
            with pytest.raises(BandProtocolError, match="repeated"):
                [m async for m in rest.iter_messages("room-1")]
    assert recorder.count == 2
