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
* other senders' messages are ``HumanMessage("[<name>]: <text>")``; tool events
  of other agents are ignored (they are not this agent's calls);
* this agent's own text is an ``AIMessage``, except while one of its message
  posting calls is open (the text *is* that call's effect, already in its
  arguments);
* no system message is produced (the adapter adds the one system prompt), and
  the list never starts with an ``AIMessage``.

Nothing raises: malformed items are skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from band_trio import HistoryItem

__all__ = ["HISTORY_START", "INTERRUPTED_TOOL_RESULT", "LangChainHistoryConverter"]

logger = logging.getLogger("band_trio_langgraph")

INTERRUPTED_TOOL_RESULT: Final = "Error: tool execution was interrupted"
"""The result given to a tool call whose result is not in the history."""
HISTORY_START: Final = "[System]: Earlier conversation in this room follows."
"""The ``HumanMessage`` put first when the history would start with the agent."""

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_POSTING_TOOLS: Final = frozenset({"band_send_message", "band_send_room_file"})


@attrs.frozen
class _Call:
    id: str
    name: str
    args: dict[str, Any]


@attrs.frozen
class _Result:
    id: str
    content: str
    is_error: bool


@attrs.frozen
class _Text:
    own: bool
    text: str
    message_id: str | None


_Record = _Call | _Result | _Text


def _as_mapping(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, HistoryItem):
        data = item.to_dict()
        data["message_id"] = item.message_id
        return data
    if isinstance(item, Mapping):
        return item
    return None


def _load_object(content: object) -> Mapping[str, Any] | None:
    if not isinstance(content, str):
        return None
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, Mapping) else None


def _ids(event: Mapping[str, Any]) -> tuple[str, str] | None:
    call_id, name = event.get("tool_call_id"), event.get("name")
    if not isinstance(call_id, str) or not call_id.strip():
        return None
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        return None
    return call_id, name


def _output_text(output: object) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _parse(index: int, item: object) -> _Record | None:
    """One history item as a record, or None (skipped; malformed ones are logged)."""
    data = _as_mapping(item)
    if data is None:
        logger.warning("history item %d skipped: not a history item (%s)", index, type(item))
        return None
    kind = data.get("message_type") or "text"
    content = data.get("content")
    own = data.get("role") == "assistant"
    if kind in ("tool_call", "tool_result"):
        if not own:
            # Another agent's tool events are not this agent's calls; its
            # visible messages are in the history as text.
            return None
        event = _load_object(content)
        ids = None if event is None else _ids(event)
        if event is None or ids is None:
            logger.warning("history item %d skipped: malformed %s event", index, kind)
            return None
        if kind == "tool_call":
            args = event.get("args")
            return _Call(ids[0], ids[1], dict(args) if isinstance(args, Mapping) else {})
        return _Result(ids[0], _output_text(event.get("output")), event.get("is_error") is True)
    if kind != "text":
        # thought, error, task (lifecycle and usage), attention, ...: not conversation.
        return None
    if not isinstance(content, str) or not content.strip():
        return None
    message_id = data.get("message_id")
    message_id = message_id if isinstance(message_id, str) and message_id else None
    if own:
        return _Text(own=True, text=content, message_id=message_id)
    sender = data.get("sender_name")
    if not isinstance(sender, str) or not sender.strip():
        sender = data.get("sender_type")
    label = sender if isinstance(sender, str) and sender.strip() else "Unknown"
    return _Text(own=False, text=f"[{label}]: {content}", message_id=message_id)


class _Builder:
    """Collects one open batch of calls and flushes it as a valid message group."""

    def __init__(self) -> None:
        self.messages: list[BaseMessage] = []
        self.batch: list[_Call] = []
        self.results: dict[str, _Result] = {}
        self.seen_calls: set[str] = set()

    def _open(self) -> list[_Call]:
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
                        content=result.content,
                        tool_call_id=call.id,
                        name=call.name,
                        status="error" if result.is_error else "success",
                    )
                )
        self.batch = []
        self.results = {}

    def call(self, call: _Call) -> None:
        if call.id in self.seen_calls:
            logger.warning("history: repeated tool call id %r skipped", call.id)
            return
        if self.batch and not self._open():
            self.flush()  # the previous calls are all answered: a new round
        self.seen_calls.add(call.id)
        self.batch.append(call)

    def result(self, result: _Result) -> None:
        if result.id in self.results or not any(c.id == result.id for c in self.batch):
            logger.warning("history: tool result %r without an open call skipped", result.id)
            return
        self.results[result.id] = result

    def text(self, text: _Text) -> None:
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
        try:
            sequence = list(items)
        except Exception:
            logger.warning("history skipped: not a sequence (%s)", type(items))
            return []
        for index, item in enumerate(sequence):
            try:
                record = _parse(index, item)
            except Exception:
                logger.warning("history item %d skipped: unreadable", index, exc_info=True)
                continue
            if isinstance(record, _Call):
                builder.call(record)
            elif isinstance(record, _Result):
                builder.result(record)
            elif isinstance(record, _Text):
                builder.text(record)
        builder.flush()
        messages = builder.messages
        if messages and isinstance(messages[0], AIMessage):
            messages.insert(0, HumanMessage(content=HISTORY_START))
        return messages
