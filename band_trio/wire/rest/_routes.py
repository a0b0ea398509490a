"""REST calls counted by route class and outcome, with few distinct labels.

A route class names what a call is for (``next``, ``marks``, ``messages``...)
without any id, so a metric labelled by it stays small however many rooms
and messages an agent handles. An outcome is ``ok``, the status family of a
refusal (``4xx``, ``5xx``), ``timeout``, ``connection`` or ``error``.
"""

from __future__ import annotations

from typing import Final

from band_trio.errors import APIStatusError, BandConnectionError, BandTimeoutError

__all__ = ["API_PREFIX", "ROOM_ROUTES", "TOP_ROUTES", "RouteCounts", "call_outcome", "route_class"]

API_PREFIX: Final = "/api/v1/agent"
"""The agent REST API's path prefix."""

TOP_ROUTES: Final = frozenset({"me", "contacts", "delegation", "memories", "peers"})
"""Route classes named by the first segment after :data:`API_PREFIX`."""

ROOM_ROUTES: Final = frozenset(
    {"activity", "board", "context", "events", "files", "participants", "tasks"}
)
"""Route classes named by the segment after ``chats/<room>``."""


def route_class(path: str) -> str:
    """The route class of an agent API path (``other`` for anything unknown).

    ``chats`` and ``chats/<room>`` are ``rooms``; under a room, ``messages``
    (list, post), ``next`` (``messages/next``), ``marks`` (``messages/<id>/
    processing|processed|failed``) and the :data:`ROOM_ROUTES`.
    """
    if not path.startswith(API_PREFIX + "/"):
        return "other"
    parts = path[len(API_PREFIX) + 1 :].split("/")
    head = parts[0]
    if head in TOP_ROUTES:
        return head
    if head != "chats":
        return "other"
    if len(parts) <= 2:
        return "rooms"
    sub = parts[2]
    if sub == "messages":
        if len(parts) == 3:
            return "messages"
        return "next" if parts[3] == "next" and len(parts) == 4 else "marks"
    return sub if sub in ROOM_ROUTES else "other"


def call_outcome(error: BaseException | None) -> str:
    """How a call ended: ``ok`` (None), ``4xx``/``5xx``, ``timeout``,
    ``connection`` or ``error``."""
    if error is None:
        return "ok"
    if isinstance(error, APIStatusError):
        return f"{error.status_code // 100}xx"
    if isinstance(error, BandTimeoutError):
        return "timeout"
    if isinstance(error, BandConnectionError):
        return "connection"
    return "error"


class RouteCounts:
    """Calls per (route class, outcome); cheap to count, copied on read."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}

    def count(self, path: str, error: BaseException | None) -> None:
        key = (route_class(path), call_outcome(error))
        self._counts[key] = self._counts.get(key, 0) + 1

    def snapshot(self) -> tuple[tuple[str, str, int], ...]:
        """``(route, outcome, calls)`` triples, sorted."""
        return tuple(sorted((r, o, n) for (r, o), n in self._counts.items()))
