"""End to end with the real ``claude`` CLI: the local Band platform, the
scripted Messages API the CLI streams from, claude-agent-sdk, and a real
band-trio agent running ClaudeAgentAdapter. The whole path is real: the
model's tool use goes through the CLI's MCP routing to the room's in-process
server and from there to the platform."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio
from anthropic_stub import message, text, thinking, tool_use
from band_trio_claude import HISTORY_HEADER, SESSION_METADATA_KEY, ClaudeAgentAdapter
from claude_support import (
    DONE,
    NO_REPLY,
    SEND,
    ClaudeStub,
    call,
    config_for,
    last_user_text,
    reply,
    tool_results,
)

from band_trio import SimpleAdapter
from band_trio.adapter import MISSING_REPLY_MESSAGE
from band_trio.local import HumanClient, LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 60


async def test_a_message_is_answered_through_the_band_tool(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Any:
        seen.append(body)
        assert "what is 2+2?" in last_user_text(body)
        return message(
            thinking("Simple arithmetic."),
            tool_use("toolu_01", SEND, {"content": "2+2 is 4.", "mentions": [user_id]}),
            usage=(120, 30),
        )

    claude_stub.push(answer, message(text("Answered."), usage=(160, 4)))
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("what is 2+2?")
            assert await room.settled(posted) == "processed"
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 2)
            session_id = adapter.session_id(room.room_id)

    (sent,) = room.from_agent("text")
    assert sent.content.endswith("2+2 is 4.")
    kinds = [m.message_type for m in room.from_agent()]
    assert kinds == ["thought", "tool_call", "text", "tool_result", "task", "task"]
    call = json.loads(room.from_agent("tool_call")[0].content)
    assert call == {
        "name": "band_send_message",
        "args": {"content": "2+2 is 4.", "mentions": [user_id]},
        "tool_call_id": "toolu_01",
    }
    result = json.loads(room.from_agent("tool_result")[0].content)
    assert result["tool_call_id"] == "toolu_01"
    assert result["is_error"] is False
    assert room.from_agent("thought")[0].content == "Simple arithmetic."
    session, usage = sorted(room.from_agent("task"), key=lambda m: "band_usage" in m.metadata)
    assert session_id is not None
    assert session.metadata[SESSION_METADATA_KEY] == session_id
    assert usage.metadata["band_usage"]["input_tokens"] == 280
    # The cost the CLI reported in the turn's result.
    cost = usage.metadata["band_usage"]["cost_usd"]
    assert cost > 0
    assert cost == adapter.statistics().cost_usd
    assert usage.content.endswith(f"cost=${cost:.6f}")
    # Claude was offered the Band tools only, under their MCP names.
    names = {t["name"] for t in seen[0]["tools"]}
    assert SEND in names
    assert NO_REPLY in names
    assert all(name.startswith("mcp__band__") for name in names)
    # The CLI is gone once the agent stopped.
    assert adapter.live_rooms() == []


async def test_no_reply_ends_the_turn_without_a_message(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    claude_stub.push(call(NO_REPLY, {"reason": "just a greeting"}), DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("thanks, bye")
            assert await room.settled(posted) == "processed"
    assert room.from_agent("text") == []
    assert [m for m in room.from_agent("error")] == []


async def test_a_failed_tool_goes_back_to_claude_as_an_error_result(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    shown: list[dict[str, Any]] = []

    def retry(body: dict[str, Any]) -> Any:
        shown.extend(tool_results(body))
        return reply("Sorry, here it is.", [user_id], "toolu_2")

    claude_stub.push(reply("hello", ["@nobody-here"], "toolu_1"), retry, DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("say hello")
            assert await room.settled(posted) == "processed"

    (error,) = shown
    assert error["is_error"] is True
    content = error["content"]
    error_text = content if isinstance(content, str) else content[0]["text"]
    assert error_text.startswith("Error executing band_send_message:")
    failed, succeeded = (json.loads(m.content) for m in room.from_agent("tool_result"))
    assert failed["is_error"] is True
    assert failed["output"] == error_text
    assert succeeded["is_error"] is False
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("Sorry, here it is.")


async def test_plain_text_is_never_posted_and_the_turn_is_judged(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    claude_stub.push(message(text("I would say hello.")))
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("say hello")
            assert await room.settled(posted) == "failed"
            await band_platform.wait_for(lambda: bool(room.from_agent("error")))
    assert room.from_agent("text") == []
    assert [m.content for m in room.from_agent("error")] == [MISSING_REPLY_MESSAGE]


async def test_two_rooms_run_concurrently_each_on_its_own_cli(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> Any:
        if tool_results(body):
            return DONE
        asked.append(last_user_text(body))
        return reply("answered", [user_id], f"toolu_{len(asked)}")

    for _ in range(4):
        claude_stub.push(answer)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as rooms:
            posted = [await room.post(f"question {i}") for i, room in enumerate(rooms)]
            for room, message_id in zip(rooms, posted, strict=True):
                assert await room.settled(message_id) == "processed"
            pids = {adapter.client_pid(room.room_id) for room in rooms}
            assert sorted(adapter.live_rooms()) == sorted(r.room_id for r in rooms)
    assert len(pids) == 2
    assert None not in pids
    assert sorted(q[-len("question 0") :] for q in asked) == ["question 0", "question 1"]
    for room in rooms:
        assert len(room.from_agent("text")) == 1


async def test_a_first_turn_is_given_the_room_history(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    prompts: list[str] = []

    def answer(body: dict[str, Any]) -> Any:
        prompts.append(last_user_text(body))
        return reply("ok", [user_id])

    claude_stub.push(answer, DONE)

    class Announcer(SimpleAdapter[Any]):
        async def on_message(self, msg: Any, tools: Any, *_args: Any, **_kw: Any) -> None:
            await tools.send_message("The code word is heliotrope.", [msg.sender_id])

    with trio.fail_after(TIMEOUT):
        # An earlier agent run (another framework) left the room a history.
        async with agent_in_rooms(band_platform, Announcer()) as [room]:
            posted = await room.post("tell me the code word")
            assert await room.settled(posted) == "processed"
        adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
        async with agent_in_rooms(band_platform, adapter, join=[room]) as [room]:
            posted = await room.post("what was the code word?")
            assert await room.settled(posted) == "processed"
    (prompt,) = prompts
    assert HISTORY_HEADER in prompt
    assert prompt.index("tell me the code word") < prompt.index("heliotrope")
    assert re.search(r"^\[[^\]]+ \(you\)\]: .*The code word is heliotrope\.$", prompt, re.M)
    assert prompt.index("heliotrope") < prompt.index("what was the code word?")


async def test_a_restarted_agent_resumes_the_claude_conversation(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    user_id = band_platform.user.id
    bodies: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Any:
        bodies.append(body)
        return reply("noted", [user_id], f"toolu_{len(bodies)}")

    claude_stub.push(answer, DONE, answer, DONE)
    first = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, first) as [room]:
            posted = await room.post("remember: the code word is heliotrope")
            assert await room.settled(posted) == "processed"
            await band_platform.wait_for(
                lambda: any(SESSION_METADATA_KEY in m.metadata for m in room.from_agent("task"))
            )
            session = first.session_id(room.room_id)
        second = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
        async with agent_in_rooms(band_platform, second, join=[room]) as [room]:
            posted = await room.post("what is the code word?")
            assert await room.settled(posted) == "processed"

    assert session is not None
    resumed = json.dumps(bodies[1]["messages"])
    # The conversation came back from Claude's own session, not as history text.
    assert "remember: the code word is heliotrope" in resumed
    assert HISTORY_HEADER not in resumed


async def test_a_reply_by_handle_reaches_the_right_one_of_two_people_with_one_name(
    band_platform: LocalPlatform, claude_stub: ClaudeStub, claude_home: Path
) -> None:
    """Two people are both called "Sam Lee": Claude tells them apart by the
    handle in the message's sender label and the participant list, and its
    reply mentioning that handle reaches the one who asked, not the other."""
    first = band_platform.create_user("Sam Lee", "sam-one")
    second = band_platform.create_user("Sam Lee", "sam-two")
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> Any:
        prompt = last_user_text(body)
        asked.append(prompt)
        (sender,) = re.findall(r"^\[Sam Lee \(@([^)]+)\)\]: ", prompt, re.M)
        return reply("Here you are, Sam.", [f"@{sender}"])

    claude_stub.push(answer, DONE)
    adapter = ClaudeAgentAdapter(config_for(claude_stub, claude_home))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            for sam in (first, second):
                # The room's owner may add people who are its contacts.
                await room.human.send_contact_request(sam.handle)
                async with HumanClient(
                    base_url=band_platform.rest_url, api_key=sam.api_key
                ) as client:
                    (request,) = await client.contact_requests()
                    await client.approve_contact_request(str(request["id"]))
                await room.human.add_participant(room.room_id, sam.id)
            async with HumanClient(
                base_url=band_platform.rest_url, api_key=second.api_key
            ) as sam_two:
                sent = await sam_two.post_message(
                    room.room_id, f"@{room.agent_handle} can you help?", [room.agent_handle]
                )
                assert await room.settled(str(sent["id"])) == "processed"
    (prompt,) = asked
    # The participant list names both, by handle.
    assert "@sam-one" in prompt
    assert "@sam-two" in prompt
    (answer_message,) = room.from_agent("text")
    mentioned = [m.get("id") for m in answer_message.mentions]
    assert mentioned == [second.id]
