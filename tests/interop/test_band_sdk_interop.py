"""Issue 2, item 13: the OFFICIAL band-sdk agent works against the local platform.

The echo agent in ``peers/band_sdk_echo_agent.py`` runs with the band-sdk venv's
python as a separate process (band_trio never imports ``band``). It must
connect, join its rooms (two that exist when it starts, one added while it
runs), and answer every message that mentions it exactly once: each trigger
ends ``processed`` after exactly one successful attempt, with exactly one reply.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.scenario import (
    Human,
    Trigger,
    exactly_once_problems,
    make_rooms,
    replies_to,
    run_echo_rounds,
    unprocessed,
)
from tests.interop.sdk_peer import running_sdk_echo

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # peers run as real processes

#: Start-up of the SDK (imports, /agent/me, connect, joins) plus six turns.
DEADLINE = 60


def room_topic_set(rooms: list[str]) -> set[str]:
    return {f"{kind}:{room}" for room in rooms for kind in ("chat_room", "room_participants")}


async def test_official_band_sdk_agent_echoes_in_three_rooms(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    platform = band_platform
    agent = platform.register_agent("SDK Echo", "Echo agent written with the official band-sdk")
    human = Human(platform.rest_url, platform.user.api_key)
    triggers: list[Trigger] = []
    stage = "making rooms"

    def joined(topics: set[str]) -> bool:
        return topics <= platform.hub.joined_topics(agent.id)

    try:
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            stage = "starting the band-sdk agent"
            async with running_sdk_echo(band_sdk_venv_python, platform, agent, tmp_path) as peer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(peer.fail_if_exits)
                    stage = "waiting for its socket to join the control topics and two rooms"
                    control = {f"agent_control:{agent.id}", f"agent_rooms:{agent.id}"}
                    await platform.wait_for(lambda: joined(control | room_topic_set(rooms)))
                    stage = "waiting for it to join a room added while it runs"
                    rooms += await make_rooms(human, agent.id, 1)
                    await platform.wait_for(lambda: joined(room_topic_set(rooms)))
                    stage = "waiting for answers"
                    triggers = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                    nursery.cancel_scope.cancel()

                stage = "checking the outcome"
                problems = exactly_once_problems(platform, agent.id, triggers)
                assert not problems, problems
                # Mention tokens both ways (protocol, "Mention tokens in content"; "Checked later against the official SDK on a loopback stand-in"): the
                # platform stored the human's `@handle` as `@[[agent id]]`, the
                # SDK showed the adapter `@handle` again, and the platform
                # prefixed the reply with a token for the human it mentions
                # (`@demo/...` in the text is not a mention of `@demo`).
                user = platform.user
                contents = {r.content for t in triggers for r in replies_to(platform, agent.id, t)}
                assert contents == {
                    f"@[[{user.id}]] echo: @{agent.handle} ping {t.token}" for t in triggers
                }
                # The SDK logs (WARNING) every frame or payload it drops, so a
                # clean log means every push and reply was accepted as sent.
                assert peer.complaints() == []
                # Answers from the /next backlog alone would hide a broken push path.
                assert any(peer.dispatched_from_push(t.room_id, t.message_id) for t in triggers)

                stage = "stopping the agent with SIGINT"
                assert await peer.stop() == 0, "the SDK agent did not exit cleanly on SIGINT"
                # A closed socket leaves every topic.
                await platform.wait_for(lambda: not platform.hub.joined_topics(agent.id))
    except Exception:
        print(f"failed while {stage}; platform view: {unprocessed(platform, agent.id, triggers)}")
        raise
    finally:
        with trio.CancelScope(shield=True):
            await human.aclose()
