"""LocalPlatform.post_message: a user's post in-process, identical to the REST one."""

from __future__ import annotations

import pytest
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from tests.local.helpers import IO_DEADLINE, PhoenixClient, open_phoenix, refused


async def test_an_inproc_post_is_stored_and_pushed_like_a_rest_post(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            room_ref, _ = await client.join(f"chat_room:{room}")
            by_rest = await human.post_message(room, "over rest", [demo.handle])
            by_call = band_platform.post_message(room, "in process", [demo.handle])
            assert set(by_call) == set(by_rest)
            assert by_call["success"] is True
            pushed = [await client.recv(), await client.recv()]
    assert [p[:4] for p in pushed] == [[room_ref, None, f"chat_room:{room}", "message_created"]] * 2
    rest_push, call_push = pushed[0][4], pushed[1][4]
    assert call_push["id"] == by_call["id"]
    assert call_push["content"] == f"@[[{demo.id}]] in process"
    # Same shape, same sender, same delivery bookkeeping as the REST post.
    assert set(call_push) == set(rest_push)
    for key in ("sender_id", "sender_type", "message_type", "chat_room_id"):
        assert call_push[key] == rest_push[key]
    assert call_push["metadata"]["delivery_status"][demo.id]["status"] == "delivered"
    stored = await human.list_messages(room)
    assert [m["id"] for m in stored][-2:] == [by_rest["id"], by_call["id"]]


async def test_an_inproc_post_can_name_another_sender(band_platform: LocalPlatform) -> None:
    other = band_platform.create_user("Other", "other")
    async with HumanClient(base_url=band_platform.rest_url, api_key=other.api_key) as as_other:
        bot = band_platform.register_agent("Other's bot", "a bot", owner=other)
        room = (await as_other.create_room("other's room"))["id"]
        await as_other.add_participant(room, bot.id)
        sent = band_platform.post_message(room, "hi from other", [bot.handle], sender=other)
        by_id = band_platform.post_message(room, "again", [bot.id], sender=other.id)
        messages = {m["id"]: m for m in await as_other.list_messages(room)}
    assert messages[sent["id"]]["sender_id"] == other.id
    assert messages[by_id["id"]]["sender_id"] == other.id


async def test_an_inproc_post_fails_like_the_rest_call(
    band_platform: LocalPlatform, demo: AgentCredentials, room: str
) -> None:
    with refused(404):
        band_platform.post_message("no-such-room", "hello", [demo.handle])
    with refused(422):
        band_platform.post_message(room, "   ", [demo.handle])
    with refused(422):
        band_platform.post_message(room, "nobody mentioned", [])
    outsider = band_platform.create_user("Outsider", "outsider")
    with refused(404):
        band_platform.post_message(room, "let me in", [demo.handle], sender=outsider)
    with pytest.raises(KeyError):
        band_platform.post_message(room, "hello", [demo.handle], sender="not-a-user")


async def test_the_transcript_shows_mentions_as_handles(
    band_platform: LocalPlatform, demo: AgentCredentials, room: str
) -> None:
    band_platform.post_message(room, f"@{demo.handle} hello, and @[[nobody-known]]", [demo.handle])
    user = band_platform.user
    assert band_platform.transcript(room) == [
        f"{user.name}: @{demo.handle} hello, and @[[nobody-known]]"
    ]
    with pytest.raises(KeyError):
        band_platform.transcript("no-such-room")
