"""AnthropicHistoryConverter (docs/reference/tools-and-adapters.rst: "Anthropic
history converter", "Testable statements" 94-100, and the repairs of "Weak spots"
6 and 7): examples, then Hypothesis properties that the
output is always a valid Messages API conversation."""

from __future__ import annotations

import itertools
import json
from typing import Any

from band_trio_anthropic import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    AnthropicHistoryConverter,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from band_trio import HistoryItem


def said(content: str, name: str = "Alice", *, own: bool = False) -> HistoryItem:
    return HistoryItem(
        role="assistant" if own else "user",
        content=content,
        sender_name=name,
        sender_type="Agent" if own else "User",
    )


def call(call_id: str, name: str = "band_send_message", args: Any = None) -> HistoryItem:
    payload = {
        "name": name,
        "args": {"content": "x"} if args is None else args,
        "tool_call_id": call_id,
    }
    return HistoryItem(
        role="assistant",
        content=json.dumps(payload),
        sender_name="Claude",
        sender_type="Agent",
        message_type="tool_call",
    )


def result(call_id: str, output: Any = "ok", *, is_error: bool | None = None) -> HistoryItem:
    payload: dict[str, Any] = {
        "name": "band_send_message",
        "output": output,
        "tool_call_id": call_id,
    }
    if is_error is not None:
        payload["is_error"] = is_error
    return HistoryItem(
        role="assistant",
        content=json.dumps(payload),
        sender_name="Claude",
        sender_type="Agent",
        message_type="tool_result",
    )


def event(kind: str, content: str = "something") -> HistoryItem:
    return HistoryItem(
        role="assistant",
        content=content,
        sender_name="Claude",
        sender_type="Agent",
        message_type=kind,
    )


def agent_tool_event(kind: str, call_id: str, *, own: bool) -> HistoryItem:
    """A band_send_message tool event of this agent (``own``) or of another one."""
    payload: dict[str, Any] = {"name": "band_send_message", "tool_call_id": call_id}
    if kind == "tool_call":
        payload["args"] = {"content": "I will handle it", "mentions": ["alice"]}
    else:
        payload["output"] = "sent"
    return HistoryItem(
        role="assistant" if own else "user",
        content=json.dumps(payload),
        sender_name="Claude" if own else "Bob-bot",
        sender_type="Agent",
        message_type=kind,
    )


def convert(*items: Any) -> list[dict[str, Any]]:
    return AnthropicHistoryConverter("Claude").convert(list(items))


def tool_use_block(call_id: str) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "band_send_message",
        "input": {"content": "x"},
    }


# ---------------------------------------------------------------- examples


def test_consecutive_calls_and_results_are_batched() -> None:
    """(tools and adapters, "Testable statements" 94)"""
    out = convert(said("hi"), call("t1"), call("t2"), result("t1"), result("t2"))
    assert out == [
        {"role": "user", "content": "[Alice]: hi"},
        {"role": "assistant", "content": [tool_use_block("t1"), tool_use_block("t2")]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
            ],
        },
    ]


def test_is_error_appears_only_when_true() -> None:
    """(tools and adapters, "Testable statements" 95)"""
    out = convert(
        said("hi"),
        call("t1"),
        call("t2"),
        result("t1", is_error=True),
        result("t2", is_error=False),
    )
    first, second = out[2]["content"]
    assert first["is_error"] is True
    assert "is_error" not in second


def test_non_string_outputs_are_json_text() -> None:
    out = convert(
        said("hi"), call("t1"), result("t1", {"id": "msg-1"}), call("t2"), result("t2", None)
    )
    assert out[2]["content"][0]["content"] == '{"id": "msg-1"}'
    assert out[4]["content"][0]["content"] == ""


def test_other_agents_speak_as_users_and_own_text_survives_without_tool_events() -> None:
    """(tools and adapters, "Testable statements" 96, 100; "Weak spots" 6): own text is
    kept when no tool call stands for it."""
    out = convert(
        said("hi"),
        said("hello from a bot", "Bot2"),
        said("my answer", own=True),
        said("", ""),
        said("bare", ""),
    )
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Alice]: hi"},
                {"type": "text", "text": "[Bot2]: hello from a bot"},
            ],
        },
        {"role": "assistant", "content": "my answer"},
        # no name: the sender type speaks, as in every converter
        {"role": "user", "content": "[User]: bare"},
    ]


def test_another_agents_tool_events_are_not_own_tool_calls() -> None:
    """The runtime gives role ``assistant`` only to this agent's own messages, and
    own text is recognised by that role; tool events follow the same rule, or in
    a room with two agents each model is told it made the other's calls (e.g.
    that it already sent the other agent's reply)."""
    items = [
        said("who can help?"),
        agent_tool_event("tool_call", "toolu_bob", own=False),
        HistoryItem(
            role="user",
            content="I will handle it",
            sender_name="Bob-bot",
            sender_type="Agent",
        ),
        agent_tool_event("tool_result", "toolu_bob", own=False),
    ]
    out = AnthropicHistoryConverter("Claude").convert(items)
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Alice]: who can help?"},
                {"type": "text", "text": "[Bob-bot]: I will handle it"},
            ],
        }
    ]


def test_own_tool_events_next_to_another_agents_pair_as_usual() -> None:
    items = [
        said("go"),
        agent_tool_event("tool_call", "toolu_own", own=True),
        agent_tool_event("tool_call", "toolu_bob", own=False),
        agent_tool_event("tool_result", "toolu_bob", own=False),
        agent_tool_event("tool_result", "toolu_own", own=True),
    ]
    out = AnthropicHistoryConverter("Claude").convert(items)
    uses = [
        b["id"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    results = [
        b["tool_use_id"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert uses == ["toolu_own"]
    assert results == ["toolu_own"]


def test_own_text_posted_by_an_open_call_is_dropped() -> None:
    """The reply a band_send_message call posted sits between the call and its
    result in the room: the call stands for it."""
    out = convert(said("hi"), call("t1"), said("x", own=True), result("t1"), said("thanks"))
    assert out == [
        {"role": "user", "content": "[Alice]: hi"},
        {"role": "assistant", "content": [tool_use_block("t1")]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "[Alice]: thanks"},
            ],
        },
    ]


def test_a_call_without_result_gets_an_interrupted_result() -> None:
    """(tools and adapters, "Testable statements" 97)"""
    out = convert(said("hi"), call("t1"))
    assert out[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": INTERRUPTED_TOOL_RESULT,
                "is_error": True,
            }
        ],
    }


def test_text_between_a_call_and_its_result_moves_after_the_result() -> None:
    """(tools and adapters, "Testable statements" 98) deliberately differs ("Weak spots"
    7): no synthetic result, no duplicate id."""
    out = convert(said("hi"), call("t1"), said("meanwhile", "Bob"), result("t1"))
    assert out[1:] == [
        {"role": "assistant", "content": [tool_use_block("t1")]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "[Bob]: meanwhile"},
            ],
        },
    ]


def test_text_after_a_call_that_never_got_a_result_follows_the_synthetic_one() -> None:
    out = convert(said("hi"), call("t1"), said("later"))
    assert out[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": INTERRUPTED_TOOL_RESULT,
            "is_error": True,
        },
        {"type": "text", "text": "[Alice]: later"},
    ]


def test_events_that_are_not_conversation_are_ignored() -> None:
    """(tools and adapters, "Testable statements" 99, first half): they do not even split a
    batch."""
    out = convert(
        said("hi"),
        call("t1"),
        event("thought"),
        call("t2"),
        event("error"),
        result("t1"),
        event("task"),
        result("t2"),
    )
    assert [b["id"] for b in out[1]["content"]] == ["t1", "t2"]
    assert [b["tool_use_id"] for b in out[2]["content"]] == ["t1", "t2"]


def test_malformed_tool_events_are_skipped() -> None:
    """(tools and adapters, "Testable statements" 99, second half)"""
    bad = [
        event("tool_call", "not json"),
        event("tool_call", "[1, 2]"),
        event("tool_call", json.dumps({"name": "x", "args": {}})),
        event("tool_call", json.dumps({"name": "", "args": {}, "tool_call_id": "t9"})),
        event("tool_call", json.dumps({"name": "x y", "args": {}, "tool_call_id": "t9"})),
        event("tool_result", json.dumps({"output": "x", "tool_call_id": "t9"})),
        event("tool_result", "{"),
        "not an item",
        {"message_type": "text", "content": 5},
    ]
    assert convert(said("hi"), *bad) == [{"role": "user", "content": "[Alice]: hi"}]
    # non-object args become {}
    out = convert(said("hi"), call("t1", args=[1, 2]), result("t1"))
    assert out[1]["content"][0]["input"] == {}


def test_orphan_and_repeated_results_and_repeated_call_ids_are_skipped() -> None:
    """(tools and adapters, "Weak spots" 7): the API would refuse them."""
    out = convert(
        said("hi"),
        result("t0"),
        call("t1"),
        result("t1"),
        result("t1", "again"),
        call("t1"),
        result("t1"),
    )
    assert out == convert(said("hi"), call("t1"), result("t1"))


def test_a_history_that_starts_with_the_agent_gets_a_user_line_first() -> None:
    out = convert(call("t1"), result("t1"), said("hi"))
    assert out[0] == {"role": "user", "content": HISTORY_START}
    assert out[1]["role"] == "assistant"
    assert convert(said("earlier answer", own=True))[0] == {
        "role": "user",
        "content": HISTORY_START,
    }


def test_dicts_are_accepted_and_the_agent_name_is_recorded() -> None:
    converter = AnthropicHistoryConverter()
    converter.set_agent_name("Claude")
    assert converter.agent_name == "Claude"
    items = [said("hi").to_dict(), {"role": "user", "content": "no type", "sender_name": "Bob"}]
    assert converter.convert(items) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Alice]: hi"},
                {"type": "text", "text": "[Bob]: no type"},
            ],
        }
    ]
    assert converter.convert([]) == []


# ---------------------------------------------------------------- properties

IDS = st.sampled_from(["t1", "t2", "t3", "t4", "bad id", ""])
NAMES = st.sampled_from(["Alice", "Bob", "Claude", ""])
TEXTS = st.sampled_from(["hi", "hello there", "  ", "", "ok"])


def _malformed() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            event,
            st.sampled_from(["tool_call", "tool_result"]),
            st.sampled_from(["{", "[]", "null", '{"name": 1}']),
        ),
        st.just("garbage"),
        st.just({"message_type": "text", "content": None}),
    )


ITEMS = st.one_of(
    st.builds(said, TEXTS, NAMES, own=st.booleans()),
    st.builds(call, IDS),
    st.builds(
        result,
        IDS,
        st.one_of(st.text(max_size=5), st.none(), st.just({"a": 1})),
        is_error=st.sampled_from([None, True, False]),
    ),
    st.builds(event, st.sampled_from(["thought", "error", "task", "attention"])),
)


def _check_valid(messages: list[dict[str, Any]]) -> None:
    if not messages:
        return
    assert messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], "roles must alternate"
    seen_ids: set[str] = set()
    for index, msg in enumerate(messages):
        content = msg["content"]
        if isinstance(content, str):
            assert content.strip()
            continue
        assert content, "no empty block lists"
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
        for block in content:
            if block["type"] == "text":
                assert block["text"].strip()
        if uses:
            assert msg["role"] == "assistant"
            assert not seen_ids & set(uses), "tool_use ids are unique"
            seen_ids |= set(uses)
            # the next message answers exactly these calls, results first
            nxt = messages[index + 1]["content"]
            assert isinstance(nxt, list)
            head = nxt[: len(uses)]
            assert [b["type"] for b in head] == ["tool_result"] * len(uses)
            assert [b["tool_use_id"] for b in head] == uses
        if results:
            assert msg["role"] == "user"
            prev = messages[index - 1]["content"]
            assert index > 0
            assert isinstance(prev, list)
            assert results == [b["id"] for b in prev if b["type"] == "tool_use"]
            assert all(b["type"] == "tool_result" for b in content[: len(results)])


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEMS, max_size=25))
def test_the_output_is_always_a_valid_conversation(items: list[HistoryItem]) -> None:
    _check_valid(AnthropicHistoryConverter("Claude").convert(items))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ITEMS, st.one_of(st.none(), _malformed())), max_size=20))
def test_malformed_items_change_nothing(pairs: list[tuple[Any, Any]]) -> None:
    clean = [item for item, _ in pairs]
    noisy = [x for item, bad in pairs for x in ([item] if bad is None else [item, bad])]
    converter = AnthropicHistoryConverter("Claude")
    assert converter.convert(noisy) == converter.convert(clean)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["t1", "t2", "t3", "t4", "t5"]), unique=True, max_size=5), st.randoms()
)
def test_every_result_follows_its_call_whatever_lies_between(ids: list[str], rnd: Any) -> None:
    """Calls, then their results in any order with chatter between: every call
    gets its own real result, none is synthetic."""
    results = [result(i, f"out-{i}") for i in ids]
    rnd.shuffle(results)
    chatter = [said(f"note {n}", "Bob") for n in range(len(ids))]
    tail = [x for pair in zip(results, chatter, strict=True) for x in pair]
    out = AnthropicHistoryConverter("Claude").convert([said("go"), *[call(i) for i in ids], *tail])
    _check_valid(out)
    answered = {
        b["tool_use_id"]: b["content"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    assert answered == {i: f"out-{i}" for i in ids}
    texts = [
        b["text"]
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "text"
    ]
    assert sorted(texts) == sorted(f"[Bob]: note {n}" for n in range(len(ids)))
