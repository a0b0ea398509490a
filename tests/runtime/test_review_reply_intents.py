"""Review findings on reply intents (end to end against the local platform)."""

from __future__ import annotations

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage

from .agent_harness import RecordingAdapter, scene, serving, token, wait_until

REPLY = r"/api/v1/agent/chats/[^/]+/messages$"


async def test_a_recovered_reply_is_not_taken_for_a_later_messages_lost_reply(  # type: ignore[no-untyped-def]
    band_platform,
) -> None:
    """Two messages wait in the room; the same text answers both. The first
    reply is stored but answered 500 (recovered by the lookup); the second is
    refused with a 500 without being stored. The first reply, posted after the
    second message, must not be taken for the second one's: it was already
    accounted for, so the second message runs again and is answered."""

    async def constant(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        await tools.send_message("noted", [msg.sender_id])

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            first = await s.post(room_id, token("first"))
            second = await s.post(room_id, token("second"))
            stored = band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
            lost = band_platform.faults.add("POST", REPLY, 500, 1)
            adapter = RecordingAdapter(constant)
            agent = s.make_agent(adapter)
            async with serving(agent):
                await wait_until(lambda: s.processed(room_id, first))
                await wait_until(lambda: s.processed(room_id, second))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert (stored.hits, lost.hits) == (1, 1)
            # One "noted" per message: the first landed once, the second was
            # posted again after its refused post.
            assert sum(1 for t in s.agent_texts(room_id) if t.endswith("noted")) == 2
            assert [c.msg.id for c in adapter.calls] == [first, second, second]


async def test_a_stored_reply_whose_2xx_answer_is_malformed_is_not_posted_again(  # type: ignore[no-untyped-def]
    band_platform,
) -> None:
    """The platform stores the reply and answers 201 with a body that is not
    a receipt (the tool raises BandProtocolError). A 2xx means the reply is
    stored: the message is only acked when it comes up again, never answered
    twice."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                garbled = band_platform.faults.add("POST", REPLY, 201, 1, perform=True)
                word = token("garbled")
                mid = await s.post(room_id, word)
                await wait_until(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert garbled.hits == 1
            assert s.replies_to(room_id, word) == 1
            assert len(adapter.calls) == 1
