"""RestClient end to end against the embedded local platform, over real loopback
sockets: the main agent endpoints, the message lifecycle, stop/play, and retries
against injected faults (including a lost response that must not duplicate a write)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import attrs
import pytest
import trio

from band_trio.errors import (
    AuthenticationError,
    BandTimeoutError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RangeNotSatisfiableError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from band_trio.wire.models import ActivityDetail, MentionRequest
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

DEADLINE = 15
# Real sockets: keep retry waits short but real (autojump cannot drive real I/O).
# Server-requested waits (Retry-After) are capped at 50 ms for the same reason.
FAST_RETRY = RetryPolicy(backoff_base=0.01, server_delay_cap=0.05, jitter=0.0)


@attrs.frozen
class World:
    platform: LocalPlatform
    agent: AgentCredentials
    rest: RestClient
    human: HumanClient
    room_id: str


@pytest.fixture
async def world(band_platform: LocalPlatform) -> AsyncIterator[World]:
    platform = band_platform
    agent = platform.register_agent("Tester", "An agent exercising the REST client")
    with trio.fail_after(DEADLINE):
        async with (
            HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
            RestClient(
                base_url=platform.rest_url,
                api_key=agent.api_key,
                config=RestConfig(retry=FAST_RETRY, timeout=5.0),
            ) as rest,
        ):
            room = await human.create_room("E2E room")
            await human.add_participant(room["id"], agent.id)
            yield World(platform, agent, rest, human, room["id"])


async def _post(world: World, text: str = "please help") -> str:
    sent = await world.human.post_message(
        world.room_id, f"@{world.agent.handle} {text}", [world.agent.handle]
    )
    return str(sent["id"])


async def test_me_chats_participants_peers(world: World) -> None:
    rest = world.rest
    with trio.fail_after(DEADLINE):
        me = await rest.get_me()
        assert me.id == world.agent.id
        assert me.handle == world.agent.handle
        assert me.description
        assert me.feature_flags.get("ff_file_transfer") is True

        rooms = [room async for room in rest.iter_chats(include_participants=True)]
        mine = [room for room in rooms if room.id == world.room_id]
        assert len(mine) == 1
        assert mine[0].participants is not None
        page = await rest.list_chats()
        assert world.room_id in {room.id for room in page.items}

        room = await rest.get_chat(world.room_id)
        assert room.title == "E2E room"

        roster = await rest.list_participants(world.room_id)
        assert {p.id for p in roster} == {world.platform.user.id, world.agent.id}
        assert all(p.role and p.status and p.type for p in roster)

        peers = await rest.list_peers()
        assert world.agent.id not in {p.id for p in peers.items}


async def test_message_lifecycle(world: World) -> None:
    rest, room_id = world.rest, world.room_id
    with trio.fail_after(DEADLINE):
        message_id = await _post(world)

        pending = await rest.list_messages(room_id, sort_order="asc", limit=100)
        assert [m.id for m in pending.items] == [message_id]
        assert pending.limit == 100

        nxt = await rest.next_message(room_id)
        assert nxt is not None
        assert nxt.id == message_id
        assert nxt.sender_id == world.platform.user.id
        assert any(m.get("id") == world.agent.id for m in nxt.mentions)

        claim = await rest.mark_processing(room_id, message_id)
        assert (claim.status, claim.attempt_number, claim.success) == ("processing", 1, True)
        again = await rest.mark_processing(room_id, message_id)  # idempotent while processing
        assert again.attempt_number == 1

        assert await rest.report_activity(room_id, True, ActivityDetail(kind="reasoning")) is True
        event = await rest.send_event(room_id, "thinking it over", "thought")
        assert event.message_type == "thought"
        reply = await rest.send_message(
            room_id, "done!", [MentionRequest(id=world.platform.user.id)]
        )
        assert reply.success
        assert await rest.report_activity(room_id, False) is False

        done = await rest.mark_processed(room_id, message_id)
        assert done.status == "processed"
        assert await rest.next_message(room_id) is None

        processed = await rest.list_messages(room_id, status="processed")
        assert [m.id for m in processed.items] == [message_id]

        context = [m async for m in rest.iter_context(room_id, limit=1)]
        ids = [m.id for m in context]
        assert message_id in ids
        assert reply.id in ids
        assert event.id in ids


async def test_failed_attempt_then_retry(world: World) -> None:
    rest, room_id = world.rest, world.room_id
    with trio.fail_after(DEADLINE):
        message_id = await _post(world)
        await rest.mark_processing(room_id, message_id)
        failed = await rest.mark_failed(room_id, message_id, "adapter crashed")
        assert failed.status == "failed"
        nxt = await rest.next_message(room_id)
        assert nxt is not None
        assert nxt.id == message_id
        second = await rest.mark_processing(room_id, message_id)
        assert second.attempt_number == 2


async def test_lifecycle_errors(world: World) -> None:
    rest, room_id = world.rest, world.room_id
    with trio.fail_after(DEADLINE):
        message_id = await _post(world)
        with pytest.raises(UnprocessableEntityError) as info:
            await rest.mark_processed(room_id, message_id)  # no active attempt
        assert info.value.code == "validation_error"
        assert info.value.details.get("/processing_attempt")
        assert info.value.request_id

        with pytest.raises(NotFoundError) as missing:
            await rest.mark_processing(room_id, "00000000-0000-0000-0000-000000000000")
        assert missing.value.code == "not_found"

        with pytest.raises(UnprocessableEntityError):
            await rest.send_message(room_id, "hello", [MentionRequest(handle="nobody/here")])


async def test_stop_and_play(world: World) -> None:
    rest, room_id, agent_id = world.rest, world.room_id, world.agent.id
    with trio.fail_after(DEADLINE):
        message_id = await _post(world)
        await world.platform.push_control(agent_id, "stop", room_id=room_id)

        assert await rest.next_message(room_id) is None
        with pytest.raises(RoomExecutionStoppedError) as info:
            await rest.mark_processing(room_id, message_id)
        assert info.value.room_id == room_id
        with pytest.raises(RoomExecutionStoppedError):
            await rest.send_message(room_id, "hi", [MentionRequest(id=world.platform.user.id)])
        with pytest.raises(RoomExecutionStoppedError):
            await rest.send_event(room_id, "hmm", "thought")
        assert await rest.report_activity(room_id, True) is False

        await world.platform.push_control(agent_id, "play", room_id=room_id)
        nxt = await rest.next_message(room_id)
        assert nxt is not None
        assert nxt.id == message_id
        assert (await rest.mark_processing(room_id, message_id)).success


async def test_agent_owned_room_crud(world: World) -> None:
    rest = world.rest
    sibling = world.platform.register_agent("Sibling", "Another agent of the same owner")
    with trio.fail_after(DEADLINE):
        room = await rest.create_chat(title="Agent room")
        assert room.title == "Agent room"
        renamed = await rest.update_chat(room.id, title="Renamed")
        assert renamed.title == "Renamed"
        added = await rest.add_participant(room.id, sibling.id)
        assert added.id == sibling.id
        removed = await rest.remove_participant(room.id, sibling.id)
        assert removed.id == sibling.id
        assert sibling.id not in {p.id for p in await rest.list_participants(room.id)}


async def test_files(world: World) -> None:
    rest, room_id = world.rest, world.room_id
    data = b"hello, band-trio!"
    with trio.fail_after(DEADLINE):
        attachment = await rest.upload_file(
            room_id, data, filename="hi.txt", content_type="text/plain"
        )
        assert attachment.bytes == len(data)
        assert attachment.sha256 == hashlib.sha256(data).hexdigest()
        assert await rest.download_file(room_id, attachment.id) == data
        assert await rest.download_file(room_id, attachment.id, byte_range="bytes=0-4") == b"hello"
        with pytest.raises(RangeNotSatisfiableError) as unsatisfiable:
            await rest.download_file(room_id, attachment.id, byte_range="bytes=999-1000")
        # The declared 416 body is a bare JSON string; its text becomes the message.
        assert unsatisfiable.value.message is not None
        assert "range not satisfiable" in unsatisfiable.value.message
        with pytest.raises(NotFoundError):
            await rest.download_file(room_id, "00000000-0000-0000-0000-000000000000")


async def test_tasks_and_board(world: World) -> None:
    rest, room_id = world.rest, world.room_id
    with trio.fail_after(DEADLINE):
        task = await rest.create_task(room_id, "Write the report", detail="two pages")
        assert task.number == 1
        fetched = await rest.get_task(room_id, task.number, include_history=True)
        assert fetched.id == task.id
        updated = await rest.update_task(room_id, task.id, status="in_progress", comment="on it")
        assert updated.overall_status == "in_progress"
        listed = await rest.list_tasks(room_id)
        assert [t.id for t in listed.items] == [task.id]
        assert [t.id async for t in rest.iter_tasks(room_id, state="all")] == [task.id]
        history = await rest.get_task_history(room_id, task.id)
        assert next(e.event for e in history.items) == "created"

        board = await rest.set_board(room_id, goal_title="Ship it")
        assert board.goal_title == "Ship it"
        assert (await rest.get_board(room_id, include_history=True)).goal_title == "Ship it"


async def test_memories(world: World) -> None:
    rest = world.rest
    with trio.fail_after(DEADLINE):
        memory = await rest.create_memory(
            "The user prefers short answers",
            system="long_term",
            type="semantic",
            segment="user",
            thought="it keeps replies useful",
            tags=["style"],
        )
        assert memory.scope == "agent"
        assert (await rest.get_memory(memory.id)).content == memory.content
        listed = [m.id async for m in rest.iter_memories(limit=10)]
        assert memory.id in listed
        assert (await rest.supersede_memory(memory.id)).status == "superseded"
        second = await rest.create_memory(
            "x", system="working", type="episodic", segment="agent", thought="t"
        )
        assert (await rest.archive_memory(second.id)).status == "archived"
        with pytest.raises(UnprocessableEntityError):
            await rest.create_memory(
                "x", system="sensory", type="semantic", segment="agent", thought="t"
            )


async def test_contacts(world: World) -> None:
    rest, platform = world.rest, world.platform
    bob = platform.create_user("Bob", "bob")
    carol = platform.create_user("Carol", "carol")
    with trio.fail_after(DEADLINE):
        async with (
            HumanClient(base_url=platform.rest_url, api_key=bob.api_key) as bob_client,
            HumanClient(base_url=platform.rest_url, api_key=carol.api_key) as carol_client,
        ):
            added = await rest.add_contact("bob", message="hello Bob")
            assert added.status == "pending"
            sent = await rest.list_contact_requests(sent_status="all")
            assert [r.to_handle for r in sent.sent] == ["bob"]
            received = await bob_client.contact_requests()
            await bob_client.approve_contact_request(received[0]["id"])
            contacts = [c.handle async for c in rest.iter_contacts()]
            assert "bob" in contacts
            assert (await rest.remove_contact(handle="bob")).status == "removed"

            await carol_client.send_contact_request(world.agent.handle)
            requests = await rest.list_contact_requests()
            assert [r.from_handle for r in requests.received] == ["carol"]
            answer = await rest.respond_contact_request(
                "approve", request_id=requests.received[0].id
            )
            assert answer.status == "approved"
            assert "carol" in {c.handle for c in (await rest.list_contacts()).items}


async def test_delegation_token(world: World) -> None:
    platform = world.platform
    bob = platform.create_user("Bob", "bob")
    with trio.fail_after(DEADLINE):
        async with HumanClient(base_url=platform.rest_url, api_key=bob.api_key) as bob_client:
            # Bob must be a contact of the room owner before he can be added.
            await world.human.send_contact_request("bob")
            received = await bob_client.contact_requests()
            await bob_client.approve_contact_request(received[0]["id"])
            await world.human.add_participant(world.room_id, bob.id)
            sent = await bob_client.post_message(
                world.room_id, f"@{world.agent.handle} hi", [world.agent.handle]
            )
        token = await world.rest.exchange_delegation_token("connector-1", sent["id"])
        assert token.token_type == "bearer"
        assert token.obo.agent_uuid == world.agent.id
        assert token.access_token not in repr(token)
        own = await _post(world)  # same owner: no delegation envelope
        with pytest.raises(PermissionDeniedError) as info:
            await world.rest.exchange_delegation_token("connector-1", own)
        assert info.value.code == "delegation_not_available"


async def test_wrong_key_is_authentication_error(band_platform: LocalPlatform) -> None:
    with trio.fail_after(DEADLINE):
        async with RestClient(base_url=band_platform.rest_url, api_key="bad-key-xyz") as rest:
            with pytest.raises(AuthenticationError) as info:
                await rest.get_me()
    assert info.value.code
    assert "bad-key-xyz" not in str(info.value)


# ---------------------------------------------------------------- faults


async def test_503_with_retry_after_is_retried(world: World) -> None:
    fault = world.platform.faults.add("POST", r"/messages$", 503, count=2, retry_after=1)
    with trio.fail_after(DEADLINE):
        reply = await world.rest.send_message(
            world.room_id, "hello", [MentionRequest(id=world.platform.user.id)]
        )
        messages = await world.human.list_messages(world.room_id)
    assert reply.success
    assert fault.hits == 2
    assert [m["id"] for m in messages].count(reply.id) == 1


async def test_get_is_retried_after_500(world: World) -> None:
    fault = world.platform.faults.add("GET", r"/participants$", 500, count=2)
    with trio.fail_after(DEADLINE):
        roster = await world.rest.list_participants(world.room_id)
    assert len(roster) == 2
    assert fault.hits == 2
    assert world.rest.statistics().retries == 2


async def test_lost_response_never_duplicates_a_message(world: World) -> None:
    # The platform stores the message, then answers 500: the client must not re-send.
    fault = world.platform.faults.add("POST", r"/agent/chats/[^/]+/messages$", 500, perform=True)
    with trio.fail_after(DEADLINE):
        with pytest.raises(InternalServerError):
            await world.rest.send_message(
                world.room_id, "only once", [MentionRequest(id=world.platform.user.id)]
            )
        messages = await world.human.list_messages(world.room_id)
    assert fault.hits == 1
    assert [m["content"].endswith("only once") for m in messages].count(True) == 1


async def test_lost_claim_response_is_retried_safely(world: World) -> None:
    # /processing is idempotent while processing: a lost response is retried and
    # the retry sees the same attempt.
    message_id = await _post(world)
    fault = world.platform.faults.add("POST", r"/processing$", 502, perform=True)
    with trio.fail_after(DEADLINE):
        claim = await world.rest.mark_processing(world.room_id, message_id)
    assert fault.hits == 1
    assert claim.attempt_number == 1


async def test_hanging_server_times_out(band_platform: LocalPlatform) -> None:
    agent = band_platform.agents[0]
    band_platform.faults.add("GET", r"/agent/me$", 200, delay=float("inf"))
    config = RestConfig(timeout=0.2, retry=RetryPolicy(max_retries=0))
    with trio.fail_after(DEADLINE):
        async with RestClient(
            base_url=band_platform.rest_url, api_key=agent.api_key, config=config
        ) as rest:
            with pytest.raises(BandTimeoutError):
                await rest.get_me()
