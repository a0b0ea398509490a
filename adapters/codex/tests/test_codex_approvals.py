"""Codex's approval requests against the fake app-server: declined without
approvals configured; with them, accepted for the room owner's messages and
for named approvers', declined for any other participant's; a turn that runs
out of time after an approval is settled once. No message can approve."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from band_trio_codex import ApprovalSettings, CodexAdapter
from codex_support import FakeCodex, agent_in_rooms, reply

from band_trio import BandConfigError
from band_trio.local import HumanClient, LocalPlatform

TIMEOUT = 30
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
    guest = band_platform.create_user("Guest", "guest")
    fake.script([APPROVAL, reply("ok", [user_id])], [APPROVAL, LEGACY, reply("ok", [guest.id])])
    adapter = CodexAdapter(fake.config(approval_policy="on-request", approvals=ApprovalSettings()))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("please touch the file")
            assert await room.settled(posted) == "processed"
            async with HumanClient(base_url=band_platform.rest_url, api_key=guest.api_key) as other:
                request = await other.send_contact_request(band_platform.user.handle)
                await room.human.approve_contact_request(request["id"])
                await room.human.add_participant(room.room_id, guest.id)
                sent = await other.post_message(
                    room.room_id, f"@{room.agent_handle} touch it too", [room.agent_handle]
                )
                assert await room.settled(str(sent["id"])) == "processed"
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
