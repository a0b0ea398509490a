"""Contact strategies and broadcasts driven by real contact events pushed by the
local platform over its Phoenix WebSocket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from band_trio.adapter import PlatformMessage
from band_trio.local import LocalPlatform
from band_trio.local.human import HumanClient
from band_trio.runtime.contact_events import (
    HUB_ROOM_TITLE,
    HUB_SYSTEM_PROMPT,
    ContactEventConfig,
    ContactEventHandler,
    ContactStrategy,
)
from band_trio.tools.contact_tools import ContactTools
from band_trio.wire.events import (
    ContactAdded,
    ContactEvent,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
    decode_event,
)
from band_trio.wire.rest import RestClient


@attrs.define
class Sink:
    rooms: list[str] = attrs.Factory(list)
    system: list[tuple[str, str]] = attrs.Factory(list)
    synthetic: list[tuple[str, PlatformMessage]] = attrs.Factory(list)

    def active_room_ids(self) -> Collection[str]:
        return self.rooms

    def inject_system_message(self, room_id: str, text: str) -> None:
        self.system.append((room_id, text))

    def enqueue_synthetic(self, room_id: str, message: PlatformMessage) -> None:
        self.synthetic.append((room_id, message))


class ContactFeed:
    """Joins ``agent_contacts:<agent>`` and yields decoded contact events."""

    def __init__(self, ws: WebSocketConnection, agent_id: str) -> None:
        self.ws = ws
        self.topic = f"agent_contacts:{agent_id}"

    async def join(self) -> None:
        await self.ws.send_message(json.dumps(["1", "1", self.topic, "phx_join", {}]))
        while True:
            frame = json.loads(await self.ws.get_message())
            if frame[3] == "phx_reply" and frame[2] == self.topic:
                assert frame[4]["status"] == "ok"
                return

    async def next(self) -> ContactEvent:
        with trio.fail_after(10):
            while True:
                _jr, _ref, topic, event, payload = json.loads(await self.ws.get_message())
                if topic == self.topic and not event.startswith("phx_"):
                    decoded = decode_event(topic, event, payload)
                    assert isinstance(
                        decoded,
                        ContactRequestReceived
                        | ContactRequestUpdated
                        | ContactAdded
                        | ContactRemoved,
                    )
                    return decoded


@attrs.define
class Env:
    platform: LocalPlatform
    human: HumanClient
    rest: RestClient
    feed: ContactFeed
    agent_id: str
    agent_handle: str


@pytest.fixture
async def env(band_platform: LocalPlatform) -> AsyncIterator[Env]:
    agent = band_platform.agents[0]
    url = f"{band_platform.ws_url}?vsn=2.0.0&agent_id={agent.id}"
    with trio.fail_after(10):
        async with (
            open_websocket_url(url, extra_headers=[("x-api-key", agent.api_key)]) as ws,
            HumanClient(base_url=band_platform.rest_url, api_key=band_platform.user.api_key) as h,
            RestClient(base_url=band_platform.rest_url, api_key=agent.api_key) as rest,
        ):
            feed = ContactFeed(ws, agent.id)
            await feed.join()
            yield Env(band_platform, h, rest, feed, agent.id, agent.handle)


async def test_callback_strategy_with_real_events(env: Env) -> None:
    seen: list[ContactEvent] = []

    async def on_event(event: ContactEvent, tools: ContactTools) -> None:
        seen.append(event)
        if isinstance(event, ContactRequestReceived):
            await tools.respond_contact_request("approve", request_id=event.id)

    sink = Sink(rooms=["room-a"])
    handler = ContactEventHandler(
        config=ContactEventConfig(
            strategy=ContactStrategy.CALLBACK, on_event=on_event, broadcast_changes=True
        ),
        rest=env.rest,
        sink=sink,
    )
    with trio.fail_after(10):
        request = await env.human.send_contact_request(env.agent_handle, "let's connect")
        received = await env.feed.next()
        assert isinstance(received, ContactRequestReceived)
        assert received.id == request["id"]
        assert await handler.handle(received)
        assert not await handler.handle(received)  # a redelivery is ignored
        # approving produced real follow-up events
        follow_ups = [await env.feed.next(), await env.feed.next()]
        for event in follow_ups:
            assert await handler.handle(event)
        contacts = await env.human.contacts()
    kinds = {type(e).__name__ for e in follow_ups}
    assert "ContactAdded" in kinds
    assert seen[0] == received
    assert len(seen) == 3
    assert env.agent_id in json.dumps(contacts)
    user = env.platform.user
    assert sink.system == [("room-a", f"[Contacts]: @{user.handle} ({user.name}) is now a contact")]


async def test_hub_room_strategy_with_real_events(env: Env, tmp_path: Path) -> None:
    sink = Sink(rooms=["room-a"])
    config = ContactEventConfig(strategy=ContactStrategy.HUB_ROOM, broadcast_changes=True)
    handler = ContactEventHandler(config=config, rest=env.rest, sink=sink, state_dir=tmp_path)
    with trio.fail_after(10):
        hub = await handler.start()
        assert hub is not None
        rooms = {r.id: r.title async for r in env.rest.iter_chats()}
        assert rooms[hub] == HUB_ROOM_TITLE
        sink.rooms.append(hub)

        request = await env.human.send_contact_request(env.agent_handle, "hello agent")
        assert await handler.handle(await env.feed.next())
        # the model in the hub would approve; do it with the tools directly
        await ContactTools(env.rest).respond_contact_request("approve", request_id=request["id"])
        for _ in range(2):
            assert await handler.handle(await env.feed.next())

    assert sink.system[0] == (hub, HUB_SYSTEM_PROMPT)
    contents = [m.content for _, m in sink.synthetic]
    user = env.platform.user
    assert contents[0] == (
        f"[Contact Request] {user.name} (@{user.handle}) wants to connect.\n"
        f'Message: "hello agent"\nRequest ID: {request["id"]}'
    )
    assert contents[1] == (
        f"[Contact Request Update] Request from {user.name} (@{user.handle}) status changed "
        f"to: approved\nRequest ID: {request['id']}"
    )
    assert contents[2].startswith(f"[Contact Added] {user.name} (@{user.handle}) is now a contact.")
    assert len(contents) == 3
    assert {r for r, _ in sink.synthetic} == {hub}
    # broadcasts go to the other rooms, never to the hub
    broadcasts = [(r, t) for r, t in sink.system if t.startswith("[Contacts]:")]
    assert broadcasts == [("room-a", f"[Contacts]: @{user.handle} ({user.name}) is now a contact")]
    # the hub room shows a task event per contact event
    with trio.fail_after(10):
        context = await env.rest.get_context(hub)
    assert [m.message_type for m in context.items] == ["task", "task", "task"]

    # a restart finds the same hub room again, from the state dir or by title
    again = ContactEventHandler(config=config, rest=env.rest, sink=Sink(), state_dir=tmp_path)
    by_title = ContactEventHandler(config=config, rest=env.rest, sink=Sink())
    with trio.fail_after(10):
        assert await again.start() == hub
        assert await by_title.start() == hub
        titles = [r.title async for r in env.rest.iter_chats()]
    assert titles.count(HUB_ROOM_TITLE) == 1


async def test_disabled_strategy_still_broadcasts_once(env: Env) -> None:
    sink = Sink(rooms=["room-a", "room-b"])
    handler = ContactEventHandler(
        config=ContactEventConfig(broadcast_changes=True), rest=env.rest, sink=sink
    )
    with trio.fail_after(10):
        await ContactTools(env.rest).add_contact(f"@{env.platform.user.handle}")
        [pending] = await env.human.contact_requests()
        await env.human.approve_contact_request(pending["id"])
        events: list[Any] = [await env.feed.next(), await env.feed.next()]
        for event in events + events:  # every event delivered twice
            await handler.handle(event)
    user = env.platform.user
    line = f"[Contacts]: @{user.handle} ({user.name}) is now a contact"
    assert sink.system == [("room-a", line), ("room-b", line)]
