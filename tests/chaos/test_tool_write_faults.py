"""Every non-idempotent write of the tools, its answer refused or lost, made
by an adapter that catches nothing: the tool settles it inside the call.

For each write kind, one message asks the adapter to make the write and then
reply. The local platform's fault injection answers the write's first two
requests with a 5xx, in two forms:

* ``503-before``: a 503 without ``Retry-After``, the write not performed;
* ``503-after`` / ``504-after``: the write performed, its answer lost.

What must hold: the write took effect exactly once, the adapter's turn ran
once and saw no error, the message is processed with no failed attempt and
answered once. The run is in-process on the autojump clock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from band_trio import AgentConfig
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.agent import Agent
from band_trio.local import LocalPlatform, contact_book
from band_trio.local._input import Obj
from band_trio.testing.conformance._inprocess import InProcessRuntime
from band_trio.wire.rest import RestConfig

Write = Callable[[AgentToolsProtocol, "Case"], Awaitable[object]]


@attrs.define
class Case:
    """What one write kind needs: the platform, the agent, a helper agent and
    the room, and a count of what the write left on the platform."""

    platform: LocalPlatform
    agent_id: str
    agent_handle: str
    helper_id: str
    room_id: str
    memory_id: str = ""
    task_id: str = ""


async def _create_room(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.create_chatroom()


def _rooms_created(case: Case) -> int:
    return sum(1 for r in case.platform.state.rooms.values() if r.owner_id == case.agent_id)


async def _store_memory(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.store_memory(
        content="the user prefers tea",
        system="long_term",
        type="semantic",
        segment="user",
        thought="worth keeping",
        scope="agent",
    )


def _memories_stored(case: Case) -> int:
    return sum(
        1
        for m in case.platform.state.memories.values()
        if m.content == "the user prefers tea" and m.source_agent_id == case.agent_id
    )


async def _stored_first(tools: AgentToolsProtocol, case: Case) -> str:
    if not case.memory_id:
        case.memory_id = str((await _store_memory(tools, case))["id"])  # type: ignore[index]
    return case.memory_id


async def _supersede_memory(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.supersede_memory(await _stored_first(tools, case))


async def _archive_memory(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.archive_memory(await _stored_first(tools, case))


def _memory_in(status: str) -> Callable[[Case], int]:
    def count(case: Case) -> int:
        memory = case.platform.state.memories[case.memory_id]
        return 1 if memory.status == status and _memories_stored(case) == 1 else 0

    return count


async def _create_task(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.create_task("Write the summary", detail="by Friday")


def _tasks_created(case: Case) -> int:
    room = case.platform.state.rooms[case.room_id]
    return sum(1 for t in room.tasks if t.subject == "Write the summary")


async def _update_task(tools: AgentToolsProtocol, case: Case) -> object:
    if not case.task_id:
        case.task_id = str((await _create_task(tools, case))["id"])  # type: ignore[index]
    return await tools.update_task(case.task_id, status="in_progress", comment="started on it")


def _task_updated(case: Case) -> int:
    room = case.platform.state.rooms[case.room_id]
    task = next(t for t in room.tasks if t.id == case.task_id)
    comments = [e for e in task.history if e["event"] == "commented"]
    mine = [a for a in task.assignments.values() if a.status == "in_progress"]
    return len(comments) if mine else 0


async def _add_participant(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.add_participant("Helper")


def _helper_in_room(case: Case) -> int:
    return 1 if case.helper_id in case.platform.state.rooms[case.room_id].members else 0


async def _remove_participant(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.remove_participant("Helper")


def _helper_gone(case: Case) -> int:
    return 1 - _helper_in_room(case)


async def _add_contact(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.add_contact(f"@{case.platform.user.handle}", "hello")


def _requests_sent(case: Case) -> int:
    return sum(
        1
        for r in case.platform.state.contact_requests.values()
        if r.requester_id == case.agent_id and r.status == "pending"
    )


async def _remove_contact(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.remove_contact(handle=case.platform.user.handle)


def _contact_gone(case: Case) -> int:
    return 0 if case.platform.state.contacts else 1


async def _approve_request(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.respond_contact_request("approve", handle=case.platform.user.handle)


def _contact_made(case: Case) -> int:
    return len(case.platform.state.contacts)


async def _reject_request(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.respond_contact_request("reject", handle=case.platform.user.handle)


async def _cancel_request(tools: AgentToolsProtocol, case: Case) -> object:
    return await tools.respond_contact_request("cancel", handle=case.platform.user.handle)


def _requests_in(status: str) -> Callable[[Case], int]:
    def count(case: Case) -> int:
        statuses = [r.status for r in case.platform.state.contact_requests.values()]
        return statuses.count(status) if len(statuses) == 1 else 0

    return count


def _ask_user(case: Case) -> None:
    state = case.platform.state
    handle = case.platform.user.handle
    contact_book.add_contact(state, state.agents[case.agent_id], Obj({"handle": handle}))


def _ask_agent(case: Case) -> str:
    """The user asks the agent to be a contact; the request's id."""
    state = case.platform.state
    user = state.users[case.platform.user.id]
    request = contact_book.add_contact(state, user, Obj({"handle": case.agent_handle}))
    return str(request["id"])


def _be_contacts(case: Case) -> None:
    state = case.platform.state
    request_id = _ask_agent(case)
    contact_book.respond(
        state, state.agents[case.agent_id], Obj({"action": "approve", "request_id": request_id})
    )


@attrs.frozen
class Kind:
    write: Write
    count: Callable[[Case], int]
    method: str
    path: str
    setup: Callable[[Case], object] | None = None


KINDS = {
    "create-room": Kind(_create_room, _rooms_created, "POST", r"/agent/chats$"),
    "store-memory": Kind(_store_memory, _memories_stored, "POST", r"/memories$"),
    "supersede-memory": Kind(_supersede_memory, _memory_in("superseded"), "POST", r"/supersede$"),
    "archive-memory": Kind(_archive_memory, _memory_in("archived"), "POST", r"/archive$"),
    "create-task": Kind(_create_task, _tasks_created, "POST", r"/tasks$"),
    "update-task": Kind(_update_task, _task_updated, "POST", r"/tasks/[^/]+$"),
    "add-participant": Kind(_add_participant, _helper_in_room, "POST", r"/participants$"),
    "remove-participant": Kind(
        _remove_participant,
        _helper_gone,
        "DELETE",
        r"/participants/",
        setup=lambda case: case.platform.state.add_participant(
            case.platform.state.users[case.platform.user.id],
            case.room_id,
            Obj({"participant": {"participant_id": case.helper_id}}),
        ),
    ),
    "add-contact": Kind(_add_contact, _requests_sent, "POST", r"/contacts/add$"),
    "remove-contact": Kind(
        _remove_contact, _contact_gone, "POST", r"/contacts/remove$", setup=_be_contacts
    ),
    "approve-contact-request": Kind(
        _approve_request, _contact_made, "POST", r"/contacts/requests/respond$", setup=_ask_agent
    ),
    "reject-contact-request": Kind(
        _reject_request,
        _requests_in("rejected"),
        "POST",
        r"/contacts/requests/respond$",
        setup=_ask_agent,
    ),
    "cancel-contact-request": Kind(
        _cancel_request,
        _requests_in("cancelled"),
        "POST",
        r"/contacts/requests/respond$",
        setup=_ask_user,
    ),
}


class WriteThenReply(SimpleAdapter[HistoryProvider]):
    """Makes the write, then replies; catches nothing (an error is recorded
    and raised on)."""

    def __init__(self, write: Write, case: Case) -> None:
        super().__init__()
        self.write = write
        self.case = case
        self.turns = 0
        self.errors: list[BaseException] = []

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.turns += 1
        try:
            await self.write(tools, self.case)
            await tools.send_message("done", [msg.sender_id])
        except Exception as exc:
            self.errors.append(exc)
            raise


@attrs.frozen
class Outcome:
    effects: int
    turns: int
    errors: int
    processed: bool
    failed_attempts: int
    replies: int
    faults_fired: int


async def _run(kind: Kind, fault: str) -> Outcome:
    platform = LocalPlatform(seed_demo=False)
    creds = platform.register_agent("Writer", "Makes writes.")
    helper = platform.register_agent("Helper", "A sibling agent.")
    state = platform.state
    user = state.users[platform.user.id]
    room = state.create_room(user, Obj({"chat": {"title": "writes"}}))
    state.add_participant(
        user, room.id, Obj({"participant": {"participant_id": creds.id, "role": "admin"}})
    )
    case = Case(platform, creds.id, creds.handle, helper.id, room.id)
    if kind.setup is not None:
        kind.setup(case)
    platform._flush()
    runtime = InProcessRuntime(
        platform,
        creds.id,
        creds.api_key,
        AgentConfig(state_dir=None, gc_freeze_min_rooms=0),
        rest_config=RestConfig(),
    )
    adapter = WriteThenReply(kind.write, case)
    agent = Agent(runtime, adapter, handle_signals=False)
    status, performed = fault.split("-")
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        rule = platform.faults.add(
            kind.method, kind.path, int(status), 2, perform=performed == "after"
        )
        sent = state.post_message(
            user,
            room.id,
            Obj({"message": {"content": f"@{creds.handle} go", "mentions": [{"id": creds.id}]}}),
        )
        platform._flush()
        message = state.rooms[room.id].by_id[str(sent["id"])]

        def delivery() -> Any:
            return message.deliveries.get(creds.id)

        # The platform's state is polled: nothing wakes a waiter when it changes.
        with trio.move_on_after(60):
            while True:
                if delivery() is not None and delivery().status == "processed":
                    break
                await trio.sleep(0.1)
        agent.request_shutdown()
    return Outcome(
        effects=kind.count(case),
        turns=adapter.turns,
        errors=len(adapter.errors),
        processed=delivery().status == "processed",
        failed_attempts=sum(1 for a in delivery().attempts if a.status == "failed"),
        replies=sum(
            1
            for m in state.rooms[room.id].messages
            if m.sender_id == creds.id and m.message_type == "text" and m.content.endswith("done")
        ),
        faults_fired=rule.hits,
    )


@pytest.mark.parametrize("fault", ["503-before", "503-after", "504-after"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_write_refused_or_lost_is_settled_inside_the_tool_call(
    kind: str, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="band_trio")
    outcome = trio.run(_run, KINDS[kind], fault, clock=trio.testing.MockClock(autojump_threshold=0))
    assert outcome.faults_fired >= 1, outcome
    assert outcome.effects == 1, outcome
    assert (outcome.turns, outcome.errors) == (1, 0), outcome
    assert outcome.processed, outcome
    assert outcome.failed_attempts == 0, outcome
    assert outcome.replies == 1, outcome
