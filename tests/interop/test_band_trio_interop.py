"""Issue 2, item 14: the echo scenario of item 13, served by band-trio's own wire
layer (``BandLink`` + ``RestClient``) instead of the official SDK.

The echo agent below uses the wire layer only (not the runtime engine): the
WebSocket is a doorbell, ``/messages/next`` is the mailbox. One task per room
drains ``/next`` (claim, reply, processed) whenever its doorbell rings; the
dispatcher rings a room's doorbell for every ``message_created`` on its topic
and after a reconnect. Doorbells hold one ring, so bursts coalesce and the
dispatcher never blocks.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import trio

from band_trio.errors import (
    AgentAlreadyRunningError,
    RoomExecutionStoppedError,
    SupersededError,
)
from band_trio.wire.events import AgentControl, MessageCreated, RoomAdded
from band_trio.wire.link import BandLink, LinkReconnected, room_topics
from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient
from tests.interop.scenario import (
    Human,
    Trigger,
    exactly_once_problems,
    make_rooms,
    post_round,
    run_echo_rounds,
    settled,
    unprocessed,
)

pytestmark = pytest.mark.interop

DEADLINE = 30


class WireEcho:
    """A minimal echo agent on band-trio's wire layer."""

    def __init__(self, agent_id: str, rest: RestClient, link: BandLink) -> None:
        self.agent_id = agent_id
        self.rest = rest
        self.link = link
        self.doorbells: dict[str, trio.MemorySendChannel[None]] = {}
        self.pushed: set[str] = set()  # ids of the messages announced by a push

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        send, receive = trio.open_memory_channel[Any](100)
        async with trio.open_nursery() as nursery:
            await nursery.start(self.link.serve, send)
            self.nursery = nursery
            async for room in self.rest.iter_chats():
                await self.add_room(room.id)
            task_status.started()
            async with receive:
                async for event in receive:
                    await self.dispatch(event)

    async def add_room(self, room_id: str) -> None:
        if room_id in self.doorbells:
            return
        for topic in room_topics(room_id):
            await self.link.join(topic)
        ring, doorbell = trio.open_memory_channel[None](1)
        self.doorbells[room_id] = ring
        ring.send_nowait(None)  # drain the backlog once at start
        self.nursery.start_soon(self.room_worker, room_id, doorbell)

    def ring(self, room_id: str) -> None:
        bell = self.doorbells.get(room_id)
        if bell is not None:
            # A ring already pending means the next drain sees this message too.
            with contextlib.suppress(trio.WouldBlock):
                bell.send_nowait(None)

    async def dispatch(self, event: Any) -> None:
        if isinstance(event, MessageCreated):
            if not (event.sender_type == "Agent" and event.sender_id == self.agent_id):
                self.pushed.add(event.id)
                self.ring(event.room_id)
        elif isinstance(event, RoomAdded):
            await self.add_room(event.id)
        elif isinstance(event, LinkReconnected):
            for room_id in self.doorbells:
                self.ring(room_id)

    async def room_worker(self, room_id: str, doorbell: trio.MemoryReceiveChannel[None]) -> None:
        async for _ in doorbell:
            while (message := await self.rest.next_message(room_id)) is not None:
                await self.rest.mark_processing(room_id, message.id)
                await self.rest.send_message(
                    room_id,
                    f"echo: {message.content}",
                    [MentionRequest(id=message.sender_id)],
                )
                await self.rest.mark_processed(room_id, message.id)


def room_topic_set(rooms: list[str]) -> set[str]:
    return {topic for room in rooms for topic in room_topics(room)}


async def test_band_trio_wire_layer_echoes_in_three_rooms(band_platform: Any) -> None:
    platform = band_platform
    agent = platform.register_agent("Wire Echo", "Echo agent on band-trio's wire layer")
    human = Human(platform.rest_url, platform.user.api_key)
    link = BandLink(agent_id=agent.id, api_key=agent.api_key, ws_url=platform.ws_url)
    triggers: list[Trigger] = []
    stage = "making rooms"
    try:
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            async with (
                RestClient(base_url=platform.rest_url, api_key=agent.api_key) as rest,
                trio.open_nursery() as nursery,
            ):
                stage = "starting the link and joining two rooms"
                echo = WireEcho(agent.id, rest, link)
                await nursery.start(echo.serve)
                stage = "waiting for it to join a room added while it runs (room_added)"
                rooms += await make_rooms(human, agent.id, 1)
                await platform.wait_for(
                    lambda: room_topic_set(rooms) <= platform.hub.joined_topics(agent.id)
                )
                stage = "waiting for answers"
                triggers = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                nursery.cancel_scope.cancel()
    except Exception:
        print(f"failed while {stage}; platform view: {unprocessed(platform, agent.id, triggers)}")
        print(f"link: {link.statistics()}")
        raise
    finally:
        with trio.CancelScope(shield=True):
            await human.aclose()

    problems = exactly_once_problems(platform, agent.id, triggers)
    assert not problems, f"{problems}\nstate: {unprocessed(platform, agent.id, triggers)}"
    # Joined before anything was posted, so every trigger must have been pushed,
    # and band-trio's decoder must have accepted every frame the platform sent.
    assert {t.message_id for t in triggers} <= echo.pushed
    stats = link.statistics()
    assert (stats.events_rejected, stats.malformed_frames, stats.reconnects) == (0, 0, 0), stats
    # Cancelling the link closed its socket: the platform sees every topic left.
    with trio.fail_after(DEADLINE):
        await platform.wait_for(lambda: not platform.hub.joined_topics(agent.id))


async def test_band_trio_link_recovers_when_the_platform_drops_its_socket(
    band_platform: Any,
) -> None:
    platform = band_platform
    agent = platform.register_agent("Wire Reconnect", "Echo agent that loses its socket")
    human = Human(platform.rest_url, platform.user.api_key)
    link = BandLink(agent_id=agent.id, api_key=agent.api_key, ws_url=platform.ws_url)
    triggers: list[Trigger] = []
    try:
        with trio.fail_after(DEADLINE):
            rooms = await make_rooms(human, agent.id, 2)
            topics = room_topic_set(rooms) | {link.control_topic, link.rooms_topic}
            async with (
                RestClient(base_url=platform.rest_url, api_key=agent.api_key) as rest,
                trio.open_nursery() as nursery,
            ):
                echo = WireEcho(agent.id, rest, link)
                await nursery.start(echo.serve)
                (first,) = platform.hub.connections(agent.id)
                # Refuse every upgrade while the link is away, so the messages
                # below are certainly posted while it has no socket.
                platform.faults.add("GET", r"^/api/v1/socket/websocket$", 503, count=10_000)
                assert await platform.drop_agent_sockets(agent.id) == 1
                # Posted while the link is down: only the resync that follows
                # LinkReconnected can find these.
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
                await platform.wait_for(lambda: all(settled(platform, agent.id, t) for t in missed))
                after = await run_echo_rounds(platform, human, agent.id, agent.handle, rooms)
                triggers = missed + after
                nursery.cancel_scope.cancel()
    except Exception:
        print(
            f"platform view: {unprocessed(platform, agent.id, triggers)}; link: {link.statistics()}"
        )
        raise
    finally:
        with trio.CancelScope(shield=True):
            await human.aclose()

    assert exactly_once_problems(platform, agent.id, triggers) == []
    assert {t.message_id for t in after} <= echo.pushed  # rejoined topics push again
    stats = link.statistics()
    assert (stats.reconnects, stats.events_rejected, stats.malformed_frames) == (1, 0, 0), stats


async def test_band_trio_link_is_superseded_and_refused_like_the_platform_says(
    band_platform: Any,
) -> None:
    platform = band_platform
    agent = platform.register_agent("Wire Twice", "One agent, several links")

    def new_link(on_conflict: str | None = None) -> BandLink:
        return BandLink(
            agent_id=agent.id,
            api_key=agent.api_key,
            ws_url=platform.ws_url,
            on_conflict=on_conflict,
        )

    older, newer = new_link(), new_link()
    older_send, _older_receive = trio.open_memory_channel[Any](100)
    newer_send, _newer_receive = trio.open_memory_channel[Any](100)
    superseded: list[SupersededError] = []
    older_ended = trio.Event()

    async def serve_older(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await older.serve(older_send, task_status=task_status)
        except SupersededError as exc:
            superseded.append(exc)
        finally:
            older_ended.set()

    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_older)
            (old_conn,) = platform.hub.connections(agent.id)
            await nursery.start(newer.serve, newer_send)
            # The platform pushes `supersede` to the older link, which ends
            # with the terminal error instead of fighting back by reconnecting.
            await older_ended.wait()
            assert len(superseded) == 1
            assert superseded[0].retryable is False
            (conn,) = platform.hub.connections(agent.id)
            assert conn.id != old_conn.id
            # A first connect asking not to take over is refused with 409.
            with pytest.raises(AgentAlreadyRunningError):
                await new_link(on_conflict="reject").serve(trio.open_memory_channel[Any](1)[0])
            assert [c.id for c in platform.hub.connections(agent.id)] == [conn.id]
            assert platform.statistics().supersedes == 1
            nursery.cancel_scope.cancel()


async def next_control(receive: trio.MemoryReceiveChannel[Any]) -> AgentControl:
    """The next ``agent.control`` event on the link (other events are skipped)."""
    async for event in receive:
        if isinstance(event, AgentControl):
            return event
    raise AssertionError("the link's event channel closed")


async def test_band_trio_wire_layer_sees_stop_and_play(band_platform: Any) -> None:
    # agent.control pushes decode into AgentControl, and the REST client turns
    # the stopped-room gates (204 /next and /processing, 403 on posts) into
    # None and RoomExecutionStoppedError, per (protocol, "Stopped executions").
    platform = band_platform
    agent = platform.register_agent("Wire Control", "Gets stopped and resumed")
    human = Human(platform.rest_url, platform.user.api_key)
    link = BandLink(agent_id=agent.id, api_key=agent.api_key, ws_url=platform.ws_url)
    send, receive = trio.open_memory_channel[Any](100)
    try:
        with trio.fail_after(DEADLINE):
            (room,) = await make_rooms(human, agent.id, 1)
            async with (
                RestClient(base_url=platform.rest_url, api_key=agent.api_key) as rest,
                trio.open_nursery() as nursery,
            ):
                await nursery.start(link.serve, send)
                message_id = await human.post(room, "work while stopped?", agent.id)

                await platform.push_control(agent.id, "stop", room_id=room)
                stop = await next_control(receive)
                assert (stop.mode, stop.room_id, stop.agent_id) == ("stop", room, agent.id)
                assert await rest.next_message(room) is None
                with pytest.raises(RoomExecutionStoppedError):
                    await rest.mark_processing(room, message_id)
                with pytest.raises(RoomExecutionStoppedError):
                    await rest.send_message(room, "hello", [MentionRequest(id=platform.user.id)])

                await platform.push_control(agent.id, "play", room_id=room)
                play = await next_control(receive)
                assert (play.mode, play.room_id) == ("play", room)
                pending = await rest.next_message(room)
                assert pending is not None
                assert pending.id == message_id
                claim = await rest.mark_processing(room, message_id)
                assert (claim.status, claim.attempt_number) == ("processing", 1)
                await rest.send_message(room, "done", [MentionRequest(id=platform.user.id)])
                assert (await rest.mark_processed(room, message_id)).status == "processed"

                # Agent-wide signals carry a null room_id and the agent scope.
                await platform.push_control(agent.id, "interrupt", scope="agent")
                interrupt = await next_control(receive)
                assert (interrupt.mode, interrupt.scope, interrupt.room_id) == (
                    "interrupt",
                    "agent",
                    None,
                )
                assert interrupt.correlation_id  # the client's dedupe key
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await human.aclose()

    delivery = platform.state.rooms[room].by_id[message_id].deliveries[agent.id]
    assert [(a.number, a.status) for a in delivery.attempts] == [(1, "success")]
    stats = link.statistics()
    assert (stats.events_rejected, stats.malformed_frames) == (0, 0), stats
