"""Participants, end to end: the ``on_participant_added`` /
``on_participant_removed`` callbacks (official runtime, "Other knobs";
"Testable behaviours" 65), and rosters refreshed after a reconnect (beats
"Reconnect reconciliation" and "Weak spots" 11): a participant added while the
agent's socket was down (its ``participant_added`` push never seen) shows up in
the next turn's ``participants_msg``.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from band_trio.agent import Agent, open_agent
from band_trio.errors import BandConfigError
from band_trio.local.faults import Fault
from band_trio.runtime.config import AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.runtime.room import _worker as room_module
from band_trio.wire.backoff import ReconnectPolicy
from band_trio.wire.events import ParticipantAdded, ParticipantRemoved
from band_trio.wire.link import LinkConfig

from .harness import (
    FAST_REST,
    RecordingAdapter,
    Scene,
    fast_config,
    scene,
    serving,
    token,
)


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
    """Each callback gets (room_id, event) once, after the roster took the event (added:
    present; removed: gone); Agent.create/open_agent wire them (official runtime, "Testable
    behaviours" 65)."""
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
                s.watch(agent)
                await s.human.add_participant(room_id, other.id)
                await s.wait_for(lambda: len(rec.seen) == 1)
                assert rec.seen == [("added", room_id, other.id, True)]
                await s.human.remove_participant(room_id, other.id)
                await s.wait_for(lambda: len(rec.seen) == 2)
                assert rec.seen[1] == ("removed", room_id, other.id, False)
                # Turns are unaffected, and the roster change reaches the next one.
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert s.replies_to(room_id, word) == 1
            assert len(rec.seen) == 2


async def test_a_failing_callback_is_logged_and_swallowed(
    band_platform, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """Callback exceptions do not affect processing (official runtime, "Testable behaviours" 65)."""
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
            s.watch(agent)
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                with caplog.at_level(logging.ERROR, logger="band_trio.runtime.room"):
                    await s.human.add_participant(room_id, other.id)
                    await s.wait_for(lambda: len(rec.seen) == 1)
                    word = token()
                    mid = await s.post(room_id, word)
                    await s.wait_for(lambda: s.processed(room_id, mid))
                assert "callback failed" in caplog.text
                assert s.replies_to(room_id, word) == 1
                # No removed callback was given: removing is handled silently.
                await s.human.remove_participant(room_id, other.id)
                word2 = token()
                mid2 = await s.post(room_id, word2)
                await s.wait_for(lambda: s.processed(room_id, mid2))
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
            s.watch(agent)
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                with caplog.at_level(logging.WARNING, logger="band_trio.runtime.room"):
                    await s.human.add_participant(room_id, other.id)
                    word = token()
                    mid = await s.post(room_id, word)
                    await s.wait_for(lambda: s.processed(room_id, mid))
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


# ------------------------------------------------------------------ rosters refreshed after a
# reconnect
UPGRADE = r"/api/v1/socket/websocket$"
ROOM_LISTING = r"/api/v1/agent/chats$"


def _fast_reconnect() -> ReconnectPolicy:
    # Reconnect within a fraction of a second (the policy is tested in tests/wire).
    return ReconnectPolicy(base=0.05, cap=0.2, rapid_uptime=0.0)


def _agent(s: Scene, adapter: Any) -> Agent:
    settings = AgentSettings(
        agent_id=s.agent_id,
        api_key=s.agent_key,
        rest_url=s.platform.rest_url,
        ws_url=s.platform.ws_url,
    )
    runtime = PlatformRuntime(
        settings,
        fast_config(),
        rest_options={"config": FAST_REST},
        link_options={"config": LinkConfig(reconnect_policy=_fast_reconnect)},
    )
    return Agent(runtime, adapter, handle_signals=False)


async def _add_while_disconnected(
    s: Scene, room_id: str, *, slow_listing: bool = False
) -> Fault | None:
    """Drop the agent's socket, add a participant (a second agent of the same
    owner) to the room while it cannot reconnect, then let it reconnect.

    With ``slow_listing``, the room listing that follows the reconnect hangs
    for 3 s (the fault rule is returned)."""
    platform = s.platform
    refused = platform.faults.add("GET", UPGRADE, 503, 10_000, retry_after=0.1)
    await platform.drop_agent_sockets(s.agent_id)
    await s.wait_for(lambda: refused.hits >= 1)  # a reconnect was refused
    other = platform.register_agent("Zed Zulu", "a helper")
    await s.human.add_participant(room_id, other.id)
    platform.faults.clear()
    if slow_listing:
        # No checkpoint since the clear: the reconnect cannot have listed yet.
        return platform.faults.add("GET", ROOM_LISTING, 503, 1, delay=3.0)
    return None


async def test_participant_added_while_disconnected_reaches_the_next_turn(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = _agent(s, adapter)
            async with serving(agent):
                first = await s.post(room_id, token("before"))
                await s.wait_for(lambda: s.processed(room_id, first))
                before = adapter.calls[0].participants_msg
                assert before is not None
                assert "Zed Zulu" not in before
                await _add_while_disconnected(s, room_id)
                await s.wait_for(lambda: agent.statistics().reconnects >= 1)
                await s.wait_for(lambda: band_platform.connected(s.agent_id))
                second = await s.post(room_id, token("after"))
                await s.wait_for(lambda: s.processed(room_id, second))
            (_, call) = adapter.calls
            assert call.participants_msg is not None
            assert "Zed Zulu (Agent)" in call.participants_msg


async def test_message_right_after_reconnect_sees_the_refreshed_roster(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The roster is owed from the moment the socket is back, not only once the
    room listing (slow here) has been re-read: a message that arrives in
    between still gets the new participant."""
    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = _agent(s, adapter)
            async with serving(agent):
                first = await s.post(room_id, token("before"))
                await s.wait_for(lambda: s.processed(room_id, first))
                # The re-listing after the reconnect hangs for a while.
                slow = await _add_while_disconnected(s, room_id, slow_listing=True)
                assert slow is not None
                await s.wait_for(lambda: agent.statistics().reconnects >= 1)
                await s.wait_for(lambda: slow.hits == 1)
                await s.wait_for(lambda: band_platform.connected(s.agent_id))
                second = await s.post(room_id, token("after"))
                await s.wait_for(lambda: s.processed(room_id, second))
            (_, call) = adapter.calls
            assert call.participants_msg is not None
            assert "Zed Zulu (Agent)" in call.participants_msg
