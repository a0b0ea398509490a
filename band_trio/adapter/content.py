"""Sans-io helpers for the text the tools post: visibility and event truncation."""

from __future__ import annotations

import unicodedata

__all__ = [
    "EVENT_CONTENT_LIMIT",
    "TRUNCATION_MARKER",
    "is_visible",
    "truncate_event_content",
]

EVENT_CONTENT_LIMIT = 16384
"""The platform's cap on event content, in characters."""

TRUNCATION_MARKER = "... [truncated] ..."
"""Inserted between the kept head and tail of an over-long event."""

# Letters, marks, numbers, punctuation and symbols are visible. Separators
# (spaces), controls and format characters (zero-width joiners, bidi marks) are not.
_VISIBLE_CATEGORY_PREFIXES = ("L", "M", "N", "P", "S")


def is_visible(text: str) -> bool:
    """True when ``text`` has at least one character a reader can see.

    Whitespace-only, zero-width-only and bidi-mark-only strings are blank; the
    platform rejects them with "can't be blank".
    """
    return any(unicodedata.category(ch).startswith(_VISIBLE_CATEGORY_PREFIXES) for ch in text)


def truncate_event_content(text: str, limit: int = EVENT_CONTENT_LIMIT) -> str:
    """Cut ``text`` to at most ``limit`` characters, keeping its head and tail.

    Text within the limit is returned unchanged. Longer text becomes
    ``head + TRUNCATION_MARKER + tail`` of exactly ``limit`` characters, the head
    getting the extra character when the kept length is odd.

    Raises:
        ValueError: ``limit`` is too small to hold the marker and one character.
    """
    if len(text) <= limit:
        return text
    keep = limit - len(TRUNCATION_MARKER)
    if keep < 1:
        raise ValueError(f"limit {limit} cannot hold the truncation marker")
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + TRUNCATION_MARKER + (text[-tail:] if tail else "")
