"""Structural validators for converted histories (no provider library imported).

Each validator takes what a history converter returned and gives back a list
of problems, empty when the value is well formed. They check structure only:
what a provider would refuse before reading a word of it.

* :func:`validate_anthropic_messages`: the ``messages`` list of the Anthropic
  Messages API, as plain dicts.
* :func:`validate_langchain_messages`: a list of LangChain message objects,
  duck-typed through their ``type``, ``content``, ``tool_calls`` and
  ``tool_call_id`` attributes.

A custom validator is any callable with the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["HistoryValidator", "validate_anthropic_messages", "validate_langchain_messages"]

HistoryValidator = Callable[[Any], Sequence[str]]
"""Returns the problems of a converted history (empty: valid)."""

_ANTHROPIC_BLOCKS = frozenset(
    {
        "text",
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "search_result",
    }
)


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


def validate_anthropic_messages(messages: Any) -> list[str]:
    """Problems of an Anthropic Messages API ``messages`` list.

    Checked: a list of ``{"role", "content"}`` dicts; roles ``user`` and
    ``assistant`` only (the system prompt is a separate parameter, never a
    message); content a non-blank string or a non-empty list of known blocks;
    text blocks non-blank; ``tool_use`` blocks (assistant only) with a unique
    ``id``, a ``name`` and a dict ``input``; ``tool_result`` blocks (user only)
    answering a ``tool_use`` of the message just before; and every
    ``tool_use`` answered in the message right after it.
    """
    problems: list[str] = []
    if not isinstance(messages, list):
        return [f"expected a list of messages, got {type(messages).__name__}"]
    seen_ids: set[str] = set()
    pending: set[str] = set()
    for index, message in enumerate(messages):
        where = f"message {index}"
        if not isinstance(message, Mapping):
            problems.append(f"{where} is a {type(message).__name__}, not a dict")
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"{where} has role {role!r} (only 'user' and 'assistant' are allowed)")
        content = message.get("content")
        calls: set[str] = set()
        answered: set[str] = set()
        if isinstance(content, str):
            if not content.strip():
                problems.append(f"{where} has blank text content")
        elif isinstance(content, list):
            if not content:
                problems.append(f"{where} has an empty content list")
            for b, block in enumerate(content):
                at = f"{where}, block {b}"
                if not isinstance(block, Mapping):
                    problems.append(f"{at} is not a dict")
                    continue
                kind = block.get("type")
                if kind not in _ANTHROPIC_BLOCKS:
                    problems.append(f"{at} has unknown type {kind!r}")
                elif kind == "text" and _blank(block.get("text")):
                    problems.append(f"{at} is a blank text block")
                elif kind == "tool_use":
                    call_id = block.get("id")
                    if role != "assistant":
                        problems.append(f"{at}: tool_use outside an assistant message")
                    if not isinstance(call_id, str) or _blank(call_id) or _blank(block.get("name")):
                        problems.append(f"{at}: tool_use without an id or a name")
                    elif call_id in seen_ids:
                        problems.append(f"{at}: tool_use id {call_id!r} used twice")
                    else:
                        seen_ids.add(call_id)
                        calls.add(call_id)
                    if not isinstance(block.get("input"), Mapping):
                        problems.append(f"{at}: tool_use input is not a dict")
                elif kind == "tool_result":
                    ref = block.get("tool_use_id")
                    if role != "user":
                        problems.append(f"{at}: tool_result outside a user message")
                    if ref not in pending:
                        problems.append(
                            f"{at}: tool_result for {ref!r}, which the previous message "
                            "did not call"
                        )
                    else:
                        answered.add(ref)
        else:
            problems.append(f"{where} has content of type {type(content).__name__}")
        for missing in sorted(pending - answered):
            problems.append(f"{where} does not answer tool_use {missing!r} of the message before")
        pending = calls
    for missing in sorted(pending):
        problems.append(f"the last message calls tool_use {missing!r}, which is never answered")
    return problems


_LANGCHAIN_TYPES = frozenset({"system", "human", "ai", "tool", "function", "chat"})


def validate_langchain_messages(messages: Any) -> list[str]:
    """Problems of a list of LangChain messages (duck-typed; nothing is imported).

    Checked: a list of objects with a ``type`` among ``system``, ``human``,
    ``ai``, ``tool`` (and the legacy ``function``, ``chat``) and a string or
    list ``content``; at most one system message, and only first; ``ai``
    messages' ``tool_calls`` each with a unique ``id`` and a ``name``; every
    ``tool`` message's ``tool_call_id`` answering a call of the ``ai`` message
    before it (directly or after other tool messages); every call answered
    before the next non-tool message.
    """
    problems: list[str] = []
    if not isinstance(messages, list):
        return [f"expected a list of messages, got {type(messages).__name__}"]
    systems = 0
    seen_ids: set[str] = set()
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        where = f"message {index}"
        kind = getattr(message, "type", None)
        if kind not in _LANGCHAIN_TYPES:
            problems.append(f"{where} has type {kind!r}, not a LangChain message type")
            continue
        content = getattr(message, "content", None)
        if not isinstance(content, str | list):
            problems.append(f"{where} has content of type {type(content).__name__}")
        if kind != "tool" and open_calls:
            for missing in sorted(open_calls):
                problems.append(f"{where} comes before the result of tool call {missing!r}")
            open_calls = set()
        if kind == "system":
            systems += 1
            if systems > 1:
                problems.append(f"{where} is a second system message")
            elif index != 0:
                problems.append(f"{where} is a system message that is not first")
        elif kind == "ai":
            for call in getattr(message, "tool_calls", None) or ():
                call_id = call.get("id") if isinstance(call, Mapping) else None
                name = call.get("name") if isinstance(call, Mapping) else None
                if not isinstance(call_id, str) or _blank(call_id) or _blank(name):
                    problems.append(f"{where} has a tool call without an id or a name")
                elif call_id in seen_ids:
                    problems.append(f"{where} reuses tool call id {call_id!r}")
                else:
                    seen_ids.add(call_id)
                    open_calls.add(call_id)
        elif kind == "tool":
            ref = getattr(message, "tool_call_id", None)
            if ref not in open_calls:
                problems.append(
                    f"{where} is a tool result for {ref!r}, which no open tool call asked for"
                )
            else:
                open_calls.discard(ref)
    for missing in sorted(open_calls):
        problems.append(f"tool call {missing!r} is never answered")
    return problems
