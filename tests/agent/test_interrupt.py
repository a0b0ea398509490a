"""The adapter's optional ``on_interrupt(room_id, mode)`` hook, end to end
(official runtime, "agent.control interrupt / stop / play"; "Testable behaviours" 84, 85).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import logging

import pytest
import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage, SimpleAdapter
from band_trio.runtime import engine as engine_module

from .harness import RecordingAdapter, Scene, scene, serving, token


class HookAdapter(RecordingAdapter):
    """Records ``on_interrupt`` calls; ``hang_in`` rooms never return from it,
    ``fail_in`` rooms raise."""

    def __init__(self, *, hang_in: str | None = None, fail_in: str | None = None) -> None:
        super().__init__(_hang_on("hang"))
        self.interrupts: list[tuple[str, str]] = []
        self.hook_cancelled: list[str] = []
        self.hang_in = hang_in
        self.fail_in = fail_in

    async def on_interrupt(self, room_id: str, mode: str) -> None:
        self.interrupts.append((room_id, mode))
        if room_id == self.fail_in:
            raise RuntimeError("hook failed")
        if room_id == self.hang_in:
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.hook_cancelled.append(room_id)
                raise


def _hang_on(word: str):  # type: ignore[no-untyped-def]
    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if word in msg.content:
            await trio.sleep_forever()
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


async def test_interrupt_between_turns_calls_the_hook_once(band_platform) -> None:  # type: ignore[no-untyped-def]
    """An interrupt with no turn running affects nothing, but the hook is called once with mode
    "interrupt"; a duplicate signal does not call it again (official runtime, "Testable
    behaviours" 84)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = HookAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                await _push(s, "interrupt", room_id, "i-1")
                await s.wait_for(lambda: adapter.interrupts == [(room_id, "interrupt")])
                await _push(s, "interrupt", room_id, "i-1")
                engine = agent._engine
                assert engine is not None
                await s.wait_for(lambda: engine.control.duplicates == 1)
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert s.replies_to(room_id, word) == 1
                assert adapter.interrupts == [(room_id, "interrupt")]


async def test_stop_mid_turn_notifies_once_and_play_does_not(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Stop cancels the turn, leaves the message processing and notifies the adapter once with
    mode "stop"; play resumes without calling the hook (official runtime, "Testable behaviours"
    85)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = HookAdapter()
            async with serving(s.make_agent(adapter)) as agent:
                hung = await s.post(room_id, "hang here")
                await s.wait_for(lambda: adapter.running == 1)
                await _push(s, "stop", room_id, "s-1")
                await s.wait_for(lambda: adapter.interrupts == [(room_id, "stop")])
                await s.wait_for(lambda: adapter.running == 0)
                assert adapter.calls[0].cancelled
                assert s.status(room_id, hung) == "processing"
                adapter.behaviour = _hang_on("never-used-word")
                await _push(s, "play", room_id, "p-1")
                await s.wait_for(lambda: s.processed(room_id, hung))
                engine = agent._engine
                assert engine is not None
                assert engine.control.applied == 2
                assert adapter.interrupts == [(room_id, "stop")]


async def test_agent_scope_signal_notifies_every_room(band_platform) -> None:  # type: ignore[no-untyped-def]
    """An agent-scope interrupt reaches every served room; the hook is
    called once per room (official runtime, "agent.control interrupt / stop / play")."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            rooms = {await s.new_room(), await s.new_room()}
            adapter = HookAdapter()
            async with serving(s.make_agent(adapter)):
                await _push(s, "interrupt", None, "a-1")
                await s.wait_for(lambda: len(adapter.interrupts) == 2)
                assert sorted(adapter.interrupts) == sorted((r, "interrupt") for r in rooms)


async def test_a_hanging_or_failing_hook_blocks_nothing(
    band_platform, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """A hook that has not returned holds neither later signals nor other
    rooms' hooks; a hook that raises is logged and swallowed; turns go on in
    every room."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            slow = await s.new_room()
            broken = await s.new_room()
            calm = await s.new_room()
            adapter = HookAdapter(hang_in=slow, fail_in=broken)
            async with serving(s.make_agent(adapter)):
                with caplog.at_level(logging.WARNING, logger="band_trio.runtime.engine"):
                    await _push(s, "interrupt", slow, "h-1")
                    await s.wait_for(lambda: (slow, "interrupt") in adapter.interrupts)
                    await _push(s, "interrupt", broken, "h-2")
                    await _push(s, "interrupt", calm, "h-3")
                    await _push(s, "stop", calm, "h-4")
                    await s.wait_for(lambda: len(adapter.interrupts) == 4)
                    # Calls run concurrently, so their order is not asserted.
                    assert sorted(adapter.interrupts[1:]) == sorted(
                        [(broken, "interrupt"), (calm, "interrupt"), (calm, "stop")]
                    )
                    # The slow hook (2 s deadline) is still running meanwhile.
                    assert adapter.hook_cancelled == []
                assert "hook failed" in caplog.text
                await _push(s, "play", calm, "h-5")
                posted = {}
                for room_id in (slow, broken, calm):
                    word = token()
                    posted[room_id] = (await s.post(room_id, word), word)
                for room_id, (mid, word) in posted.items():
                    await s.wait_for(lambda r=room_id, m=mid: s.processed(r, m))
                    assert s.replies_to(room_id, word) == 1


async def test_a_hanging_hook_is_cancelled_after_its_deadline(
    band_platform, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """One on_interrupt call is bounded: past the deadline it is cancelled and
    a warning is logged; later signals still call the hook."""
    monkeypatch.setattr(engine_module, "_INTERRUPT_HOOK_TIMEOUT", 0.2)
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            slow = await s.new_room()
            adapter = HookAdapter(hang_in=slow)
            async with serving(s.make_agent(adapter)):
                with caplog.at_level(logging.WARNING, logger="band_trio.runtime.engine"):
                    await _push(s, "interrupt", slow, "d-1")
                    await s.wait_for(lambda: adapter.hook_cancelled == [slow])
                assert "took over" in caplog.text
                await _push(s, "stop", slow, "d-2")
                await s.wait_for(lambda: adapter.hook_cancelled == [slow, slow])
                assert adapter.interrupts == [(slow, "interrupt"), (slow, "stop")]


async def test_an_adapter_without_the_hook_is_fine(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The hook is optional: an adapter that keeps SimpleAdapter's no-op default
    sees signals apply as before."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            assert type(adapter).on_interrupt is SimpleAdapter.on_interrupt
            async with serving(s.make_agent(adapter)) as agent:
                await _push(s, "interrupt", room_id, "n-1")
                engine = agent._engine
                assert engine is not None
                await s.wait_for(lambda: engine.control.applied == 1)
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
