"""PydanticAIHistoryConverter: examples, and Hypothesis properties over any
platform history (valid or not): it never raises, and its output is always a
valid message list for a pydantic-ai model, within its budget."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from band_trio_pydantic_ai import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    HistoryBudget,
    PydanticAIHistoryConverter,
    estimate_tokens,
    trim_history,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from band_trio import BandConfigError, HistoryItem

UNBOUNDED = HistoryBudget(max_messages=None, max_tokens=None)


def own(kind: str, content: str) -> HistoryItem:
    return HistoryItem("assistant", content, "Bot", "Agent", kind)


def other(
    content: str, name: str = "Alice", kind: str = "text", sender_type: str = "User"
) -> HistoryItem:
    return HistoryItem("user", content, name, sender_type, kind)


def call(call_id: str, name: str = "band_send_message", args: Any = None) -> str:
    return json.dumps({"name": name, "args": args or {}, "tool_call_id": call_id})


def result(
    call_id: str, output: Any = "ok", name: str = "band_send_message", is_error: bool = False
) -> str:
    return json.dumps(
        {"name": name, "output": output, "tool_call_id": call_id, "is_error": is_error}
    )


convert = PydanticAIHistoryConverter(UNBOUNDED).convert


def test_a_reply_through_a_tool_becomes_one_call_answered_once() -> None:
    items = [
        other("hi @bot"),
        own("tool_call", call("c1", args={"content": "hello", "mentions": ["alice"]})),
        own("text", "hello"),  # what the call posted: not a second assistant turn
        own("tool_result", result("c1", {"id": "m2"})),
    ]
    request, response, returns = convert(items)
    assert isinstance(request, ModelRequest)
    assert [p.content for p in request.parts] == ["[Alice]: hi @bot"]  # type: ignore[union-attr]
    assert isinstance(response, ModelResponse)
    (part,) = response.parts
    assert isinstance(part, ToolCallPart)
    assert (part.tool_name, part.tool_call_id, part.args) == (
        "band_send_message",
        "c1",
        {"content": "hello", "mentions": ["alice"]},
    )
    (ret,) = returns.parts
    assert isinstance(ret, ToolReturnPart)
    assert (ret.tool_call_id, ret.content, ret.outcome) == ("c1", '{"id": "m2"}', "success")


def test_parallel_calls_stay_together_and_errors_keep_their_outcome() -> None:
    items = [
        other("go"),
        own("tool_call", call("a", "band_get_participants")),
        own("tool_call", call("b", "band_lookup_peers")),
        own("tool_result", result("b", "no", "band_lookup_peers", is_error=True)),
        own("tool_result", result("a", "[]", "band_get_participants")),
    ]
    _, response, returns = convert(items)
    assert [p.tool_call_id for p in response.parts] == ["a", "b"]  # type: ignore[union-attr]
    assert [(p.tool_call_id, p.outcome) for p in returns.parts] == [  # type: ignore[union-attr]
        ("a", "success"),
        ("b", "failed"),
    ]


def test_a_call_without_result_is_answered_as_interrupted() -> None:
    items = [other("go"), own("tool_call", call("c1")), other("anyone?")]
    _, _, request = convert(items)
    ret, prompt = request.parts
    assert isinstance(ret, ToolReturnPart)
    assert (ret.tool_call_id, ret.content, ret.outcome) == (
        "c1",
        INTERRUPTED_TOOL_RESULT,
        "failed",
    )
    assert isinstance(prompt, UserPromptPart)
    assert prompt.content == "[Alice]: anyone?"


def test_other_agents_tool_events_are_not_this_agents_calls() -> None:
    items = [
        other("go"),
        other(call("x1"), "Helper", "tool_call", "Agent"),
        other(result("x1"), "Helper", "tool_result", "Agent"),
        other("done", "Helper", sender_type="Agent"),
    ]
    (request,) = convert(items)
    assert [p.content for p in request.parts] == ["[Alice]: go", "[Helper]: done"]  # type: ignore[union-attr]


def test_a_history_that_starts_with_the_agent_gets_a_first_request() -> None:
    messages = convert([own("text", "Good morning."), other("hi")])
    assert isinstance(messages[0], ModelRequest)
    assert messages[0].parts[0].content == HISTORY_START  # type: ignore[union-attr]
    assert isinstance(messages[1], ModelResponse)
    assert messages[1].parts == [TextPart("Good morning.")]


def test_thoughts_errors_and_malformed_items_are_skipped() -> None:
    items: list[Any] = [
        other("hi"),
        own("thought", "pondering"),
        own("error", "boom"),
        own("tool_call", "{not json"),
        own("tool_result", result("nobody")),
        42,
        {"role": "assistant", "content": "from a dict", "message_type": "text"},
    ]
    request, response = convert(items)
    assert [p.content for p in request.parts] == ["[Alice]: hi"]  # type: ignore[union-attr]
    assert response.parts == [TextPart("from a dict")]


def test_the_budget_keeps_the_newest_messages_from_a_clean_start() -> None:
    items = [other(f"m{n}") if n % 2 == 0 else own("text", f"r{n}") for n in range(10)]
    messages = PydanticAIHistoryConverter(HistoryBudget(max_messages=3)).convert(items)
    assert len(messages) <= 3
    assert isinstance(messages[0], ModelRequest)
    assert messages[-1].parts == [TextPart("r9")]


def test_a_token_budget_bounds_the_estimate() -> None:
    items = [other("x" * 400), own("text", "y" * 400), other("z" * 40)]
    messages = PydanticAIHistoryConverter(HistoryBudget(max_tokens=50)).convert(items)
    assert [p.content for m in messages for p in m.parts] == ["[Alice]: " + "z" * 40]  # type: ignore[union-attr]


def test_a_bad_budget_is_a_config_error() -> None:
    with pytest.raises(BandConfigError, match="max_messages"):
        HistoryBudget(max_messages=0)
    with pytest.raises(BandConfigError, match="budget"):
        PydanticAIHistoryConverter(budget=10)  # type: ignore[arg-type]


def test_a_converted_history_is_accepted_by_a_real_agent_run() -> None:
    items = [
        other("go"),
        own("tool_call", call("c1", "band_get_participants")),
        own("tool_result", result("c1", "[]", "band_get_participants")),
        own("text", "ok"),
        other("again"),
    ]
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("fine")])

    agent = Agent(FunctionModel(model))
    history = convert(items)
    run = asyncio.run(agent.run("[Alice]: now", message_history=history))
    assert run.output == "fine"
    (sent,) = seen
    assert sent[: len(history) - 1] == history[:-1]


# --------------------------------------------------------------------------- properties

ids = st.sampled_from(["c1", "c2", "c3", "", "c1 "])
names = st.sampled_from(["band_send_message", "band_get_participants", "bad name!", ""])
payload = st.one_of(
    st.builds(call, ids, names, st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    st.builds(result, ids, st.one_of(st.text(max_size=5), st.none()), names, st.booleans()),
    st.text(max_size=8),
)
items_strategy = st.lists(
    st.builds(
        HistoryItem,
        st.sampled_from(["user", "assistant"]),
        payload,
        st.sampled_from(["Alice", "", "Helper"]),
        st.sampled_from(["User", "Agent", ""]),
        st.sampled_from(["text", "tool_call", "tool_result", "thought", "task", ""]),
    )
    | st.none()
    | st.integers(),
    max_size=25,
)


def shape(messages: list[ModelMessage]) -> list[Any]:
    """The messages without their timestamps."""
    return [
        (
            type(m).__name__,
            [
                (
                    type(p).__name__,
                    getattr(p, "content", None),
                    getattr(p, "args", None),
                    getattr(p, "tool_call_id", None),
                    getattr(p, "outcome", None),
                )
                for p in m.parts
            ],
        )
        for m in messages
    ]


def check_valid(messages: list[ModelMessage]) -> None:
    if not messages:
        return
    assert isinstance(messages[0], ModelRequest)
    for first, second in itertools.pairwise(messages):
        assert type(first) is not type(second)  # requests and responses alternate
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        assert not any(isinstance(p, SystemPromptPart) for p in message.parts)
        if isinstance(message, ModelRequest):
            returns = [p for p in message.parts if isinstance(p, ToolReturnPart)]
            if returns:
                prev = messages[index - 1]
                calls = [p for p in prev.parts if isinstance(p, ToolCallPart)]
                # every call answered once, in order, before anything else
                assert [p.tool_call_id for p in message.parts[: len(calls)]] == [  # type: ignore[union-attr]
                    c.tool_call_id for c in calls
                ]
                assert len(returns) == len(calls)
        else:
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            for c in calls:
                assert c.tool_call_id not in seen_ids
                seen_ids.add(c.tool_call_id)
            if calls:
                assert index + 1 < len(messages)
                after = messages[index + 1]
                assert isinstance(after, ModelRequest)
                assert sum(isinstance(p, ToolReturnPart) for p in after.parts) == len(calls)
    # pydantic-ai's own schema accepts it
    ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python(messages))


@settings(max_examples=300, deadline=None)
@given(items_strategy)
def test_any_history_converts_to_a_valid_message_list(items: list[Any]) -> None:
    check_valid(convert(items))


@settings(max_examples=200, deadline=None)
@given(items_strategy)
def test_other_senders_tool_events_never_become_calls(items: list[Any]) -> None:
    others = [i for i in items if not (isinstance(i, HistoryItem) and i.role == "assistant")]
    assert not any(isinstance(p, ToolCallPart) for m in convert(others) for p in m.parts)


@settings(max_examples=200, deadline=None)
@given(items_strategy, st.integers(1, 6), st.one_of(st.none(), st.integers(1, 40)))
def test_the_budget_bounds_the_result(items: list[Any], count: int, tokens: int | None) -> None:
    full = convert(items)
    budget = HistoryBudget(max_messages=count, max_tokens=tokens)
    trimmed = PydanticAIHistoryConverter(budget).convert(items)
    check_valid(trimmed)
    assert shape(trimmed) == shape(full[len(full) - len(trimmed) :])  # a suffix
    assert shape(trimmed) == shape(trim_history(full, budget))
    over_tokens = tokens is not None and estimate_tokens(trimmed) > tokens
    if len(trimmed) > count or over_tokens:
        # only the newest exchange, kept whole, may exceed it
        starts = [
            i
            for i, m in enumerate(full)
            if isinstance(m, ModelRequest)
            and not any(isinstance(p, ToolReturnPart) for p in m.parts)
        ]
        assert len(full) - len(trimmed) == starts[-1]


def test_namesakes_are_told_apart_by_their_handles() -> None:
    items = [
        HistoryItem("user", "one", "Sam", "User", sender_handle="sam-a"),
        HistoryItem("user", "two", "Sam", "User", sender_handle="sam-b"),
        {"role": "user", "content": "three", "sender_name": "Sam", "sender_handle": "@sam-c"},
    ]
    (request,) = convert(items)
    assert [p.content for p in request.parts] == [  # type: ignore[union-attr]
        "[Sam (@sam-a)]: one",
        "[Sam (@sam-b)]: two",
        "[Sam (@sam-c)]: three",
    ]
