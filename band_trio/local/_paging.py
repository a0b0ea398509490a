"""Cursor and offset pagination over in-memory, key-ordered lists."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from band_trio.local._input import Query
from band_trio.local.refusal import invalid

T = TypeVar("T")

_PREFIX = "cur_"


def encode_cursor(key: int) -> str:
    """An opaque cursor pointing just after the item with ordering ``key``."""
    return f"{_PREFIX}{key}"


def decode_cursor(cursor: str | None) -> int | None:
    """The ordering key inside ``cursor``; 422 for a cursor we did not mint."""
    if cursor is None or cursor == "":
        return None
    digits = cursor[len(_PREFIX) :]
    if (
        not cursor.startswith(_PREFIX)
        or not (digits.isascii() and digits.isdigit())
        or len(digits) > 18
    ):
        raise invalid("/cursor", "is invalid")
    return int(digits)


def cursor_page(
    items: Sequence[T],
    key: Callable[[T], int],
    cursor: str | None,
    limit: int,
    *,
    descending: bool = False,
) -> tuple[list[T], str | None, bool]:
    """One page of ``items`` (sorted ascending by ``key``) after ``cursor``.

    Returns:
        ``(page, next_cursor, has_more)``.
    """
    after = decode_cursor(cursor)
    if descending:
        end = len(items) if after is None else bisect.bisect_left(items, after, key=key)
        start = max(0, end - limit)
        page = list(reversed(items[start:end]))
        has_more = start > 0
    else:
        start = 0 if after is None else bisect.bisect_right(items, after, key=key)
        page = list(items[start : start + limit])
        has_more = start + limit < len(items)
    next_cursor = encode_cursor(key(page[-1])) if page and has_more else None
    return page, next_cursor, has_more


def offset_page(items: Sequence[T], page: int, page_size: int) -> tuple[list[T], dict[str, Any]]:
    """One page of ``items`` by page number, with PageMeta-style metadata."""
    total = len(items)
    start = (page - 1) * page_size
    chunk = list(items[start : start + page_size])
    total_pages = (total + page_size - 1) // page_size
    meta = {
        "page": page,
        "page_size": page_size,
        "total_count": total,
        "total_pages": total_pages,
    }
    return chunk, meta


def uses_offset(query: Query) -> bool:
    """True when the request uses the deprecated ``page``/``page_size`` parameters.

    Raises:
        RequestRefusedError: 422 when cursor and offset parameters are mixed.
    """
    offset = query.has("page") or query.has("page_size")
    if offset and query.has("cursor"):
        raise invalid("/cursor", "can't be combined with page/page_size")
    return offset
