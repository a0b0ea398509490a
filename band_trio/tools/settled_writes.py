"""Creations whose outcome is unknown, settled inside the tool call.

A room, a memory or a task the platform created although its answer was lost
cannot be told from an older one by its content alone, and the platform takes
no idempotency key. So the tool first reads what the platform already holds
that looks like the write (the *snapshot*), then writes; when the outcome is
unknown it reads again: one new match is the write that landed, none means
it did not land (it is sent again), two or more cannot be told apart (the
write's error is raised: nothing is repeated). Creations of the same thing by
one agent are serialised (:class:`WriteLocks`) so that one of them never takes
another's result for its own. The loop itself is
:func:`~band_trio.tools.unsure_posts.settle_write`.

The cost is one read before each such write (two when the outcome was
unknown); docs/faults.rst lists how each write is verified.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable
from typing import TypeVar

import trio

from band_trio._logging import get_logger
from band_trio.errors import BandError
from band_trio.tools.unsure_posts import UnsurePostPolicy, settle_write

__all__ = ["CannotTellError", "WriteLocks", "collect", "create_once", "read_patiently"]

logger = get_logger("band_trio.tools")

T = TypeVar("T")
X = TypeVar("X")


class CannotTellError(Exception):
    """The platform's state does not tell whether a write took effect (not a
    BandError: :func:`~band_trio.tools.unsure_posts.settle_write` then raises
    the write's own error)."""


class WriteLocks:
    """One lock per thing an agent creates (a room for a task id, a memory
    with a content, a task with a subject): two creations of the same thing
    run one after the other, each reading the platform before it writes.
    Locks nobody holds or waits for are dropped."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[trio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold the lock of ``key`` for the block."""
        lock, users = self._locks.get(key, (trio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    @property
    def in_use(self) -> int:
        """How many keys are held or waited for."""
        return len(self._locks)


async def collect(items: AsyncIterator[X], keep: Callable[[X], bool]) -> list[X]:
    """The items ``keep`` accepts, read to the end; the pages' generator is
    closed whatever happens (a failed page read included)."""
    try:
        return [x async for x in items if keep(x)]
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


async def read_patiently(
    read: Callable[[], Awaitable[T]], *, policy: UnsurePostPolicy, what: str
) -> T:
    """``read()``, tried again after a retryable failure (waits as
    ``policy`` says) until ``policy.give_up_after`` seconds have passed.

    Raises:
        BandError: a failure that is not retryable, or the last one once the
            time is up.
    """
    deadline = trio.current_time() + policy.give_up_after
    checks = 0
    while True:
        try:
            return await read()
        except BandError as exc:
            wait = policy.wait(checks)
            checks += 1
            if not exc.retryable or trio.current_time() + wait > deadline:
                raise
            logger.info("could not read %s yet: %s", what, exc)
        await trio.sleep(wait)


async def create_once(
    send: Callable[[], Awaitable[T]],
    *,
    existing: Callable[[], Awaitable[Iterable[X]]],
    key_of: Callable[[X], str],
    policy: UnsurePostPolicy,
    locks: WriteLocks,
    lock_key: Hashable,
    what: str,
    made_here: Callable[[X], Awaitable[bool]] | None = None,
) -> T | X:
    """Create something with ``send()`` exactly once.

    Args:
        send: the write.
        existing: reads what the platform holds that looks like the write.
        key_of: the identity of one such item (its id).
        policy: how long and how often an unknown outcome is looked up.
        locks: the agent's creation locks.
        lock_key: what is created (creations of the same key are serialised).
        what: the write, for logs.
        made_here: whether a new item is this agent's (asked of new items
            only, when ``existing`` cannot say it cheaply).

    Returns:
        ``send()``'s answer, or the item found created.

    Raises:
        Exception: ``send()``'s error when it proves nothing was created, when
            the outcome is still unknown after ``policy.give_up_after``
            seconds, or when the platform holds two new items that match.
        BandError: the read before the write failed (nothing was written).
    """
    async with locks.hold(lock_key):
        before = {key_of(x) for x in await read_patiently(existing, policy=policy, what=what)}

        async def created() -> X | None:
            new = [x for x in await existing() if key_of(x) not in before]
            if made_here is not None:
                new = [x for x in new if await made_here(x)]
            if len(new) > 1:
                raise CannotTellError(f"{len(new)} new items look like the {what}")
            return new[0] if new else None

        return await settle_write(send, verify=created, policy=policy, what=what)
