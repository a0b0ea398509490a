"""Rooms end to end: two rooms running at once on the one loop, a history
bootstrap, the conversation kept per room and bounded, the tool set (filters,
capabilities, bounds, custom tools), structured output, and ``TestModel``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pydantic
import trio
from band_trio_pydantic_ai import (
    HistoryBudget,
    PydanticAIAdapter,
    PydanticAIAdapterConfig,
)
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.test import TestModel
from pydantic_ai_rooms import Script, agent_in_rooms, bridge_threads, call, prompts, respond

from band_trio import Capability, CustomTools, LocalPlatform


async def test_two_rooms_run_at_once_on_the_one_loop(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    second_started = asyncio.Event()

    async def step(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        if isinstance(messages[-1].parts[-1], ToolCallPart) or any(
            getattr(p, "part_kind", "") == "tool-return" for p in messages[-1].parts
        ):
            return respond("done")
        line = prompts(messages)[-1]
        if line.endswith("first"):
            # Waits for the other room's run: both must be in flight at once.
            await asyncio.wait_for(second_started.wait(), timeout=10)
        else:
            second_started.set()
        word = line.split()[-1]
        return respond(call("band_send_message", {"content": word, "mentions": [user_id]}, word))

    adapter = PydanticAIAdapter(model=Script(default=step).model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as (one, two):
            first = await one.post("first")
            await trio.sleep(0.05)
            second = await two.post("second")
            await band_platform.wait_for(lambda: one.status(first) == "processed")
            await band_platform.wait_for(lambda: two.status(second) == "processed")
            assert adapter.statistics().rooms == 2

    assert [m.content.split()[-1] for m in one.from_agent("text")] == ["first"]
    assert [m.content.split()[-1] for m in two.from_agent("text")] == ["second"]


async def test_the_first_turn_sees_the_room_history_then_the_kept_conversation(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id

    def reply(word: str) -> Any:
        return respond(call("band_send_message", {"content": word, "mentions": [user_id]}, word))

    # An earlier run of the agent answered once; this process starts afresh.
    earlier = PydanticAIAdapter(model=Script([reply("hello"), respond("ok")]).model)
    script = Script([reply("a"), respond("ok"), reply("b"), respond("ok")])
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, earlier) as (room,):
            posted = await room.post("earlier words")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
        async with agent_in_rooms(band_platform, adapter, join=[room]) as (room,):
            first = await room.post("one")
            await band_platform.wait_for(lambda: room.status(first) == "processed")
            second = await room.post("two")
            await band_platform.wait_for(lambda: room.status(second) == "processed")

    # the first turn got the room's history, converted: the earlier message,
    # and the earlier reply as this agent's own call
    first_call = script.calls[0]
    first_prompts = prompts(first_call)
    assert first_prompts[0].endswith("earlier words")
    assert first_prompts[-1].endswith("one")
    assert any(isinstance(p, ToolCallPart) for m in first_call for p in m.parts)
    # the second turn continues the kept conversation: its own earlier call,
    # the first message once, and the new one
    second_call = script.calls[2]
    texts = prompts(second_call)
    assert sum(t.endswith("one") for t in texts) == 1
    assert sum(t.endswith("earlier words") for t in texts) == 1
    assert texts[-1].endswith("two")
    assert any(
        isinstance(p, ToolCallPart) and p.tool_call_id == "a" for m in second_call for p in m.parts
    )


async def test_the_kept_conversation_stays_within_the_budget(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    budget = HistoryBudget(max_messages=6, max_tokens=None)

    def step(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        if any(getattr(p, "part_kind", "") == "tool-return" for p in messages[-1].parts):
            return respond("ok")
        n = len(messages)
        return respond(call("band_send_message", {"content": "x", "mentions": [user_id]}, f"c{n}"))

    script = Script(default=step)
    adapter = PydanticAIAdapter(PydanticAIAdapterConfig(history_budget=budget), model=script.model)
    with trio.fail_after(60):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            for n in range(6):
                posted = await room.post(f"message {n}")
                await band_platform.wait_for(lambda m=posted: room.status(m) == "processed")
                kept = adapter.conversation(room.room_id)
                assert len(kept) <= 6
                assert isinstance(kept[0], ModelRequest)
    # each model call saw at most the budget plus the turn's own messages
    assert max(len(c) for c in script.calls) <= 6 + 3


async def test_the_tool_set_follows_filters_and_capabilities_and_keeps_bounds(
    band_platform: LocalPlatform,
) -> None:
    custom = CustomTools()

    @custom.tool
    def echo(text: str) -> str:
        """Repeat a text.

        Args:
            text: what to repeat.
        """
        return f"echo: {text}"

    seen: list[AgentInfo] = []

    def step(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        if len(seen) == 1:
            return respond(call("echo", {"text": "ping"}, "e1"))
        return respond(call("band_no_reply", {}, "n1"))

    adapter = PydanticAIAdapter(
        model=Script(default=step).model,
        custom_tools=custom,
        capabilities=[Capability.MEMORY],
        exclude_tools=["band_send_room_file"],
    )
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("echo please")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    names = [t.name for t in seen[0].function_tools]
    assert names[-1] == "echo"
    assert "band_send_room_file" not in names
    assert any("memory" in n for n in names)
    assert all(t.sequential for t in seen[0].function_tools)
    schemas = {t.name: t.parameters_json_schema for t in seen[0].function_tools}
    # numeric bounds are kept in the schema, stated in the argument's
    # description (some providers reject bound keywords)
    page_size = schemas["band_lookup_peers"]["properties"]["page_size"]
    assert "at least 1 and at most 100" in page_size["description"]
    (result, _) = room.events("tool_result")
    assert (result["name"], result["output"], result["is_error"]) == ("echo", "echo: ping", False)


class Answer(pydantic.BaseModel):
    text: str
    confidence: float


async def test_structured_output_builds_the_reply_only_when_opted_in(
    band_platform: LocalPlatform,
) -> None:
    def step(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        (output_tool,) = info.output_tools
        return respond(call(output_tool.name, {"text": "forty-two", "confidence": 0.9}, "o1"))

    opted = PydanticAIAdapter(
        agent=Agent(Script(default=step).model, output_type=Answer),
        reply_from_output=lambda answer: f"{answer.text} ({answer.confidence:.0%})",
    )
    silent = PydanticAIAdapter(agent=Agent(Script(default=step).model, output_type=Answer))
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, opted) as (room,):
            posted = await room.post("the answer?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
        async with agent_in_rooms(band_platform, silent) as (quiet,):
            asked = await quiet.post("the answer?")
            await band_platform.wait_for(lambda: quiet.status(asked) == "failed")

    (reply,) = room.from_agent("text")
    assert reply.content.endswith("forty-two (90%)")
    assert room.from_agent("tool_call") == []  # the output tool is not a tool call
    assert quiet.from_agent("text") == []  # never posted implicitly: a missing reply


async def test_a_test_model_agent_calls_the_band_tools(band_platform: LocalPlatform) -> None:
    # TestModel calls every tool it is offered with generated arguments; a
    # narrowed tool set keeps it to a reply (its arguments fail validation:
    # generated mentions name nobody) and a decline.
    adapter = PydanticAIAdapter(
        agent=Agent(TestModel()), include_tools=["band_send_message", "band_no_reply"]
    )
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.is_settled(posted))

    calls = room.events("tool_call")
    assert {c["name"] for c in calls} == {"band_send_message", "band_no_reply"}
    results = {r["tool_call_id"]: r for r in room.events("tool_result")}
    assert set(results) == {c["tool_call_id"] for c in calls}


async def test_a_sync_tool_runs_on_the_bridge_executor_and_nothing_outlives_the_agent(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    ran_on: list[str] = []

    def where() -> str:
        """Say which thread runs this."""
        ran_on.append(threading.current_thread().name)
        return "here"

    script = Script(
        [
            respond(call("where", {}, "w1")),
            respond(call("band_send_message", {"content": "ok", "mentions": [user_id]}, "c1")),
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model, tools=[where])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("where?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            assert adapter.statistics().bridge.executor_threads >= 1

    (name,) = ran_on
    assert name.startswith("band-trio-asyncio")  # the bridge's own executor
    assert not [t for t in threading.enumerate() if t.name == name]
    assert bridge_threads() == []
