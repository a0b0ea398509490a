"""CodexAdapter with a real ``Agent`` on the local platform against the fake
app-server (``fake_codex.py``): replies through the band tool, no-reply, a
failing tool call, two rooms at once, a thread resumed after a crash, usage
anchored after a restart, a flood of server requests, unknown requests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from band_trio_codex import THREAD_METADATA_KEY, CodexAdapter, CodexConfig
from codex_support import NO_REPLY, SEND, FakeCodex, call, gone, reply

from band_trio.adapter import GENERIC_FAILURE_MESSAGE
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 30


@pytest.fixture
def fake(tmp_path: Path) -> FakeCodex:
    return FakeCodex(tmp_path)


def _usage_events(room: Any) -> list[dict[str, Any]]:
    return [
        m.metadata["band_usage"]
        for m in room.from_agent("task")
        if isinstance(m.metadata, dict) and "band_usage" in m.metadata
    ]


async def test_a_reply_through_the_band_tool_with_its_events(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(
        [
            {"reasoning": "The user greets me."},
            {"command": "ls", "output": "notes.txt", "id": "cmd_3"},
            reply("hello there", [user_id], "call_7"),
            {"message": "I replied."},
            {
                "usage": {
                    "total": {
                        "inputTokens": 40,
                        "outputTokens": 5,
                        "reasoningOutputTokens": 2,
                        "cachedInputTokens": 10,
                    },
                    "last": {"inputTokens": 40, "outputTokens": 5},
                }
            },
        ]
    )
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("hello there")
    # Codex's own final text is never posted.
    assert not any("I replied." in m.content for m in room.from_agent())
    (thought,) = room.from_agent("thought")
    assert thought.content == "The user greets me."
    command_call, tool_call = (json.loads(m.content) for m in room.from_agent("tool_call"))
    command_result, tool_result = (json.loads(m.content) for m in room.from_agent("tool_result"))
    # Codex's own command, narrated with its item id.
    assert command_call["name"] == "command_execution"
    assert command_call["tool_call_id"] == "cmd_3"
    assert command_result["tool_call_id"] == "cmd_3"
    assert "notes.txt" in json.dumps(command_result)
    assert tool_call["tool_call_id"] == "call_7"
    assert tool_result["tool_call_id"] == "call_7"
    assert _usage_events(room) == [
        {"input_tokens": 40, "output_tokens": 7, "cache_read_tokens": 10, "cache_write_tokens": 0}
    ]
    (init,) = fake.received("initialize")
    assert init["params"]["capabilities"]["experimentalApi"] is True
    (start,) = fake.received("thread/start")
    names = [tool["name"] for tool in start["params"]["dynamicTools"]]
    assert SEND in names
    assert NO_REPLY in names
    assert start["params"]["approvalPolicy"] == "never"
    assert "band_send_message" in start["params"]["developerInstructions"]
    (answer,) = fake.answers()
    assert answer["result"]["success"] is True
    thread = adapter.thread_id(room.room_id)
    recorded = [m.metadata.get(THREAD_METADATA_KEY) for m in room.from_agent("task")]
    assert thread in recorded
    assert adapter.statistics().live_readers == 0


async def test_no_reply_settles_the_message_without_text(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    fake.script([call(NO_REPLY, {"reason": "nothing to add"})])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("just so you know")
            assert await room.settled(posted) == "processed"
    assert room.from_agent("text") == []
    (answer,) = fake.answers()
    assert answer["result"]["success"] is True


async def test_a_failing_tool_call_is_an_error_result_and_the_turn_goes_on(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(
        [
            call(SEND, {"mentions": [user_id]}, "call_bad"),
            call("band_no_such_tool", {}, "call_unknown"),
            reply("second try", [user_id], "call_good"),
        ]
    )
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
    bad, unknown, good = fake.answers()
    assert bad["result"]["success"] is False
    assert bad["result"]["contentItems"][0]["text"]
    assert unknown["result"]["success"] is False
    assert good["result"]["success"] is True
    results = [json.loads(m.content) for m in room.from_agent("tool_result")]
    assert [r["tool_call_id"] for r in results] == ["call_bad", "call_unknown", "call_good"]
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("second try")


async def test_two_rooms_run_their_turns_at_once_on_two_processes(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    # Each fake waits until both have reached the barrier: served one room at
    # a time, the first would wait forever (and its turn time out).
    fake.script(default=[{"barrier": 2}, reply("together", [user_id])])
    adapter = CodexAdapter(fake.config(turn_timeout=20))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as [first, second]:
            a = await first.post("one")
            b = await second.post("two")
            assert await first.settled(a) == "processed"
            assert await second.settled(b) == "processed"
            pids = {adapter.process_pid(first.room_id), adapter.process_pid(second.room_id)}
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)
    for room in (first, second):
        (sent,) = room.from_agent("text")
        assert sent.content.endswith("together")


async def test_a_crash_mid_turn_fails_the_message_and_the_next_one_resumes_the_thread(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([{"crash": 3}], [reply("back", [user_id])])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            first = await room.post("hi")
            assert await room.settled(first) == "failed"
            thread = adapter.thread_id(room.room_id)
            assert room.room_id not in adapter.live_rooms()
            second = await room.post("again")
            assert await room.settled(second) == "processed"
    errors = room.from_agent("error")
    assert [m.content for m in errors][:1] == [GENERIC_FAILURE_MESSAGE]
    assert errors[0].metadata["failure"]["code"] == "transport_closed"
    (resume,) = fake.received("thread/resume")
    assert resume["params"]["threadId"] == thread
    # The system prompt went into the new thread only, not into the resumed one.
    assert "developerInstructions" not in resume["params"]
    assert len(fake.received("thread/start")) == 1
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("back")


async def test_usage_after_a_restart_is_anchored_at_the_first_total_seen(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id

    def usage(total: int, last: int) -> dict[str, Any]:
        return {
            "usage": {
                "total": {"inputTokens": total, "outputTokens": total // 10},
                "last": {"inputTokens": last, "outputTokens": last // 10},
            }
        }

    # Codex reports the thread's running total: 100 after the first turn,
    # 250 after the second (whose only model call took 150).
    fake.script(
        [reply("one", [user_id]), usage(100, 100)],
        [reply("two", [user_id]), usage(250, 150)],
    )
    with trio.fail_after(TIMEOUT):
        first_agent = CodexAdapter(fake.config())
        async with agent_in_rooms(band_platform, first_agent) as [room]:
            posted = await room.post("first")
            assert await room.settled(posted) == "processed"
        # A restarted agent: a new adapter, a new process resuming the thread.
        second_agent = CodexAdapter(fake.config())
        async with agent_in_rooms(band_platform, second_agent, join=[room]) as [room]:
            posted = await room.post("second")
            assert await room.settled(posted) == "processed"
    assert [u["input_tokens"] for u in _usage_events(room)] == [100, 150]
    assert [u["output_tokens"] for u in _usage_events(room)] == [10, 15]
    assert len(fake.received("thread/resume")) == 1


async def test_a_flood_of_server_requests_is_answered_in_full(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(
        [
            {"flood": 500, "method": "item/tool/requestUserInput"},
            {"flood": 300, "method": "item/tool/call"},
            reply("still here", [user_id]),
        ]
    )
    adapter = CodexAdapter(fake.config(event_buffer=4))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
    floods = [m["flood_answered"] for m in fake.log() if "flood_answered" in m]
    assert floods == [500, 300]
    answers = fake.answers()
    assert len(answers) == 801
    unknown = [a for a in answers[:500]]
    assert all(a["error"]["code"] == -32601 for a in unknown)
    assert adapter.statistics().server_requests == 801


async def test_a_refused_turn_start_fails_the_message_and_keeps_the_process(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    fake.script(turn_start_error=True)
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            first = await room.post("hi")
            assert await room.settled(first) == "failed"
            pid = adapter.process_pid(room.room_id)
            second = await room.post("again")
            assert await room.settled(second) == "failed"
            assert adapter.process_pid(room.room_id) == pid
    assert [m.content for m in room.from_agent("error")] == [GENERIC_FAILURE_MESSAGE] * 2
    assert adapter.statistics().killed == 0
    assert len(fake.received("thread/start")) == 1


async def test_answers_with_an_unknown_id_are_ignored(tmp_path: Path) -> None:
    from band_trio_codex import CodexProcess

    script = tmp_path / "server.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    print(json.dumps({'id': [m['id']], 'result': {}}), flush=True)\n"
        "    print(json.dumps({'id': 99, 'result': {}}), flush=True)\n"
        "    print(json.dumps({'id': m['id'], 'result': {'ok': True}}), flush=True)\n"
    )
    process = CodexProcess(
        "room",
        [sys.executable, str(script)],
        {},
        None,
        request_timeout=5,
        max_line_bytes=1024,
        event_buffer=4,
    )
    await process.open()
    try:
        with trio.fail_after(10):
            assert await process.request("initialize", {}) == {"ok": True}
            assert not process.broken
    finally:
        await process.close(0.5)


async def test_a_command_that_does_not_start_fails_the_message_clearly(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    adapter = CodexAdapter(CodexConfig(command=[str(tmp_path / "no-such-codex")]))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "failed"
    assert [m.content for m in room.from_agent("error")] == [GENERIC_FAILURE_MESSAGE]
    assert adapter.live_rooms() == []


async def test_the_dynamic_tools_follow_capabilities_and_filters(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([call("band_lookup_peers", {}, "call_x"), reply("ok", [user_id])])
    adapter = CodexAdapter(
        fake.config(), capabilities=["memory"], exclude_tools=["band_lookup_peers"]
    )
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
    (start,) = fake.received("thread/start")
    names = {tool["name"] for tool in start["params"]["dynamicTools"]}
    assert "band_store_memory" in names
    assert "band_lookup_peers" not in names
    assert all(tool["type"] == "function" for tool in start["params"]["dynamicTools"])
    # A tool that was not offered is refused like every adapter refuses it.
    refused, _ok = fake.answers()
    assert refused["result"]["success"] is False
    assert "band_lookup_peers" in refused["result"]["contentItems"][0]["text"]
