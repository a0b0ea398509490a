"""Shutdown: fenced at once, one global deadline, concurrent cleanup (runtime.md §9.9)."""

from __future__ import annotations

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage

from .agent_harness import RecordingAdapter, fast_config, scene, token, wait_until

ROOMS = 12


async def test_shutdown_with_many_rooms_cancels_late_turns_and_cleans_up_concurrently(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    """Every room's turn hangs; shutdown cancels them all after ONE deadline and
    runs every on_cleanup concurrently: each cleanup waits until all of them have
    started, which only happens when they run at the same time."""

    class Adapter(RecordingAdapter):
        def __init__(self) -> None:
            super().__init__(self._hang)
            self.cleanup_started = 0
            self.all_cleaning = trio.Event()

        async def _hang(
            self, adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
        ) -> None:
            await trio.sleep_forever()

        async def on_cleanup(self, room_id: str) -> None:
            self.cleanup_started += 1
            if self.cleanup_started == ROOMS:
                self.all_cleaning.set()
            await self.all_cleaning.wait()
            await super().on_cleanup(room_id)

    with trio.fail_after(40):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(ROOMS)]
            adapter = Adapter()
            agent = s.make_agent(adapter, fast_config(shutdown_timeout=0.2, cleanup_timeout=5.0))
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                ids = {r: await s.post(r, token()) for r in rooms}
                await wait_until(lambda: adapter.running == ROOMS)
                nursery.cancel_scope.cancel()
            assert sorted(adapter.cleanups) == sorted(rooms)
            assert all(c.cancelled for c in adapter.calls)
            # Cancelled turns stay processing (replayed later), not failed.
            assert all(s.status(r, m) == "processing" for r, m in ids.items())


async def test_running_turns_finish_within_the_deadline_and_new_work_is_fenced(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    release = trio.Event()

    async def slow(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        await release.wait()
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(slow)
            agent = s.make_agent(adapter, fast_config(shutdown_timeout=10.0))
            async with trio.open_nursery() as outer, trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                word = token()
                mid = await s.post(room_id, word)
                await wait_until(lambda: adapter.running == 1)
                agent.request_shutdown()
                # Intake is fenced: a message posted now is not run.
                late = await s.post(room_id, token("late"))

                async def release_soon() -> None:
                    await trio.sleep(0.2)
                    release.set()

                outer.start_soon(release_soon)
            assert s.processed(room_id, mid)
            assert s.replies_to(room_id, word) == 1
            assert len(adapter.calls) == 1
            assert s.status(room_id, late) != "processed"
            assert adapter.cleanups == [room_id]
