"""The two pagination shapes of the platform's listings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import attrs

from band_trio.wire.models._model_base import extra_field

__all__ = ["CursorPage", "Page", "PageMeta"]

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class PageMeta:
    """Offset pagination metadata (chats, peers, contacts). Every field is optional."""

    page: int | None = None
    page_size: int | None = None
    total_count: int | None = None
    total_pages: int | None = None
    extra: Mapping[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class Page(Generic[T]):
    """One page of an offset-paginated list.

    Iterating a page iterates its items.
    """

    items: tuple[T, ...]
    meta: PageMeta = attrs.field(factory=PageMeta)

    @property
    def has_next(self) -> bool:
        """True when ``meta`` says a later page exists (missing ``total_pages``: no)."""
        page, total = self.meta.page, self.meta.total_pages
        return page is not None and total is not None and page < total

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@attrs.frozen(kw_only=True)
class CursorPage(Generic[T]):
    """One page of a cursor-paginated list.

    Follow ``next_cursor`` while ``has_more``. ``limit`` is ``None`` only where
    the platform does not require it (memories). ``meta`` is the raw
    ``metadata`` object (``status_filter``, deprecated offset fields, ...).
    """

    items: tuple[T, ...]
    has_more: bool = False
    limit: int | None = None
    next_cursor: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
