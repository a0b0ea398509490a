"""``on_participant_added`` / ``on_participant_removed`` callbacks, end to end
(runtime.md §7.4, §8.65)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from band_trio.agent import Agent, open_agent
from band_trio.errors import BandConfigError
from band_trio.runtime import room as room_module
from band_trio.runtime.config import AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.wire.events import ParticipantAdded, ParticipantRemoved

from .agent_harness import RecordingAdapter, fast_config, scene, token, wait_until


class Recorder:
    """Callbacks that record what they saw, including the roster at call time."""

    def __init__(self) -> None:
        self.agent: Agent | None = None
        self.seen: list[tuple[str, str, str, bool]] = []
        self.fail = False
        self.hang = False
        self.cancelled = 0

    def _in_roster(self, room_id: str, participant_id: str) -> bool:
        assert self.agent is not None
        assert self.agent._engine is not None
        room = self.agent._engine.room(room_id)
        assert room is not None
        return participant_id in room._roster

    async def _record(self, kind: str, room_id: str, event: Any) -> None:
        self.seen.append((kind, room_id, event.id, self._in_roster(room_id, event.id)))
        if self.fail:
            raise RuntimeError("callback failed")
        if self.hang:
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.cancelled += 1
                raise

    async def added(self, room_id: str, event: ParticipantAdded) -> None:
        assert isinstance(event, ParticipantAdded)
        await self._record("added", room_id, event)

    async def removed(self, room_id: str, event: ParticipantRemoved) -> None:
        assert isinstance(event, ParticipantRemoved)
        await self._record("removed", room_id, event)


async def test_callbacks_run_after_the_roster_update(band_platform) -> None:  # type: ignore[no-untyped-def]
    """§8.65: each callback gets (room_id, event) once, after the roster took
    the event (added: present; removed: gone); Agent.create/open_agent wire them."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            rec = Recorder()
            other = band_platform.register_agent("Yara Young", "a helper")
            async with open_agent(
                adapter=RecordingAdapter(),
                agent_id=s.agent_id,
                api_key=s.agent_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=fast_config(),
                on_participant_added=rec.added,
                on_participant_removed=rec.removed,
            ) as agent:
                rec.agent = agent
                await s.human.add_participant(room_id, other.id)
                await wait_until(lambda: len(rec.seen) == 1)
                assert rec.seen == [("added", room_id, other.id, True)]
                await s.human.remove_participant(room_id, other.id)
                await wait_until(lambda: len(rec.seen) == 2)
                assert rec.seen[1] == ("removed", room_id, other.id, False)
                # Turns are unaffected, and the roster change reaches the next one.
                word = token()
                mid = await s.post(room_id, word)
                await wait_until(lambda: s.processed(room_id, mid))
                assert s.replies_to(room_id, word) == 1
            assert len(rec.seen) == 2


async def test_a_failing_callback_is_logged_and_swallowed(
    band_platform, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """§8.65: callback exceptions do not affect processing."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            rec = Recorder()
            rec.fail = True
            other = band_platform.register_agent("Xavi Xu", "a helper")
            agent = Agent.create(
                adapter=RecordingAdapter(),
                agent_id=s.agent_id,
                api_key=s.agent_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=fast_config(),
                handle_signals=False,
                on_participant_added=rec.added,
            )
            rec.agent = agent
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                with caplog.at_level(logging.ERROR, logger="band_trio.runtime.room"):
                    await s.human.add_participant(room_id, other.id)
                    await wait_until(lambda: len(rec.seen) == 1)
                    word = token()
                    mid = await s.post(room_id, word)
                    await wait_until(lambda: s.processed(room_id, mid))
                assert "callback failed" in caplog.text
                assert s.replies_to(room_id, word) == 1
                # No removed callback was given: removing is handled silently.
                await s.human.remove_participant(room_id, other.id)
                word2 = token()
                mid2 = await s.post(room_id, word2)
                await wait_until(lambda: s.processed(room_id, mid2))
                assert len(rec.seen) == 1
                nursery.cancel_scope.cancel()


async def test_a_hanging_callback_is_cancelled_after_its_deadline(
    band_platform, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """A callback that never returns holds its room only until its deadline."""
    monkeypatch.setattr(room_module, "_PARTICIPANT_CALLBACK_TIMEOUT", 0.2)
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            rec = Recorder()
            rec.hang = True
            other = band_platform.register_agent("Wren Wu", "a helper")
            settings = AgentSettings(
                agent_id=s.agent_id,
                api_key=s.agent_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
            )
            agent = Agent(
                PlatformRuntime(settings, fast_config()),
                RecordingAdapter(),
                handle_signals=False,
                on_participant_added=rec.added,
            )
            rec.agent = agent
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                with caplog.at_level(logging.WARNING, logger="band_trio.runtime.room"):
                    await s.human.add_participant(room_id, other.id)
                    word = token()
                    mid = await s.post(room_id, word)
                    await wait_until(lambda: s.processed(room_id, mid))
                assert rec.cancelled == 1
                assert "took over" in caplog.text
                nursery.cancel_scope.cancel()


def test_a_callback_that_is_not_callable_is_refused() -> None:
    settings = AgentSettings(
        agent_id="a1", api_key="k", rest_url="http://127.0.0.1:1", ws_url="ws://127.0.0.1:1/ws"
    )
    with pytest.raises(BandConfigError, match="on_participant_removed"):
        Agent(
            PlatformRuntime(settings, fast_config()),
            RecordingAdapter(),
            on_participant_removed="nope",  # type: ignore[arg-type]
        )
