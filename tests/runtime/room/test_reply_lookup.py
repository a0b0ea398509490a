"""find_landed_reply over a scripted context endpoint (the scripted platform
behind a real RestClient): which own messages count as the reply whose post had
no known outcome."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from band_trio.errors import InternalServerError
from band_trio.runtime.room.replies import ReplyLookupIncomplete, find_landed_reply
from band_trio.tools.reply_digest import reply_digest
from band_trio.wire import structure
from band_trio.wire.events import MessageCreated
from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy
from tests.scripted_platform import ScriptedPlatform, error, ok

AGENT = "agent-1"
ROOM = "room-1"


def message(
    mid: str, content: str, *, sender: str = AGENT, at: str, kind: str = "text"
) -> dict[str, Any]:
    return {
        "id": mid,
        "content": content,
        "message_type": kind,
        "sender_id": sender,
        "sender_type": "Agent" if sender == AGENT else "User",
        "chat_room_id": ROOM,
        "inserted_at": at,
        "metadata": {},
        "attachments": [],
    }


TRIGGER_ROW = message(
    "trigger", "@[[agent-1]] question", sender="user-1", at="2026-01-01T00:00:10Z"
)
TRIGGER = structure(
    {**TRIGGER_ROW, "room_id": ROOM, "updated_at": TRIGGER_ROW["inserted_at"]}, MessageCreated
)


def pages(*rows_per_page: list[dict[str, Any]], fail_first: int = 0) -> ScriptedPlatform:
    """The room's context endpoint serving ``rows_per_page``, cursor by cursor,
    after ``fail_first`` answers 500."""

    def page(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        index = int(cursor) if cursor else 0
        more = index + 1 < len(rows_per_page)
        return ok(
            rows_per_page[index],
            metadata={
                "has_more": more,
                "limit": 50,
                "next_cursor": str(index + 1) if more else None,
            },
        )

    platform = ScriptedPlatform()
    failures = [error(500, "internal", "x")] * fail_first
    platform.on("GET", rf"/chats/{ROOM}/context", *failures, page)
    return platform


async def lookup(
    platform: ScriptedPlatform,
    digests: list[str],
    *,
    known: tuple[str, ...] = (),
    max_pages: int = 10,
) -> str | None:
    config = RestConfig(retry=RetryPolicy(max_retries=0))
    async with RestClient(
        base_url="https://band.test",
        api_key="k",
        config=config,
        transport=httpx.MockTransport(platform.handler),
    ) as rest:
        with trio.fail_after(5):
            return await find_landed_reply(
                rest,
                room_id=ROOM,
                agent_id=AGENT,
                trigger=TRIGGER,
                digests=digests,
                known=known,
                page_size=50,
                max_pages=max_pages,
            )


async def test_the_stored_reply_after_the_trigger_is_found_on_a_later_page() -> None:
    stored = message("r-1", "@[[user-1]] the answer", at="2026-01-01T00:00:11Z")
    platform = pages([TRIGGER_ROW], [message("x", "unrelated", at="2026-01-01T00:00:11Z"), stored])
    assert await lookup(platform, [reply_digest("@user-1 the answer")]) == "r-1"


async def test_the_same_text_before_the_trigger_is_not_the_reply() -> None:
    earlier = message("r-0", "the answer", at="2026-01-01T00:00:05Z")
    platform = pages([earlier, TRIGGER_ROW])
    assert await lookup(platform, [reply_digest("the answer")]) is None


async def test_the_same_text_after_the_trigger_by_time_counts_when_the_trigger_is_not_listed() -> (
    None
):
    # The context lists only the agent's messages and those mentioning it.
    platform = pages([message("r-1", "the answer", at="2026-01-01T00:00:12Z")])
    assert await lookup(platform, [reply_digest("the answer")]) == "r-1"


async def test_known_replies_events_and_other_senders_are_not_the_reply() -> None:
    rows = [
        TRIGGER_ROW,
        message("known", "the answer", at="2026-01-01T00:00:11Z"),
        message("event", "the answer", at="2026-01-01T00:00:11Z", kind="thought"),
        message("human", "the answer", sender="user-1", at="2026-01-01T00:00:11Z"),
    ]
    assert await lookup(pages(rows), [reply_digest("the answer")], known=("known",)) is None


async def test_a_context_longer_than_the_bound_is_an_incomplete_lookup() -> None:
    platform = pages([TRIGGER_ROW], [message("a", "x", at="2026-01-01T00:00:11Z")], [])
    with pytest.raises(ReplyLookupIncomplete):
        await lookup(platform, [reply_digest("the answer")], max_pages=2)


async def test_a_failed_read_raises_the_typed_error() -> None:
    with pytest.raises(InternalServerError):
        await lookup(pages([TRIGGER_ROW], fail_first=1), [reply_digest("the answer")])
