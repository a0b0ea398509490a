"""Room history as LangChain messages.

Sans-io: :class:`LangChainHistoryConverter` turns the runtime's history items
(oldest first) into a message list a tool-calling chat model accepts:

* this agent's tool events become ``AIMessage`` tool calls, each answered by
  exactly one ``ToolMessage`` right after it, in call order (calls made
  together stay together); a call whose result is not in the history gets an
  error result saying it was interrupted; results without their call, repeated
  results and repeated call ids are skipped;
* ``ToolMessage.status`` is ``"error"`` for failed calls, so the model still
  knows which calls failed;
* other senders' messages are ``HumanMessage("[<sender>]: <text>")``, the
  sender shown by name and unique handle (``band_trio.adapter.sender_label``:
  ``"Alice (@alice)"``); tool events
  of other agents are ignored (they are not this agent's calls);
* this agent's own text is an ``AIMessage``, except while one of its message
  posting calls is open (the text *is* that call's effect, already in its
  arguments);
* no system message is produced (the adapter adds the one system prompt), and
  the list never starts with an ``AIMessage``.

Nothing raises: malformed items are skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from band_trio import HistoryItem
from band_trio.adapter import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    HistoryText,
    HistoryToolCall,
    HistoryToolResult,
    read_history,
)

__all__ = ["HISTORY_START", "INTERRUPTED_TOOL_RESULT", "LangChainHistoryConverter"]

logger = logging.getLogger("band_trio_langgraph")

_POSTING_TOOLS: Final = frozenset({"band_send_message", "band_send_room_file"})


class _Builder:
    """Collects one open batch of calls and flushes it as a valid message group."""

    def __init__(self) -> None:
        self.messages: list[BaseMessage] = []
        self.batch: list[HistoryToolCall] = []
        self.results: dict[str, HistoryToolResult] = {}
        self.seen_calls: set[str] = set()

    def _open(self) -> list[HistoryToolCall]:
        return [c for c in self.batch if c.id not in self.results]

    def flush(self) -> None:
        if not self.batch:
            return
        self.messages.append(
            AIMessage(
                content="",
                tool_calls=[
                    {"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"}
                    for c in self.batch
                ],
            )
        )
        for call in self.batch:
            result = self.results.get(call.id)
            if result is None:
                self.messages.append(
                    ToolMessage(
                        content=INTERRUPTED_TOOL_RESULT,
                        tool_call_id=call.id,
                        name=call.name,
                        status="error",
                    )
                )
            else:
                self.messages.append(
                    ToolMessage(
                        content=result.output,
                        tool_call_id=call.id,
                        name=call.name,
                        status="error" if result.is_error else "success",
                    )
                )
        self.batch = []
        self.results = {}

    def call(self, call: HistoryToolCall) -> None:
        if call.id in self.seen_calls:
            logger.warning("history: repeated tool call id %r skipped", call.id)
            return
        if self.batch and not self._open():
            self.flush()  # the previous calls are all answered: a new round
        self.seen_calls.add(call.id)
        self.batch.append(call)

    def result(self, result: HistoryToolResult) -> None:
        if result.id in self.results or not any(c.id == result.id for c in self.batch):
            logger.warning("history: tool result %r without an open call skipped", result.id)
            return
        self.results[result.id] = result

    def text(self, text: HistoryText) -> None:
        if text.own and any(c.name in _POSTING_TOOLS for c in self._open()):
            return  # the text a posting call put in the room: already its argument
        self.flush()
        message_id = f"band-{text.message_id}" if text.message_id else None
        if text.own:
            self.messages.append(AIMessage(content=text.text, id=message_id))
        else:
            self.messages.append(HumanMessage(content=text.text, id=message_id))


class LangChainHistoryConverter:
    """Converts a room's history into LangChain messages (see the module docs).

    Total: :meth:`convert` never raises on any input; malformed items are
    skipped with a warning.
    """

    def __init__(self) -> None:
        self.agent_name = ""

    def set_agent_name(self, name: str) -> None:
        """Remember the agent's name (own messages are recognised by role, not name)."""
        self.agent_name = name

    def convert(self, items: Sequence[HistoryItem]) -> list[BaseMessage]:
        """The messages for ``items`` (oldest first)."""
        builder = _Builder()
        for record in read_history(items):
            if isinstance(record, HistoryToolCall):
                builder.call(record)
            elif isinstance(record, HistoryToolResult):
                builder.result(record)
            else:
                builder.text(record)
        builder.flush()
        messages = builder.messages
        if messages and isinstance(messages[0], AIMessage):
            messages.insert(0, HumanMessage(content=HISTORY_START))
        return messages
