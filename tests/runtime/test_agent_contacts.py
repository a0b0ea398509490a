"""Contact events through the engine (runtime.md §8.98-§8.102, beating §9.1 and §9.6)."""

from __future__ import annotations

from typing import Any

import trio

from band_trio.local import HumanClient
from band_trio.runtime.contact_events import (
    HUB_ROOM_TITLE,
    HUB_SENDER_ID,
    ContactEventConfig,
    ContactStrategy,
)
from band_trio.wire.events import ContactAdded, ContactRequestReceived

from .agent_harness import RecordingAdapter, scene, serving, token, wait_until


async def test_callback_and_broadcast_reach_every_room_once(band_platform) -> None:  # type: ignore[no-untyped-def]
    """§8.98: the callback runs once per event; broadcasts (dead in the official
    SDK, §9.1) reach each room's next turn as contacts_msg, exactly once."""
    seen: list[Any] = []

    async def on_event(event: Any, tools: Any) -> None:
        seen.append(event)
        if isinstance(event, ContactRequestReceived):
            await tools.respond_contact_request("approve", request_id=event.id)

    config = ContactEventConfig(
        strategy=ContactStrategy.CALLBACK, on_event=on_event, broadcast_changes=True
    )
    bob = band_platform.create_user("Bob Builder", "bob")
    with trio.fail_after(30):
        async with (
            scene(band_platform) as s,
            HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client,
        ):
            rooms = [await s.new_room(), await s.new_room()]
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, contact_config=config)
            async with serving(agent):
                await bob_client.send_contact_request(s.agent_handle, "hi there")
                await wait_until(lambda: any(isinstance(e, ContactAdded) for e in seen))
                for room_id in rooms:
                    for _ in range(2):
                        mid = await s.post(room_id, token())
                        await wait_until(lambda: s.processed(room_id, mid))  # noqa: B023
            assert sum(isinstance(e, ContactRequestReceived) for e in seen) == 1
            for room_id in rooms:
                first, second = adapter.calls_for(room_id)
                assert first.contacts_msg is not None
                assert "@bob" in first.contacts_msg
                assert "is now a contact" in first.contacts_msg
                assert second.contacts_msg is None


async def test_hub_room_turns_are_synthetic(band_platform) -> None:  # type: ignore[no-untyped-def]
    """§8.100/§8.101: HUB_ROOM turns the event into a synthetic hub message (no
    claim, no marks), handled by the adapter in the hub room without delay."""
    config = ContactEventConfig(strategy=ContactStrategy.HUB_ROOM)
    bob = band_platform.create_user("Bob Builder", "bob")
    with trio.fail_after(30):
        async with (
            scene(band_platform) as s,
            HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client,
        ):

            async def decide(adapter: Any, msg: Any, tools: Any) -> None:
                # A hub turn answers with tools (here: nothing), never a reply to
                # the synthetic sender; it is not judged for a missing reply.
                return None

            adapter = RecordingAdapter(decide)
            agent = s.make_agent(adapter, contact_config=config)
            async with serving(agent):
                await bob_client.send_contact_request(s.agent_handle, "hello agent")
                await wait_until(lambda: len(adapter.calls) == 1)
                (call,) = adapter.calls
                assert call.msg.sender_id == HUB_SENDER_ID
                assert "[Contact Request]" in call.msg.content
                hub = band_platform.state.rooms[call.room_id]
                assert hub.title == HUB_ROOM_TITLE
                await wait_until(lambda: call.finished)
                stats = agent.room_statistics(call.room_id)
                assert stats is not None
                assert stats.turns == 1
                assert stats.failures == 0
            # No error event: synthetic turns are never judged.
            assert s.agent_events(call.room_id, "error") == []
