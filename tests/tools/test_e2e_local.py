"""Every tool end to end against the embedded local platform (real HTTP on
loopback), on success and on its documented errors."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio

from band_trio.adapter import ToolEffect
from band_trio.errors import BandToolError, RoomExecutionStoppedError
from band_trio.local import LocalPlatform
from band_trio.local.human import HumanClient
from band_trio.tools import TRUNCATION_MARKER, AgentTools, Capability, ToolErrorKind, ToolResult
from band_trio.tools.unsure_posts import UnsurePostPolicy
from band_trio.wire.rest import RestClient
from tests.scripted_platform import API_KEY, RecordingHooks

ALL = frozenset(Capability)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@attrs.define
class World:
    platform: LocalPlatform
    human: HumanClient
    rest: RestClient
    room_id: str
    agent_id: str
    agent_handle: str
    helper_id: str
    helper_handle: str
    hooks: RecordingHooks
    tools: AgentTools

    async def call(self, name: str, args: Any = None) -> ToolResult:
        with trio.fail_after(10):
            return await self.tools.execute_tool_call(name, args or {})

    async def room_messages(self) -> list[dict[str, Any]]:
        with trio.fail_after(10):
            return await self.human.list_messages(self.room_id)

    async def fresh_tools(self) -> AgentTools:
        with trio.fail_after(10):
            participants = await self.rest.list_participants(self.room_id)
        self.hooks = RecordingHooks()
        self.tools = AgentTools(
            rest=self.rest,
            room_id=self.room_id,
            agent_id=self.agent_id,
            participants=participants,
            hooks=self.hooks,
            capabilities=ALL,
        )
        return self.tools


@pytest.fixture
async def world(band_platform: LocalPlatform) -> AsyncIterator[World]:
    platform = band_platform
    agent = platform.agents[0]
    helper = platform.register_agent("Helper", "A sibling agent that helps.")
    with trio.fail_after(10):
        async with (
            HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
            RestClient(base_url=platform.rest_url, api_key=agent.api_key) as rest,
        ):
            room = await human.create_room("Tools room")
            await human.add_participant(room["id"], agent.id)
            w = World(
                platform=platform,
                human=human,
                rest=rest,
                room_id=room["id"],
                agent_id=agent.id,
                agent_handle=agent.handle,
                helper_id=helper.id,
                helper_handle=helper.handle,
                hooks=RecordingHooks(),
                tools=None,  # type: ignore[arg-type]
            )
            await w.fresh_tools()
            yield w


# ------------------------------------------------------------------ chat


async def test_send_message(world: World) -> None:
    user = world.platform.user
    result = await world.call(
        "band_send_message", {"content": "hello human", "mentions": [f"@{user.handle}"]}
    )
    assert not result.is_error, result.text
    assert result.value["recipients"][0]["id"] == user.id
    messages = await world.room_messages()
    assert [m["content"] for m in messages if m["sender_id"] == world.agent_id] == [
        f"@[[{user.id}]] hello human"
    ]
    assert world.hooks.replies == [result.value["id"]]
    assert world.hooks.effects == [ToolEffect.REPLY]


async def test_send_message_errors(world: World) -> None:
    empty = await world.call("band_send_message", {"content": "hi", "mentions": []})
    assert empty.error_kind is ToolErrorKind.TOOL_ERROR
    assert f"@{world.platform.user.handle}" in empty.text
    unknown = await world.call("band_send_message", {"content": "hi", "mentions": ["@ghost"]})
    assert "Unknown participant '@ghost'" in unknown.text
    blank = await world.call("band_send_message", {"content": "  ", "mentions": ["demo"]})
    assert blank.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert await world.room_messages() == []
    assert world.hooks.effects == []


async def test_mention_of_someone_who_left_is_refused_by_the_platform(world: World) -> None:
    with trio.fail_after(10):
        await world.human.add_participant(world.room_id, world.helper_id)
    tools = await world.fresh_tools()
    with trio.fail_after(10):
        await world.human.remove_participant(world.room_id, world.helper_id)
        # the snapshot still lists the helper; the platform refuses the mention
        with pytest.raises(BandToolError, match="not in the room"):
            await tools.send_message("hi", [f"@{world.helper_handle}"])


async def test_stopped_room_refuses_posts(world: World) -> None:
    with trio.fail_after(10):
        await world.platform.push_control(world.agent_id, "stop", room_id=world.room_id)
        with pytest.raises(RoomExecutionStoppedError):
            await world.tools.send_message("hi", [world.platform.user.handle])
        with pytest.raises(RoomExecutionStoppedError):
            await world.tools.send_event("thinking", "thought")
    assert world.hooks.stopped == 2
    result = await world.call("band_send_event", {"content": "x", "message_type": "thought"})
    assert result.error_kind is ToolErrorKind.EXECUTION_STOPPED


async def test_send_event_and_truncation(world: World) -> None:
    long = "A" * 10 + "b" * 20_000 + "Z" * 10
    result = await world.call(
        "band_send_event", {"content": long, "message_type": "thought", "metadata": {"k": 1}}
    )
    assert not result.is_error, result.text
    assert result.value["message_type"] == "thought"
    [event] = await world.human.list_messages(world.room_id, message_type="thought")
    assert len(event["content"]) == 16384
    assert TRUNCATION_MARKER in event["content"]
    assert event["content"].startswith("A" * 10)
    assert event["content"].endswith("Z" * 10)
    assert world.hooks.effects == [ToolEffect.OBSERVE]


async def test_no_reply(world: World) -> None:
    result = await world.call("band_no_reply", {"reason": "not for me"})
    assert result.value == {"status": "no_reply"}
    assert world.hooks.effects == [ToolEffect.DECLINE]
    assert await world.room_messages() == []


async def test_unprocessed_messages_are_what_waits_for_the_agent(world: World) -> None:
    with trio.fail_after(10):
        assert await world.tools.unprocessed_messages() == []
        first = await world.human.post_message(
            world.room_id, f"@{world.agent_handle} one", [world.agent_handle]
        )
        second = await world.human.post_message(
            world.room_id, f"@{world.agent_handle} two", [world.agent_handle]
        )
        waiting = await world.tools.unprocessed_messages()
    assert [m.id for m in waiting] == [first["id"], second["id"]]
    assert waiting[0].content.endswith("one")


async def test_participants_peers_add_remove(world: World) -> None:
    peers = await world.call("band_lookup_peers", {"page_size": 100})
    assert not peers.is_error, peers.text
    assert world.helper_id in [p["id"] for p in peers.value["data"]]
    assert world.agent_id not in [p["id"] for p in peers.value["data"]]

    added = await world.call("band_add_participant", {"identifier": f"@{world.helper_handle}"})
    assert added.value["status"] == "added", added.text
    assert added.value["id"] == world.helper_id
    # immediately mentionable in the same turn
    msg = await world.call(
        "band_send_message", {"content": "welcome", "mentions": [f"@{world.helper_handle}"]}
    )
    assert not msg.is_error, msg.text

    again = await world.call("band_add_participant", {"name": "Helper"})
    assert again.value["status"] == "already_in_room"

    listed = await world.call("band_get_participants")
    assert {p["id"] for p in listed.value} >= {world.agent_id, world.helper_id}
    for p in listed.value:
        assert set(p) == {"id", "name", "handle", "type", "role", "status", "online", "avatar_url"}

    missing = await world.call("band_add_participant", {"identifier": "nobody-at-all"})
    assert missing.error_kind is ToolErrorKind.TOOL_ERROR
    assert "band_lookup_peers" in missing.text

    # the agent is a plain member: the platform refuses removals (403)
    refused = await world.call("band_remove_participant", {"identifier": "Helper"})
    assert refused.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 403" in refused.text
    not_here = await world.call("band_remove_participant", {"identifier": "ghost"})
    assert "not found in this room" in not_here.text


async def test_remove_participant_as_room_owner(world: World) -> None:
    room_id = (await world.call("band_create_chatroom")).value
    tools = AgentTools(rest=world.rest, room_id=room_id, agent_id=world.agent_id, participants=())
    with trio.fail_after(10):
        added = await tools.execute_tool_call("band_add_participant", {"identifier": "Helper"})
        assert added.value["status"] == "added", added.text
        removed = await tools.execute_tool_call("band_remove_participant", {"identifier": "Helper"})
    assert removed.value == {"id": world.helper_id, "name": "Helper", "status": "removed"}
    assert world.helper_id not in [p.id for p in tools.participants]


async def test_participant_writes_with_lost_or_refused_answers_are_settled(
    world: World,
) -> None:
    room_id = (await world.call("band_create_chatroom")).value
    tools = AgentTools(
        rest=world.rest,
        room_id=room_id,
        agent_id=world.agent_id,
        participants=(),
        unsure_posts=UnsurePostPolicy(first_check=0.01),
    )
    faults = world.platform.faults
    # Applied, answer lost: read back, not sent again (a repeat would be refused).
    lost = faults.add("POST", r"/participants$", 502, 1, perform=True)
    # Refused before it took effect: read back, then sent again.
    refused = faults.add("DELETE", r"/participants/", 503, 1)
    with trio.fail_after(10):
        added = await tools.execute_tool_call("band_add_participant", {"identifier": "Helper"})
        assert added.value["status"] == "added", added.text
        removed = await tools.execute_tool_call("band_remove_participant", {"identifier": "Helper"})
        assert removed.value["status"] == "removed", removed.text
        roster = await world.rest.list_participants(room_id)
    assert (lost.hits, refused.hits) == (1, 1)
    assert world.helper_id not in [p.id for p in roster]


async def test_creations_with_lost_or_refused_answers_are_settled_over_http(
    world: World,
) -> None:
    tools = AgentTools(
        rest=world.rest,
        room_id=world.room_id,
        agent_id=world.agent_id,
        participants=(),
        unsure_posts=UnsurePostPolicy(first_check=0.01),
    )
    faults = world.platform.faults
    # Stored, answers lost: found, not sent again.
    lost_memory = faults.add("POST", r"/memories$", 502, 2, perform=True)
    lost_room = faults.add("POST", r"/agent/chats$", 504, 2, perform=True)
    # Refused before they took effect: sent again.
    refused_task = faults.add("POST", r"/tasks$", 503, 2)
    lost_request = faults.add("POST", r"/contacts/add$", 503, 2, perform=True)
    with trio.fail_after(20):
        memory = await tools.store_memory(
            content="likes tea",
            system="long_term",
            type="semantic",
            segment="user",
            thought="t",
            scope="agent",
        )
        room_id = await tools.create_chatroom()
        task = await tools.create_task("Brew")
        request = await tools.add_contact(f"@{world.platform.user.handle}")
        memories = [m async for m in world.rest.iter_memories(content_query="likes tea")]
        rooms = [r.id async for r in world.rest.iter_chats()]
        tasks = [t async for t in world.rest.iter_tasks(world.room_id, state="all")]
        sent = await world.rest.list_contact_requests(sent_status="all")
    assert (lost_memory.hits, lost_room.hits, refused_task.hits, lost_request.hits) == (
        1,
        1,
        2,
        1,
    )
    assert [m.id for m in memories] == [memory["id"]]
    assert rooms.count(room_id) == 1
    assert len(rooms) == 2  # the tools' room and the one created
    assert [t.id for t in tasks if t.subject == "Brew"] == [task["id"]]
    assert [r.id for r in sent.sent] == [request["id"]]
    assert request["status"] == "pending"


async def test_create_chatroom(world: World) -> None:
    result = await world.call("band_create_chatroom", {})
    assert isinstance(result.value, str)
    with trio.fail_after(10):
        rooms = [r.id async for r in world.rest.iter_chats()]
    assert result.value in rooms
    assert world.tools.room_id == world.room_id
    assert world.hooks.effects == [ToolEffect.ACT]


# ------------------------------------------------------------------ contacts


async def test_contacts_round_trip(world: World) -> None:
    user = world.platform.user
    listed = await world.call("band_list_contacts")
    assert listed.value["data"] == []

    asked = await world.call("band_add_contact", {"handle": f"@{user.handle}", "message": "hi"})
    assert asked.value["status"] == "pending", asked.text
    requests = await world.call("band_list_contact_requests", {"sent_status": "all"})
    assert [r["id"] for r in requests.value["data"]["sent"]] == [asked.value["id"]]

    cancelled = await world.call(
        "band_respond_contact_request", {"action": "cancel", "request_id": asked.value["id"]}
    )
    assert cancelled.value["status"] == "cancelled", cancelled.text

    with trio.fail_after(10):
        incoming = await world.human.send_contact_request(world.agent_handle, "please")
    received = await world.call("band_list_contact_requests")
    assert [r["id"] for r in received.value["data"]["received"]] == [incoming["id"]]
    approved = await world.call(
        "band_respond_contact_request", {"action": "approve", "handle": f"@{user.handle}"}
    )
    assert approved.value["status"] == "approved", approved.text
    contacts = await world.call("band_list_contacts")
    assert [c["handle"] for c in contacts.value["data"]] == [user.handle]

    removed = await world.call("band_remove_contact", {"handle": user.handle})
    assert removed.value == {"status": "removed"}
    assert (await world.call("band_list_contacts")).value["data"] == []


async def test_contact_errors(world: World) -> None:
    unknown = await world.call("band_add_contact", {"handle": "@nobody-here"})
    assert unknown.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 404" in unknown.text
    neither = await world.call("band_remove_contact", {})
    assert "Either handle or contact_id must be provided" in neither.text
    no_request = await world.call(
        "band_respond_contact_request", {"action": "approve", "request_id": "missing"}
    )
    assert no_request.is_error
    assert API_KEY not in no_request.text


# ------------------------------------------------------------------ memories


MEMORY = {
    "content": "Alice prefers short answers",
    "system": "long_term",
    "type": "semantic",
    "segment": "user",
    "thought": "so I keep replies brief",
    "scope": "agent",
    "metadata": {"tags": ["style"], "references": ["msg-1"]},
}


async def test_memories_round_trip(world: World) -> None:
    stored = await world.call("band_store_memory", MEMORY)
    assert not stored.is_error, stored.text
    memory_id = stored.value["id"]
    assert stored.value["content"] == MEMORY["content"]
    assert stored.value["metadata"]["tags"] == ["style"]
    assert stored.value["metadata"]["references"] == ["msg-1"]

    listed = await world.call("band_list_memories", {"content_query": "short"})
    assert [m["id"] for m in listed.value["data"]] == [memory_id]
    got = await world.call("band_get_memory", {"memory_id": memory_id})
    assert got.value["id"] == memory_id

    superseded = await world.call("band_supersede_memory", {"memory_id": memory_id})
    assert superseded.value["status"] == "superseded", superseded.text
    stored2 = await world.call("band_store_memory", {**MEMORY, "content": "second"})
    archived = await world.call("band_archive_memory", {"memory_id": stored2.value["id"]})
    assert archived.value["status"] == "archived", archived.text
    assert (await world.call("band_list_memories")).value["data"] == []
    every = await world.call("band_list_memories", {"status": "all"})
    assert len(every.value["data"]) == 2
    assert world.hooks.effects.count(ToolEffect.ACT) == 4


async def test_organization_memories_are_shared(world: World) -> None:
    """scope 'organization' lists what any agent of the organization shared."""
    helper = next(a for a in world.platform.agents if a.id == world.helper_id)
    with trio.fail_after(10):
        async with RestClient(base_url=world.platform.rest_url, api_key=helper.api_key) as rest:
            theirs = AgentTools(rest=rest, room_id="none", agent_id=helper.id, participants=())
            shared = await theirs.execute_tool_call(
                "band_store_memory", {**MEMORY, "scope": "organization", "content": "shared"}
            )
            private = await theirs.execute_tool_call(
                "band_store_memory", {**MEMORY, "content": "private to helper"}
            )
    assert not shared.is_error, shared.text
    assert not private.is_error, private.text
    org = await world.call("band_list_memories", {"scope": "organization"})
    assert [m["id"] for m in org.value["data"]] == [shared.value["id"]], org.text
    own = await world.call("band_list_memories")
    assert own.value["data"] == []
    got = await world.call("band_get_memory", {"memory_id": shared.value["id"]})
    assert got.value["content"] == "shared"
    # only the agent that stored it may change it
    refused = await world.call("band_archive_memory", {"memory_id": shared.value["id"]})
    assert refused.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 403" in refused.text


async def test_memory_errors(world: World, band_platform: LocalPlatform) -> None:
    missing = await world.call("band_get_memory", {"memory_id": "does-not-exist"})
    assert missing.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 404" in missing.text
    mismatch = await world.call("band_store_memory", {**MEMORY, "system": "sensory"})
    assert mismatch.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "expected one of: iconic, echoic, haptic" in mismatch.text
    subject = await world.call("band_store_memory", {**MEMORY, "scope": "subject"})
    assert subject.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "retry with scope 'agent'" in subject.text
    bad_meta = await world.call("band_store_memory", {**MEMORY, "metadata": {"color": "red"}})
    assert bad_meta.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "only 'tags' and 'references'" in bad_meta.text
    bad_tags = await world.call("band_store_memory", {**MEMORY, "metadata": {"tags": "x"}})
    assert "metadata.tags: must be a list of strings" in bad_tags.text
    for tool in ("band_get_memory", "band_supersede_memory", "band_archive_memory"):
        bad_id = await world.call(tool, {"memory_id": "../etc"})
        assert bad_id.error_kind is ToolErrorKind.INVALID_ARGUMENTS, tool
        gone = await world.call(tool, {"memory_id": "does-not-exist"})
        assert gone.error_kind is ToolErrorKind.PLATFORM_ERROR, tool
        assert "HTTP 404" in gone.text, tool
    bounds = await world.call("band_list_memories", {"page_size": 51})
    assert bounds.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert world.hooks.effects == []
    # nothing was stored by the refused calls
    assert (await world.call("band_list_memories", {"status": "all"})).value["data"] == []

    loner = band_platform.create_user("Loner", "loner")
    agent = band_platform.register_agent("Solo", "An agent without organization.", owner=loner)
    with trio.fail_after(10):
        async with RestClient(base_url=band_platform.rest_url, api_key=agent.api_key) as rest:
            tools = AgentTools(rest=rest, room_id="none", agent_id=agent.id, participants=())
            result = await tools.execute_tool_call(
                "band_store_memory", {**MEMORY, "scope": "organization"}
            )
            listed = await tools.execute_tool_call("band_list_memories", {"scope": "organization"})
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert 'Retry with scope="agent"' in result.text
    assert listed.error_kind is ToolErrorKind.TOOL_ERROR, listed.text
    assert 'Retry with scope="agent"' in listed.text


# ------------------------------------------------------------------ files


async def test_room_files(world: World) -> None:
    user = world.platform.user.handle
    sent = await world.call(
        "band_send_room_file",
        {"content": "# Report\nAll good.", "filename": "report.md", "mentions": [user]},
    )
    assert not sent.is_error, sent.text
    file_id = sent.value["attachment"]["id"]
    assert world.hooks.replies == [sent.value["message_id"]]
    messages = await world.room_messages()
    assert any(m["content"].endswith("Shared a file: report.md") for m in messages)

    listed = await world.call("band_list_room_files")
    assert [f["id"] for f in listed.value["data"]] == [file_id]
    read = await world.call("band_read_room_file", {"file_id": file_id})
    assert read.value["text"] == "# Report\nAll good.", read.text

    with trio.fail_after(10):
        png = await world.rest.upload_file(
            world.room_id, PNG, filename="dot.png", content_type="image/png"
        )
        await world.tools.send_message("a picture", [user], attachment_ids=[png.id])
        big = await world.rest.upload_file(
            world.room_id, b"x" * 20_000, filename="big.txt", content_type="text/plain"
        )
        await world.tools.send_message("a big file", [user], attachment_ids=[big.id])
    tools = await world.fresh_tools()
    with trio.fail_after(10):
        image = await tools.execute_tool_call("band_read_room_file", {"file_id": png.id})
        large = await tools.execute_tool_call("band_read_room_file", {"file_id": big.id})
    assert image.value["content"][0]["type"] == "image", image.text
    assert base64.b64decode(image.value["content"][0]["data"]) == PNG
    assert "exceeds the 16384-byte inline text limit" in large.value["description"]
    assert "text" not in large.value


async def test_room_file_errors(world: World) -> None:
    user = world.platform.user.handle
    missing = await world.call("band_read_room_file", {"file_id": "nope"})
    assert missing.error_kind is ToolErrorKind.TOOL_ERROR
    assert "File not found, or file transfer is unavailable in this room." in missing.text
    bad_name = await world.call(
        "band_send_room_file", {"content": "x", "filename": "résumé.txt", "mentions": [user]}
    )
    assert "printable ASCII" in bad_name.text
    too_big = await world.call(
        "band_send_room_file",
        {"content": "x" * 1_000_001, "filename": "a.txt", "mentions": [user]},
    )
    assert "1000000" in too_big.text
    no_mention = await world.call(
        "band_send_room_file", {"content": "x", "filename": "a.txt", "mentions": []}
    )
    assert "At least one mention is required" in no_mention.text
    assert (await world.call("band_list_room_files")).value["data"] == []


# ------------------------------------------------------------------ tasks


async def test_tasks_and_board(world: World) -> None:
    created = await world.call("band_create_task", {"subject": "Write the summary"})
    assert not created.is_error, created.text
    number = created.value["number"]
    listed = await world.call("band_list_tasks")
    assert [t["number"] for t in listed.value["data"]] == [number]
    got = await world.call("band_get_task", {"id": f"#{number}", "include": "history"})
    assert got.value["id"] == created.value["id"]
    updated = await world.call(
        "band_update_task", {"id": f"#{number}", "status": "in_progress", "comment": "on it"}
    )
    assert updated.value["overall_status"] == "in_progress", updated.text
    history = await world.call("band_get_task_history", {"id": created.value["id"]})
    assert len(history.value["data"]) >= 2
    replacement = await world.call(
        "band_create_task", {"subject": "Better summary", "supersedes_id": f"#{number}"}
    )
    assert not replacement.is_error, replacement.text
    old = await world.call("band_get_task", {"id": str(number)})
    assert old.value["state"] == "superseded"

    empty_board = await world.call("band_get_board")
    assert empty_board.value["goal_title"] is None
    board = await world.call("band_set_board", {"goal_title": "Ship v1"})
    assert board.value["goal_title"] == "Ship v1"
    assert (await world.call("band_get_board", {"include": "history"})).value["goal_title"] == (
        "Ship v1"
    )


async def test_task_errors(world: World) -> None:
    missing = await world.call("band_get_task", {"id": "#999"})
    assert missing.error_kind is ToolErrorKind.PLATFORM_ERROR
    assert "HTTP 404" in missing.text
    nothing = await world.call("band_update_task", {"id": "#1"})
    assert nothing.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    bad_ref = await world.call("band_get_task_history", {"id": "../../x"})
    assert bad_ref.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    board = await world.call("band_set_board", {})
    assert board.error_kind is ToolErrorKind.INVALID_ARGUMENTS


async def test_results_are_json(world: World) -> None:
    await world.call("band_create_task", {"subject": "x"})
    for name in (
        "band_list_tasks",
        "band_get_board",
        "band_get_participants",
        "band_list_contacts",
    ):
        result = await world.call(name)
        assert not result.is_error, result.text
        json.loads(result.text)


def test_every_tool_has_an_end_to_end_test() -> None:
    from pathlib import Path

    from band_trio.tools import TOOL_DEFINITIONS

    source = Path(__file__).read_text(encoding="utf-8")
    missing = [d.name for d in TOOL_DEFINITIONS if f'"{d.name}"' not in source]
    assert missing == []
