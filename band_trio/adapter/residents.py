"""Which rooms hold a costly resource of their own (a child process per room),
and which of them to close: :class:`Residents`, plus
:func:`kill_process_group`, the last of the bounded steps that end a child,
and :func:`room_workdir`, where a room's child runs.

An adapter whose framework lives in a child process (the ``claude`` CLI, a
``codex app-server``) keeps one per room, opened on the room's first turn and
reused. This bookkeeping says when to close one: the room was left, the agent
stops, the room was idle for ``idle_timeout`` seconds, or the agent holds more
than ``limit`` of them (the least recently used idle room goes first; a room
in a turn is never chosen). It is sans-io: it is given the time and returns
what to close; the adapter closes it (with its own bounded steps) and decides
when to look (at every turn's start and end, say).
"""

from __future__ import annotations

import errno
import os
import signal
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

import attrs

from band_trio.adapter.config_checks import optional, positive_int, seconds
from band_trio.errors import BandConfigError

__all__ = ["Residents", "ResidentsStatistics", "kill_process_group", "room_workdir"]

T = TypeVar("T")


@attrs.frozen
class ResidentsStatistics:
    """What :meth:`Residents.statistics` reports.

    Attributes:
        live: rooms holding a resource now.
        busy: of those, rooms in a turn.
        opened: resources added so far.
        closed_idle: resources handed back for closing after ``idle_timeout``.
        closed_over_limit: resources handed back for closing to stay within ``limit``.
    """

    live: int
    busy: int
    opened: int
    closed_idle: int
    closed_over_limit: int


@attrs.define
class _Entry(Generic[T]):
    value: T
    last_used: float
    busy: bool = False


@attrs.define
class Residents(Generic[T]):
    """Per-room resources in least-recently-used order.

    Args:
        limit: the most resources held at once (None: no bound). Adding one
            past it hands back the least recently used idle ones; rooms in a
            turn are never handed back, so a burst of concurrent turns can
            exceed the limit until they end (:meth:`release` then trims).
        idle_timeout: seconds a room may hold its resource without a turn
            (None: until the room is left or the agent stops).

    Raises:
        BandConfigError: a limit or idle timeout that is not positive.
    """

    limit: int | None = attrs.field(default=None, validator=optional(positive_int("limit")))
    idle_timeout: float | None = attrs.field(
        default=None, validator=optional(seconds("idle_timeout"))
    )
    _entries: OrderedDict[str, _Entry[T]] = attrs.field(init=False, factory=OrderedDict)
    _opened: int = attrs.field(init=False, default=0)
    _closed_idle: int = attrs.field(init=False, default=0)
    _closed_over_limit: int = attrs.field(init=False, default=0)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, room_id: object) -> bool:
        return room_id in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def get(self, room_id: str) -> T | None:
        """The room's resource, or None."""
        entry = self._entries.get(room_id)
        return None if entry is None else entry.value

    def acquire(self, room_id: str, now: float) -> T | None:
        """A turn of ``room_id`` starts: mark it busy and most recently used;
        its resource, or None (then :meth:`add` the one the turn opens)."""
        entry = self._entries.get(room_id)
        if entry is None:
            return None
        entry.busy = True
        entry.last_used = now
        self._entries.move_to_end(room_id)
        return entry.value

    def add(self, room_id: str, value: T, now: float) -> list[tuple[str, T]]:
        """Hold ``value`` for ``room_id`` (busy: a turn opened it).

        Returns:
            The resources to close to stay within ``limit`` (never this one).

        Raises:
            BandConfigError: the room already holds one (remove it first).
        """
        if room_id in self._entries:
            raise BandConfigError(f"room {room_id} already holds a resource")
        self._entries[room_id] = _Entry(value, now, busy=True)
        self._opened += 1
        return self._over_limit()

    def release(self, room_id: str, now: float) -> list[tuple[str, T]]:
        """The room's turn ended: it is idle from ``now``.

        Returns:
            The resources to close to stay within ``limit``.
        """
        entry = self._entries.get(room_id)
        if entry is not None:
            entry.busy = False
            entry.last_used = now
        return self._over_limit()

    def remove(self, room_id: str) -> T | None:
        """Forget the room's resource and return it (to close), or None."""
        entry = self._entries.pop(room_id, None)
        return None if entry is None else entry.value

    def remove_all(self) -> list[tuple[str, T]]:
        """Forget every resource and return them (the agent stops)."""
        out = [(room_id, entry.value) for room_id, entry in self._entries.items()]
        self._entries.clear()
        return out

    def expired(self, now: float) -> list[tuple[str, T]]:
        """Forget and return the resources of rooms idle for ``idle_timeout``."""
        if self.idle_timeout is None:
            return []
        cutoff = now - self.idle_timeout
        out = [
            (room_id, entry.value)
            for room_id, entry in self._entries.items()
            if not entry.busy and entry.last_used <= cutoff
        ]
        for room_id, _value in out:
            del self._entries[room_id]
        self._closed_idle += len(out)
        return out

    def next_expiry(self) -> float | None:
        """When the next idle resource expires (None: none will)."""
        if self.idle_timeout is None:
            return None
        times = [e.last_used for e in self._entries.values() if not e.busy]
        return min(times) + self.idle_timeout if times else None

    def statistics(self) -> ResidentsStatistics:
        """Counts of what is held and what was handed back."""
        return ResidentsStatistics(
            live=len(self._entries),
            busy=sum(1 for e in self._entries.values() if e.busy),
            opened=self._opened,
            closed_idle=self._closed_idle,
            closed_over_limit=self._closed_over_limit,
        )

    def _over_limit(self) -> list[tuple[str, T]]:
        if self.limit is None or len(self._entries) <= self.limit:
            return []
        excess = len(self._entries) - self.limit
        out: list[tuple[str, T]] = []
        for room_id, entry in self._entries.items():  # oldest use first
            if len(out) == excess:
                break
            if not entry.busy:
                out.append((room_id, entry.value))
        for room_id, _value in out:
            del self._entries[room_id]
        self._closed_over_limit += len(out)
        return out


def kill_process_group(pid: int) -> bool:
    """SIGKILL a child process, with its whole process group when it leads one
    of its own (started in a new session), else the process alone.

    The last of the bounded steps that end a child (stdin closed, SIGTERM,
    SIGKILL): a child in our own process group is killed alone, never the
    group, which would be this process's too.

    Returns:
        True when a signal was sent; False when the process is gone already.
    """
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return False
    try:
        if group == pid and group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return False
        raise
    return True


def room_workdir(
    room_id: str,
    *,
    cwd: Path | None,
    workspace_for_room: Callable[[str], str | Path] | None,
) -> Path | None:
    """The working directory of ``room_id``'s child process.

    Args:
        room_id: the room.
        cwd: one directory for every room (None: the agent's own).
        workspace_for_room: a directory per room, from the room id; it wins
            over ``cwd`` (an adapter's settings accept only one of the two).

    Returns:
        ``workspace_for_room(room_id)`` as a :class:`~pathlib.Path`, created
        when missing, when given; else ``cwd``.
    """
    if workspace_for_room is not None:
        path = Path(workspace_for_room(room_id))
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cwd
