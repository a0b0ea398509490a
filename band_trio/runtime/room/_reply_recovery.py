"""Recovering a reply whose post had no known outcome, before its message runs again.

The tools journal a digest of each reply before posting it (the claims
ledger's reply intents). An intent still open when its message comes up again
means a post whose outcome was never learned. :class:`ReplyRecovery` looks for
that reply on the platform and records what it found, so an ambiguous post
never becomes a second reply, and a lookup that keeps failing never keeps the
message from being answered.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from band_trio._logging import get_logger
from band_trio.errors import BandError
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.core._admission import ReplyCheck, ReplyLookups
from band_trio.runtime.room._rest import RoomRest
from band_trio.runtime.room._running_turn import PostLookup
from band_trio.runtime.room.replies import ReplyLookupIncomplete, find_landed_reply
from band_trio.runtime.room.services import RoomServices
from band_trio.wire.events import MessageCreated

__all__ = ["ReplyRecovery", "post_lookup"]

# Part of the room's work: its lines go to the room's logger, where log
# filters and readers expect them.
logger = get_logger("band_trio.runtime.room")

_MAX_REPLY_LOOKUP_PAGES: Final = 100
"""Context pages read at most to find a reply with unknown outcome."""


def post_lookup(services: RoomServices, room_id: str, trigger: MessageCreated) -> PostLookup:
    """How the turn answering ``trigger`` looks its own posts up, while it
    settles a post with unknown outcome: the id of the agent's post of a type
    with a digest made after ``trigger`` (never a known reply nor one
    excluded), or None.

    The lookup raises BandError when a read failed, and
    ReplyLookupIncomplete when the room's context is too long to read.
    """

    async def find(digest: str, message_type: str, exclude: Collection[str]) -> str | None:
        return await find_landed_reply(
            services.rest,
            room_id=room_id,
            agent_id=services.agent_id,
            trigger=trigger,
            digests=(digest,),
            known=services.ledger.known_replies(room_id) | frozenset(exclude),
            page_size=services.config.history_page_size,
            max_pages=_MAX_REPLY_LOOKUP_PAGES,
            message_type=message_type,
        )

    return find


class ReplyRecovery:
    """Looks up a room's replies with unknown outcome.

    Args:
        room_id: the room.
        agent_id: the agent (whose posts are searched).
        rest: where the room's context is read.
        ledger: holds the reply intents and the known replies.
        page_size: context page size.
    """

    def __init__(
        self, *, room_id: str, agent_id: str, rest: RoomRest, ledger: ClaimsLedger, page_size: int
    ) -> None:
        self._room_id = room_id
        self._agent_id = agent_id
        self._rest = rest
        self._ledger = ledger
        self._page_size = page_size
        self._lookups = ReplyLookups()

    @property
    def idle(self) -> bool:
        """True when no failed lookup is waiting to be retried (nothing kept
        that a new instance would not have)."""
        return not self._lookups

    async def check(self, ev: MessageCreated) -> ReplyCheck:
        """Find out whether the platform stored the reply to ``ev``.

        LANDED: it is there, journaled as sent (the message is only acked).
        ABSENT: it is not; the intents are cleared and the message runs.
        UNKNOWN: the lookup failed; try again later. After a few failed
        lookups (:class:`~band_trio.runtime.core._admission.ReplyLookups`), or when
        the room's context is too long to read, the message runs again:
        answering twice is better than never answering.
        """
        room_id = self._room_id
        ledger = self._ledger
        try:
            landed = await find_landed_reply(
                self._rest,
                room_id=room_id,
                agent_id=self._agent_id,
                trigger=ev,
                digests=ledger.reply_intents(room_id, ev.id),
                known=ledger.known_replies(room_id),
                page_size=self._page_size,
                max_pages=_MAX_REPLY_LOOKUP_PAGES,
            )
        except BandError as exc:
            if self._lookups.failed(ev.id) is ReplyCheck.UNKNOWN:
                logger.warning(
                    "room %s: could not check whether a reply to %s landed (%d): %s",
                    room_id,
                    ev.id,
                    self._lookups.failures(ev.id),
                    exc,
                )
                return ReplyCheck.UNKNOWN
            logger.error(
                "room %s: gave up checking whether a reply to %s landed; running it again",
                room_id,
                ev.id,
            )
            landed = None
        except ReplyLookupIncomplete as exc:
            logger.error("room %s: %s; running %s again", room_id, exc, ev.id)
            landed = None
        self._lookups.settled(ev.id)
        if landed is None:
            ledger.clear_reply_intents(room_id, ev.id)
            return ReplyCheck.ABSENT
        logger.info(
            "room %s: the reply to %s had landed (%s); acking without a second run",
            room_id,
            ev.id,
            landed,
        )
        # Journaled, hence accounted for: never the lost reply of another message.
        ledger.reply_sent(room_id, ev.id, landed)
        ledger.clear_reply_intents(room_id, ev.id)
        return ReplyCheck.LANDED
