"""The provider validators: structure only, plain dicts and duck-typed objects."""

from __future__ import annotations

from typing import Any

import attrs

from band_trio.testing.conformance import validate_anthropic_messages, validate_langchain_messages


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_use(call_id: str, name: str = "band_lookup") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {}}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def test_a_well_formed_anthropic_conversation_has_no_problems() -> None:
    messages = [
        user("hello"),
        assistant([{"type": "text", "text": "let me look"}, tool_use("t1"), tool_use("t2")]),
        user([tool_result("t1"), tool_result("t2")]),
        assistant("found it"),
        user([{"type": "text", "text": "thanks"}]),
    ]
    assert validate_anthropic_messages(messages) == []
    assert validate_anthropic_messages([]) == []


def test_anthropic_roles_content_and_blocks() -> None:
    assert validate_anthropic_messages("hi") == ["expected a list of messages, got str"]
    assert validate_anthropic_messages([{"role": "system", "content": "be nice"}]) == [
        "message 0 has role 'system' (only 'user' and 'assistant' are allowed)"
    ]
    assert validate_anthropic_messages([user("  ")]) == ["message 0 has blank text content"]
    assert validate_anthropic_messages([user([])]) == ["message 0 has an empty content list"]
    assert validate_anthropic_messages([user([{"type": "text", "text": ""}])]) == [
        "message 0, block 0 is a blank text block"
    ]
    assert validate_anthropic_messages([user([{"type": "video"}])]) == [
        "message 0, block 0 has unknown type 'video'"
    ]
    assert validate_anthropic_messages([user(None)]) == ["message 0 has content of type NoneType"]
    assert validate_anthropic_messages(["hello"]) == ["message 0 is a str, not a dict"]


def test_anthropic_tool_pairing() -> None:
    assert validate_anthropic_messages([user([tool_result("t1")])]) == [
        "message 0, block 0: tool_result for 't1', which the previous message did not call"
    ]
    assert validate_anthropic_messages([assistant([tool_use("t1")]), user("next")]) == [
        "message 1 does not answer tool_use 't1' of the message before"
    ]
    assert validate_anthropic_messages([user("q"), assistant([tool_use("t1")])]) == [
        "the last message calls tool_use 't1', which is never answered"
    ]
    assert validate_anthropic_messages(
        [
            assistant([tool_use("t1")]),
            user([tool_result("t1")]),
            assistant([tool_use("t1")]),
            user([tool_result("t1")]),
        ]
    ) == [
        "message 2, block 0: tool_use id 't1' used twice",
        "message 3, block 0: tool_result for 't1', which the previous message did not call",
    ]
    assert validate_anthropic_messages([user([tool_use("t1")])]) == [
        "message 0, block 0: tool_use outside an assistant message",
        "the last message calls tool_use 't1', which is never answered",
    ]


@attrs.define
class Msg:
    """Shaped like a LangChain message: nothing is imported."""

    type: str
    content: Any = ""
    tool_calls: list[dict[str, Any]] = attrs.Factory(list)
    tool_call_id: str | None = None


def call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "name": "band_lookup", "args": {}}


def test_a_well_formed_langchain_list_has_no_problems() -> None:
    messages = [
        Msg("system", "be brief"),
        Msg("human", "hello"),
        Msg("ai", "", [call("c1"), call("c2")]),
        Msg("tool", "ok", tool_call_id="c1"),
        Msg("tool", "ok", tool_call_id="c2"),
        Msg("ai", "done"),
        Msg("human", [{"type": "text", "text": "thanks"}]),
    ]
    assert validate_langchain_messages(messages) == []


def test_langchain_system_messages() -> None:
    assert validate_langchain_messages([Msg("system", "a"), Msg("system", "b")]) == [
        "message 1 is a second system message"
    ]
    assert validate_langchain_messages([Msg("human", "a"), Msg("system", "b")]) == [
        "message 1 is a system message that is not first"
    ]


def test_langchain_tool_calls_and_results() -> None:
    assert validate_langchain_messages([Msg("tool", "ok", tool_call_id="c9")]) == [
        "message 0 is a tool result for 'c9', which no open tool call asked for"
    ]
    assert validate_langchain_messages([Msg("ai", "", [call("c1")]), Msg("human", "next")]) == [
        "message 1 comes before the result of tool call 'c1'"
    ]
    assert validate_langchain_messages([Msg("ai", "", [call("c1")])]) == [
        "tool call 'c1' is never answered"
    ]
    assert validate_langchain_messages([Msg("ai", "", [{"name": "x"}])]) == [
        "message 0 has a tool call without an id or a name"
    ]
    assert validate_langchain_messages([Msg("robot", "x")]) == [
        "message 0 has type 'robot', not a LangChain message type"
    ]
    assert validate_langchain_messages([Msg("human", None)]) == [
        "message 0 has content of type NoneType"
    ]
