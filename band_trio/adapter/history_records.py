"""A room's history read once for every LLM history converter (sans-io).

:func:`read_history` turns history items (oldest first) into records a
converter maps to its framework's messages: this agent's tool calls and their
results (from the ``tool_call`` / ``tool_result`` events the adapters post),
and text, other senders' text labelled with :func:`sender_label` (name and
unique handle). It is total: anything malformed is skipped with a warning,
never raised. Another agent's tool events are not this agent's calls and are
left out, as are thoughts, errors, task and usage events.

How records are grouped into messages (calls answered in order, interrupted
calls, merged roles) stays with each converter: frameworks differ there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from band_trio._logging import get_logger
from band_trio.adapter.messages import HistoryItem, sender_label

__all__ = [
    "INTERRUPTED_TOOL_RESULT",
    "HistoryRecord",
    "HistoryText",
    "HistoryToolCall",
    "HistoryToolResult",
    "read_history",
]

logger = get_logger("band_trio.adapter")

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")

INTERRUPTED_TOOL_RESULT: Final = "Error: tool execution was interrupted"
"""The result a converter gives a tool call whose result is not in the history."""


@attrs.frozen
class HistoryToolCall:
    """A tool call this agent made.

    Attributes:
        id: the model's tool call id.
        name: the tool.
        args: its arguments (empty when the event had none).
    """

    id: str
    name: str
    args: dict[str, Any] = attrs.field(hash=False)


@attrs.frozen
class HistoryToolResult:
    """The result of one of this agent's tool calls.

    Attributes:
        id: the tool call id it answers.
        name: the tool.
        output: the text the model was given (JSON for data).
        is_error: the call failed.
    """

    id: str
    name: str
    output: str
    is_error: bool


@attrs.frozen
class HistoryText:
    """A chat message.

    Attributes:
        own: this agent wrote it (``role == "assistant"``).
        text: the content; another sender's is ``"[<label>]: <content>"``
            (:func:`~band_trio.adapter.sender_label`).
        message_id: the platform message id, when known.
    """

    own: bool
    text: str
    message_id: str | None = None


HistoryRecord = HistoryToolCall | HistoryToolResult | HistoryText
"""One record of :func:`read_history`."""


def _field(item: object, name: str) -> Any:
    if isinstance(item, HistoryItem):
        return getattr(item, name)
    if isinstance(item, Mapping):
        return item.get(name)
    return None


def _load_object(content: object) -> Mapping[str, Any] | None:
    if not isinstance(content, str):
        return None
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, Mapping) else None


def _output_text(output: object) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _text_of(item: object, own: bool) -> HistoryText | None:
    content = _field(item, "content")
    if not isinstance(content, str) or not content.strip():
        return None
    message_id = _field(item, "message_id")
    message_id = message_id if isinstance(message_id, str) and message_id else None
    if own:
        return HistoryText(own=True, text=content, message_id=message_id)

    def text_or_none(name: str) -> str | None:
        value = _field(item, name)
        return value if isinstance(value, str) else None

    label = sender_label(
        text_or_none("sender_name"), text_or_none("sender_handle"), text_or_none("sender_type")
    )
    return HistoryText(own=False, text=f"[{label}]: {content}", message_id=message_id)


def _record(index: int, item: object, valid: Callable[[str, str], bool]) -> HistoryRecord | None:
    if not isinstance(item, HistoryItem | Mapping):
        logger.warning("history item %d skipped: not a history item (%s)", index, type(item))
        return None
    kind = _field(item, "message_type") or "text"
    own = _field(item, "role") == "assistant"
    if kind in ("tool_call", "tool_result"):
        if not own:
            # Another agent's tool events are not this agent's calls; its
            # visible messages are in the history as text.
            return None
        event = _load_object(_field(item, "content"))
        call_id = None if event is None else event.get("tool_call_id")
        name = None if event is None else event.get("name")
        if (
            event is None
            or not isinstance(call_id, str)
            or not isinstance(name, str)
            or not valid(call_id, name)
        ):
            logger.warning("history item %d skipped: malformed %s event", index, kind)
            return None
        if kind == "tool_call":
            args = event.get("args")
            return HistoryToolCall(call_id, name, dict(args) if isinstance(args, Mapping) else {})
        is_error = event.get("is_error") is True
        return HistoryToolResult(call_id, name, _output_text(event.get("output")), is_error)
    if kind != "text":
        # thought, error, task (lifecycle and usage), attention, ...: not conversation.
        return None
    return _text_of(item, own)


def _any_ids(call_id: str, name: str) -> bool:
    return bool(call_id.strip()) and bool(_TOOL_NAME.fullmatch(name))


def read_history(
    items: Iterable[object],
    *,
    valid_ids: Callable[[str, str], bool] | None = None,
) -> list[HistoryRecord]:
    """The records of ``items`` (:class:`~band_trio.adapter.HistoryItem` objects
    or their mapping form, with the optional keys ``message_id`` and
    ``sender_handle``), oldest first.

    Args:
        items: the history.
        valid_ids: ``valid_ids(call_id, name)`` is False for a tool event the
            model's API would refuse (its id or name pattern); such events are
            skipped. Default: a non-blank id and a name of 1 to 64 ASCII
            letters, digits, ``_`` or ``-`` (what the model APIs accept).

    Never raises: an unreadable item, or ``items`` that cannot be iterated,
    is skipped with a warning.
    """
    valid = valid_ids or _any_ids
    records: list[HistoryRecord] = []
    try:
        sequence = list(items)
    except Exception:
        logger.warning("history skipped: not a sequence (%s)", type(items))
        return records
    for index, item in enumerate(sequence):
        try:
            record = _record(index, item, valid)
        except Exception:
            logger.warning("history item %d skipped: unreadable", index, exc_info=True)
            continue
        if record is not None:
            records.append(record)
    return records
