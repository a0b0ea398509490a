"""Room-bound tools against a scripted platform: file edge cases, peer paging,
participant cache refresh."""

from __future__ import annotations

from typing import Any

import httpx
import trio

from band_trio.tools import AgentTools, ToolErrorKind, ToolResult
from tests.scripted_platform import ROOM, ScriptedPlatform, error, ok

CONTEXT = rf"/chats/{ROOM}/context"
TS = "2026-01-01T00:00:00Z"


def attachment(fid: str, ctype: str, size: int, expires_at: str | None = None) -> dict[str, Any]:
    return {
        "id": fid,
        "name": f"{fid}.bin",
        "content_type": ctype,
        "bytes": size,
        "sha256": "0" * 64,
        "has_thumb": False,
        "expires_at": expires_at,
    }


def message(mid: str, *attachments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": mid,
        "content": "see file",
        "message_type": "text",
        "sender_id": "user-alice",
        "sender_type": "User",
        "attachments": list(attachments),
    }


def page(*messages: dict[str, Any], cursor: str | None = None) -> httpx.Response:
    return ok(
        list(messages),
        metadata={"has_more": cursor is not None, "limit": 50, "next_cursor": cursor},
    )


async def call(tools: AgentTools, name: str, args: Any = None) -> ToolResult:
    with trio.fail_after(5):
        return await tools.execute_tool_call(name, args or {})


async def test_list_room_files_dedupes_within_a_page(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    a = attachment("f1", "text/plain", 10)
    platform.on("GET", CONTEXT, page(message("m1", a), message("m2", a), cursor="c2"))
    result = await call(tools, "band_list_room_files")
    assert [f["id"] for f in result.value["data"]] == ["f1"]
    assert result.value["next_cursor"] == "c2"
    assert platform.calls[0].params == {"limit": "50"}


async def test_read_file_walks_context_pages_and_inlines_json(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on(
        "GET",
        CONTEXT,
        page(message("m1", attachment("f1", "text/plain", 3)), cursor="c2"),
        page(message("m2", attachment("f2", "application/json; charset=utf-8", 8))),
    )
    platform.on("GET", rf"/chats/{ROOM}/files/f2", httpx.Response(200, content=b'{"a": 1}'))
    result = await call(tools, "band_read_room_file", {"file_id": "f2"})
    assert result.value["text"] == '{"a": 1}'
    assert [c.params.get("cursor") for c in platform.requests_to("GET", CONTEXT)] == [None, "c2"]


async def test_read_file_replaces_invalid_utf8_and_says_so(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("GET", CONTEXT, page(message("m1", attachment("f1", "text/csv", 4))))
    platform.on("GET", rf"/chats/{ROOM}/files/f1", httpx.Response(200, content=b"a,\xff\xfe"))
    result = await call(tools, "band_read_room_file", {"file_id": "f1"})
    assert "\ufffd" in result.value["text"]
    assert "U+FFFD" in result.value["description"]


async def test_expired_files_are_unavailable(tools: AgentTools, platform: ScriptedPlatform) -> None:
    old = attachment("f1", "text/plain", 4, expires_at="2000-01-01T00:00:00")
    platform.on("GET", CONTEXT, page(message("m1", old)))
    result = await call(tools, "band_read_room_file", {"file_id": "f1"})
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert "File not found, or file transfer is unavailable in this room." in result.text
    # nothing is downloaded
    assert platform.requests_to("GET", rf"/chats/{ROOM}/files/f1") == []


async def test_repeated_cursor_stops_the_walk(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("GET", CONTEXT, page(message("m1"), cursor="same"))
    result = await call(tools, "band_read_room_file", {"file_id": "missing"})
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert len(platform.requests_to("GET", CONTEXT)) == 2


async def test_download_404_is_file_unavailable(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("GET", CONTEXT, page(message("m1", attachment("f1", "image/png", 10))))
    platform.on("GET", rf"/chats/{ROOM}/files/f1", error(404, "not_found", "gone"))
    result = await call(tools, "band_read_room_file", {"file_id": "f1"})
    assert "File not found" in result.text


async def test_non_previewable_files_are_described(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on(
        "GET",
        CONTEXT,
        page(
            message("m1", attachment("zip", "application/zip", 10)),
            message("m2", attachment("huge", "image/png", 6 * 1024 * 1024)),
        ),
    )
    zipped = await call(tools, "band_read_room_file", {"file_id": "zip"})
    huge = await call(tools, "band_read_room_file", {"file_id": "huge"})
    assert "not a previewable text or image type" in zipped.value["description"]
    assert "5242880-byte inline image limit" in huge.value["description"]
    assert [c for c in platform.calls if "/files/" in c.path] == []


async def test_add_participant_pages_through_peers(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    def peer(pid: str, name: str) -> dict[str, Any]:
        return {
            "id": pid,
            "name": name,
            "handle": name.lower(),
            "type": "Agent",
            "is_contact": False,
            "online": True,
            "source": "registry",
        }

    platform.on("GET", rf"/chats/{ROOM}/participants", ok([]))
    platform.on(
        "GET",
        "/peers",
        ok([peer("p1", "One")], metadata={"page": 1, "total_pages": 2}),
        ok([peer("p2", "Two")], metadata={"page": 2, "total_pages": 2}),
    )
    platform.on(
        "POST",
        rf"/chats/{ROOM}/participants",
        ok({"id": "p2", "role": "admin", "status": "active", "type": "Agent"}),
    )
    result = await call(tools, "band_add_participant", {"identifier": "@two", "role": "admin"})
    assert result.value == {
        "id": "p2",
        "name": "Two",
        "handle": "two",
        "role": "admin",
        "status": "added",
    }
    peers = platform.requests_to("GET", "/peers")
    assert [(c.params["page"], c.params["page_size"], c.params["not_in_chat"]) for c in peers] == [
        ("1", "100", ROOM),
        ("2", "100", ROOM),
    ]
    [post] = platform.requests_to("POST", rf"/chats/{ROOM}/participants")
    assert post.body == {"participant": {"participant_id": "p2", "role": "admin"}}
    assert tools.available_mention_handles() == ["two"]


async def test_get_participants_replaces_the_snapshot(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on(
        "GET",
        rf"/chats/{ROOM}/participants",
        ok(
            [
                {
                    "id": "u9",
                    "role": "owner",
                    "status": "active",
                    "type": "User",
                    "name": "Nine",
                    "handle": "nine",
                    "online": False,
                }
            ]
        ),
    )
    result = await call(tools, "band_get_participants")
    assert result.value == [
        {
            "id": "u9",
            "name": "Nine",
            "handle": "nine",
            "type": "User",
            "role": "owner",
            "status": "active",
            "online": False,
            "avatar_url": None,
        }
    ]
    assert [p.id for p in tools.participants] == ["u9"]
    assert tools.available_mention_handles() == ["nine"]
