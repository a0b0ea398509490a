"""LangChainHistoryConverter: examples, and Hypothesis properties over any
platform history (valid or not): it never raises, and its output is always a
valid message list for a tool-calling model."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from band_trio_langgraph import HISTORY_START, INTERRUPTED_TOOL_RESULT, LangChainHistoryConverter
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from band_trio import HistoryItem


def own(kind: str, content: str, message_id: str | None = None) -> HistoryItem:
    return HistoryItem("assistant", content, "Bot", "Agent", kind, message_id=message_id)


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


convert = LangChainHistoryConverter().convert


def test_a_reply_through_a_tool_becomes_one_call_answered_once() -> None:
    items = [
        other("hi @bot"),
        own("tool_call", call("c1", args={"content": "hello", "mentions": ["alice"]})),
        own("text", "hello"),  # what the call posted: not a second assistant turn
        own("tool_result", result("c1", {"id": "m2"})),
    ]
    messages = convert(items)
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage]
    human, ai, tool = messages
    assert human.content == "[Alice]: hi @bot"
    assert ai.tool_calls == [
        {
            "id": "c1",
            "name": "band_send_message",
            "args": {"content": "hello", "mentions": ["alice"]},
            "type": "tool_call",
        }
    ]
    assert (tool.tool_call_id, tool.content, tool.status) == ("c1", '{"id": "m2"}', "success")


def test_parallel_calls_stay_together_and_errors_keep_their_status() -> None:
    items = [
        other("go"),
        own("tool_call", call("a", "band_get_participants")),
        own("tool_call", call("b", "band_lookup_peers")),
        own("tool_result", result("b", "no", "band_lookup_peers", is_error=True)),
        own("tool_result", result("a", "[]", "band_get_participants")),
    ]
    _, ai, first, second = convert(items)
    assert [c["id"] for c in ai.tool_calls] == ["a", "b"]
    assert (first.tool_call_id, first.status) == ("a", "success")
    assert (second.tool_call_id, second.status) == ("b", "error")


def test_a_call_without_result_is_answered_as_interrupted() -> None:
    _, ai, tool = convert([other("go"), own("tool_call", call("x", "band_get_participants"))])
    assert ai.tool_calls[0]["id"] == "x"
    assert (tool.content, tool.status) == (INTERRUPTED_TOOL_RESULT, "error")


def test_orphan_and_repeated_results_and_other_agents_tool_events_are_skipped() -> None:
    items = [
        other("go"),
        own("tool_result", result("ghost")),
        other(
            call("z", "band_send_message"), name="Other bot", kind="tool_call", sender_type="Agent"
        ),
        own("tool_call", call("c1", "band_get_participants")),
        own("tool_result", result("c1")),
        own("tool_result", result("c1", "again")),
        own("tool_call", call("c1", "band_get_participants")),  # repeated id
    ]
    messages = convert(items)
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage]
    assert messages[2].content == "ok"


def test_senders_are_named_and_own_text_is_the_agent() -> None:
    messages = convert(
        [
            own("text", "I said this", "m1"),
            other("hello", name=""),
            other("sys", name="", sender_type="System"),
        ]
    )
    assert isinstance(messages[0], HumanMessage)
    assert messages[0].content == HISTORY_START
    assert isinstance(messages[1], AIMessage)
    assert messages[1].content == "I said this"
    assert messages[1].id == "band-m1"
    assert messages[2].content == "[User]: hello"  # no "[]:"
    assert messages[3].content == "[System]: sys"


def test_other_kinds_and_malformed_events_are_ignored() -> None:
    items: list[Any] = [
        other("thinking", kind="thought"),
        own("task", "Token usage: input=1 output=1"),
        own("tool_call", "not json"),
        own("tool_call", json.dumps({"name": "bad name!", "tool_call_id": "a"})),
        own("error", "oops"),
        42,
        {"role": "user", "content": "as a dict", "sender_name": "Bob", "message_type": "text"},
    ]
    assert [m.content for m in convert(items)] == ["[Bob]: as a dict"]


# --------------------------------------------------------------------------- properties

NAMES = st.sampled_from(["band_send_message", "band_get_participants", "band_no_reply", "x"])
IDS = st.sampled_from(["c1", "c2", "c3", "", "c 4"])
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)


@st.composite
def tool_event(draw: Any, kind: str) -> str:
    body: dict[str, Any] = {
        "name": draw(NAMES | st.text(max_size=4)),
        "tool_call_id": draw(IDS | st.integers()),
    }
    if kind == "tool_call":
        body["args"] = draw(JSONISH)
    else:
        body["output"] = draw(JSONISH)
        body["is_error"] = draw(st.booleans() | st.none())
    return draw(st.sampled_from([json.dumps(body), json.dumps(body)[:-1], "[]", ""]))


@st.composite
def history_item(draw: Any) -> Any:
    kind = draw(
        st.sampled_from(["text", "tool_call", "tool_result", "thought", "task", "error", ""])
    )
    content = (
        draw(tool_event(kind))
        if kind in ("tool_call", "tool_result")
        else draw(st.text(max_size=8))
    )
    role = draw(st.sampled_from(["assistant", "user"]))
    if draw(st.integers(0, 9)) == 0:
        return draw(
            st.none() | st.integers() | st.dictionaries(st.text(max_size=3), JSONISH, max_size=3)
        )
    return HistoryItem(
        role,
        content,
        draw(st.text(max_size=4)),
        draw(st.sampled_from(["User", "Agent", "System", ""])),
        kind,
        message_id=draw(st.none() | st.text(min_size=1, max_size=4)),
    )


HISTORIES = st.lists(history_item(), max_size=25)


@settings(max_examples=300, deadline=None)
@given(HISTORIES)
def test_the_output_is_always_valid_for_a_tool_calling_model(items: list[Any]) -> None:
    messages = convert(items)
    assert not any(isinstance(m, SystemMessage) for m in messages)
    assert not messages or not isinstance(messages[0], AIMessage)
    index = 0
    seen_calls: set[str] = set()
    while index < len(messages):
        message = messages[index]
        index += 1
        assert not isinstance(message, ToolMessage), "a result without its call"
        if isinstance(message, AIMessage) and message.tool_calls:
            ids = [c["id"] for c in message.tool_calls]
            assert all(isinstance(i, str) and i.strip() for i in ids)
            assert not seen_calls & set(ids)
            assert len(set(ids)) == len(ids)
            seen_calls |= set(ids)
            answers = messages[index : index + len(ids)]
            # every call answered once, in order, right after it
            assert [a.tool_call_id for a in answers if isinstance(a, ToolMessage)] == ids
            index += len(ids)


@settings(max_examples=200, deadline=None)
@given(HISTORIES)
def test_other_agents_tool_events_never_become_this_agents_calls(items: list[Any]) -> None:
    own_call_ids = set()
    for item in items:
        if (
            isinstance(item, HistoryItem)
            and item.role == "assistant"
            and item.message_type == "tool_call"
        ):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                own_call_ids.add(json.loads(item.content)["tool_call_id"])
    for message in convert(items):
        if isinstance(message, AIMessage):
            assert {c["id"] for c in message.tool_calls} <= own_call_ids


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=6), st.lists(st.text(max_size=4), max_size=6))
def test_every_visible_message_of_another_sender_is_kept_and_attributed(
    texts: list[str], names: list[str]
) -> None:
    items = [other(t, name=n) for t, n in zip(texts, names, strict=False)]
    messages = convert(items)
    visible = [(t, n) for t, n in zip(texts, names, strict=False) if t.strip()]
    assert len(messages) == len(visible)
    for message, (text, name) in zip(messages, visible, strict=True):
        # whitespace runs become one space: a name cannot start a line
        label = " ".join(name.split()) or "User"
        assert message.content == f"[{label}]: {text}"
