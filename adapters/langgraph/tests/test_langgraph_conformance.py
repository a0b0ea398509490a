"""LangGraphAdapter passes the conformance kit, with a scripted chat model.

The model is a function of the conversation it is shown, so it answers the
same message the same way in every room and every run: for the latest
message it either replies through ``band_send_message`` (mentioning the
sender by name), first looks at the room with ``band_get_participants`` and
then replies, or declines with ``band_no_reply``; once its reply's tool
result is back it ends the turn with a text (which the adapter never posts).

The graph runs on the adapter's asyncio loop in a worker thread, the Band
tools on Trio. The kit plays scenarios in virtual time, which jumps ahead
whenever every Trio task is blocked: while the worker thread computes, they
all are. So the adapter gets a bridge
(``band_trio_asyncio.testing.ClockHoldingBridge``) whose asyncio work takes
no virtual time, as a model answering at once would; everything else of the
bridge is the real one.
"""

from __future__ import annotations

import re
from typing import Any

import trio
import trio.lowlevel
from band_trio_asyncio.testing import ClockHoldingBridge
from band_trio_langgraph import (
    LangChainHistoryConverter,
    LangGraphAdapter,
)
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


class ConformanceLangGraphAdapter(LangGraphAdapter):
    """Closes its bridge when the agent stops, as with the bridge it creates itself."""

    async def cleanup_all(self) -> None:
        try:
            await super().cleanup_all()
        finally:
            with trio.CancelScope(shield=True):
                await self.bridge.aclose()


def make_adapter() -> LangGraphAdapter:
    # No thread is started here: the adapter starts it in on_started, off the
    # Trio loop, so no turn (and no loop-block measurement of the kit) waits
    # for the OS to schedule it.
    return ConformanceLangGraphAdapter(
        model=ScriptedChatModel(default=answer), bridge=ClockHoldingBridge()
    )


class TestLangGraphAdapterConformance(AdapterConformance):
    # One graph thread per room and a model that depends only on the
    # conversation: a room's output must not depend on the other rooms.
    deterministic = True
    history_validator = validate_langchain_messages

    def make_adapter(self) -> LangGraphAdapter:
        return make_adapter()

    def make_options(self) -> RunOptions:
        # A Trio step of the adapter waits for the interpreter lock while the
        # graph's thread holds it; on a loaded 2-core machine the OS can
        # preempt that thread for a while with the lock held (0.544 s measured
        # once, a wait the detector cannot tell from a blocking call). One
        # second still catches an adapter that sleeps or does blocking I/O on
        # the loop.
        return RunOptions(block_threshold=1.0)


class TestLangChainHistoryConverterConformance(HistoryConverterConformance):
    history_validator = validate_langchain_messages

    def make_converter(self) -> LangChainHistoryConverter:
        return LangChainHistoryConverter()
