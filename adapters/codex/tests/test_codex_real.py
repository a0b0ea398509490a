"""End to end with a real ``Agent`` on the local platform through the real
``codex app-server`` (0.171), which asks a scripted Responses API on
127.0.0.1: a reply through the band tool, no-reply, a failing tool call, two
rooms at once, a restarted agent resuming the room's thread, an interrupt
mid-turn, approvals granted for the room owner's request and refused for
another participant's, and another participant's command run once the owner
answers ``/approve <id>`` in the room. Skipped with the install command where node or codex is missing
(failed instead under ``BAND_REQUIRE_CODEX``)."""

from __future__ import annotations

import json
import re
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from band_trio_codex import ApprovalSettings, CodexAdapter
from codex_support import NO_REPLY, SEND, real_config, until
from responses_stub import (
    HANG,
    ResponsesStub,
    function_call,
    function_outputs,
    message_item,
    reasoning_item,
)

from band_trio.local import LocalPlatform
from band_trio.testing.rooms import AgentRoom, agent_in_rooms

TIMEOUT = 90
DONE = [message_item("Done.")]
GUEST = ("Guest", "guest")  # a second person in the room: a member, not its owner


@attrs.define
class RealCodex:
    """The real binary answering from the scripted Responses API, and the
    local platform its agents serve rooms of."""

    platform: LocalPlatform
    stub: ResponsesStub
    binary: Path
    home: Path

    def adapter(self, **settings: Any) -> CodexAdapter:
        """An adapter on the real binary (``settings`` go to its config)."""
        return CodexAdapter(real_config(self.binary, self.stub.url, self.home, **settings))

    def serve(
        self, adapter: CodexAdapter, **rooms: Any
    ) -> AbstractAsyncContextManager[list[AgentRoom]]:
        """An agent on ``adapter`` serving rooms (``rooms``: as for ``agent_in_rooms``)."""
        return agent_in_rooms(self.platform, adapter, **rooms)


@pytest.fixture
def codex(
    band_platform: LocalPlatform,
    responses_stub: ResponsesStub,
    codex_binary: Path,
    codex_home: Path,
) -> RealCodex:
    return RealCodex(band_platform, responses_stub, codex_binary, codex_home)


def send(content: str, mentions: list[str], call_id: str = "call_a") -> list[dict[str, Any]]:
    return [function_call(SEND, {"content": content, "mentions": mentions}, call_id)]


def _developer_texts(body: dict[str, Any]) -> list[str]:
    return [
        part.get("text", "")
        for item in body.get("input") or []
        if item.get("role") == "developer"
        for part in item.get("content") or []
    ]


async def test_a_reply_through_the_band_tool(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id
    codex.stub.push(
        [reasoning_item("The user says hi; I answer."), *send("hello from codex", [user_id])],
        DONE,
    )
    adapter = codex.adapter()
    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
            pid = adapter.process_pid(room.room_id)
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("hello from codex")
    first, second = codex.stub.bodies
    tools = [t.get("name") for t in first["tools"]]
    assert SEND in tools
    assert NO_REPLY in tools
    assert any(adapter.system_prompt in text for text in _developer_texts(first))
    (output,) = function_outputs(second)
    assert output["call_id"] == "call_a"
    assert json.loads(output["output"])["success"] is True
    (tool_call,) = room.from_agent("tool_call")
    assert json.loads(tool_call.content)["tool_call_id"] == "call_a"
    # Codex's reasoning summary became a thought; its usage the turn's.
    assert [m.content for m in room.from_agent("thought")] == ["The user says hi; I answer."]
    usage = [
        m.metadata["band_usage"] for m in room.from_agent("task") if "band_usage" in m.metadata
    ]
    assert len(usage) == 1
    assert usage[0]["input_tokens"] == 40  # two model calls of 20
    assert usage[0]["output_tokens"] == 10
    assert room.from_agent("error") == []
    assert not any("Done." in m.content for m in room.from_agent())
    assert pid is not None
    await until(lambda: adapter.statistics().live_readers == 0)


async def test_no_reply_and_a_failing_tool_call(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id
    codex.stub.push(
        [function_call(SEND, {"mentions": [user_id]}, "call_bad")],
        [function_call(NO_REPLY, {"reason": "nothing to add"}, "call_quiet")],
        DONE,
    )
    adapter = codex.adapter()
    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter) as [room]:
            posted = await room.post("fyi")
            assert await room.settled(posted) == "processed"
    assert room.from_agent("text") == []
    (bad,) = function_outputs(codex.stub.bodies[1])
    assert bad["call_id"] == "call_bad"
    assert "content" in bad["output"]
    results = [json.loads(m.content) for m in room.from_agent("tool_result")]
    assert [r["tool_call_id"] for r in results] == ["call_bad", "call_quiet"]


async def test_two_rooms_at_once(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id

    def answer(body: dict[str, Any]) -> Any:
        if function_outputs(body):
            return DONE
        return send("one each", [user_id], f"call_{len(codex.stub.bodies)}")

    codex.stub.default = answer
    adapter = codex.adapter()
    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter, rooms=2) as [first, second]:
            a = await first.post("one")
            b = await second.post("two")
            assert await first.settled(a) == "processed"
            assert await second.settled(b) == "processed"
            pids = {adapter.process_pid(first.room_id), adapter.process_pid(second.room_id)}
            threads = {adapter.thread_id(first.room_id), adapter.thread_id(second.room_id)}
    assert len(pids) == 2
    assert len(threads) == 2
    for room in (first, second):
        (sent,) = room.from_agent("text")
        assert sent.content.endswith("one each")


async def test_a_restarted_agent_resumes_the_rooms_thread(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id
    codex.stub.push(send("noted", [user_id]), DONE, send("heliotrope", [user_id]), DONE)
    first_adapter = codex.adapter()
    with trio.fail_after(TIMEOUT):
        async with codex.serve(first_adapter) as [room]:
            posted = await room.post("the code word is heliotrope")
            assert await room.settled(posted) == "processed"
            thread = first_adapter.thread_id(room.room_id)
        second_adapter = codex.adapter()
        async with codex.serve(second_adapter, join=[room]) as [room]:
            posted = await room.post("what was the code word?")
            assert await room.settled(posted) == "processed"
            assert second_adapter.thread_id(room.room_id) == thread
    resumed = codex.stub.bodies[2]
    text = json.dumps(resumed["input"])
    assert "the code word is heliotrope" in text
    # The system prompt went into the thread once, when it was new.
    prompts = [t for t in _developer_texts(resumed) if first_adapter.system_prompt in t]
    assert len(prompts) == 1
    # Nor was the room's history replayed into the resumed thread.
    assert "[Conversation History]" not in text


async def test_an_interrupt_mid_turn_stops_codex_and_the_room_goes_on(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id
    codex.stub.push(HANG, send("here I am", [user_id]), DONE)
    adapter = codex.adapter()
    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter) as [room]:
            await room.post("take your time")
            await until(lambda: len(codex.stub.bodies) == 1)
            pid = adapter.process_pid(room.room_id)
            await room.human.control(room.room_id, "interrupt")
            posted = await room.post("are you there?")
            assert await room.settled(posted) == "processed"
            assert adapter.process_pid(room.room_id) == pid
    assert pid is not None
    assert adapter.statistics().killed == 0
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("here I am")


async def test_approvals_granted_for_the_owner_and_refused_for_another_participant(
    codex: RealCodex,
) -> None:
    user_id = codex.platform.user.id
    workdir = codex.home / "work"
    workdir.mkdir()

    def touch(name: str) -> list[dict[str, Any]]:
        return [function_call("exec_command", {"cmd": f"touch {name}"}, f"call_{name}")]

    codex.stub.push(
        touch("by-owner"),
        send("done", [user_id], "call_o"),
        DONE,
        touch("by-guest"),
        send("no", ["guest"], "call_g"),
        DONE,
    )
    adapter = codex.adapter(
        approval_policy="untrusted",
        # The workspace is writable in the sandbox, so an approved touch
        # succeeds whether Codex's sandbox can be set up on this machine or not.
        sandbox="workspace-write",
        approvals=ApprovalSettings(),
        cwd=workdir,
    )
    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter, people=[GUEST]) as [room]:
            posted = await room.post("touch by-owner")
            assert await room.settled(posted) == "processed"
            sent = await room.post("touch by-guest", by="guest")
            assert await room.settled(sent) == "processed"
    notices = [m.content for m in room.from_agent() if "Approval requested" in m.content]
    owner_notice, guest_notice = notices
    assert "touch by-owner" in owner_notice
    assert "**accept** (the room's owner asked)" in owner_notice
    assert "touch by-guest" in guest_notice
    assert "**decline**" in guest_notice
    # Codex ran the owner's command and not the other participant's.
    assert sorted(p.name for p in workdir.iterdir()) == ["by-owner"]


async def test_the_owner_approves_another_participants_command_in_the_room(
    codex: RealCodex,
) -> None:
    workdir = codex.home / "work"
    workdir.mkdir()
    codex.stub.push(
        [function_call("exec_command", {"cmd": "touch by-guest"}, "call_t")],
        send("done", ["guest"], "call_g"),
        DONE,
    )
    adapter = codex.adapter(
        approval_policy="untrusted",
        sandbox="workspace-write",
        approvals=ApprovalSettings(approval_timeout=TIMEOUT / 2),
        cwd=workdir,
    )
    found: list[str] = []

    def announced() -> bool:
        for message in room.from_agent():
            match = re.search(r"Reply to me `/approve ([0-9a-f]{6})`", message.content)
            if match:
                found.append(match.group(1))
                return True
        return False

    with trio.fail_after(TIMEOUT):
        async with codex.serve(adapter, people=[GUEST]) as [room]:
            sent = await room.post("touch by-guest", by="guest")
            await codex.platform.wait_for(announced)
            answer = await room.post(f"/approve {found[0]}")
            assert await room.settled(sent) == "processed"
            assert await room.settled(answer) == "processed"
    assert any(
        f"Approval `{found[0]}`" in m.content and "**accept**" in m.content
        for m in room.from_agent()
    )
    assert sorted(p.name for p in workdir.iterdir()) == ["by-guest"]
