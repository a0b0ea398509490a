"""The conversation bounded by tokens: trimming properties (any history, any
budget: a valid conversation within the budget, never a tool_use without its
tool_result), the documented estimate, and the adapter keeping rooms within
their budget with the estimate and with the API's token counting."""

from __future__ import annotations

import itertools
import json
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

import anthropic
import trio
from anthropic_stub import (
    AnthropicStub,
    conversation_problems,
    message,
    request_tokens,
    text,
    thinking,
    tool_use,
)
from band_trio_anthropic import (
    AnthropicAdapter,
    AnthropicAdapterConfig,
    AnthropicHistoryConverter,
    estimate_message_tokens,
    estimate_tokens,
    trim_to_budget,
)
from band_trio_anthropic.history_budget import (
    IMAGE_TOKENS,
    conversation_starts,
    overflow_budget,
    trim_to_counted_budget,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools

Message = dict[str, Any]

# ---------------------------------------------------------------- strategies

_ids = st.sampled_from([f"toolu_{i}" for i in range(6)])
_words = st.text(alphabet="abc xyz", min_size=0, max_size=40)


def _tool_event(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    body: dict[str, st.SearchStrategy[Any]] = {
        "name": st.sampled_from(["band_send_message", "band_get_participants", "bad name!"]),
        "tool_call_id": _ids,
    }
    if kind == "tool_call":
        body["args"] = st.dictionaries(st.sampled_from(["a", "b"]), _words, max_size=2)
    else:
        body["output"] = _words
        body["is_error"] = st.booleans()
    return st.builds(
        lambda data, role: {
            "message_type": kind,
            "role": role,
            "content": json.dumps(data),
            "sender_name": "Claude",
        },
        st.fixed_dictionaries(body),
        st.sampled_from(["assistant", "assistant", "user"]),
    )


_text_item = st.builds(
    lambda content, role, sender: {
        "message_type": "text",
        "role": role,
        "content": content,
        "sender_name": sender,
    },
    _words,
    st.sampled_from(["user", "assistant"]),
    st.sampled_from(["Alice", "Bob", ""]),
)
_history_items = st.lists(
    st.one_of(
        _text_item,
        _tool_event("tool_call"),
        _tool_event("tool_result"),
        st.just({"message_type": "thought", "content": "hmm"}),
        st.just({"message_type": "tool_call", "role": "assistant", "content": "{not json"}),
    ),
    max_size=40,
)


@st.composite
def _adapter_conversations(draw: st.DrawFn) -> list[Message]:
    """Conversations as the adapter keeps them: user turns, tool rounds with
    thinking and images, final texts."""
    messages: list[Message] = []
    counter = 0
    for _ in range(draw(st.integers(0, 8))):
        for _ in range(draw(st.integers(1, 2))):  # system lines and the message
            messages.append({"role": "user", "content": "[Alice]: " + draw(_words) + "."})
        for _ in range(draw(st.integers(0, 3))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                calls.append(f"toolu_{counter}")
            head: list[dict[str, Any]] = []
            if draw(st.booleans()):
                head.append(thinking("let me think " + draw(_words)))
            if draw(st.booleans()):
                head.append({"type": "redacted_thinking", "data": "opaque" + draw(_words)})
            uses = [tool_use(c, "band_get_participants", {"q": draw(_words)}) for c in calls]
            messages.append({"role": "assistant", "content": head + uses})
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": c,
                    "content": [image] if draw(st.booleans()) else draw(_words),
                    "is_error": draw(st.booleans()),
                }
                for c in calls
            ]
            messages.append({"role": "user", "content": results})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": "answer " + draw(_words)})
    return messages


def _converted(items: list[dict[str, Any]]) -> list[Message]:
    return AnthropicHistoryConverter("Claude").convert(items)


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine that never really waits."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine waited")


def _check_trim(messages: Sequence[Message], result: list[Message], budget: int) -> None:
    assert result == list(messages[len(messages) - len(result) :]), "not a suffix"
    assert estimate_tokens(result) <= budget
    if result:
        assert conversation_problems(result) == []
    # the longest that fits: starting at any earlier conversation start is over budget
    start = len(messages) - len(result)
    for earlier in conversation_starts(messages):
        if earlier < start:
            assert estimate_tokens(messages[earlier:]) > budget


# ---------------------------------------------------------------- properties


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(items=_history_items, budget=st.integers(0, 600))
def test_any_room_history_any_budget_gives_a_valid_conversation_within_budget(
    items: list[dict[str, Any]], budget: int
) -> None:
    messages = _converted(items)
    if messages:
        assert conversation_problems(messages) == []
    _check_trim(messages, trim_to_budget(messages, budget), budget)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_adapter_conversations(), budget=st.integers(0, 5000))
def test_kept_conversations_are_trimmed_whole_rounds_at_a_time(
    messages: list[Message], budget: int
) -> None:
    if messages:
        assert conversation_problems(messages) == []
    result = trim_to_budget(messages, budget)
    _check_trim(messages, result, budget)
    # thinking blocks are untouched (signatures still match)
    kept_blocks = [b for m in result if isinstance(m["content"], list) for b in m["content"]]
    originals = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
    assert all(any(b is o for o in originals) for b in kept_blocks)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_adapter_conversations(), budget=st.integers(0, 5000), data=st.data())
def test_the_current_turn_is_never_dropped(
    messages: list[Message], budget: int, data: st.DataObject
) -> None:
    starts = conversation_starts(messages)
    if not starts:
        return
    keep_from = data.draw(st.sampled_from(starts))
    result = trim_to_budget(messages, budget, keep_from=keep_from)
    assert len(result) >= len(messages) - keep_from
    assert conversation_problems(result) == []
    if estimate_tokens(messages[keep_from:]) <= budget:
        assert estimate_tokens(result) <= budget


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_adapter_conversations(), budget=st.integers(0, 5000))
def test_counted_trimming_finds_the_same_cut_with_few_counts(
    messages: list[Message], budget: int
) -> None:
    counts: list[int] = []

    async def count(conversation: list[Message]) -> int:
        counts.append(len(conversation))
        return estimate_tokens(conversation)

    result = _run(trim_to_counted_budget(messages, budget, count))
    assert result == trim_to_budget(messages, budget)
    starts = len(conversation_starts(messages)) + 1
    assert len(counts) <= 2 + starts.bit_length()
    assert all(counts)  # the empty conversation is never sent to be counted


# ---------------------------------------------------------------- the estimate


def test_the_estimate_is_the_documented_one() -> None:
    assert estimate_message_tokens({"role": "user", "content": "x" * 300}) == 4 + 100
    assert estimate_message_tokens({"role": "user", "content": "x" * 301}) == 4 + 101
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [image, image]}
    assert estimate_message_tokens({"role": "user", "content": [result]}) == 4 + 2 * IMAGE_TOKENS
    call = {"type": "tool_use", "id": "t", "name": "abc", "input": {"k": "v"}}
    # the name and the JSON form of the input: 3 + len('{"k": "v"}') characters
    assert estimate_message_tokens({"role": "assistant", "content": [call]}) == 4 + 5
    assert estimate_tokens([{"role": "user", "content": "abc"}] * 3) == 3 * 5


def test_an_overflow_scales_the_budget_to_the_limit() -> None:
    assert overflow_budget("prompt is too long: 210000 tokens > 200000 maximum", 1050) == 900
    assert overflow_budget("prompt is too long: 201,000 tokens > 200,000 maximum", 1000) == 895
    assert overflow_budget("prompt is too long", 1000) == 500


# ---------------------------------------------------------------- the adapter


def incoming(content: str, *, id: str) -> PlatformMessage:
    return PlatformMessage(
        id=id,
        room_id="room-1",
        content=content,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def run_turn(adapter: AnthropicAdapter, msg: PlatformMessage) -> None:
    with trio.fail_after(20):
        await adapter.on_message(
            msg, FakeAgentTools(), [], None, None, is_session_bootstrap=False, room_id=msg.room_id
        )


def script_turns(stub: AnthropicStub, turns: int) -> None:
    """Every other turn runs one tool round before its final text."""
    for turn in range(turns):
        if turn % 2:
            stub.push(message(tool_use(f"toolu_{turn}", "band_get_participants", {})))
        stub.push(message(text(f"answer {turn} " + "z" * 120)))


def first_messages(bodies: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [json.dumps(b["messages"][0], sort_keys=True) for b in bodies]


async def test_a_room_stays_within_its_budget_and_trims_now_and_then(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    budget = 1500
    script_turns(anthropic_stub, 40)
    adapter = AnthropicAdapter(
        AnthropicAdapterConfig(history_token_budget=budget, max_history_messages=None),
        client=anthropic_client,
    )
    await adapter.on_started("Claude", "a helpful agent")
    for turn in range(40):
        await run_turn(adapter, incoming(f"question {turn} " + "q" * 120, id=f"m{turn}"))
        assert estimate_tokens(adapter.history("room-1")) <= budget

    assert anthropic_stub.refused == []
    bodies = anthropic_stub.read_bodies
    assert all(estimate_tokens(b["messages"]) <= budget for b in bodies)
    # the oldest part went, whole exchanges at a time
    assert bodies[-1]["messages"][0]["content"].startswith("[Alice]: question")
    assert not bodies[-1]["messages"][0]["content"].startswith("[Alice]: question 0 ")
    # trimmed to three quarters: the conversation's start moved only a few
    # times over 40 turns, so the cached prefix mostly survives
    starts = first_messages(bodies)
    moves = sum(1 for a, b in itertools.pairwise(starts) if a != b)
    assert 2 <= moves <= 10


async def test_exact_counting_asks_the_api_and_keeps_within_its_counts(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    budget = 1200
    script_turns(anthropic_stub, 20)
    adapter = AnthropicAdapter(
        AnthropicAdapterConfig(history_token_budget=budget, exact_token_counts=True),
        client=anthropic_client,
    )
    await adapter.on_started("Claude", "a helpful agent")
    for turn in range(20):
        await run_turn(adapter, incoming(f"question {turn} " + "q" * 120, id=f"m{turn}"))

    assert anthropic_stub.refused == []
    counted = anthropic_stub.count_requests
    assert len(counted) >= len(anthropic_stub.bodies)
    assert all(set(c) == {"model", "messages"} for c in counted)
    # every conversation sent measured within the budget by the API's own count
    sent = [b["messages"] for b in anthropic_stub.read_bodies]
    by_count = {json.dumps(c["messages"], sort_keys=True): c for c in counted}
    for messages in sent:
        assert json.dumps(messages, sort_keys=True) in by_count
    assert all(request_tokens({"messages": m}) <= budget for m in sent)
    assert max(request_tokens({"messages": m}) for m in sent) > budget // 2


async def test_the_message_cap_trims_to_three_quarters(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(*[message(text(f"answer {i}")) for i in range(7)])
    adapter = AnthropicAdapter(
        AnthropicAdapterConfig(max_history_messages=8), client=anthropic_client
    )
    await adapter.on_started("Claude", "a helpful agent")
    lengths = []
    for turn in range(7):
        await run_turn(adapter, incoming(f"question {turn}", id=f"m{turn}"))
        lengths.append(len(adapter.history("room-1")))
    # 10 messages after turn 5: cut to 6, then room to grow again
    assert lengths == [2, 4, 6, 8, 6, 8, 6]
    assert adapter.history("room-1")[0] == {"role": "user", "content": "[Alice]: question 4"}
