"""Bootstrap history, sans-io: choose the context messages a turn gets and map
them to :class:`~band_trio.adapter.HistoryItem`.

**What differs from the official SDK.** The official runtime reads only the
*first* (oldest) page of the context endpoint, so in long rooms the model
never sees recent turns (official runtime, "Weak spots" 3), and it gives role
``assistant`` to *every* agent's message ("Weak spots" 19). Here the adapter gets the
*newest* ``max_history_messages`` messages strictly before the trigger, oldest
first, and role ``assistant`` only for this agent's own messages; other
agents' messages are ``user`` items whose ``sender_name`` says who spoke.

**How the engine pages the context endpoint.** ``GET …/context`` is oldest
first with cursor pagination (``limit`` ≤ 100, follow ``next_cursor`` while
``has_more``). Build a :class:`HistoryWindow` and walk forward::

    window = HistoryWindow(trigger_id=msg_id, limit=config.max_history_messages)
    page = await rest.get_context(room_id, limit=config.history_page_size)
    window.feed_forward(page.items)
    pages = 1
    while page.has_more and not window.trigger_seen and pages < config.max_history_pages:
        page = await rest.get_context(room_id, cursor=page.next_cursor,
                                      limit=config.history_page_size)
        window.feed_forward(page.items)
        pages += 1
    items = to_history_items(window.messages(), roster, agent_id=agent_id)

The walk stops as soon as the trigger is seen (nothing after it is wanted);
memory stays bounded by ``limit`` (a sliding window). When the platform also
reports offset pagination (``total_pages`` in the page ``meta``), the engine
may instead fetch pages newest first by number and call
:meth:`HistoryWindow.feed_backward` until :attr:`HistoryWindow.satisfied`,
which reads only the pages it needs.

A failed load yields an empty history (the turn goes on).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from band_trio.adapter.messages import HistoryItem, HistoryRole
from band_trio.adapter.roster import Roster, rewrite_mention_tokens
from band_trio.errors import BandConfigError
from band_trio.wire.models import ChatMessage

__all__ = [
    "HistoryWindow",
    "clean_metadata",
    "history_item",
    "history_role",
    "parse_timestamp",
    "to_history_items",
]


def clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of ``metadata`` without None-valued keys (top level only)."""
    if not metadata:
        return {}
    return {k: v for k, v in metadata.items() if v is not None}


_FRACTION = re.compile(r"\.(\d+)")


def parse_timestamp(value: object) -> datetime | None:
    """Parse a platform ISO-8601 timestamp into an aware datetime.

    A trailing ``Z`` means UTC; a timestamp without an offset is taken as UTC;
    more than six fraction digits are cut to microseconds. Anything that does
    not parse gives None (never an exception).
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def history_role(sender_type: str, sender_id: str, *, agent_id: str) -> HistoryRole:
    """``assistant`` for this agent's own messages, ``user`` for everyone else."""
    return "assistant" if sender_type == "Agent" and sender_id == agent_id else "user"


def _sender_name(message: ChatMessage, roster: Roster) -> str:
    if message.sender_name:
        return message.sender_name
    legacy = message.extra.get("name")
    if isinstance(legacy, str) and legacy:
        return legacy
    known = roster.get(message.sender_id)
    if known is not None and known.name:
        return known.name
    return message.sender_type


def _sender_handle(message: ChatMessage, roster: Roster) -> str | None:
    known = roster.get(message.sender_id)
    return known.handle if known is not None else None


def history_item(message: ChatMessage, roster: Roster, *, agent_id: str) -> HistoryItem:
    """Map one context message to a history item.

    ``content`` has ``@[[uuid]]`` tokens rewritten with the roster;
    ``sender_name`` falls back to the platform's ``name``, then the roster, then
    the sender type; ``sender_handle`` is the roster's handle for the sender;
    ``message_type`` defaults to ``text``.
    """
    return HistoryItem(
        role=history_role(message.sender_type, message.sender_id, agent_id=agent_id),
        content=rewrite_mention_tokens(message.content, roster),
        sender_name=_sender_name(message, roster),
        sender_handle=_sender_handle(message, roster),
        sender_type=message.sender_type,
        message_type=message.message_type or "text",
        metadata=clean_metadata(message.metadata),
        sender_id=message.sender_id,
        message_id=message.id,
    )


def to_history_items(
    messages: Iterable[ChatMessage], roster: Roster, *, agent_id: str
) -> tuple[HistoryItem, ...]:
    """Map context messages (oldest first) to history items."""
    return tuple(history_item(m, roster, agent_id=agent_id) for m in messages)


class HistoryWindow:
    """Selects the newest ``limit`` context messages strictly before a trigger.

    Feed it pages either all forward (cursor order, oldest page first) or all
    backward (newest page first); do not mix. Messages are de-duplicated by id
    (overlapping pages are harmless). If the trigger never shows up, every
    message fed counts as "before" it (the trigger itself is still excluded).

    Args:
        trigger_id: the id of the message being answered (None: keep the newest).
        limit: how many messages to keep (0 keeps none).
    """

    def __init__(self, *, trigger_id: str | None, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise BandConfigError(f"limit must be an integer >= 0, got {limit!r}")
        self.trigger_id = trigger_id
        self.limit = limit
        self._seen: set[str] = set()
        self._trigger_seen = False
        self._direction: str | None = None
        # forward: a sliding window of the newest messages before the trigger.
        self._window: collections.deque[ChatMessage] = collections.deque(maxlen=limit)
        # backward: pages newest first; before the trigger shows up we cannot
        # tell "before" from "after", so those messages wait in _unplaced.
        self._older: list[list[ChatMessage]] = []
        self._kept = 0
        self._unplaced: list[list[ChatMessage]] = []
        self._unplaced_count = 0

    @property
    def trigger_seen(self) -> bool:
        """True once the trigger message was in a page."""
        return self._trigger_seen

    @property
    def satisfied(self) -> bool:
        """True when more pages cannot change the result.

        Forward: the trigger was seen. Backward: the trigger was seen and
        ``limit`` messages before it are collected.
        """
        if self._direction == "backward":
            return self._trigger_seen and self._kept >= self.limit
        return self._trigger_seen

    def _fresh(self, page: Sequence[ChatMessage]) -> list[ChatMessage]:
        out = []
        for m in page:
            if m.id in self._seen:
                continue
            self._seen.add(m.id)
            out.append(m)
        return out

    def _set_direction(self, direction: str) -> None:
        if self._direction not in (None, direction):
            raise ValueError("a HistoryWindow is fed in one direction only")
        self._direction = direction

    def feed_forward(self, page: Sequence[ChatMessage]) -> None:
        """Add the next page in cursor order (each page oldest first).

        Messages after the trigger are ignored.
        """
        self._set_direction("forward")
        for m in self._fresh(page):
            if self._trigger_seen:
                continue
            if m.id == self.trigger_id:
                self._trigger_seen = True
                continue
            if self.limit:
                self._window.append(m)

    def feed_backward(self, page: Sequence[ChatMessage]) -> None:
        """Add a page older than every page fed so far (each page oldest first)."""
        self._set_direction("backward")
        fresh = self._fresh(page)
        if not self._trigger_seen:
            ids = [m.id for m in fresh]
            if self.trigger_id in ids:
                self._trigger_seen = True
                self._unplaced.clear()  # all newer than the trigger
                self._unplaced_count = 0
                fresh = fresh[: ids.index(self.trigger_id)]
            else:
                # Only the newest `limit` can matter if the trigger never shows up.
                if self._unplaced_count < self.limit:
                    self._unplaced.insert(0, fresh)
                    self._unplaced_count += len(fresh)
                return
        if self._kept < self.limit and fresh:
            take = fresh[-(self.limit - self._kept) :]
            self._older.insert(0, take)
            self._kept += len(take)

    def messages(self) -> list[ChatMessage]:
        """The selected messages, oldest first (at most ``limit``)."""
        if self._direction == "backward":
            if self._trigger_seen:
                chosen = [m for page in self._older for m in page]
            else:
                chosen = [m for page in self._unplaced for m in page if m.id != self.trigger_id]
            return chosen[-self.limit :] if self.limit else []
        return list(self._window)
