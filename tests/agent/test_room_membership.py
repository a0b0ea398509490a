"""Rooms joining and leaving while the agent runs (official runtime, "Testable
behaviours" 72-78).

Releasing a room keeps its completed cache (the official runtime drops it,
"Testable behaviours" 75; band-trio deliberately differs, docs/differences.rst
"Releasing a room"): the cache is what stops a re-run of a message whose
``processed`` mark was settled without the platform recording it (404 "gone",
or a terminal refusal given up after ``max_attempts``), which ``/next`` still
offers once the room is re-added.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import gc
from collections.abc import Collection

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage
from band_trio.runtime.room import Room

from .harness import RecordingAdapter, scene, serving, token


async def test_room_added_while_running_is_joined_and_drained(band_platform) -> None:  # type: ignore[no-untyped-def]
    """room_added joins the room and reconciles its backlog (official runtime, "Testable behaviours"
    72)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                room_id = await s.new_room(with_agent=False)
                await s.human.add_participant(room_id, s.agent_id)
                await s.wait_for(lambda: room_id in agent.room_ids)
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert s.replies_to(room_id, word) == 1


async def test_removal_cancels_the_turn_and_cleans_up_once(band_platform) -> None:  # type: ignore[no-untyped-def]
    """room_removed cancels the in-flight turn, then on_cleanup runs once (official runtime,
    "Testable behaviours" 74)."""

    async def hang(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        await trio.sleep_forever()

    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            keep = await s.new_room()
            adapter = RecordingAdapter(hang)
            agent = s.make_agent(adapter)
            async with serving(agent):
                await s.post(room_id, "never answered")
                await s.wait_for(lambda: adapter.running == 1)
                await s.human.remove_participant(room_id, s.agent_id)
                await s.wait_for(lambda: adapter.cleanups == [room_id])
                assert adapter.calls[0].cancelled
                assert room_id not in agent.room_ids
                assert keep in agent.room_ids
                # Re-adding starts afresh: a new worker bootstraps again (official runtime,
                # "Testable behaviours" 77).
                adapter.behaviour = _echo
                await s.human.add_participant(room_id, s.agent_id)
                await s.wait_for(lambda: room_id in agent.room_ids)
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                calls = adapter.calls_for(room_id)
                # The new worker first replays the cancelled message (left
                # processing), as a fresh bootstrap, then the new one.
                assert "never answered" in calls[1].msg.content
                assert calls[1].is_session_bootstrap
                assert not calls[-1].is_session_bootstrap
            assert adapter.cleanups.count(room_id) == 2  # once per worker
            assert adapter.cleanups.count(keep) == 1


async def _echo(adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol) -> None:
    await tools.send_message(f"echo: {msg.content}", [msg.sender_id])


async def test_messages_for_unknown_rooms_are_dropped(band_platform) -> None:  # type: ignore[no-untyped-def]
    """An event for a room the agent does not serve is dropped (counted) (official runtime,
    "Testable behaviours" 73)."""
    from band_trio.wire.events import ParticipantRemoved

    with trio.fail_after(20):
        async with scene(band_platform) as s:
            agent = s.make_agent(RecordingAdapter())
            async with serving(agent):
                engine = agent._engine
                assert engine is not None
                engine.dispatcher.dispatch(
                    ParticipantRemoved(room_id="nope", id="x", name="x", type="User")
                )
                assert agent.statistics().unrouted == 1


# ------------------------------------------------------------------ releasing a room keeps its
# completed cache
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
                await s.wait_for(lambda: agent.statistics().completed == 1)
                assert s.status(room_id, mid) == "processing"
                # Released ...
                await s.human.remove_participant(room_id, s.agent_id)
                await s.wait_for(lambda: adapter.cleanups == [room_id])
                await s.wait_for(lambda: room_id not in agent.room_ids)
                # ... and re-added: its startup reconcile meets the message on /next.
                await s.human.add_participant(room_id, s.agent_id)
                await s.wait_for(lambda: room_id in agent.room_ids)
                later = token("later")
                later_id = await s.post(room_id, later)
                await s.wait_for(lambda: s.processed(room_id, later_id))
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
                await s.wait_for(lambda: refused.hits == 3)
                await s.wait_for(lambda: agent.statistics().completed == 1)
                assert s.status(room_id, mid) == "processing"
                await s.human.remove_participant(room_id, s.agent_id)
                await s.wait_for(lambda: room_id not in agent.room_ids)
                await s.human.add_participant(room_id, s.agent_id)
                await s.wait_for(lambda: room_id in agent.room_ids)
                later = token("later")
                later_id = await s.post(room_id, later)
                await s.wait_for(lambda: s.processed(room_id, later_id))
            assert sum(1 for c in adapter.calls if word in c.msg.content) == 1
            assert s.replies_to(room_id, word) == 1


# ------------------------------------------------------------------ a room that left is freed


def _live_rooms(room_ids: Collection[str]) -> list[Room]:
    gc.collect()
    return [obj for obj in gc.get_objects() if isinstance(obj, Room) and obj.room_id in room_ids]


async def _until_freed(room_ids: Collection[str], within: float = 30) -> None:
    """Wait until no :class:`Room` of ``room_ids`` is reachable.

    Being freed is not an event the agent or the platform announces (the last
    reference may go when a task ends after the last state change), so this
    re-checks on a short period under a deadline instead of on changes.
    """
    with trio.fail_after(within):
        while _live_rooms(room_ids):  # noqa: ASYNC110 (nothing to wait on: see above)
            await trio.sleep(0.05)


async def test_rooms_that_left_are_freed(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Once the agent has left a room, nothing of the agent keeps that room's
    state alive (its timers, queues and tables let go of it): a thousand rooms
    joined and left must not cost the memory of a thousand rooms."""
    with trio.fail_after(60):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(4)]
            agent = s.make_agent(RecordingAdapter(_echo))
            async with serving(agent):
                await s.wait_for(lambda: set(rooms) <= set(agent.room_ids))
                for room_id in rooms:
                    word = token()
                    mid = await s.post(room_id, word)
                    await s.wait_for(lambda r=room_id, m=mid: s.processed(r, m))  # type: ignore[misc]
                assert len(_live_rooms(rooms)) == len(rooms)
                for room_id in rooms:
                    await s.human.remove_participant(room_id, s.agent_id)
                await s.wait_for(lambda: not set(rooms) & set(agent.room_ids))
                await _until_freed(rooms)
