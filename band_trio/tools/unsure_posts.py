"""Settling a post whose outcome is unknown, inside the tool call.

A message or event post can fail without telling whether the platform stored
it: a 502, 503 or 504 without proof that nothing was done, a connection reset
or a timeout after the request left. Sending it again blindly could post it
twice; giving the doubt to the adapter could leave the message unanswered
(an adapter cannot look the post up; the SDK can). So the tools settle it
themselves: wait a little, look for the post on the platform (the room's
context holds every post of the agent), send it again only when it is not
there, and repeat until the post is known to be stored. The caller sees an
error only when that cannot be learned within
:attr:`UnsurePostPolicy.give_up_after` seconds of the first doubt (the
platform stays unreachable), or when the lookup cannot be made at all.

The same loop settles the other writes whose effect can be read back (a
participant added or removed): :func:`settle_write`.
:class:`UnsurePostPolicy` holds the numbers (no clock, no I/O).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Final, Protocol, TypeVar, runtime_checkable

import attrs
import trio

from band_trio._logging import get_logger
from band_trio.errors import (
    APIStatusError,
    BandConfigError,
    BandConnectionError,
    BandError,
    BandProtocolError,
    OutcomeUnknownError,
)

__all__ = [
    "DEFAULT_UNSURE_POST_POLICY",
    "PostFinder",
    "UnsurePostPolicy",
    "outcome_unknown",
    "settle_post",
    "settle_write",
]

logger = get_logger("band_trio.tools")

T = TypeVar("T")
V = TypeVar("V")


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise BandConfigError(f"{attribute.name} must be > 0, got {value!r}")


@attrs.frozen(kw_only=True)
class UnsurePostPolicy:
    """How long, and how often, a post with unknown outcome is looked up.

    Attributes:
        give_up_after: seconds from the first unknown outcome after which the
            tool raises the post's error instead of looking again (60 by
            default): the longest the platform may stay unreachable before
            the adapter hears of it.
        first_check: seconds before a lookup after an unknown outcome (a
            gateway may answer before the platform finished storing the post).
        max_check_interval: while lookups fail, the wait before each
            further one doubles up to this.
    """

    give_up_after: float = attrs.field(default=60.0, validator=_positive)
    first_check: float = attrs.field(default=0.25, validator=_positive)
    max_check_interval: float = attrs.field(default=4.0, validator=_positive)

    def wait(self, checks: int) -> float:
        """The wait before lookup number ``checks`` (0 for the first)."""
        return min(self.max_check_interval, self.first_check * 2.0 ** min(checks, 30))


DEFAULT_UNSURE_POST_POLICY: Final = UnsurePostPolicy()


@runtime_checkable
class PostFinder(Protocol):
    """Looks for one of the agent's own posts in the turn's room (the
    engine's turn hooks are one)."""

    async def find_post(
        self, digest: str, message_type: str, exclude: Collection[str]
    ) -> str | None:
        """The id of a post of ``message_type`` whose content has ``digest``,
        made after the turn's message and not in ``exclude``; None when the
        platform holds none.

        Raises:
            BandError: the lookup failed (it is tried again).
            Exception: any other error means the lookup cannot be made.
        """
        ...


def outcome_unknown(exc: Exception) -> bool:
    """Whether a failed post may still have been stored by the platform: a
    transport failure or timeout after the request may have been sent, a 5xx
    or a 408, or a 2xx whose body was not a receipt (stored for sure). Any
    other 4xx, a refusal of a stopped room, or a local error was not stored."""
    if isinstance(exc, OutcomeUnknownError | BandConnectionError | BandProtocolError):
        return True
    return isinstance(exc, APIStatusError) and exc.status_code >= 500


async def settle_post(
    send: Callable[[], Awaitable[T]],
    *,
    finder: PostFinder | None,
    digest: str,
    message_type: str,
    exclude: Callable[[], Collection[str]],
    policy: UnsurePostPolicy,
) -> T | str:
    """Post with ``send()`` until the post is known to be stored.

    Returns:
        ``send()``'s receipt, or the id of the post found on the platform
        (an earlier try that was stored although its answer was lost).

    Raises:
        Exception: what ``send()`` raised when it proves nothing was stored
            (a refusal), or when no finder is given, or when the outcome is
            still unknown ``policy.give_up_after`` seconds after the first
            doubt, or when the lookup cannot be made.
    """
    if finder is None:
        return await send()
    known = finder

    async def verify() -> str | None:
        return await known.find_post(digest, message_type, exclude())

    return await settle_write(send, verify=verify, policy=policy, what=f"{message_type} post")


async def settle_write(
    send: Callable[[], Awaitable[T]],
    *,
    verify: Callable[[], Awaitable[V | None]],
    policy: UnsurePostPolicy,
    what: str,
) -> T | V:
    """Make a write with ``send()`` until it is known to have taken effect.

    After a failure that leaves the outcome unknown, ``verify()`` reads the
    platform: it returns proof the write took effect, or None when it did
    not (then the write is sent again); it raises a retryable BandError when
    the read failed (read again later) and any other exception when it
    cannot tell.

    Returns:
        ``send()``'s answer, or ``verify()``'s proof.

    Raises:
        Exception: what ``send()`` raised when it proves nothing was done, or
            when the outcome is still unknown ``policy.give_up_after`` seconds
            after the first doubt, or when ``verify()`` cannot tell (a read
            refused for good included).
    """
    deadline: float | None = None
    checks = 0
    while True:
        try:
            return await send()
        except Exception as exc:
            if not outcome_unknown(exc):
                raise
            error = exc
        now = trio.current_time()
        if deadline is None:
            deadline = now + policy.give_up_after
        while True:
            wait = policy.wait(checks)
            checks += 1
            if trio.current_time() + wait > deadline:
                logger.warning(
                    "a %s's outcome is still unknown after %.0f s: %s",
                    what,
                    policy.give_up_after,
                    error,
                )
                raise error
            await trio.sleep(wait)
            try:
                found = await verify()
            except BandError as exc:
                if not exc.retryable:
                    # A refused read (gone, forbidden) will not succeed later.
                    raise error from exc
                logger.info("could not check a %s yet: %s", what, exc)
                continue
            except Exception as exc:
                raise error from exc
            break
        if found is not None:
            logger.info("a %s whose answer was lost took effect (%s)", what, found)
            return found
        # The platform answered: the next doubt starts with a short wait again.
        checks = 0
        logger.info("a %s whose answer was lost did not take effect; sending it again", what)
