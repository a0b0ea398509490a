"""Room recovery paths: inbox overflow, reconnect re-listing, startup listing
failure, deferred inputs, judged turns and platform-observed stops.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage
from band_trio.errors import InputNotAccepted
from band_trio.runtime.room import MISSING_REPLY_TEXT

from .harness import (
    RecordingAdapter,
    echo,
    fast_config,
    scene,
    serving,
    token,
)


async def test_inbox_overflow_resyncs_from_next_without_loss(band_platform) -> None:  # type: ignore[no-untyped-def]
    """DESIGN rule 1: a full inbox never blocks and never drops silently."""
    release = trio.Event()

    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if "gate" in msg.content:
            await release.wait()
        await echo(adapter, msg, tools)

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            other_room = await s.new_room()
            adapter = RecordingAdapter(behaviour)
            agent = s.make_agent(adapter, fast_config(inbox_size=2))
            async with serving(agent):
                gate = token("gate")
                posted = {await s.post(room_id, gate): gate}
                await s.wait_for(lambda: adapter.running == 1)
                words = [token("o") for _ in range(6)]
                for w in words:
                    posted[await s.post(room_id, w)] = w
                await s.wait_for(lambda: agent.statistics().overflows >= 1)
                # The overflowing room blocks nobody: another room is answered
                # while this one is still gated with a full inbox.
                other_word = token("other")
                other = {await s.post(other_room, other_word): other_word}
                await s.wait_for(lambda: all(s.processed(other_room, m) for m in other))
                assert adapter.running == 1
                s.assert_exactly_once(other_room, other)
                release.set()
                await s.wait_for(lambda: all(s.processed(room_id, m) for m in posted))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.overflows >= 1
            s.assert_exactly_once(room_id, posted)
            order = [next(w for w in [gate, *words] if w in c) for c in adapter.contents(room_id)]
            assert order == [gate, *words]


async def test_reconnect_relists_rooms(band_platform) -> None:  # type: ignore[no-untyped-def]
    """After a reconnect, rooms added or removed meanwhile are picked up, and messages missed
    while disconnected are drained (official runtime, "Testable behaviours" 78)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            leaving = await s.new_room()
            staying = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                # Cut the socket and change rooms before the agent is back.
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(band_platform.drop_agent_sockets, s.agent_id)
                await s.human.remove_participant(leaving, s.agent_id)
                joining = await s.new_room()
                missed = {await s.post(staying, w): w for w in [token("missed")]}
                await s.wait_for(lambda: agent.statistics().reconnects >= 1)
                await s.wait_for(
                    lambda: joining in agent.room_ids and leaving not in agent.room_ids
                )
                await s.wait_for(lambda: adapter.cleanups == [leaving])
                await s.wait_for(lambda: all(s.processed(staying, m) for m in missed))
                fresh = token()
                mid = await s.post(joining, fresh)
                await s.wait_for(lambda: s.processed(joining, mid))
            s.assert_exactly_once(staying, missed)
            s.assert_exactly_once(joining, {mid: fresh})


async def test_startup_listing_failure_is_retried(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Start succeeds, and the rooms come later (official runtime, "Testable behaviours" 12;
    beats "Weak spots" 16)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            band_platform.faults.add("GET", r"/api/v1/agent/chats$", 500, 5)
            agent = s.make_agent(RecordingAdapter())
            async with serving(agent):
                await s.wait_for(lambda: room_id in agent.room_ids)
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
            s.assert_exactly_once(room_id, {mid: word})


async def test_input_not_accepted_is_retried_without_failure(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Not marked failed, no error event, attempt not charged, retried (official runtime,
    "Testable behaviours" 49)."""
    refused: set[str] = set()

    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if msg.id not in refused:
            refused.add(msg.id)
            raise InputNotAccepted("busy")
        await echo(adapter, msg, tools)

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(behaviour)
            async with serving(s.make_agent(adapter, fast_config(max_attempts=1))):
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
            assert len(adapter.calls) == 2
            # The input was not accepted: the second call is a bootstrap again (official
            # runtime, "Testable behaviours" 66).
            assert adapter.calls[1].is_session_bootstrap
            assert adapter.calls[1].participants_msg is not None
            assert s.agent_events(room_id, "error") == []
            assert all(a.status != "failed" for a in s.delivery(room_id, mid).attempts)
            s.assert_exactly_once(room_id, {mid: word})


async def test_turn_without_a_reply_is_judged(band_platform) -> None:  # type: ignore[no-untyped-def]
    """One missing-reply error event, marked failed, never retried (official runtime, "Testable
    behaviours" 71)."""

    async def silent(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        return None

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(silent)
            agent = s.make_agent(adapter)
            async with serving(agent):
                mid = await s.post(room_id, "say nothing")
                await s.wait_for(lambda: s.status(room_id, mid) == "failed")
                await s.wait_for(lambda: len(s.agent_events(room_id, "error")) == 1)
                adapter.behaviour = echo
                word = token()
                after = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, after))
            (event,) = s.agent_events(room_id, "error")
            assert event.content == MISSING_REPLY_TEXT
            assert sum(1 for c in adapter.calls if "say nothing" in c.msg.content) == 1
            attempts = s.delivery(room_id, mid).attempts
            assert [a.error for a in attempts] == ["turn ended without a reply"]


async def test_execution_stopped_on_reply_retries_the_message_later(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A 403 "execution is stopped" on the reply cancels the turn cooperatively; the message is
    retried later (not paused) and answered once (official runtime, "Testable behaviours" 89)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                band_platform.faults.add(
                    "POST",
                    r"/api/v1/agent/chats/[^/]+/messages$",
                    403,
                    1,
                    code="forbidden",
                    message="agent execution is stopped",
                )
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                room = agent._engine.room(room_id)  # type: ignore[union-attr]
                assert room is not None
                assert not room.stopped
            assert len(adapter.calls) == 2
            assert adapter.calls[0].cancelled or not adapter.calls[0].finished
            s.assert_exactly_once(room_id, {mid: word})
