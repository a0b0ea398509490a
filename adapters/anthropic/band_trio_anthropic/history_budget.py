"""A room's conversation bounded by tokens, trimmed from the oldest end (sans-io).

The kept conversation is cut only at a **conversation start**: a ``user``
message that is not a tool result. Every ``tool_use`` is answered by the
``tool_result`` blocks of the very next message, so a cut there never
separates a call from its result, and the kept part starts with the user as
the Messages API requires. The newest part is kept: the longest suffix that
starts at a conversation start and fits the budget.

Sizes are measured either exactly, by the Messages API's ``count_tokens``
endpoint (the adapter's ``exact_token_counts``), or by the estimate of
:func:`estimate_message_tokens`:

* one token per :data:`CHARS_PER_TOKEN` characters of text: of text blocks,
  tool results, thinking text, and of the JSON form of tool inputs and of any
  other block. Claude's tokenizer averages closer to four characters per
  token on English prose, so the estimate errs on the safe side there; dense
  code and non-Latin scripts take more tokens per character, and a budget for
  them should leave room (or count exactly);
* :data:`IMAGE_TOKENS` per image (the API's cost of an image at its largest
  size; the base64 data is not text the model reads);
* :data:`MESSAGE_OVERHEAD_TOKENS` per message, for the role and framing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "conversation_starts",
    "estimate_message_tokens",
    "estimate_tokens",
    "overflow_budget",
    "trim_to_budget",
    "trim_to_counted_budget",
]

CHARS_PER_TOKEN: Final = 3
"""Characters of text counted as one token by the estimate."""
IMAGE_TOKENS: Final = 1600
"""Tokens counted for one image by the estimate."""
MESSAGE_OVERHEAD_TOKENS: Final = 4
"""Tokens counted for each message's role and framing by the estimate."""

Message = Mapping[str, Any]
M = TypeVar("M", bound=Mapping[str, Any])

# "prompt is too long: 210000 tokens > 200000 maximum"
_OVERFLOW_SIZES: Final = re.compile(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)")
# Room kept under the limit after an overflow: counts are estimates.
_OVERFLOW_MARGIN: Final = 0.9


def _chars(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _block_chars(block: object) -> tuple[int, int]:
    """(characters, images) of one content block."""
    if not isinstance(block, Mapping):
        return _chars(block), 0
    kind = block.get("type")
    if kind == "text":
        return _chars(block.get("text", "")), 0
    if kind == "image":
        return 0, 1
    if kind == "tool_use":
        return _chars(block.get("name", "")) + _chars(block.get("input", {})), 0
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            chars = images = 0
            for inner in content:
                c, i = _block_chars(inner)
                chars, images = chars + c, images + i
            return chars, images
        return _chars(content), 0
    if kind == "thinking":
        return _chars(block.get("thinking", "")), 0
    return _chars(block), 0


def estimate_message_tokens(message: Message) -> int:
    """The estimated tokens of one message (see the module docs)."""
    content = message.get("content", "")
    if isinstance(content, list):
        chars = images = 0
        for block in content:
            c, i = _block_chars(block)
            chars, images = chars + c, images + i
    else:
        chars, images = _chars(content), 0
    return MESSAGE_OVERHEAD_TOKENS + math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS


def estimate_tokens(messages: Sequence[Message]) -> int:
    """The estimated tokens of a conversation: the sum over its messages."""
    return sum(estimate_message_tokens(m) for m in messages)


def _is_tool_results(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )


def conversation_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes where a kept conversation may start: user messages that are not tool results."""
    return [
        i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_tool_results(m)
    ]


def _candidates(messages: Sequence[Message], keep_from: int | None) -> list[int]:
    if keep_from is None:
        return [*conversation_starts(messages), len(messages)]
    starts = [i for i in conversation_starts(messages) if i <= keep_from]
    return starts or [0]


def trim_to_budget(
    messages: Sequence[M],
    budget: int,
    *,
    keep_from: int | None = None,
    measure: Callable[[Message], int] = estimate_message_tokens,
) -> list[M]:
    """The newest part of ``messages`` that fits ``budget``.

    Args:
        messages: a conversation, oldest first.
        budget: the most tokens the result may measure.
        keep_from: the index of a conversation start that must be kept (the
            current turn); None allows every message to go, down to an empty
            conversation.
        measure: the size of one message (default: the estimate).

    Returns:
        The longest suffix that starts at a conversation start and measures
        at most ``budget``. When even the part from ``keep_from`` does not
        fit, that part (it cannot be cut further).
    """
    sizes = [measure(m) for m in messages]
    candidates = _candidates(messages, keep_from)
    suffix = sum(sizes)
    position = 0
    for start in candidates:
        suffix -= sum(sizes[position:start])
        position = start
        if suffix <= budget:
            return list(messages[start:])
    return list(messages[candidates[-1] :])


async def trim_to_counted_budget(
    messages: Sequence[M],
    budget: int,
    count: Callable[[list[M]], Awaitable[int]],
    *,
    keep_from: int | None = None,
) -> list[M]:
    """:func:`trim_to_budget` with sizes from ``count`` (e.g. the API's ``count_tokens``).

    ``count`` measures a whole conversation; it is called once when the
    conversation fits, and about log2(number of conversation starts) more
    times when it must be cut (a suffix never measures more than a longer
    one, so a binary search finds the longest that fits).

    Raises:
        Whatever ``count`` raises.
    """
    candidates = _candidates(messages, keep_from)

    async def fits(start: int) -> bool:
        if start >= len(messages):
            return True  # the empty conversation
        return await count(list(messages[start:])) <= budget

    if await fits(candidates[0]):
        return list(messages[candidates[0] :])
    low, high = 1, len(candidates) - 1
    if high < low or not await fits(candidates[high]):
        return list(messages[candidates[-1] :])
    while low < high:
        middle = (low + high) // 2
        if await fits(candidates[middle]):
            high = middle
        else:
            low = middle + 1
    return list(messages[candidates[low] :])


def overflow_budget(error_text: str, current: int) -> int:
    """A budget for a conversation measuring ``current`` whose request the API
    refused as too long.

    The API's message says ``"<actual> tokens > <maximum> maximum"``; the
    conversation is scaled by maximum/actual with a tenth kept free (the
    conversation is only part of the request, and ``current`` may be an
    estimate). Without those numbers, half of ``current``.
    """
    found = _OVERFLOW_SIZES.search(error_text)
    if found is not None:
        actual, maximum = (int(g.replace(",", "")) for g in found.groups())
        if actual > 0 and maximum < actual:
            return max(0, math.floor(current * maximum / actual * _OVERFLOW_MARGIN))
    return current // 2
