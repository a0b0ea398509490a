"""Shutdown and cleanup, end to end: intake fenced at once, one global deadline,
concurrent cleanup (beats official runtime, "Weak spots" 9).

Shutdown runs every room's ``on_cleanup`` and then the adapter's
``cleanup_all``, shielded (they may await although ``serve`` was cancelled);
an ``on_cleanup`` or ``cleanup_all`` that hangs is cancelled at
``AgentConfig.cleanup_timeout`` and does not hold the shutdown or other rooms.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import trio
import trio.testing

from band_trio.adapter import AgentToolsProtocol, PlatformMessage

from .harness import RecordingAdapter, fast_config, scene, serving, token

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
                await s.wait_for(lambda: adapter.running == ROOMS)
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
                await s.wait_for(lambda: adapter.running == 1)
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


# ------------------------------------------------------------------ cleanup on shutdown and on
# room removal
class CleanupAdapter(RecordingAdapter):
    """``on_cleanup`` hangs for the rooms in ``hang``; the others take a few
    checkpoints (so an unshielded cleanup would be cancelled at its first
    await). ``cleanup_all`` is recorded, and hangs when ``hang_all`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hang: set[str] = set()
        self.hang_all = False
        self.log: list[str] = []

    async def on_cleanup(self, room_id: str) -> None:
        self.log.append(f"enter {room_id}")
        try:
            if room_id in self.hang:
                await trio.sleep_forever()
            await trio.sleep(0.05)
            await trio.lowlevel.checkpoint()
        except trio.Cancelled:
            self.log.append(f"cancelled {room_id}")
            raise
        self.log.append(f"done {room_id}")
        await super().on_cleanup(room_id)

    async def cleanup_all(self) -> None:
        self.log.append("enter cleanup_all")
        try:
            if self.hang_all:
                await trio.sleep_forever()
            await trio.sleep(0.05)
        except trio.Cancelled:
            self.log.append("cancelled cleanup_all")
            raise
        self.log.append("done cleanup_all")


async def test_shutdown_runs_every_on_cleanup_then_cleanup_all(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Cancelling ``serve`` runs each room's ``on_cleanup`` once and then
    ``cleanup_all`` once, all to completion (shielded); a hanging
    ``on_cleanup`` is cancelled at ``cleanup_timeout`` and holds nothing."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            rooms = [await s.new_room() for _ in range(3)]
            hanging = rooms[0]
            adapter = CleanupAdapter()
            adapter.hang = {hanging}
            agent = s.make_agent(adapter, fast_config(cleanup_timeout=0.5))
            async with serving(agent):
                mid = await s.post(rooms[1], token())
                await s.wait_for(lambda: s.processed(rooms[1], mid))
                assert adapter.log == []
            # serve() has returned: the whole shutdown is over.
            log = adapter.log
            for room_id in rooms[1:]:
                assert log.count(f"enter {room_id}") == 1
                assert log.count(f"done {room_id}") == 1
            assert log.count(f"enter {hanging}") == 1
            assert f"cancelled {hanging}" in log
            assert f"done {hanging}" not in log
            # cleanup_all ran once, last, to completion.
            assert log[-2:] == ["enter cleanup_all", "done cleanup_all"]
            assert log.count("enter cleanup_all") == 1
            assert sorted(adapter.cleanups) == sorted(rooms[1:])


async def test_hanging_cleanup_all_is_bounded(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = CleanupAdapter()
            adapter.hang_all = True
            async with serving(s.make_agent(adapter, fast_config(cleanup_timeout=0.5))):
                pass
            assert adapter.log == [
                f"enter {room_id}",
                f"done {room_id}",
                "enter cleanup_all",
                "cancelled cleanup_all",
            ]


async def test_removed_room_with_hanging_cleanup_blocks_nothing(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Removal runs ``on_cleanup`` once, shielded under the
    deadline; while it hangs, other rooms are served; at the deadline it is
    cancelled, and shutdown later does not run it again (official runtime,
    "Testable behaviours" 74)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            leaving = await s.new_room()
            staying = await s.new_room()
            adapter = CleanupAdapter()
            adapter.hang = {leaving}
            agent = s.make_agent(adapter, fast_config(cleanup_timeout=1.0))
            async with serving(agent):
                await s.human.remove_participant(leaving, s.agent_id)
                await s.wait_for(lambda: f"enter {leaving}" in adapter.log)
                # Hanging cleanup of one room: another room is still answered.
                word = token()
                mid = await s.post(staying, word)
                await s.wait_for(lambda: s.processed(staying, mid))
                await s.wait_for(lambda: f"cancelled {leaving}" in adapter.log)
                await s.wait_for(lambda: leaving not in agent.room_ids)
                assert staying in agent.room_ids
            assert adapter.log.count(f"enter {leaving}") == 1
            assert adapter.log.count(f"enter {staying}") == 1
            s.assert_exactly_once(staying, {mid: word})


class BackgroundAdapter(CleanupAdapter):
    """Runs background work for the agent's lifetime and logs its life."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.started_work = trio.Event()

    async def run_background(self) -> None:
        self.log.append("enter background")
        self.started_work.set()
        if self.fail:
            raise RuntimeError("background work broke")
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.log.append("cancelled background")
            raise


async def test_background_work_runs_while_serving_and_ends_before_cleanup_all(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    """``run_background`` starts once the agent serves, runs alongside the
    turns, and is cancelled before ``cleanup_all`` (after the room's cleanup)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = BackgroundAdapter()
            async with serving(s.make_agent(adapter, fast_config())):
                await adapter.started_work.wait()
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert adapter.log == ["enter background"]
            log = adapter.log
            assert log.count("enter background") == 1
            assert log.index("cancelled background") > log.index(f"done {room_id}")
            assert log[-2:] == ["enter cleanup_all", "done cleanup_all"]


async def test_failing_background_work_is_logged_and_the_agent_serves_on(
    band_platform, caplog
) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = BackgroundAdapter(fail=True)
            async with serving(s.make_agent(adapter, fast_config())):
                await adapter.started_work.wait()
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
            assert "adapter run_background failed" in caplog.text
            assert adapter.log[-2:] == ["enter cleanup_all", "done cleanup_all"]
