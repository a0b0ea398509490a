"""One running turn of a room: its cancel scope and the hooks its tools call.

A :class:`RunningTurn` is what :class:`~band_trio.adapter.turns.TurnHooks`
stands for while a turn runs: the tools journal the turn's replies through it
(into the claims ledger, durably, at once) and tell it about a failure report
or a platform stop. The room cancels the turn through :meth:`RunningTurn.abort`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

import trio

from band_trio._logging import get_logger
from band_trio.adapter.capabilities import ToolEffect
from band_trio.runtime.claims.ledger import Attempt, ClaimsLedger
from band_trio.runtime.core._settlement import Abort
from band_trio.runtime.core._turn_effects import TurnEffects

__all__ = ["PostLookup", "RunningTurn"]

PostLookup = Callable[[str, str, Collection[str]], Awaitable[str | None]]
"""``(digest, message_type, exclude)`` -> the id of the turn's own post, or None."""

# Part of the room's work: its lines go to the room's logger, where log
# filters and readers expect them.
logger = get_logger("band_trio.runtime.room")


class RunningTurn:
    """One running turn; the :class:`~band_trio.adapter.turns.TurnHooks` the tools call.

    Args:
        room_id: the room.
        message_id: the message the turn answers.
        attempt: the attempt this turn uses.
        ledger: the claims ledger the turn's replies are journaled in.
        synthetic: a synthetic (contacts hub) turn answers no platform
            message: nothing is journaled for it beyond its own posts.
        find_post: looks the turn's own posts up on the platform (see
            :meth:`find_post`); None when they cannot be looked up.
    """

    def __init__(
        self,
        room_id: str,
        message_id: str,
        attempt: Attempt,
        ledger: ClaimsLedger,
        *,
        synthetic: bool = False,
        find_post: PostLookup | None = None,
    ) -> None:
        self._find_post = find_post
        self._room_id = room_id
        self._message_id = message_id
        self._claims = ledger
        self.synthetic = synthetic
        self.attempt = attempt
        self.scope: trio.CancelScope | None = None
        self.aborted: Abort | None = None
        self.effects = TurnEffects()
        self.working_reported = False
        self.ended = trio.Event()  # the handler returned, raised or was cancelled
        self.done = trio.Event()  # the turn is over (settlement may follow)

    @property
    def message_id(self) -> str | None:
        return self._message_id

    def reply_sent(self, reply_id: str) -> None:
        if self.synthetic:
            # No platform message to answer: nothing to journal, but the post
            # is accounted for (never taken for a reply with unknown outcome).
            self._claims.remember_reply(self._room_id, reply_id)
            return
        # Durable at once: a crash after this line never yields a second reply.
        self._claims.reply_sent(self._room_id, self._message_id, reply_id)

    def reply_intent(self, digest: str) -> None:
        if self.synthetic:
            return
        self._claims.reply_intent(self._room_id, self._message_id, digest)

    def reply_settled(self, digest: str) -> None:
        if self.synthetic:
            return
        self._claims.drop_reply_intent(self._room_id, self._message_id, digest)

    async def find_post(
        self, digest: str, message_type: str, exclude: Collection[str]
    ) -> str | None:
        """The turn's own post of ``message_type`` with ``digest`` on the
        platform (:class:`~band_trio.tools.unsure_posts.PostFinder`).

        Raises:
            LookupError: this turn's posts cannot be looked up (no message of
                the platform anchors them).
            BandError: the lookup failed.
        """
        if self._find_post is None or self.synthetic:
            raise LookupError("this turn's posts cannot be looked up")
        return await self._find_post(digest, message_type, exclude)

    def failure_reported(self) -> None:
        self.effects.note_reported()

    def execution_stopped(self) -> None:
        logger.info(
            "room %s: platform says execution is stopped; ending turn for message %s",
            self._room_id,
            self._message_id,
        )
        self.abort(Abort.PLATFORM_STOP)

    def record_effect(self, effect: ToolEffect) -> None:
        self.effects.record_effect(effect)

    def abort(self, kind: Abort) -> None:
        """Cancel the turn for ``kind`` (the first reason given is kept)."""
        if self.aborted is None:
            self.aborted = kind
        if self.scope is not None:
            self.scope.cancel()
