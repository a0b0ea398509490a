"""Prompt-cache breakpoints for Messages API requests (sans-io).

The Messages API caches a request's prefix up to a block marked with
``cache_control``; a later request that starts with the same prefix reads it
back at a tenth of the input price instead of paying it in full (writing it
costs a quarter more than the plain price, once). The rules that shape this
module, as the ``anthropic`` client documents them:

* the prefix is read in the order tools, then system, then messages, so a
  breakpoint on the system prompt also covers the tools;
* at most :data:`MAX_CACHE_BREAKPOINTS` blocks of one request may carry
  ``cache_control``;
* a prefix shorter than the model's minimum (around a thousand tokens or
  more, by model) is not cached, silently;
* a breakpoint also finds an entry written at an earlier block boundary, but
  only a limited number of blocks back (about twenty).

:class:`CachePolicy` (the adapter's default) marks four blocks: the last tool
definition and the system prompt (the same for every room of an agent, so a
new room starts from a warm cache), and two on the conversation:

* the **tail**, the last block of the last message: the next call of the
  room (the next tool round or the next turn) starts with this whole request;
* the **anchor**, the last block of the last user message before the latest
  assistant message: exactly where the room's previous call ended. It is an
  exact hit however many blocks the latest tool round added, so a round with
  many parallel tool calls does not fall outside the look-back window.

Markers are put on copies: the conversation the adapter keeps never holds
them, and a message whose content is a string is sent as one text block so it
can carry the marker (the API reads both forms the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from band_trio import BandConfigError

__all__ = ["MAX_CACHE_BREAKPOINTS", "CachePolicy", "CachedRequest", "count_breakpoints"]

MAX_CACHE_BREAKPOINTS: Final = 4
"""How many blocks of one request the Messages API lets carry ``cache_control``."""

Message = dict[str, Any]
# Blocks the API refuses a marker on: thinking blocks are cached only as part
# of the content around them.
_UNMARKABLE: Final = frozenset({"thinking", "redacted_thinking"})


@attrs.frozen
class CachedRequest:
    """The parts of a request that carry breakpoints, as they are sent.

    Attributes:
        tools: the tool definitions.
        system: the system prompt, a string or a list of text blocks.
        messages: the conversation.
    """

    tools: list[dict[str, Any]]
    system: str | list[dict[str, Any]]
    messages: list[Message]


def _check_conversation(_inst: object, _attr: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2:
        raise BandConfigError(f"conversation breakpoints must be 0, 1 or 2; got {value!r}")


def _check_ttl(_inst: object, _attr: object, value: object) -> None:
    if value not in (None, "5m", "1h"):
        raise BandConfigError(f"cache ttl must be None, '5m' or '1h'; got {value!r}")


@attrs.frozen(kw_only=True)
class CachePolicy:
    """Where the adapter puts prompt-cache breakpoints (the default is on).

    Subclass it and override :meth:`apply` for a placement of your own; the
    adapter refuses a request with more than :data:`MAX_CACHE_BREAKPOINTS`.

    Attributes:
        tools: mark the last tool definition.
        system: mark the system prompt.
        conversation: conversation breakpoints: 2 (tail and anchor, see the
            module docs), 1 (tail only) or 0.
        ttl: the cache lifetime, ``"5m"`` or ``"1h"`` (the API's default,
            five minutes, when None). An hour-long entry costs more to write;
            it pays off when a room is quiet for more than five minutes
            between turns.

    Raises:
        BandConfigError: a value out of range.
    """

    tools: bool = True
    system: bool = True
    conversation: int = attrs.field(default=2, validator=_check_conversation)
    ttl: Literal["5m", "1h"] | None = attrs.field(default=None, validator=_check_ttl)

    def marker(self) -> dict[str, str]:
        """The ``cache_control`` value put on a marked block."""
        marker = {"type": "ephemeral"}
        if self.ttl is not None:
            marker["ttl"] = self.ttl
        return marker

    def apply(
        self,
        tools: Sequence[Mapping[str, Any]],
        system: str,
        messages: Sequence[Mapping[str, Any]],
    ) -> CachedRequest:
        """The request parts with breakpoints; the arguments are not changed.

        Args:
            tools: the tool definitions, in the order they are sent.
            system: the system prompt.
            messages: the conversation, oldest first.
        """
        out_tools = [dict(t) for t in tools]
        if self.tools and out_tools:
            out_tools[-1]["cache_control"] = self.marker()
        out_system: str | list[dict[str, Any]] = system
        if self.system and system:
            out_system = [{"type": "text", "text": system, "cache_control": self.marker()}]
        out_messages = [dict(m) for m in messages]
        for index in self.conversation_breakpoints(out_messages):
            _mark_message(out_messages, index, self.marker())
        return CachedRequest(out_tools, out_system, out_messages)

    def conversation_breakpoints(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Indexes of the messages whose last block is marked (tail last)."""
        if not messages or self.conversation == 0:
            return []
        tail = len(messages) - 1
        if self.conversation == 1:
            return [tail]
        anchor = _anchor(messages)
        return [tail] if anchor is None or anchor == tail else [anchor, tail]


def _anchor(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The last user message before the latest assistant message: where the
    room's previous call ended."""
    last_assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if last_assistant is None:
        return None
    return next(
        (i for i in range(last_assistant - 1, -1, -1) if messages[i].get("role") == "user"),
        None,
    )


def _mark_message(messages: list[Message], index: int, marker: dict[str, str]) -> None:
    content = messages[index].get("content")
    if isinstance(content, str):
        if not content:
            return
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = list(content)
    else:
        return
    for position in range(len(blocks) - 1, -1, -1):
        block = blocks[position]
        if not isinstance(block, Mapping) or block.get("type") in _UNMARKABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue  # the API refuses a marker on an empty text block
        marked = {**block, "cache_control": marker}
        blocks[position] = marked
        messages[index] = {**messages[index], "content": blocks}
        return


def count_breakpoints(
    tools: Sequence[Mapping[str, Any]],
    system: str | Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
) -> int:
    """How many blocks of a request carry ``cache_control``."""
    count = sum(1 for t in tools if "cache_control" in t)
    if not isinstance(system, str):
        count += sum(1 for b in system if "cache_control" in b)
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, Mapping) and "cache_control" in b)
    return count
