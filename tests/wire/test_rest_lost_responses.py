"""Lost responses against the local platform: the platform applies a write, then
answers an error status (``perform=True``), as a gateway does when the answer
of a committed write is lost.

For every non-idempotent write the client makes, the call raises
``OutcomeUnknownError`` (carrying the method, the path and the status), no
second request reaches the platform (a tripwire rule behind the fault would
answer it), and the platform's own state shows the write applied exactly once.
A 503 *with* ``Retry-After`` is the platform saying it did nothing: retried.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import attrs
import pytest
import trio

from band_trio.errors import OutcomeUnknownError, UnprocessableEntityError
from band_trio.local import Fault, HumanClient, LocalPlatform
from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

DEADLINE = 15
# Real sockets: retry waits short but real (autojump cannot drive real I/O).
FAST_RETRY = RetryPolicy(backoff_base=0.01, server_delay_cap=0.05, jitter=0.0)
LOST_STATUSES = [502, 503, 504]


@attrs.frozen
class World:
    platform: LocalPlatform
    rest: RestClient
    human: HumanClient
    agent_id: str
    agent_handle: str
    room_id: str


@pytest.fixture
async def world(band_platform: LocalPlatform) -> AsyncIterator[World]:
    platform = band_platform
    agent = platform.register_agent("Writer", "An agent whose answers get lost")
    with trio.fail_after(DEADLINE):
        async with (
            HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
            RestClient(
                base_url=platform.rest_url,
                api_key=agent.api_key,
                config=RestConfig(retry=FAST_RETRY, timeout=5.0),
            ) as rest,
        ):
            room = await human.create_room("Lost answers")
            await human.add_participant(room["id"], agent.id)
            yield World(platform, rest, human, agent.id, agent.handle, room["id"])


@attrs.frozen
class Lost:
    fault: Fault
    tripwire: Fault


def lose_the_answer(platform: LocalPlatform, method: str, path: str, status: int) -> Lost:
    """The next matching request is applied, then answered ``status``; a second
    one would be refused by the tripwire (and counted)."""
    fault = platform.faults.add(method, path, status, 1, perform=True)
    tripwire = platform.faults.add(method, path, 418, 1, message="a second request arrived")
    return Lost(fault, tripwire)


async def expect_unknown(
    lost: Lost, method: str, status: int, call: Callable[[], Awaitable[object]]
) -> OutcomeUnknownError:
    with trio.fail_after(DEADLINE), pytest.raises(OutcomeUnknownError) as info:
        await call()
    assert lost.fault.hits == 1
    assert lost.tripwire.hits == 0, "the write was sent again"
    error = info.value
    assert error.status_code == status
    assert error.method == method
    assert error.path is not None
    assert lost.fault.path.search(error.path)
    return error


async def _post(world: World, text: str) -> str:
    sent = await world.human.post_message(
        world.room_id, f"@{world.agent_handle} {text}", [world.agent_handle]
    )
    return str(sent["id"])


# ---------------------------------------------------------------- messages and events


@pytest.mark.parametrize("status", [500, *LOST_STATUSES, 408])
async def test_message_post(world: World, status: int) -> None:
    lost = lose_the_answer(world.platform, "POST", r"/agent/chats/[^/]+/messages$", status)
    user = MentionRequest(id=world.platform.user.id)
    await expect_unknown(
        lost, "POST", status, lambda: world.rest.send_message(world.room_id, "only once", [user])
    )
    messages = await world.human.list_messages(world.room_id)
    assert [m["content"].endswith(" only once") for m in messages].count(True) == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_event_post(world: World, status: int) -> None:
    lost = lose_the_answer(world.platform, "POST", r"/agent/chats/[^/]+/events$", status)
    await expect_unknown(
        lost,
        "POST",
        status,
        lambda: world.rest.send_event(world.room_id, "thinking once", "thought"),
    )
    own = [m async for m in world.rest.iter_context(world.room_id)]
    assert [m.content for m in own].count("thinking once") == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_processed_mark_is_repeated_and_the_repeat_changes_nothing(
    world: World, status: int
) -> None:
    message_id = await _post(world, "settle me")
    claim = await world.rest.mark_processing(world.room_id, message_id)
    lost = world.platform.faults.add("POST", r"/processed$", status, 1, perform=True)
    # The mark landed; its repeat finds no attempt open (422), which the
    # runtime reads as "done" once the message left its work list.
    with trio.fail_after(DEADLINE), pytest.raises(UnprocessableEntityError):
        await world.rest.mark_processed(world.room_id, message_id)
    assert lost.hits == 1
    done = await world.rest.list_messages(world.room_id, status="processed")
    assert [m.id for m in done.items] == [message_id]
    # Still the one attempt: nothing re-claimed or re-closed it.
    again = await world.rest.mark_processing(world.room_id, message_id)
    assert again.attempt_number == claim.attempt_number + 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_failed_mark_is_repeated_and_the_repeat_changes_nothing(
    world: World, status: int
) -> None:
    message_id = await _post(world, "fail me")
    await world.rest.mark_processing(world.room_id, message_id)
    lost = world.platform.faults.add("POST", r"/failed$", status, 1, perform=True)
    with trio.fail_after(DEADLINE), pytest.raises(UnprocessableEntityError):
        await world.rest.mark_failed(world.room_id, message_id, "E")
    assert lost.hits == 1
    failed = await world.rest.list_messages(world.room_id, status="failed")
    assert [m.id for m in failed.items] == [message_id]


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_marks_refused_before_they_landed_are_repeated_until_they_land(
    world: World, status: int
) -> None:
    message_id = await _post(world, "mark me")
    await world.rest.mark_processing(world.room_id, message_id)
    refused = world.platform.faults.add("POST", r"/processed$", status, 2)
    with trio.fail_after(DEADLINE):
        marked = await world.rest.mark_processed(world.room_id, message_id)
    assert refused.hits == 2
    assert marked.status == "processed"


# ---------------------------------------------------------------- rooms and participants


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_room_creation(world: World, status: int) -> None:
    lost = lose_the_answer(world.platform, "POST", r"/agent/chats$", status)
    await expect_unknown(lost, "POST", status, lambda: world.rest.create_chat(title="Made once"))
    rooms = [r async for r in world.rest.iter_chats()]
    assert [r.title for r in rooms].count("Made once") == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_participant_add(world: World, status: int) -> None:
    sibling = world.platform.register_agent("Sibling", "Added once")
    room = await world.rest.create_chat(title="Agent room")
    lost = lose_the_answer(world.platform, "POST", r"/participants$", status)
    await expect_unknown(
        lost, "POST", status, lambda: world.rest.add_participant(room.id, sibling.id)
    )
    roster = await world.rest.list_participants(room.id)
    assert [p.id for p in roster].count(sibling.id) == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_participant_removal(world: World, status: int) -> None:
    sibling = world.platform.register_agent("Sibling", "Removed once")
    room = await world.rest.create_chat(title="Agent room")
    await world.rest.add_participant(room.id, sibling.id)
    lost = lose_the_answer(world.platform, "DELETE", r"/participants/[^/]+$", status)
    await expect_unknown(
        lost, "DELETE", status, lambda: world.rest.remove_participant(room.id, sibling.id)
    )
    roster = await world.rest.list_participants(room.id)
    assert sibling.id not in {p.id for p in roster}


# ---------------------------------------------------------------- contacts


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_contact_request(world: World, status: int) -> None:
    world.platform.create_user("Bob", "bob")
    lost = lose_the_answer(world.platform, "POST", r"/contacts/add$", status)
    await expect_unknown(lost, "POST", status, lambda: world.rest.add_contact("bob"))
    sent = await world.rest.list_contact_requests(sent_status="all")
    assert [r.to_handle for r in sent.sent] == ["bob"]


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_contact_removal(world: World, status: int) -> None:
    bob = world.platform.create_user("Bob", "bob")
    async with HumanClient(base_url=world.platform.rest_url, api_key=bob.api_key) as bob_client:
        await world.rest.add_contact("bob")
        received = await bob_client.contact_requests()
        await bob_client.approve_contact_request(received[0]["id"])
    lost = lose_the_answer(world.platform, "POST", r"/contacts/remove$", status)
    await expect_unknown(lost, "POST", status, lambda: world.rest.remove_contact(handle="bob"))
    assert "bob" not in {c.handle for c in (await world.rest.list_contacts()).items}


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_contact_request_response(world: World, status: int) -> None:
    carol = world.platform.create_user("Carol", "carol")
    async with HumanClient(base_url=world.platform.rest_url, api_key=carol.api_key) as client:
        await client.send_contact_request(world.agent_handle)
    requests = await world.rest.list_contact_requests()
    request_id = requests.received[0].id
    lost = lose_the_answer(world.platform, "POST", r"/contacts/requests/respond$", status)
    await expect_unknown(
        lost,
        "POST",
        status,
        lambda: world.rest.respond_contact_request("approve", request_id=request_id),
    )
    contacts = [c.handle for c in (await world.rest.list_contacts()).items]
    assert contacts.count("carol") == 1


# ---------------------------------------------------------------- memories


async def _memory(world: World, content: str) -> str:
    memory = await world.rest.create_memory(
        content, system="long_term", type="semantic", segment="user", thought="worth keeping"
    )
    return memory.id


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_memory_creation(world: World, status: int) -> None:
    lost = lose_the_answer(world.platform, "POST", r"/agent/memories$", status)
    await expect_unknown(lost, "POST", status, lambda: _memory(world, "stored once"))
    memories = [m async for m in world.rest.iter_memories(limit=50)]
    assert [m.content for m in memories].count("stored once") == 1


@pytest.mark.parametrize(("which", "state"), [("supersede", "superseded"), ("archive", "archived")])
async def test_memory_state_change(world: World, which: str, state: str) -> None:
    memory_id = await _memory(world, "to be changed")
    lost = lose_the_answer(world.platform, "POST", rf"/memories/[^/]+/{which}$", 503)
    change = world.rest.supersede_memory if which == "supersede" else world.rest.archive_memory
    await expect_unknown(lost, "POST", 503, lambda: change(memory_id))
    assert (await world.rest.get_memory(memory_id)).status == state


# ---------------------------------------------------------------- tasks


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_task_creation(world: World, status: int) -> None:
    lost = lose_the_answer(world.platform, "POST", r"/tasks$", status)
    await expect_unknown(
        lost, "POST", status, lambda: world.rest.create_task(world.room_id, "Created once")
    )
    tasks = [t async for t in world.rest.iter_tasks(world.room_id, state="all")]
    assert [t.subject for t in tasks].count("Created once") == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_task_update(world: World, status: int) -> None:
    task = await world.rest.create_task(world.room_id, "Commented once")
    lost = lose_the_answer(world.platform, "POST", r"/tasks/[^/]+$", status)
    await expect_unknown(
        lost,
        "POST",
        status,
        lambda: world.rest.update_task(world.room_id, task.id, comment="a single note"),
    )
    history = await world.rest.get_task_history(world.room_id, task.id)
    notes = [e for e in history.items if "a single note" in str(e.payload)]
    assert len(notes) == 1


# ---------------------------------------------------------------- what stays retried


async def test_503_with_retry_after_is_retried_for_a_write(world: World) -> None:
    """The platform said it did nothing and when to come back: sent again."""
    refused = world.platform.faults.add(
        "POST", r"/agent/chats/[^/]+/messages$", 503, 1, retry_after=1
    )
    user = MentionRequest(id=world.platform.user.id)
    with trio.fail_after(DEADLINE):
        sent = await world.rest.send_message(world.room_id, "after the wait", [user])
    assert refused.hits == 1
    messages = await world.human.list_messages(world.room_id)
    assert [m["id"] for m in messages].count(sent.id) == 1


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_idempotent_write_is_retried_after_a_lost_answer(world: World, status: int) -> None:
    """Setting the board goal twice changes nothing: the client retries it."""
    lost = world.platform.faults.add("PUT", r"/board$", status, 1, perform=True)
    with trio.fail_after(DEADLINE):
        board = await world.rest.set_board(world.room_id, goal_title="Ship it")
    assert lost.hits == 1
    assert board.goal_title == "Ship it"


async def test_delegation_token_exchange(world: World) -> None:
    """Each exchange mints a token and spends the agent's exchange budget:
    not repeated after a lost answer either."""
    platform = world.platform
    bob = platform.create_user("Bob", "bob")
    async with HumanClient(base_url=platform.rest_url, api_key=bob.api_key) as bob_client:
        # Bob must be a contact of the room owner before he can be added.
        await world.human.send_contact_request("bob")
        received = await bob_client.contact_requests()
        await bob_client.approve_contact_request(received[0]["id"])
        await world.human.add_participant(world.room_id, bob.id)
        sent = await bob_client.post_message(
            world.room_id, f"@{world.agent_handle} hi", [world.agent_handle]
        )
    lost = lose_the_answer(platform, "POST", r"/delegation/token$", 503)
    await expect_unknown(
        lost,
        "POST",
        503,
        lambda: world.rest.exchange_delegation_token("connector-1", str(sent["id"])),
    )


@pytest.mark.parametrize("status", LOST_STATUSES)
async def test_file_upload_is_retried_after_a_lost_answer(world: World, status: int) -> None:
    """Identical bytes in a room are one file: the client retries the upload."""
    lost = world.platform.faults.add("PUT", r"/files$", status, 1, perform=True)
    with trio.fail_after(DEADLINE):
        first = await world.rest.upload_file(world.room_id, b"same bytes", filename="a.txt")
        again = await world.rest.upload_file(world.room_id, b"same bytes", filename="a.txt")
    assert lost.hits == 1
    assert first.id == again.id
