"""Releasing a room keeps its completed cache (runtime.md §8.75, as band-trio
deliberately differs: docs/differences.rst "Releasing a room").

The reference drops a released room's completed ids and keeps only its
ack-pending ones. In band-trio the completed cache is what stops a re-run of a
message whose ``processed`` mark was settled without the platform recording it
(404 "gone", or a terminal refusal given up after ``max_attempts``, §8.33):
``/next`` still offers such a message, so dropping the cache on release would
answer it a second time once the room is re-added. These tests pin that.
"""

from __future__ import annotations

import trio

from .agent_harness import RecordingAdapter, scene, serving, token, wait_until

PROCESSED = r"/api/v1/agent/chats/[^/]+/messages/[^/]+/processed$"


async def test_readded_room_never_reruns_a_settled_message(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                # Settled (404) while the platform still shows it processing.
                band_platform.faults.add("POST", PROCESSED, 404, 1, code="not_found")
                word = token("settled")
                mid = await s.post(room_id, word)
                await wait_until(lambda: agent.statistics().completed == 1)
                assert s.status(room_id, mid) == "processing"
                # Released ...
                await s.human.remove_participant(room_id, s.agent_id)
                await wait_until(lambda: adapter.cleanups == [room_id])
                await wait_until(lambda: room_id not in agent.room_ids)
                # ... and re-added: its startup drain meets the message on /next.
                await s.human.add_participant(room_id, s.agent_id)
                await wait_until(lambda: room_id in agent.room_ids)
                later = token("later")
                later_id = await s.post(room_id, later)
                await wait_until(lambda: s.processed(room_id, later_id))
            assert sum(1 for c in adapter.calls if word in c.msg.content) == 1
            assert s.replies_to(room_id, word) == 1
            s.assert_exactly_once(room_id, {later_id: later})


async def test_readded_room_given_up_ack_is_not_rerun(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A terminal refusal of ``processed`` is given up after ``max_attempts``
    tries (the turn never re-runs); a release and re-add does not change that."""
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                refused = band_platform.faults.add("POST", PROCESSED, 409, 3, code="conflict")
                word = token("refused")
                mid = await s.post(room_id, word)
                await wait_until(lambda: refused.hits == 3)
                await wait_until(lambda: agent.statistics().completed == 1)
                assert s.status(room_id, mid) == "processing"
                await s.human.remove_participant(room_id, s.agent_id)
                await wait_until(lambda: room_id not in agent.room_ids)
                await s.human.add_participant(room_id, s.agent_id)
                await wait_until(lambda: room_id in agent.room_ids)
                later = token("later")
                later_id = await s.post(room_id, later)
                await wait_until(lambda: s.processed(room_id, later_id))
            assert sum(1 for c in adapter.calls if word in c.msg.content) == 1
            assert s.replies_to(room_id, word) == 1
