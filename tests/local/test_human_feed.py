"""The human live feed, controls and agent view, through `HumanClient` on real loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

from band_trio.errors import NotFoundError, UnprocessableEntityError
from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from band_trio.local._input import Obj
from band_trio.local.human import FeedItem
from band_trio.local.live_feed import LiveFeed
from band_trio.local.model import Push
from band_trio.local.routes import human_feed
from band_trio.local.store import PlatformState
from tests.local.helpers import IO_DEADLINE, agent_http, open_phoenix


class Watcher:
    """Follows one live feed in the background; tests wait on what it has seen."""

    def __init__(self) -> None:
        self.events: list[FeedItem] = []
        self._changed = trio.Event()

    async def follow(
        self,
        client: HumanClient,
        room_id: str | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        async with aclosing(client.stream(room_id)) as stream:
            async for item in stream:
                self.events.append(item)
                if len(self.events) == 1:
                    task_status.started()
                self._changed.set()
                self._changed = trio.Event()

    async def wait_for(self, predicate: Callable[[FeedItem], bool]) -> FeedItem:
        seen = 0
        while True:
            for item in self.events[seen:]:
                if predicate(item):
                    return item
            seen = len(self.events)
            await self._changed.wait()

    def types(self) -> list[str]:
        return [t for t, _, _ in self.events]


@asynccontextmanager
async def watching(client: HumanClient, room_id: str | None = None) -> AsyncIterator[Watcher]:
    watcher = Watcher()
    async with trio.open_nursery() as nursery:
        await nursery.start(watcher.follow, client, room_id)
        yield watcher
        nursery.cancel_scope.cancel()


def is_(kind: str, **data: Any) -> Callable[[FeedItem], bool]:
    return lambda item: item[0] == kind and all(item[2].get(k) == v for k, v in data.items())


async def test_stream_starts_with_resync_then_tells_messages_events_and_statuses(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with watching(human) as feed, agent_http(band_platform, demo) as agent:
            assert feed.events[0] == ("resync", None, {})
            sent = await human.post_message(room, "hello @echo", [demo.handle])
            _, room_id, message = await feed.wait_for(is_("message_created", id=sent["id"]))
            assert room_id == room
            assert message["message_type"] == "text"
            assert message["sender_id"] == band_platform.user.id
            assert message == (await human.list_messages(room))[-1]

            await agent.post(f"/chats/{room}/messages/{sent['id']}/processing")
            await feed.wait_for(is_("message_status", message_id=sent["id"], status="processing"))
            tool = await agent.post(
                f"/chats/{room}/events",
                json={
                    "event": {
                        "content": "lookup",
                        "message_type": "tool_call",
                        "metadata": {"name": "lookup", "args": {"q": "x"}},
                    }
                },
            )
            _, _, event = await feed.wait_for(is_("message_created", id=tool.json()["data"]["id"]))
            assert event["message_type"] == "tool_call"
            assert event["metadata"]["args"] == {"q": "x"}
            await agent.post(f"/chats/{room}/messages/{sent['id']}/processed")
            _, _, status = await feed.wait_for(is_("message_status", status="processed"))
            assert status == {
                "message_id": sent["id"],
                "agent_id": demo.id,
                "status": "processed",
                "attempt": 1,
                "interrupted": False,
            }
            statuses = [d["status"] for t, _, d in feed.events if t == "message_status"]
            assert statuses == ["processing", "processed"]


async def test_agent_activity_working_idle_stopped_and_connected(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with watching(human) as feed, agent_http(band_platform, demo) as agent:
            await agent.post(
                f"/chats/{room}/activity",
                json={"working": True, "activity": {"kind": "tool_call", "name": "lookup"}},
            )
            _, room_id, working = await feed.wait_for(is_("agent_activity", status="working"))
            assert room_id == room
            assert working == {
                "agent_id": demo.id,
                "status": "working",
                "activity": {"kind": "tool_call", "name": "lookup"},
                "stopped": False,
                "connected": False,
            }
            await agent.post(f"/chats/{room}/activity", json={"working": False})
            await feed.wait_for(is_("agent_activity", status="idle", stopped=False))
            await human.control(room, "stop")
            await feed.wait_for(is_("agent_activity", stopped=True))
            await human.control(room, "play")
            await feed.wait_for(is_("agent_activity", stopped=False, connected=False))
            async with open_phoenix(band_platform, demo.api_key, demo.id):
                await feed.wait_for(is_("agent_activity", connected=True))
            await feed.wait_for(lambda item: item == feed.events[-1] and not item[2]["connected"])


async def test_rooms_and_participants_are_told_to_their_users_only(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    other = band_platform.create_user("Other", "other")
    with trio.fail_after(IO_DEADLINE):
        async with (
            HumanClient(base_url=band_platform.rest_url, api_key=other.api_key) as stranger,
            watching(stranger) as theirs,
            watching(human) as mine,
        ):
            created = await human.create_room("planning")
            _, room_id, data = await mine.wait_for(is_("room_added"))
            assert room_id == created["id"]
            assert data["room"]["title"] == "planning"
            await human.add_participant(created["id"], demo.id)
            _, _, added = await mine.wait_for(is_("participant_added"))
            assert added["participant"]["id"] == demo.id
            await human.remove_participant(created["id"], demo.id)
            await mine.wait_for(is_("participant_removed"))
            # The stranger's own room proves its stream is live and was told nothing else.
            theirs_room = await stranger.create_room("theirs")
            await theirs.wait_for(is_("room_added"))
            assert [(t, r) for t, r, _ in theirs.events] == [
                ("resync", None),
                ("room_added", theirs_room["id"]),
            ]


async def test_a_room_stream_carries_only_that_room(
    human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        other = await human.create_room("elsewhere")
        await human.add_participant(other["id"], demo.id)
        async with watching(human, room) as feed:
            await human.post_message(other["id"], "not here", [demo.handle])
            here = await human.post_message(room, "here", [demo.handle])
            await feed.wait_for(is_("message_created", id=here["id"]))
            assert {r for _, r, _ in feed.events[1:]} == {room}
        with pytest.raises(NotFoundError):
            async with aclosing(human.stream("not-a-room")) as stream:
                await anext(stream)


async def test_control_sends_agent_control_to_the_room_agents(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    second = band_platform.register_agent("Second", "another agent")
    await human.add_participant(room, second.id)
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            topic = f"agent_control:{demo.id}"
            ref = "1"
            await ws.send_message(f'["{ref}","{ref}","{topic}","phx_join",{{}}]')
            await ws.get_message()
            assert await human.control(room, "interrupt") == [demo.id, second.id]
            frame = await ws.get_message()
            assert '"agent.control"' in frame
            assert '"mode":"interrupt"' in frame
            assert f'"room_id":"{room}"' in frame
            assert await human.control(room, "stop", second.id) == [second.id]
        statuses = {a["id"]: a for a in await human.agent_status(room)}
        assert statuses[second.id]["stopped_rooms"] == [room]
        assert statuses[demo.id]["stopped_rooms"] == []
        with pytest.raises(UnprocessableEntityError):
            await human.control(room, "pause")
        with pytest.raises(NotFoundError):
            await human.control(room, "stop", band_platform.user.id)
        outsider = await human.create_room("no agents here")
        assert await human.control(outsider["id"], "interrupt") == []
        stranger = band_platform.create_user("Stranger", "stranger")
        async with HumanClient(base_url=band_platform.rest_url, api_key=stranger.api_key) as them:
            with pytest.raises(NotFoundError):
                await them.control(room, "interrupt")


async def test_agent_status_counts_deliveries_and_reports_connection(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        first = await human.post_message(room, "one", [demo.handle])
        second = await human.post_message(room, "two", [demo.handle])
        await human.post_message(room, "three", [demo.handle])
        async with agent_http(band_platform, demo) as agent:
            await agent.post(f"/chats/{room}/messages/{first['id']}/processing")
            await agent.post(f"/chats/{room}/messages/{first['id']}/processed")
            await agent.post(f"/chats/{room}/messages/{second['id']}/processing")
            await agent.post(f"/chats/{room}/messages/{second['id']}/failed", json={"error": "x"})
            await agent.post(f"/chats/{room}/activity", json={"working": True})
        async with open_phoenix(band_platform, demo.api_key, demo.id):
            await band_platform.wait_for(lambda: band_platform.state.is_online(demo.id))
            (status,) = [a for a in await human.agent_status() if a["id"] == demo.id]
        assert status == {
            "id": demo.id,
            "name": demo.name,
            "handle": demo.handle,
            "connected": True,
            "status": "working",
            "stopped_rooms": [],
            "messages": {"delivered": 1, "processing": 0, "processed": 1, "failed": 1},
        }
        someone = band_platform.create_user("Someone", "someone")
        theirs = band_platform.register_agent("Not Mine", "", owner=someone)
        assert theirs.id not in {a["id"] for a in await human.agent_status()}


async def read_stream_until(
    platform: LocalPlatform, query: str, marker: bytes, **headers: str
) -> bytes:
    """Open the stream over a raw socket and read until ``marker`` has arrived."""
    host, port = platform.rest_url.removeprefix("http://").rsplit(":", 1)
    async with await trio.open_tcp_stream(host, int(port)) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        await sock.send_all(
            f"GET {human_feed.STREAM_PATH}{query} HTTP/1.1\r\nhost: {host}\r\n{head}\r\n".encode()
        )
        received = b""
        while marker not in received:
            chunk = await sock.receive_some(65536)
            assert chunk, received
            received += chunk
        return received


async def test_stream_takes_the_key_as_a_token_and_refuses_others(
    band_platform: LocalPlatform, demo: AgentCredentials, room: str
) -> None:
    url = band_platform.rest_url + human_feed.STREAM_PATH
    with trio.fail_after(IO_DEADLINE):
        async with httpx.AsyncClient() as client:
            assert (await client.get(url)).status_code == 401
            assert (await client.get(url, params={"token": "nope"})).status_code == 401
            assert (await client.get(url, params={"token": demo.api_key})).status_code == 403
            stranger = band_platform.create_user("Stranger", "stranger")
            refused = await client.get(url, params={"token": stranger.api_key, "room_id": room})
            assert refused.status_code == 404
        answer = await read_stream_until(
            band_platform,
            f"?token={band_platform.user.api_key}&room_id={room}",
            b"\n\n",
        )
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert b"content-type: text/event-stream" in head.lower()
        assert b'event: resync\ndata: {"type":"resync","room_id":null,"data":{}}\n\n' in body


async def test_stream_sends_keep_alive_comments_when_quiet(
    band_platform: LocalPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(human_feed, "KEEP_ALIVE", 0.05)
    with trio.fail_after(IO_DEADLINE):
        answer = await read_stream_until(
            band_platform, "", b": keep-alive\n\n", **{"x-api-key": band_platform.user.api_key}
        )
        assert answer.index(b"event: resync") < answer.index(b": keep-alive")
        live = band_platform.app.services.changes.live
        await band_platform.wait_for(lambda: live.statistics().subscriptions == 0)


# ---------------------------------------------------------------- the feed itself (sans-io)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_slow_reader_loses_the_oldest_events_then_gets_resync() -> None:
    state = PlatformState()
    user = state.create_user("U", "u")
    feed = LiveFeed(state, queue_size=3)
    subscription = feed.subscribe(user.id)
    assert [e.type for e in subscription.take()] == ["resync"]
    for n in range(5):
        feed.publish([Push("chat_room:r", "message_created", {"n": n}, frozenset({user.id}))])
    events = subscription.take()
    assert [e.type for e in events] == [
        "resync",
        "message_created",
        "message_created",
        "message_created",
    ]
    assert [e.data["n"] for e in events[1:]] == [2, 3, 4]
    assert feed.statistics().overflows == 1
    feed.publish([Push("chat_room:r", "message_created", {"n": 5}, frozenset({user.id}))])
    assert [e.type for e in subscription.take()] == ["message_created"]
    feed.publish([Push("chat_room:r", "message_created", {"n": 6}, frozenset({"someone"}))])
    assert subscription.take() == []
    feed.unsubscribe(subscription)
    assert feed.statistics().subscriptions == 0


def test_a_working_report_that_expires_becomes_idle() -> None:
    clock = FakeClock()
    state = PlatformState(clock=clock)
    user = state.create_user("U", "u")
    agent = state.register_agent(user, "A", "")
    room = state.create_room(user, None)
    state.add_participant(user, room.id, Obj({"participant": {"participant_id": agent.id}}))
    state.drain_pushes()
    feed = LiveFeed(state)
    subscription = feed.subscribe(user.id)
    subscription.take()
    assert feed.next_expiry() is None
    state.report_activity(agent, room.id, Obj({"working": True}))
    feed.publish(state.drain_pushes())
    assert [e.data["status"] for e in subscription.take()] == ["working"]
    clock.now += 4
    assert feed.next_expiry() == pytest.approx(6)
    feed.refresh()
    assert subscription.take() == []
    clock.now += 7
    feed.refresh()
    assert [(e.type, e.room_id, e.data["status"]) for e in subscription.take()] == [
        ("agent_activity", room.id, "idle")
    ]


async def test_a_reader_may_stop_early_and_the_subscription_ends(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    live = band_platform.app.services.changes.live
    with trio.fail_after(IO_DEADLINE):
        async with aclosing(human.stream(room)) as stream:
            async for kind, _, _ in stream:
                assert kind == "resync"
                assert live.statistics().subscriptions == 1
                break
        await band_platform.wait_for(lambda: live.statistics().subscriptions == 0)


def test_a_new_watcher_is_told_changes_not_the_state_it_lists() -> None:
    state = PlatformState()
    user = state.create_user("U", "u")
    other = state.create_user("O", "o")
    agent = state.register_agent(user, "A", "")
    for owner in (user, other):
        room = state.create_room(owner, None)
        if owner is user:
            state.add_participant(user, room.id, Obj({"participant": {"participant_id": agent.id}}))
    state.drain_pushes()
    feed = LiveFeed(state)
    first = feed.subscribe(other.id)
    second = feed.subscribe(user.id)
    feed.publish([])
    assert [e.type for e in first.take()] == ["resync"]
    assert [e.type for e in second.take()] == ["resync"]
    state.set_stopped(agent.id, None, True)
    feed.publish([])
    assert [(e.type, e.data["stopped"]) for e in second.take()] == [("agent_activity", True)]
    assert first.take() == []


async def test_interrupt_says_which_agents_had_a_turn_and_the_feed_notes_it(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        assert await human.interrupt(room) == []
        sent = await human.post_message(room, "long job", [demo.handle])
        async with watching(human, room) as watcher, agent_http(band_platform, demo) as agent:
            await agent.post(f"/chats/{room}/messages/{sent['id']}/processing")
            assert await human.interrupt(room, demo.id) == [demo.id]
            # The agent cancels the turn and marks the message processed.
            await agent.post(f"/chats/{room}/messages/{sent['id']}/processed")
            _, _, data = await watcher.wait_for(
                lambda item: item[0] == "message_status" and item[2]["status"] == "processed"
            )
        assert data["interrupted"] is True
        assert data["message_id"] == sent["id"]
        assert await human.interrupt(room, demo.id) == []


async def test_a_user_following_the_feed_is_reported_online(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials, room: str
) -> None:
    user_id = band_platform.user.id

    async def online_in_the_room() -> bool:
        async with agent_http(band_platform, demo) as agent:
            rows = (await agent.get(f"/chats/{room}/participants")).json()["data"]
        return next(row["online"] for row in rows if row["id"] == user_id)

    with trio.fail_after(IO_DEADLINE):
        assert not await online_in_the_room()
        async with watching(human, room):
            assert await online_in_the_room()
        await band_platform.wait_for(lambda: not band_platform.state.is_online(user_id))
        assert not await online_in_the_room()
