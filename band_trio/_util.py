"""Small helpers shared across band-trio's layers (private)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio

__all__ = ["collapse_group", "one_error"]


def collapse_group(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real error of a nursery's group, or the group itself.

    Nested groups are flattened and cancellations are ignored when picking; if
    exactly one other error is left, that is what the caller should see.
    """

    def leaves(exc: BaseException) -> list[BaseException]:
        if isinstance(exc, BaseExceptionGroup):
            out: list[BaseException] = []
            for sub in exc.exceptions:
                out.extend(leaves(sub))
            return out
        return [exc]

    real = [e for e in leaves(group) if not isinstance(e, trio.Cancelled)]
    if len(real) == 1:
        return real[0]
    return group


@contextmanager
def one_error() -> Iterator[None]:
    """Re-raise a nursery's group as its one real error (see :func:`collapse_group`).

    For context managers and services that hide a nursery: the caller sees the
    error itself, never an ``ExceptionGroup`` of one. A group of several real
    errors is re-raised unchanged.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        real = collapse_group(group)
        if real is group:
            raise
        raise real from None
