"""Finding a reply whose post had no known outcome.

A reply post can end without the agent learning whether the platform stored
it: the process is killed mid-request, the connection drops after the request
was sent, or the platform answers 5xx after storing it. Posting it again could
answer the message twice; never posting it could leave it unanswered. So the
tools journal a digest of each reply before posting it (the claims ledger's
*reply intents*), and before such a message runs again the room looks for the
reply on the platform with :func:`find_landed_reply`.

The digest (:func:`band_trio.tools.reply_digest.reply_digest`) is the same for
the text as sent and the text as the platform stored it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from band_trio.runtime.room._rest import RoomRest
from band_trio.tools.reply_digest import reply_digest
from band_trio.wire.events import MessageCreated

__all__ = ["ReplyLookupIncomplete", "find_landed_reply"]


class ReplyLookupIncomplete(Exception):
    """The room's context was longer than the lookup may read: not known."""


def _instant(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


async def find_landed_reply(
    rest: RoomRest,
    *,
    room_id: str,
    agent_id: str,
    trigger: MessageCreated,
    digests: Collection[str],
    known: Collection[str] = (),
    page_size: int,
    max_pages: int,
    message_type: str = "text",
) -> str | None:
    """The id of a post of ``message_type`` (a text message by default) the
    agent made in the room after ``trigger`` whose digest is one of
    ``digests``, or None when there is none. Posts in ``known`` (own posts
    whose outcome the agent learned, i.e. answers to other messages) are never
    taken.

    Reads the room's context (the agent's own messages and those mentioning
    it, oldest first) to its end, at most ``max_pages`` pages.

    Raises:
        ReplyLookupIncomplete: the context has more than ``max_pages`` pages.
        BandError: a read failed.
    """
    wanted = set(digests)
    since = _instant(trigger.inserted_at)
    trigger_seen = False
    page = await rest.get_context(room_id, limit=page_size)
    pages = 1
    while True:
        for message in page.items:
            if message.id == trigger.id:
                trigger_seen = True
                continue
            if message.sender_id != agent_id or message.message_type != message_type:
                continue
            if message.id in known:
                continue
            at = _instant(message.inserted_at)
            after = trigger_seen or (since is not None and at is not None and at >= since)
            if after and reply_digest(message.content) in wanted:
                return message.id
        if not (page.has_more and page.next_cursor):
            return None
        if pages >= max_pages:
            raise ReplyLookupIncomplete(
                f"room {room_id}: context longer than {max_pages} pages of {page_size}"
            )
        page = await rest.get_context(room_id, cursor=page.next_cursor, limit=page_size)
        pages += 1
