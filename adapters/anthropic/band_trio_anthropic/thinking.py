"""Extended thinking: the request parameter and the blocks a response brings (sans-io).

With thinking on, a response may start with ``thinking`` blocks (the model's
reasoning, with a ``signature``) and ``redacted_thinking`` blocks (reasoning
the API returns encrypted, as opaque ``data``). Within a tool-use loop the
API requires the assistant message of each round to be sent back with these
blocks exactly as received, before its ``tool_use`` blocks: the signature
proves they are the model's own. :func:`assistant_content` keeps them so.

Only the text of ``thinking`` blocks is ever shown (as ``thought`` events
when the adapter emits thoughts); redacted data is never shown anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

__all__ = ["MIN_THINKING_BUDGET", "assistant_content", "thinking_param", "thought_texts"]

MIN_THINKING_BUDGET: Final = 1024
"""The smallest ``budget_tokens`` the Messages API accepts."""


def thinking_param(budget_tokens: int) -> dict[str, Any]:
    """The ``thinking`` request parameter for extended thinking with a budget."""
    return {"type": "enabled", "budget_tokens": budget_tokens}


def _block(block: Any) -> dict[str, Any] | None:
    """One response block as a request block, or None when it is not sent back."""
    kind = getattr(block, "type", None)
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": block.thinking,
            "signature": block.signature,
        }
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if kind == "text" and isinstance(block.text, str) and block.text.strip():
        return {"type": "text", "text": block.text}
    return None


def assistant_content(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    """The assistant message content of a tool round: thinking, redacted
    thinking, non-empty text and tool_use blocks, in the order received,
    thinking blocks unchanged."""
    return [b for block in blocks if (b := _block(block)) is not None]


def thought_texts(blocks: Iterable[Any]) -> list[str]:
    """The non-blank texts of the ``thinking`` blocks (never redacted data)."""
    texts: list[str] = []
    for block in blocks:
        if getattr(block, "type", None) == "thinking":
            text = getattr(block, "thinking", None)
            if isinstance(text, str) and text.strip():
                texts.append(text)
    return texts
