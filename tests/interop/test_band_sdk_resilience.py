"""The official band-sdk agent through the platform's harder paths: a dropped
socket (reconnect, rejoin with fresh join_refs, /next resync), a duplicate
connection (``supersede``), and stop/play control (``agent.control`` plus the
stopped-room gates: protocol, "Stopped executions").

Each test asserts platform state under a deadline and shows the peer's log on
failure; the peer's own warnings are the check that it accepted every frame.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.interop.scenario import (
    exactly_once_problems,
    human_session,
    make_rooms,
    post_round,
    run_echo_rounds,
    settled,
)
from tests.interop.sdk_peer import running_sdk_echo

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # peers run as real processes

DEADLINE = 60


def all_topics(agent_id: str, rooms: list[str]) -> set[str]:
    return {f"agent_control:{agent_id}", f"agent_rooms:{agent_id}"} | {
        f"{kind}:{room}" for room in rooms for kind in ("chat_room", "room_participants")
    }


async def test_official_sdk_recovers_when_the_platform_drops_its_socket(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    platform = band_platform
    agent = platform.register_agent("SDK Reconnect", "Echo agent that loses its socket")
    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            async with running_sdk_echo(band_sdk_venv_python, platform, agent, tmp_path) as peer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(peer.fail_if_exits)
                    topics = all_topics(agent.id, rooms)
                    await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))
                    (first,) = platform.hub.connections(agent.id)

                    # Refuse every upgrade while the agent is away, so the messages
                    # below are certainly posted while it has no socket (no timing
                    # assumption about its reconnect delay).
                    platform.faults.add("GET", r"^/api/v1/socket/websocket$", 503, count=10_000)
                    # No close frame: the client sees an abnormal drop (1006).
                    assert await platform.drop_agent_sockets(agent.id) == 1
                    # Posted while the agent is away: no push can reach it, so
                    # only the /next resync after the reconnect can answer these.
                    missed = await post_round(human, agent.id, agent.handle, rooms, "missed")
                    assert platform.hub.connections(agent.id) == []
                    platform.faults.clear()

                    def rejoined() -> bool:
                        conns = platform.hub.connections(agent.id)
                        return (
                            len(conns) == 1
                            and conns[0].id != first.id
                            and topics <= set(conns[0].topics)
                        )

                    await platform.wait_for(rejoined)
                    await platform.wait_for(
                        lambda: all(settled(platform, agent.id, t) for t in missed)
                    )
                    # And the rejoined topics carry pushes again.
                    after = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                    triggers[:] = missed + after
                    nursery.cancel_scope.cancel()

                assert exactly_once_problems(platform, agent.id, triggers) == []
                assert any(peer.dispatched_from_push(t.room_id, t.message_id) for t in after)


async def test_official_sdk_accepts_supersede_and_the_newer_connection_serves(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    platform = band_platform
    agent = platform.register_agent("SDK Twice", "Echo agent started twice")
    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 1)
            topics = all_topics(agent.id, rooms)
            async with running_sdk_echo(
                band_sdk_venv_python, platform, agent, tmp_path, name="older"
            ) as older:
                await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))
                (old_conn,) = platform.hub.connections(agent.id)
                # A second instance (its own TMPDIR, so the SDK's host lock
                # does not stop it) takes over: the platform default policy.
                async with running_sdk_echo(
                    band_sdk_venv_python, platform, agent, tmp_path, name="newer"
                ) as newer:
                    # The older agent reads `supersede` as terminal and stops cleanly.
                    assert await older.process.wait() == 0
                    assert "WebSocket connection superseded: reason=session.already_connected" in (
                        older.log()
                    )
                    # (Its shutdown warnings about topics already gone are the SDK's own.)
                    assert older.rejected_frames() == []

                    def newer_serves() -> bool:
                        conns = platform.hub.connections(agent.id)
                        return (
                            len(conns) == 1
                            and conns[0].id != old_conn.id
                            and topics <= set(conns[0].topics)
                        )

                    await platform.wait_for(newer_serves)
                    triggers[:] = await run_echo_rounds(
                        platform, human, agent.id, agent.handle, rooms
                    )
                    assert exactly_once_problems(platform, agent.id, triggers) == []
                    assert platform.statistics().supersedes == 1
                    assert newer.complaints() == []


async def test_official_sdk_honours_stop_and_play(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    platform = band_platform
    agent = platform.register_agent("SDK Stoppable", "Echo agent that gets paused")
    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            stopped_room, running_room = rooms
            async with running_sdk_echo(band_sdk_venv_python, platform, agent, tmp_path) as peer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(peer.fail_if_exits)
                    topics = all_topics(agent.id, rooms)
                    await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))
                    await platform.push_control(agent.id, "stop", room_id=stopped_room)
                    held = await post_round(human, agent.id, agent.handle, [stopped_room], "held")
                    # The other room keeps working meanwhile. (The held message's
                    # push went out first on the same socket, so by the time the
                    # other room is answered the SDK has seen it.)
                    passing = await run_echo_rounds(
                        platform, human, agent.id, agent.handle, [running_room]
                    )
                    (held_trigger,) = held
                    assert not settled(platform, agent.id, held_trigger)
                    held_delivery = (
                        platform.state.rooms[stopped_room]
                        .by_id[held_trigger.message_id]
                        .deliveries[agent.id]
                    )
                    assert held_delivery.attempts == []  # claims were refused (204), not run

                    await platform.push_control(agent.id, "play", room_id=stopped_room)
                    await platform.wait_for(lambda: settled(platform, agent.id, held_trigger))
                    triggers[:] = held + passing
                    nursery.cancel_scope.cancel()

                assert exactly_once_problems(platform, agent.id, triggers) == []
                # The only complaint allowed: a claim of the held message that
                # the stopped room refused (204) before the SDK paused it.
                refused = f"Could not claim message {held_trigger.message_id}"
                assert [c for c in peer.complaints() if refused not in c] == []


async def test_official_sdk_follows_roster_and_room_changes(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    # participant_added / participant_removed / room_removed / room_deleted
    # pushes must pass band-sdk-core's strict validator
    # (protocol, "agent_rooms:<agent_id>"; "room_participants:<room_id>").
    platform = band_platform
    agent = platform.register_agent("SDK Roster", "Echo agent whose rooms change")
    other = platform.register_agent("Roster Peer", "Joins and leaves rooms")

    def room_topics_of(room: str) -> set[str]:
        return {f"chat_room:{room}", f"room_participants:{room}"}

    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 3)
            kept, left, deleted = rooms
            async with running_sdk_echo(band_sdk_venv_python, platform, agent, tmp_path) as peer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(peer.fail_if_exits)
                    topics = all_topics(agent.id, rooms)
                    await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))

                    await human.add_participant(kept, other.id)
                    await human.remove_participant(kept, other.id)
                    # The roster changes went out on the same socket before
                    # this message, so once it is answered they were handled.
                    triggers[:] = await run_echo_rounds(
                        platform, human, agent.id, agent.handle, [kept]
                    )

                    await human.remove_participant(left, agent.id)  # room_removed
                    await platform.wait_for(
                        lambda: not room_topics_of(left) & platform.hub.joined_topics(agent.id)
                    )
                    await human.delete_rooms([deleted])  # room_deleted
                    await platform.wait_for(
                        lambda: not room_topics_of(deleted) & platform.hub.joined_topics(agent.id)
                    )
                    # The room it kept still works.
                    triggers += await run_echo_rounds(
                        platform, human, agent.id, agent.handle, [kept]
                    )
                    nursery.cancel_scope.cancel()

                assert exactly_once_problems(platform, agent.id, triggers) == []
                running_log = peer.log()
                # After a clean stop every frame it received has been handled
                # (or dropped, which `rejected_frames` would show).
                assert await peer.stop() == 0
                assert peer.rejected_frames() == []

                # Some warnings are the SDK's own race: told it left `left` (the
                # participant_removed naming itself arrives before room_removed),
                # it re-reads that room's roster or context and gets the 404 a
                # non-member must get. Anything else is a finding.
                def benign(line: str) -> bool:
                    return "code='not_found'" in line and (
                        f"Failed to load participants for room {left}" in line
                        or "Context hydration failed" in line
                    )

                assert [c for c in peer.complaints(running_log) if not benign(c)] == []


async def test_official_sdk_drains_a_backlog_then_a_burst_in_order(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    # Ten messages per room wait before the agent starts (the /next backlog,
    # oldest first), ten more arrive as fast as the human can post them (the
    # push path under load): each is answered once, in posting order per room.
    platform = band_platform
    agent = platform.register_agent("SDK Backlog", "Echo agent with a queue")
    per_round = 10
    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            for n in range(per_round):
                triggers += await post_round(human, agent.id, agent.handle, rooms, f"backlog{n}")
            async with running_sdk_echo(band_sdk_venv_python, platform, agent, tmp_path) as peer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(peer.fail_if_exits)
                    topics = all_topics(agent.id, rooms)
                    await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))
                    for n in range(per_round):
                        triggers += await post_round(
                            human, agent.id, agent.handle, rooms, f"burst{n}"
                        )
                    await platform.wait_for(
                        lambda: all(settled(platform, agent.id, t) for t in triggers)
                    )
                    nursery.cancel_scope.cancel()

                assert exactly_once_problems(platform, agent.id, triggers) == []
                for room in rooms:
                    posted = [t.token for t in triggers if t.room_id == room]
                    answered = [
                        token
                        for m in platform.state.rooms[room].messages
                        if m.sender_id == agent.id
                        for token in posted
                        if token in m.content
                    ]
                    assert answered == posted
                assert peer.rejected_frames() == []


async def test_official_sdk_with_reject_policy_refuses_to_take_over(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    # on_conflict=reject on the first connect: the platform answers 409
    # connection_conflict, the SDK gives up ("agent already running") and the
    # running instance keeps its socket and keeps answering.
    platform = band_platform
    agent = platform.register_agent("SDK Guarded", "Must not be taken over")
    async with human_session(platform, agent.id) as (human, triggers):
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 1)
            topics = all_topics(agent.id, rooms)
            async with running_sdk_echo(
                band_sdk_venv_python, platform, agent, tmp_path, name="running"
            ) as running:
                await platform.wait_for(lambda: topics <= platform.hub.joined_topics(agent.id))
                (live,) = platform.hub.connections(agent.id)
                async with running_sdk_echo(
                    band_sdk_venv_python,
                    platform,
                    agent,
                    tmp_path,
                    name="late",
                    on_conflict="reject",
                ) as late:
                    assert await late.process.wait() != 0
                    # The SDK read the 409 body as its "agent already running".
                    assert "band.core.exceptions.AgentAlreadyRunningError" in late.log()
                    assert "an active connection already exists for this agent" in late.log()
                assert [c.id for c in platform.hub.connections(agent.id)] == [live.id]
                assert platform.statistics().supersedes == 0
                triggers[:] = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                assert exactly_once_problems(platform, agent.id, triggers) == []
                assert running.complaints() == []


async def test_official_sdk_approves_a_contact_request_pushed_to_it(
    band_platform: Any, band_sdk_venv_python: Path, tmp_path: Path
) -> None:
    # With contact handling on, the SDK joins agent_contacts:<id>; the human's
    # request arrives as contact_request_received and the SDK's callback
    # approves it over REST (POST /agent/contacts/requests/respond).
    platform = band_platform
    agent = platform.register_agent("SDK Friendly", "Approves every contact request")
    user = platform.user
    with trio.fail_after(DEADLINE):
        async with (
            running_sdk_echo(
                band_sdk_venv_python, platform, agent, tmp_path, contacts="approve"
            ) as peer,
            httpx.AsyncClient(
                base_url=platform.rest_url, headers={"X-API-Key": user.api_key}, timeout=10
            ) as human_http,
        ):
            contacts_topic = f"agent_contacts:{agent.id}"
            await platform.wait_for(lambda: contacts_topic in platform.hub.joined_topics(agent.id))
            response = await human_http.post(
                "/api/v1/me/contacts/requests",
                json={"contact_request": {"recipient_handle": agent.handle, "message": "hi"}},
            )
            assert response.status_code in (200, 201), response.text
            request_id = response.json()["data"]["id"]

            def approved() -> bool:
                request = platform.state.contact_requests.get(request_id)
                return request is not None and request.status == "approved"

            await platform.wait_for(approved)
            assert any(
                {c.a_id, c.b_id} == {user.id, agent.id} for c in platform.state.contacts.values()
            )
            assert peer.complaints() == []
