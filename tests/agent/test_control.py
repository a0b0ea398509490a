"""agent.control interrupt / stop / play, end to end (official runtime, "Testable behaviours"
79-89).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage

from .harness import RecordingAdapter, Scene, scene, serving, token


def _blocking(word: str, release: trio.Event):  # type: ignore[no-untyped-def]
    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if word in msg.content and not release.is_set():
            await release.wait()
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])

    return behaviour


async def _push(s: Scene, mode: str, room_id: str | None, correlation_id: str) -> None:
    await s.platform.push_control(
        s.agent_id,
        mode,
        room_id=room_id,
        scope="room" if room_id else "agent",
        correlation_id=correlation_id,
    )


async def test_interrupt_cancels_the_turn_and_consumes_the_message(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Cancelled, nothing posted, marked processed, the room goes on (official runtime,
    "Testable behaviours" 83)."""
    release = trio.Event()
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(_blocking("hang", release))
            async with serving(s.make_agent(adapter)):
                hung = await s.post(room_id, "hang here")
                await s.wait_for(lambda: adapter.running == 1)
                await _push(s, "interrupt", room_id, "c-1")
                await s.wait_for(lambda: s.processed(room_id, hung))
                assert adapter.calls[0].cancelled
                assert s.agent_texts(room_id) == []
                after = token()
                mid = await s.post(room_id, after)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert s.replies_to(room_id, after) == 1
                assert len(adapter.calls) == 2


async def test_control_is_deduplicated_by_correlation_id(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The second signal with the same correlation id is ignored (official runtime, "Testable
    behaviours" 80)."""
    release = trio.Event()
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(_blocking("hang", release))
            agent = s.make_agent(adapter)
            async with serving(agent):
                first = await s.post(room_id, "hang one")
                await s.wait_for(lambda: adapter.running == 1)
                await _push(s, "interrupt", room_id, "same-id")
                await s.wait_for(lambda: s.processed(room_id, first))
                second = await s.post(room_id, "hang two")
                await s.wait_for(lambda: adapter.running == 1)
                await _push(s, "interrupt", room_id, "same-id")
                engine = agent._engine
                assert engine is not None
                await s.wait_for(lambda: engine.control.duplicates == 1)
                assert adapter.running == 1  # not interrupted
                release.set()
                await s.wait_for(lambda: s.processed(room_id, second))
                assert adapter.calls[1].finished


async def test_stop_pauses_and_play_replays(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Stop leaves the message processing and runs nothing new; play re-runs it, then the queued
    one, in order (official runtime, "Testable behaviours" 85, 86, 87)."""
    release = trio.Event()
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(_blocking("hang", release))
            agent = s.make_agent(adapter)
            async with serving(agent):
                stopped_word = token("hang")
                stopped = await s.post(room_id, stopped_word)
                await s.wait_for(lambda: adapter.running == 1)
                await _push(s, "stop", room_id, "stop-1")
                await s.wait_for(lambda: adapter.running == 0)
                assert adapter.calls[0].cancelled
                assert s.status(room_id, stopped) == "processing"
                queued_word = token("q")
                queued = await s.post(room_id, queued_word)
                room = agent._engine.room(room_id)  # type: ignore[union-attr]
                assert room is not None
                await s.wait_for(lambda: room.statistics().inbox_depth == 0)
                assert len(adapter.calls) == 1
                assert room.stopped
                release.set()
                await _push(s, "play", room_id, "play-1")
                await s.wait_for(
                    lambda: s.processed(room_id, stopped) and s.processed(room_id, queued)
                )
            contents = adapter.contents(room_id)
            assert stopped_word in contents[1]
            assert queued_word in contents[2]
            assert s.replies_to(room_id, stopped_word) == 1
            assert s.replies_to(room_id, queued_word) == 1


async def test_agent_wide_stop_reaches_every_room(band_platform) -> None:  # type: ignore[no-untyped-def]
    """scope=agent without room_id applies to every served room (official runtime, "Testable
    behaviours" 79)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(3)]
            agent = s.make_agent(RecordingAdapter())
            async with serving(agent):
                await _push(s, "stop", None, "all-stop")
                engine = agent._engine
                assert engine is not None
                await s.wait_for(lambda: all(r.stopped for r in engine.serving_rooms().values()))
                await _push(s, "play", None, "all-play")
                await s.wait_for(
                    lambda: not any(r.stopped for r in engine.serving_rooms().values())
                )
                mid = await s.post(rooms[0], "after play")
                await s.wait_for(lambda: s.processed(rooms[0], mid))
