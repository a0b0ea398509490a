"""LangGraphAdapter passes the conformance kit, with a scripted chat model.

The model is a function of the conversation it is shown, so it answers the
same message the same way in every room and every run: for the latest
message it either replies through ``band_send_message`` (mentioning the
sender by name), first looks at the room with ``band_get_participants`` and
then replies, or declines with ``band_no_reply``; once its reply's tool
result is back it ends the turn with a text (which the adapter never posts).

The graph runs on the adapter's asyncio loop in a worker thread, the Band
tools on Trio.
"""

from __future__ import annotations

import re
from typing import Any

from band_trio_langgraph import LangChainHistoryConverter, LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from band_trio.testing.conformance import (
    AdapterConformance,
    HistoryConverterConformance,
    RunOptions,
    validate_langchain_messages,
)

_SENDER = re.compile(r"^\[([^\]]+)\]: ")


def _latest_request(messages: list[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    """The latest human message and what the model did about it since."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            return message, messages[index + 1 :]
    return None, []


def answer(messages: list[BaseMessage], _tools: list[dict[str, Any]]) -> AIMessage:
    """The scripted model: one deterministic decision per conversation."""
    request, since = _latest_request(messages)
    if request is None:
        return ai(text="Nothing to answer.")
    line = request.content if isinstance(request.content, str) else str(request.content)
    # Tool call ids are unique within a room's thread and the same in every run.
    ids = f"call_{request.id or len(messages)}_{len(since)}"
    last = since[-1] if since else None
    if isinstance(last, ToolMessage) and last.name != "band_get_participants":
        return ai(text="Done.")
    sender = _SENDER.match(line)
    reply = tool_call(
        "band_send_message",
        {
            "content": f"You said {len(line)} characters.",
            "mentions": [sender.group(1)] if sender else [],
        },
        ids,
    )
    if isinstance(last, ToolMessage):
        return ai(reply)  # it looked at the room: now it replies
    choice = len(line) % 3
    if choice == 0:
        return ai(tool_call("band_no_reply", {"reason": "nothing to add"}, ids))
    if choice == 1:
        return ai(tool_call("band_get_participants", {}, ids))
    return ai(reply)


def make_adapter() -> LangGraphAdapter:
    return LangGraphAdapter(model=ScriptedChatModel(default=answer))


class TestLangGraphAdapterConformance(AdapterConformance):
    history_validator = validate_langchain_messages

    def make_adapter(self) -> LangGraphAdapter:
        return make_adapter()

    def make_options(self) -> RunOptions:
        return RunOptions()


class TestLangChainHistoryConverterConformance(HistoryConverterConformance):
    history_validator = validate_langchain_messages

    def make_converter(self) -> LangChainHistoryConverter:
        return LangChainHistoryConverter()
