"""``band_trio.testing.rooms``: an agent serving rooms of the local platform,
as adapters' end-to-end tests use it (posting as the user or as people made
for the test, waiting for a message to be settled, serving the rooms again)."""

from __future__ import annotations

import trio

from band_trio import AgentToolsProtocol, PlatformMessage
from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

from ..agent.harness import RecordingAdapter, echo


async def _echo_or_fail(
    adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
) -> None:
    if "boom" in msg.content:
        raise RuntimeError("boom")
    await echo(adapter, msg, tools)


async def test_settled_waits_for_the_agent_and_gives_the_status(
    band_platform: LocalPlatform,
) -> None:
    with trio.fail_after(30):
        async with agent_in_rooms(
            band_platform, RecordingAdapter(_echo_or_fail), people=[("Sam", "sam")]
        ) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
            assert room.is_settled(posted)
            by_sam = await room.post("hello", by="sam")
            assert await room.settled(by_sam) == "processed"
            failed = await room.post("boom")
            assert await room.settled(failed) == "failed"
        async with agent_in_rooms(band_platform, RecordingAdapter(_echo_or_fail), join=[room]) as [
            again
        ]:
            assert again.room_id == room.room_id
            posted_again = await again.post("back")
            assert await again.settled(posted_again) == "processed"
    replies = [m.content for m in again.from_agent("text")]
    assert len(replies) == 3
    for reply, word in zip(replies, ["hi", "hello", "back"], strict=True):
        assert f"echo: @{room.agent_handle} {word}" in reply
    assert room.people["sam"][0].id in {m.sender_id for m in room.state.messages}
