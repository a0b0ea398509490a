"""End to end: the local Band platform, a real band-trio agent running
PydanticAIAdapter with a real pydantic-ai ``Agent`` on a scripted
``FunctionModel`` (no network, no API key)."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import trio
from band_trio_pydantic_ai import PydanticAIAdapter
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai_rooms import Script, agent_in_rooms, bridge_threads, call, prompts, respond

from band_trio import LocalPlatform
from band_trio.adapter import GENERIC_FAILURE_MESSAGE, MISSING_REPLY_MESSAGE


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool returns of the latest request."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [p for p in last.parts if isinstance(p, ToolReturnPart)]


async def test_a_reply_through_the_band_tool(band_platform: LocalPlatform) -> None:
    user_id = band_platform.user.id
    script = Script(
        [
            respond(
                call("band_send_message", {"content": "4.", "mentions": [user_id]}, "c1"),
                usage=(100, 20),
                thinking="two and two",
            ),
            respond("Answered.", usage=(130, 5)),
        ]
    )
    adapter = PydanticAIAdapter(agent=Agent(script.model))
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("what is 2+2?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)

    (reply,) = room.from_agent("text")
    assert reply.content.endswith("4.")  # the final output "Answered." is never posted
    assert [m.message_type for m in room.from_agent()] == [
        "thought",
        "tool_call",
        "text",
        "tool_result",
        "task",
    ]
    assert room.from_agent("thought")[0].content == "two and two"
    (tool_call,) = room.events("tool_call")
    assert tool_call == {
        "name": "band_send_message",
        "args": {"content": "4.", "mentions": [user_id]},
        "tool_call_id": "c1",
    }
    (result,) = room.events("tool_result")
    assert (result["tool_call_id"], result["is_error"]) == ("c1", False)
    assert json.loads(result["output"])["id"] == reply.id  # JSON text, not a repr
    usage = room.from_agent("task")[0].metadata["band_usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (230, 25)
    assert script.exhausted
    # the Band prompt reached the model as instructions, the message as the prompt
    first_request = script.calls[0][-1]
    assert isinstance(first_request, ModelRequest)
    assert "band_send_message" in (first_request.instructions or "")
    assert prompts(script.calls[0])[-1].endswith("what is 2+2?")
    assert bridge_threads() == []


async def test_no_reply_ends_the_turn_without_another_model_call(
    band_platform: LocalPlatform,
) -> None:
    # One step only: a second model call would fail the script.
    script = Script([respond(call("band_no_reply", {}, "n1"), usage=(50, 3))])
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("thanks, that is all")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")
            await band_platform.wait_for(lambda: len(room.from_agent("task")) == 1)
            kept = adapter.conversation(room.room_id)

    assert room.from_agent("text") == []
    assert room.from_agent("error") == []
    (result,) = room.events("tool_result")
    assert (result["name"], result["tool_call_id"], result["is_error"]) == (
        "band_no_reply",
        "n1",
        False,
    )
    assert len(script.calls) == 1
    # the kept conversation answers the declining call
    assert [p.tool_call_id for p in returns(kept)] == ["n1"]


async def test_a_failed_band_tool_reaches_the_model_as_a_failed_return(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    seen: list[ToolReturnPart] = []

    def retry(messages: list[ModelMessage], _info: AgentInfo) -> Any:
        seen.extend(returns(messages))
        return respond(call("band_send_message", {"content": "fixed", "mentions": [user_id]}, "c2"))

    script = Script(
        [
            respond(call("band_send_message", {"content": "oops"}, "c1")),  # no mentions
            retry,
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hello")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    (failed,) = seen
    assert (failed.tool_call_id, failed.outcome) == ("c1", "failed")
    assert "mentions" in str(failed.content)
    first, second = room.events("tool_result")
    assert (first["tool_call_id"], first["is_error"]) == ("c1", True)
    assert first["output"] == failed.content  # the same text the model got
    assert (second["tool_call_id"], second["is_error"]) == ("c2", False)
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("fixed")


class Forecast(pydantic.BaseModel):
    city: str
    days: int


async def test_a_validation_retry_of_a_plain_tool_is_an_error_event(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    asked: list[Forecast] = []

    def forecast(request: Forecast) -> dict[str, Any]:
        """The weather for some days."""
        asked.append(request)
        return {"city": request.city, "sky": "clear"}

    seen: list[ToolReturnPart] = []

    def after_retry(messages: list[ModelMessage], _info: AgentInfo) -> Any:
        seen.extend(returns(messages))
        return respond(call("forecast", {"request": {"city": "Oslo", "days": 2}}, "w2"))

    script = Script(
        [
            respond(call("forecast", {"request": {"city": "Oslo", "days": "many"}}, "w1")),
            after_retry,
            respond(call("band_send_message", {"content": "clear", "mentions": [user_id]}, "c1")),
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model, tools=[forecast])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("weather?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    (retried,) = seen
    assert (retried.tool_call_id, retried.outcome) == ("w1", "retried")
    results = room.events("tool_result")
    assert [(r["tool_call_id"], r["is_error"]) for r in results] == [
        ("w1", True),
        ("w2", False),
        ("c1", False),
    ]
    assert "days" in results[0]["output"]
    assert json.loads(results[1]["output"]) == {"city": "Oslo", "sky": "clear"}
    assert [c["tool_call_id"] for c in room.events("tool_call")] == ["w1", "w2", "c1"]
    assert asked == [Forecast(city="Oslo", days=2)]


async def test_an_exception_of_a_plain_tool_is_a_failed_return_not_a_failed_turn(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id

    def lookup(key: str) -> str:
        """Look a key up."""
        raise KeyError(key)

    def strict(key: str) -> str:
        """Refuse politely."""
        raise ModelRetry(f"no such key: {key}")

    seen: list[ToolReturnPart] = []

    def answer(messages: list[ModelMessage], _info: AgentInfo) -> Any:
        seen.extend(returns(messages))
        return respond(call("band_send_message", {"content": "sorry", "mentions": [user_id]}, "c"))

    script = Script(
        [
            respond(call("lookup", {"key": "k"}, "l1"), call("strict", {"key": "q"}, "s1")),
            answer,
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model, tools=[lookup, strict])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("look it up")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    assert [(p.tool_call_id, p.outcome) for p in seen] == [("l1", "failed"), ("s1", "retried")]
    assert seen[0].content == "Error executing lookup: KeyError: 'k'"
    results = {r["tool_call_id"]: r for r in room.events("tool_result")}
    assert results["l1"]["is_error"] is True
    assert results["l1"]["output"] == "Error executing lookup: KeyError: 'k'"
    assert results["s1"]["is_error"] is True
    assert "no such key: q" in results["s1"]["output"]
    assert room.from_agent("error") == []


async def test_tool_calls_of_one_response_post_one_at_a_time_in_order(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id
    texts = ["one", "two", "three"]
    script = Script(
        [
            respond(
                *[
                    call("band_send_message", {"content": t, "mentions": [user_id]}, f"c{n}")
                    for n, t in enumerate(texts)
                ]
            ),
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("count")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    kinds = [m.message_type for m in room.from_agent() if m.message_type != "task"]
    # each call's events around its own post: no call starts before the last ended
    assert kinds == ["tool_call", "text", "tool_result"] * 3
    assert [m.content.split()[-1] for m in room.from_agent("text")] == texts
    assert [e["tool_call_id"] for e in room.events("tool_call")] == ["c0", "c1", "c2"]


async def test_a_plain_text_answer_is_judged_a_missing_reply(band_platform: LocalPlatform) -> None:
    script = Script([respond("Hello! (but not through a tool)")])
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            posted = await room.post("hi")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")

    assert room.from_agent("text") == []
    (report,) = room.from_agent("error")
    assert report.content == MISSING_REPLY_MESSAGE


async def test_a_failed_run_keeps_the_prompt_for_the_retry(
    band_platform: LocalPlatform,
) -> None:
    user_id = band_platform.user.id

    def boom(_messages: list[ModelMessage], _info: AgentInfo) -> Any:
        raise RuntimeError("the provider is down")

    script = Script(
        [
            boom,
            respond(call("band_send_message", {"content": "back", "mentions": [user_id]}, "c")),
            respond("done"),
        ]
    )
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, max_attempts=2) as (room,):
            posted = await room.post("are you there?")
            await band_platform.wait_for(lambda: room.status(posted) == "processed")

    assert room.from_agent("error") == []  # it succeeded in the end
    retried = prompts(script.calls[1])
    assert sum(p.endswith("are you there?") for p in retried) == 1


async def test_a_poison_message_is_reported_once_after_its_last_attempt(
    band_platform: LocalPlatform,
) -> None:
    def boom(_messages: list[ModelMessage], _info: AgentInfo) -> Any:
        raise RuntimeError("the provider is down")

    script = Script(default=boom)
    adapter = PydanticAIAdapter(model=script.model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, max_attempts=3) as (room,):
            posted = await room.post("are you there?")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")
            await band_platform.wait_for(lambda: len(room.from_agent("error")) == 1)
            kept = adapter.conversation(room.room_id)

    assert len(script.calls) == 3
    (report,) = room.from_agent("error")
    assert report.content == GENERIC_FAILURE_MESSAGE
    assert report.metadata["failure"]["provider"] == "band-runtime"
    # every attempt saw the prompt once, and the conversation keeps it once
    assert all(sum(p.endswith("are you there?") for p in prompts(c)) == 1 for c in script.calls)
    assert sum(p.endswith("are you there?") for p in prompts(kept)) == 1
