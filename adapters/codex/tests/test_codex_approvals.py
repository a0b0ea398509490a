"""Codex's approval requests against the fake app-server: declined without
approvals configured; with them, accepted for the room owner's messages and
for named approvers', declined for any other participant's unless an
approval wait is configured: then only the owner's (or a named approver's)
``/approve <id>`` in the room decides it, anyone else's is ignored, the wait
has its own bound and pauses the turn's deadline, and the reply starts no
Codex turn. A turn that runs out of time after an approval is settled once."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from band_trio_codex import ApprovalSettings, CodexAdapter
from band_trio_codex.adapter import approval_reply
from codex_support import FakeCodex, reply

from band_trio import BandConfigError
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import AgentRoom, agent_in_rooms

TIMEOUT = 30
GUEST = ("Guest", "guest")  # a second person in the room: a member, not its owner
APPROVAL = {
    "request": "item/commandExecution/requestApproval",
    "params": {"itemId": "i1", "command": "touch approved.txt"},
}
LEGACY = {"request": "execCommandApproval", "params": {"command": ["ls", "-l"]}}


@pytest.fixture
def fake(tmp_path: Path) -> FakeCodex:
    return FakeCodex(tmp_path)


def _notices(room: object) -> list[str]:
    return [m.content for m in room.from_agent() if "Approval requested" in m.content]  # type: ignore[attr-defined]


async def test_without_approvals_every_request_is_declined(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([APPROVAL, LEGACY, reply("done", [user_id])])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
    first, legacy, _tool = fake.answers()
    assert first["result"] == {"decision": "decline"}
    assert legacy["result"] == {"decision": "denied"}
    assert (
        "Approval requested (run `touch approved.txt`). Decision: **decline** " in _notices(room)[0]
    )


async def test_the_owners_request_is_approved_and_another_participants_is_not(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    adapter = CodexAdapter(fake.config(approval_policy="on-request", approvals=ApprovalSettings()))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, people=[GUEST]) as [room]:
            guest_id = room.people["guest"][0].id
            fake.script(
                [APPROVAL, reply("ok", [user_id])], [APPROVAL, LEGACY, reply("ok", [guest_id])]
            )
            posted = await room.post("please touch the file")
            assert await room.settled(posted) == "processed"
            sent = await room.post("touch it too", by="guest")
            assert await room.settled(sent) == "processed"
    owner_answer, _tool, guest_answer, guest_legacy, _tool2 = fake.answers()
    assert owner_answer["result"] == {"decision": "accept"}
    assert guest_answer["result"] == {"decision": "decline"}
    assert guest_legacy["result"] == {"decision": "denied"}
    owner_notice, *guest_notices = _notices(room)
    assert "**accept** (the room's owner asked)" in owner_notice
    assert all("**decline** (only the room's owner or a named approver" in n for n in guest_notices)


async def test_a_named_approver_is_approved(band_platform: LocalPlatform, fake: FakeCodex) -> None:
    user_id = band_platform.user.id
    fake.script([APPROVAL, reply("ok", [user_id])])
    settings = ApprovalSettings(approvers={"@demo"}, owner_approves=False)
    adapter = CodexAdapter(fake.config(approval_policy="untrusted", approvals=settings))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("go")
            assert await room.settled(posted) == "processed"
    answer, _tool = fake.answers()
    assert answer["result"] == {"decision": "accept"}


async def test_a_turn_that_times_out_after_an_approval_is_settled_once(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([APPROVAL, {"wait_interrupt": True}], [reply("back", [user_id])])
    adapter = CodexAdapter(
        fake.config(approval_policy="on-request", approvals=ApprovalSettings(), turn_timeout=0.5)
    )
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            stuck = await room.post("touch and wait")
            assert await room.settled(stuck) == "failed"
            posted = await room.post("again")
            assert await room.settled(posted) == "processed"
    (error,) = room.from_agent("error")
    assert error.metadata["failure"]["code"] == "timeout"
    assert len(fake.received("turn/interrupt")) == 1
    approval, _tool = fake.answers()
    assert approval["result"] == {"decision": "accept"}


def test_approvals_are_validated_at_construction(fake: FakeCodex) -> None:
    with pytest.raises(BandConfigError, match="needs approvals"):
        fake.config(approval_policy="on-request")
    with pytest.raises(BandConfigError, match="at least one named approver"):
        ApprovalSettings(owner_approves=False)
    with pytest.raises(BandConfigError, match="approval_policy"):
        fake.config(approval_policy="sometimes")
    with pytest.raises(BandConfigError, match="sandbox"):
        fake.config(sandbox="wide-open")


async def _wait_id(platform: LocalPlatform, room: AgentRoom) -> str:
    """The id of the approval wait the agent announced in the room."""
    found: list[str] = []

    def announced() -> bool:
        for message in room.from_agent():
            match = re.search(r"Reply to me `/approve ([0-9a-f]{6})`", message.content)
            if match:
                found.append(match.group(1))
                return True
        return False

    await platform.wait_for(announced)
    return found[0]


def _waiting(fake: FakeCodex, **settings: Any) -> Any:
    return fake.config(
        approval_policy="on-request", approvals=ApprovalSettings(**settings), turn_timeout=0.5
    )


async def test_the_owner_approves_another_participants_request_in_the_room(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    adapter = CodexAdapter(_waiting(fake, approval_timeout=20))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, people=[GUEST]) as [room]:
            guest_id = room.people["guest"][0].id
            fake.script([APPROVAL, reply("done", [guest_id])])
            asked = await room.post("touch the file", by="guest")
            ident = await _wait_id(band_platform, room)
            answer = await room.post(f"/approve {ident}")
            assert await room.settled(asked) == "processed"
            assert await room.settled(answer) == "processed"
    approval, _tool = fake.answers()
    assert approval["result"] == {"decision": "accept"}
    assert len(fake.received("turn/start")) == 1  # the /approve message started no turn
    decided = [
        m.content[m.content.index("Approval") :]
        for m in room.from_agent()
        if f"Approval `{ident}`" in m.content
    ]
    assert decided == [
        f"Approval `{ident}` (run `touch approved.txt`). Decision: **accept** "
        f"(approved by {band_platform.user.handle})."
    ]


async def test_another_participants_approve_is_ignored_and_the_wait_declines_once(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    # The wait (1.5 s) outlasts the turn's deadline (0.5 s), which it pauses:
    # the turn ends normally after the decline, neither timed out nor interrupted.
    adapter = CodexAdapter(_waiting(fake, approval_timeout=1.5))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, people=[GUEST]) as [room]:
            guest_id = room.people["guest"][0].id
            fake.script([APPROVAL, reply("not allowed", [guest_id])])
            asked = await room.post("touch the file", by="guest")
            ident = await _wait_id(band_platform, room)
            answer = await room.post(f"/approve {ident}", by="guest")
            assert await room.settled(asked) == "processed"
            assert await room.settled(answer) == "processed"
    approval, _tool = fake.answers()
    assert approval["result"] == {"decision": "decline"}
    assert fake.received("turn/interrupt") == []
    assert room.from_agent("error") == []
    assert len(fake.received("turn/start")) == 1
    decided = [
        m.content[m.content.index("Approval") :]
        for m in room.from_agent()
        if f"Approval `{ident}`" in m.content
    ]
    assert decided == [
        f"Approval `{ident}` (run `touch approved.txt`). Decision: **decline** "
        "(no authorised answer within 1.5s)."
    ]


async def test_a_denial_from_a_named_approver_declines(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    adapter = CodexAdapter(
        _waiting(
            fake, approvers={band_platform.user.handle}, owner_approves=False, approval_timeout=20
        )
    )
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, people=[GUEST]) as [room]:
            guest_id = room.people["guest"][0].id
            fake.script([APPROVAL, reply("denied", [guest_id])])
            asked = await room.post("touch the file", by="guest")
            ident = await _wait_id(band_platform, room)
            await room.post(f"/deny {ident}")
            assert await room.settled(asked) == "processed"
    approval, _tool = fake.answers()
    assert approval["result"] == {"decision": "decline"}
    assert any(f"denied by {band_platform.user.handle}" in m.content for m in room.from_agent())


async def test_a_turn_the_runtime_ends_during_an_approval_wait_is_settled_once(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    # The runtime's deadline (1 s) is not the adapter's to pause: it ends the
    # turn mid-wait; Codex (here deaf to the interrupt) is killed, the message
    # fails once, and the room's next message gets a fresh app-server.
    user_id = band_platform.user.id
    config = attrs.evolve(_waiting(fake, approval_timeout=20), interrupt_timeout=0.5)
    adapter = CodexAdapter(config)
    fake.script([APPROVAL], [reply("back", [user_id])])
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, people=[GUEST], turn_timeout=1.0) as [
            room
        ]:
            asked = await room.post("touch the file", by="guest")
            await _wait_id(band_platform, room)
            assert await room.settled(asked) == "failed"
            posted = await room.post("again")
            assert await room.settled(posted) == "processed"
    assert len(room.from_agent("error")) == 1  # the runtime's one failure report
    assert len(room.state.by_id[asked].deliveries[room.agent_id].attempts) == 1
    assert adapter.statistics().killed == 1


def test_the_approval_reply_form() -> None:
    assert approval_reply("@codex /approve a1b2c3") == ("approve", "a1b2c3")
    assert approval_reply("/DENY `A1B2C3`") == ("deny", "a1b2c3")
    assert approval_reply("please /approve it") is None
    assert approval_reply("x/approve a1b2c3") is None


@pytest.mark.parametrize("seconds", [0, -1, math.inf, "5", True])
def test_the_approval_wait_is_validated_at_construction(seconds: object) -> None:
    with pytest.raises(BandConfigError, match="approval_timeout must be a positive, finite"):
        ApprovalSettings(approval_timeout=seconds)  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [0, math.inf])
def test_the_turn_deadline_is_validated_at_construction(fake: FakeCodex, seconds: float) -> None:
    with pytest.raises(BandConfigError, match="turn_timeout must be a positive, finite"):
        fake.config(turn_timeout=seconds)
