"""Room history as pydantic-ai ``ModelMessage`` lists.

Sans-io: :class:`PydanticAIHistoryConverter` turns the runtime's history items
(oldest first) into a message list any pydantic-ai model accepts:

* requests and responses alternate, and the list starts with a request;
* this agent's tool events become ``ToolCallPart``\\ s of one response, answered
  by exactly one ``ToolReturnPart`` each, in call order, at the start of the
  next request; a call whose result is not in the history is answered as
  interrupted; results without their call, repeated results and repeated call
  ids are skipped; a failed call's return has ``outcome="failed"``, so the
  model still knows which calls failed;
* other senders' messages are ``UserPromptPart("[<sender>]: <text>")``; tool
  events of other agents are ignored (they are not this agent's calls);
* this agent's own text is a ``TextPart``, except while one of its message
  posting calls is open (the text *is* that call's effect, already in its
  arguments);
* no system prompt part: the adapter gives its prompt as instructions.

The result is bounded by :class:`HistoryBudget` (:func:`trim_history`). Nothing
raises: malformed items are skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from band_trio import BandConfigError, HistoryItem
from band_trio.adapter import HISTORY_START, optional, positive_int, sender_label

__all__ = [
    "DEFAULT_HISTORY_BUDGET",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "HistoryBudget",
    "PydanticAIHistoryConverter",
    "estimate_tokens",
    "trim_history",
]

logger = logging.getLogger("band_trio_pydantic_ai")

INTERRUPTED_TOOL_RESULT: Final = "Error: tool execution was interrupted"
"""The result given to a tool call whose result is not in the history."""

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_POSTING_TOOLS: Final = frozenset({"band_send_message", "band_send_room_file"})
_CHARS_PER_TOKEN: Final = 4


@attrs.frozen(kw_only=True)
class HistoryBudget:
    """How much conversation a room keeps and sends (immutable).

    Attributes:
        max_messages: the most ``ModelMessage``\\ s (None: no count limit).
        max_tokens: the most tokens, estimated at four characters a token
            (None: no token limit).

    The oldest messages go first, and a kept conversation always starts at a
    request that answers no tool call, so no tool return loses its call. When
    even the newest such start does not fit, the conversation is kept from
    there: the latest exchange is never cut in half.

    Raises:
        BandConfigError: a limit that is not a positive integer or None.
    """

    max_messages: int | None = attrs.field(
        default=200, validator=optional(positive_int("max_messages"))
    )
    max_tokens: int | None = attrs.field(
        default=100_000, validator=optional(positive_int("max_tokens"))
    )


DEFAULT_HISTORY_BUDGET: Final = HistoryBudget()
"""200 messages and about 100,000 tokens."""


def _part_chars(part: object) -> int:
    for name in ("content", "args"):
        value = getattr(part, name, None)
        if isinstance(value, str):
            return len(value)
        if value is not None:
            try:
                return len(json.dumps(value, default=str))
            except (TypeError, ValueError, RecursionError):
                return len(str(value))
    return 0


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A rough token count of ``messages`` (four characters a token, at least
    one token a part)."""
    total = 0
    for message in messages:
        for part in message.parts:
            total += max(1, _part_chars(part) // _CHARS_PER_TOKEN)
    return total


def _is_clean_start(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and not any(
        isinstance(p, ToolReturnPart) or getattr(p, "part_kind", "") == "retry-prompt"
        for p in message.parts
    )


def trim_history(
    messages: Sequence[ModelMessage], budget: HistoryBudget = DEFAULT_HISTORY_BUDGET
) -> list[ModelMessage]:
    """The newest part of ``messages`` that fits ``budget`` (see :class:`HistoryBudget`).

    The result is a suffix of ``messages`` starting at a request that answers
    no tool call, or empty when there is no such request.
    """
    starts = [i for i, m in enumerate(messages) if _is_clean_start(m)]
    if not starts:
        return []
    # Token sizes from the end, so each candidate start is checked in O(1).
    sizes = [0] * (len(messages) + 1)
    if budget.max_tokens is not None:
        for i in range(len(messages) - 1, -1, -1):
            sizes[i] = sizes[i + 1] + estimate_tokens([messages[i]])
    for start in starts:
        count_ok = budget.max_messages is None or len(messages) - start <= budget.max_messages
        tokens_ok = budget.max_tokens is None or sizes[start] <= budget.max_tokens
        if count_ok and tokens_ok:
            return list(messages[start:])
    return list(messages[starts[-1] :])


# --------------------------------------------------------------------------- records


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


_Record = _Call | _Result | _Text


def _fields(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, HistoryItem):
        return {
            "role": item.role,
            "content": item.content,
            "sender_name": item.sender_name,
            "sender_type": item.sender_type,
            "sender_handle": item.sender_handle,
            "message_type": item.message_type,
        }
    return item if isinstance(item, Mapping) else None


def _json_object(content: object) -> Mapping[str, Any] | None:
    if not isinstance(content, str):
        return None
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, Mapping) else None


def _result_text(output: object) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(output)


def _tool_record(kind: str, content: object) -> _Record | None:
    event = _json_object(content)
    if event is None:
        return None
    call_id, name = event.get("tool_call_id"), event.get("name")
    if not isinstance(call_id, str) or not call_id.strip():
        return None
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        return None
    if kind == "tool_call":
        args = event.get("args")
        return _Call(call_id, name, dict(args) if isinstance(args, Mapping) else {})
    return _Result(call_id, _result_text(event.get("output")), event.get("is_error") is True)


def _sender_label(data: Mapping[str, Any]) -> str:
    """Who wrote an item: :func:`band_trio.adapter.sender_label` (name and handle)."""

    def text_or_none(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) else None

    return sender_label(
        text_or_none("sender_name"), text_or_none("sender_handle"), text_or_none("sender_type")
    )


def _record(index: int, item: object) -> _Record | None:
    """One history item as a record, or None (skipped; malformed ones are logged)."""
    data = _fields(item)
    if data is None:
        logger.warning("history item %d skipped: not a history item (%s)", index, type(item))
        return None
    kind = data.get("message_type") or "text"
    content = data.get("content")
    own = data.get("role") == "assistant"
    if kind in ("tool_call", "tool_result"):
        if not own:
            # Another agent's tool events are not this agent's calls; what it
            # said is in the history as text.
            return None
        record = _tool_record(kind, content)
        if record is None:
            logger.warning("history item %d skipped: malformed %s event", index, kind)
        return record
    if kind != "text" or not isinstance(content, str) or not content.strip():
        # thought, error, task (lifecycle, usage), blank text: not conversation.
        return None
    if own:
        return _Text(own=True, text=content)
    return _Text(own=False, text=f"[{_sender_label(data)}]: {content}")


# --------------------------------------------------------------------------- building


class _Messages:
    """Appends parts so that requests and responses alternate."""

    def __init__(self) -> None:
        self.messages: list[ModelMessage] = []

    def request(self, parts: Sequence[ModelRequestPart]) -> None:
        last = self.messages[-1] if self.messages else None
        if isinstance(last, ModelRequest):
            self.messages[-1] = ModelRequest(parts=[*last.parts, *parts])
        else:
            self.messages.append(ModelRequest(parts=list(parts)))

    def response(self, parts: Sequence[ModelResponsePart]) -> None:
        last = self.messages[-1] if self.messages else None
        if isinstance(last, ModelResponse) and not any(
            isinstance(p, ToolCallPart) for p in last.parts
        ):
            self.messages[-1] = ModelResponse(parts=[*last.parts, *parts])
        else:
            self.messages.append(ModelResponse(parts=list(parts)))


class _Builder:
    """Collects one open batch of calls and flushes it as a response and its returns."""

    def __init__(self) -> None:
        self.out = _Messages()
        self.batch: list[_Call] = []
        self.results: dict[str, _Result] = {}
        self.seen: set[str] = set()

    def _open(self) -> list[_Call]:
        return [c for c in self.batch if c.id not in self.results]

    def flush(self) -> None:
        if not self.batch:
            return
        self.out.response([ToolCallPart(c.name, c.args, c.id) for c in self.batch])
        returns: list[ModelRequestPart] = []
        for call in self.batch:
            result = self.results.get(call.id)
            if result is None:
                returns.append(
                    ToolReturnPart(call.name, INTERRUPTED_TOOL_RESULT, call.id, outcome="failed")
                )
            else:
                returns.append(
                    ToolReturnPart(
                        call.name,
                        result.content,
                        call.id,
                        outcome="failed" if result.is_error else "success",
                    )
                )
        self.out.request(returns)
        self.batch = []
        self.results = {}

    def add(self, record: _Record) -> None:
        if isinstance(record, _Call):
            if record.id in self.seen:
                logger.warning("history: repeated tool call id %r skipped", record.id)
                return
            if self.batch and not self._open():
                self.flush()  # every call of the batch is answered: a new round
            self.seen.add(record.id)
            self.batch.append(record)
        elif isinstance(record, _Result):
            if record.id in self.results or not any(c.id == record.id for c in self.batch):
                logger.warning("history: tool result %r without an open call skipped", record.id)
                return
            self.results[record.id] = record
        elif record.own and any(c.name in _POSTING_TOOLS for c in self._open()):
            return  # the text a posting call put in the room: already its argument
        else:
            self.flush()
            if record.own:
                self.out.response([TextPart(record.text)])
            else:
                self.out.request([UserPromptPart(record.text)])


class PydanticAIHistoryConverter:
    """Converts a room's history into pydantic-ai messages (see the module docs).

    Args:
        budget: bounds the result (default :data:`DEFAULT_HISTORY_BUDGET`).

    Total: :meth:`convert` never raises on any input; malformed items are
    skipped with a warning.
    """

    def __init__(self, budget: HistoryBudget = DEFAULT_HISTORY_BUDGET) -> None:
        if not isinstance(budget, HistoryBudget):
            raise BandConfigError(f"budget must be a HistoryBudget; got {type(budget).__name__}")
        self.budget = budget
        self.agent_name = ""

    def set_agent_name(self, name: str) -> None:
        """Remember the agent's name (own messages are recognised by role, not name)."""
        self.agent_name = name

    def convert(self, items: Sequence[HistoryItem]) -> list[ModelMessage]:
        """The messages for ``items`` (oldest first), within the budget."""
        builder = _Builder()
        try:
            sequence = list(items)
        except Exception:
            logger.warning("history skipped: not a sequence (%s)", type(items))
            return []
        for index, item in enumerate(sequence):
            try:
                record = _record(index, item)
            except Exception:
                logger.warning("history item %d skipped: unreadable", index, exc_info=True)
                continue
            if record is not None:
                builder.add(record)
        builder.flush()
        messages = builder.out.messages
        if messages and isinstance(messages[0], ModelResponse):
            messages.insert(0, ModelRequest(parts=[UserPromptPart(HISTORY_START)]))
        return trim_history(messages, self.budget)
