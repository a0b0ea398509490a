"""End to end: the local Band platform, a real band-trio agent running
LangGraphAdapter with a scripted chat model, both patterns."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms, bridge_threads
from langchain_core.messages import ToolMessage

from band_trio import LocalPlatform
from band_trio.adapter import GENERIC_FAILURE_MESSAGE, MISSING_REPLY_MESSAGE


async def test_simple_pattern_replies_through_send_message(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    model = ScriptedChatModel(
        [
            ai(
                tool_call("band_send_message", {"content": "4.", "mentions": [user_id]}, "c1"),
                usage=(100, 20),
            ),
            ai(text="Answered.", usage=(130, 5), cache=(40, 0)),
        ]
    )
    adapter = LangGraphAdapter(model=model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("what is 2+2?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)

    (reply,) = room.from_agent("text")
    assert reply.content.endswith("4.")
    assert [m.message_type for m in room.from_agent()] == [
        "tool_call",
        "text",
        "tool_result",
        "task",
    ]
    (call,) = room.events("tool_call")
    assert call == {
        "name": "band_send_message",
        "args": {"content": "4.", "mentions": [user_id]},
        "tool_call_id": "c1",
    }
    (result,) = room.events("tool_result")
    assert result["tool_call_id"] == "c1"
    assert result["is_error"] is False
    assert json.loads(result["output"])["id"] == reply.id
    usage = room.from_agent("task")[0].metadata["band_usage"]
    assert usage == {
        "input_tokens": 230,
        "output_tokens": 25,
        "cache_read_tokens": 40,
        "cache_write_tokens": 0,
    }
    assert model.exhausted
    assert bridge_threads() == []


async def test_no_reply_ends_the_turn_without_another_model_call(
    band_platform: LocalPlatform,
) -> None:
    # One step only: a second model call would raise ScriptExhaustedError.
    model = ScriptedChatModel([ai(tool_call("band_no_reply", {}, "n1"), usage=(50, 3))])
    adapter = LangGraphAdapter(model=model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("thanks, that is all")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)

    assert room.from_agent("text") == []
    assert room.from_agent("error") == []
    (result,) = room.events("tool_result")
    assert (result["name"], result["tool_call_id"], result["is_error"]) == (
        "band_no_reply",
        "n1",
        False,
    )
    assert len(model.calls) == 1


async def test_a_failed_tool_call_reaches_the_model_as_an_error_and_the_turn_goes_on(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    seen: list[Any] = []

    def retry(messages: list[Any], _tools: list[Any]) -> Any:
        seen.append(messages[-1])
        return ai(tool_call("band_send_message", {"content": "fixed", "mentions": [user_id]}, "c2"))

    model = ScriptedChatModel(
        [
            # invalid arguments: no mentions
            ai(tool_call("band_send_message", {"content": "oops"}, "c1")),
            retry,
            ai(text="done"),
        ]
    )
    adapter = LangGraphAdapter(model=model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    (error_message,) = seen
    assert isinstance(error_message, ToolMessage)
    assert error_message.status == "error"
    assert error_message.tool_call_id == "c1"
    assert "mentions" in str(error_message.content)
    first, second = room.events("tool_result")
    assert (first["tool_call_id"], first["is_error"]) == ("c1", True)
    assert first["output"] == error_message.content  # the text, not a message repr
    assert (second["tool_call_id"], second["is_error"]) == ("c2", False)
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("fixed")


async def test_a_plain_text_answer_is_judged_a_missing_reply(band_platform: LocalPlatform) -> None:
    model = ScriptedChatModel([ai(text="Hello! (but not through a tool)")])
    adapter = LangGraphAdapter(model=model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hi")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")

    assert room.from_agent("text") == []
    (report,) = room.from_agent("error")
    assert report.content == MISSING_REPLY_MESSAGE
    assert report.metadata["failure"]["provider"] == "band-runtime"


async def test_reaching_the_recursion_limit_fails_the_turn_with_one_generic_error(
    band_platform: LocalPlatform,
) -> None:
    model = ScriptedChatModel(default=lambda _m, _t: ai(tool_call("band_get_participants", {})))
    adapter = LangGraphAdapter(LangGraphAdapterConfig(recursion_limit=5), model=model, emit=())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("loop forever")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")

    (report,) = room.from_agent("error")  # the runtime's, for the final failure
    assert report.metadata["failure"]["provider"] == "band-runtime"
    assert report.content == GENERIC_FAILURE_MESSAGE
    assert len(model.calls) == 3  # model, tools, model, tools, model: 5 super-steps
    # emit=(): no tool events and no usage event of the adapter's own
    assert room.from_agent("tool_call") == room.from_agent("tool_result") == []
    assert room.from_agent("task") == []


async def test_two_rooms_run_their_graphs_concurrently(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    arrived: list[str] = []
    both = asyncio.Event()

    async def step(messages: list[Any], _tools: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return ai(text="sent")
        arrived.append(str(messages[-1].content))
        if len(arrived) == 2:
            both.set()
        # Each room waits for the other: only concurrent turns get past this.
        await asyncio.wait_for(both.wait(), timeout=10)
        return ai(tool_call("band_send_message", {"content": "together", "mentions": [user_id]}))

    adapter = LangGraphAdapter(model=ScriptedChatModel(default=step))
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as (one, two):
            first = await one.post("room one")
            second = await two.post("room two")
            await band_platform.wait_for(
                lambda: one.status(first) == "processed" and two.status(second) == "processed"
            )
            assert len(bridge_threads()) == 1
            assert adapter.statistics().compilations == 2
    assert len(one.from_agent("text")) == len(two.from_agent("text")) == 1
    assert bridge_threads() == []


async def test_the_bridge_thread_starts_in_on_started_not_in_the_first_turn(
    band_platform: LocalPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    phase = ["created"]
    starts: list[tuple[str, threading.Thread]] = []
    thread_at_first_turn: list[bool] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name.startswith("band-trio-asyncio"):
            starts.append((phase[0], threading.current_thread()))
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)

    class PhaseAdapter(LangGraphAdapter):
        async def on_started(self, agent_name: str, agent_description: str) -> None:
            phase[0] = "on_started"
            await super().on_started(agent_name, agent_description)
            phase[0] = "serving"

        async def on_message(self, *args: Any, **kwargs: Any) -> None:
            if not thread_at_first_turn:
                thread_at_first_turn.append(self.bridge.statistics().thread_running)
            await super().on_message(*args, **kwargs)

    model = ScriptedChatModel([ai(tool_call("band_no_reply", {}, "n1"))])
    adapter = PhaseAdapter(model=model)
    trio_thread = threading.current_thread()
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            assert len(bridge_threads()) == 1
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
    assert thread_at_first_turn == [True]
    assert [p for p, _ in starts] == ["on_started"]
    assert starts[0][1] is not trio_thread
    assert bridge_threads() == []
