"""Contact configuration, ContactTools, the sans-io renderings and the
ContactEventHandler strategies (with a scripted platform and a recording sink)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from band_trio.adapter import PlatformMessage
from band_trio.errors import BandConfigError, BandToolError
from band_trio.runtime.contact_events import (
    HUB_ROOM_TITLE,
    HUB_SYSTEM_PROMPT,
    ContactEventConfig,
    ContactEventHandler,
    ContactStrategy,
    RequestDetails,
    RoomSink,
    broadcast_line,
    contact_event_key,
    render_hub_message,
)
from band_trio.tools.contact_tools import ContactTools
from band_trio.wire.events import (
    ContactAdded,
    ContactEvent,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
)
from band_trio.wire.rest import RestClient
from tests.scripted_platform import ScriptedPlatform, error, ok

HUB_TASK = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
TS = "2026-01-01T00:00:00Z"

RECEIVED = ContactRequestReceived(
    id="req-1",
    status="pending",
    inserted_at=TS,
    from_handle="dana",
    from_name="Dana",
    message="hi there",
)
UPDATED = ContactRequestUpdated(id="req-1", status="approved")
ADDED = ContactAdded(id="c-1", handle="dana", name="Dana", type="User", inserted_at=TS)
REMOVED = ContactRemoved(id="c-1")


@attrs.define
class Sink:
    rooms: list[str] = attrs.Factory(lambda: ["room-a", "room-b"])
    system: list[tuple[str, str]] = attrs.Factory(list)
    synthetic: list[tuple[str, PlatformMessage]] = attrs.Factory(list)

    def active_room_ids(self) -> Collection[str]:
        return self.rooms

    def inject_system_message(self, room_id: str, text: str) -> None:
        self.system.append((room_id, text))

    def enqueue_synthetic(self, room_id: str, message: PlatformMessage) -> None:
        self.synthetic.append((room_id, message))


def chat(room_id: str, title: str | None, task_id: str | None = None) -> dict[str, Any]:
    return {"id": room_id, "inserted_at": TS, "updated_at": TS, "title": title, "task_id": task_id}


# ------------------------------------------------------------------- config


def test_config_validation() -> None:
    with pytest.raises(BandConfigError, match="on_event"):
        ContactEventConfig(strategy=ContactStrategy.CALLBACK)
    with pytest.raises(BandConfigError, match="UUID"):
        ContactEventConfig(strategy=ContactStrategy.HUB_ROOM, hub_task_id="not-a-uuid")
    cfg = ContactEventConfig(strategy="hub_room", hub_task_id=HUB_TASK)  # type: ignore[arg-type]
    assert cfg.strategy is ContactStrategy.HUB_ROOM
    assert cfg.subscribes


def test_disabled_without_broadcasts_subscribes_to_nothing() -> None:
    assert not ContactEventConfig().subscribes
    assert ContactEventConfig(broadcast_changes=True).subscribes


def test_sink_protocol_is_runtime_checkable() -> None:
    assert isinstance(Sink(), RoomSink)


# ------------------------------------------------------------------- sans-io


def test_dedup_keys() -> None:
    assert contact_event_key(RECEIVED) == "request_received:req-1"
    assert contact_event_key(UPDATED) == "request_updated:req-1:approved"
    assert contact_event_key(ContactRequestUpdated(id="req-1", status="rejected")) == (
        "request_updated:req-1:rejected"
    )
    assert contact_event_key(ADDED) == "contact_added:c-1"
    assert contact_event_key(REMOVED) == "contact_removed:c-1"


def test_broadcast_lines() -> None:
    assert broadcast_line(ADDED) == "@dana (Dana) is now a contact"
    anonymous = ContactAdded(id="c-2", handle=None, name=None, type="Agent", inserted_at=TS)
    assert broadcast_line(anonymous) == "no handle (Unknown contact) is now a contact"
    assert broadcast_line(REMOVED) == "Contact c-1 was removed"
    assert broadcast_line(RECEIVED) is None
    assert broadcast_line(UPDATED) is None


def test_hub_renderings() -> None:
    assert render_hub_message(RECEIVED) == (
        '[Contact Request] Dana (@dana) wants to connect.\nMessage: "hi there"\nRequest ID: req-1'
    )
    assert render_hub_message(UPDATED) == (
        "[Contact Request Update] Request req-1 status changed to: approved"
    )
    assert render_hub_message(UPDATED, RequestDetails("to", "dana", "Dana")) == (
        "[Contact Request Update] Request to Dana (@dana) status changed to: approved\n"
        "Request ID: req-1"
    )
    assert render_hub_message(ADDED) == (
        "[Contact Added] Dana (@dana) is now a contact.\nType: User\nID: c-1"
    )
    assert render_hub_message(REMOVED) == "[Contact Removed] Contact c-1 was removed."


# ------------------------------------------------------------------- ContactTools


async def test_contact_tools_shapes(rest: RestClient, platform: ScriptedPlatform) -> None:
    platform.on(
        "GET",
        "/contacts",
        ok(
            [
                {
                    "id": "c-1",
                    "inserted_at": TS,
                    "type": "User",
                    "handle": "dana",
                    "name": "Dana",
                    "online": True,
                }
            ],
            metadata={"page": 1, "page_size": 50, "total_count": 1, "total_pages": 1},
        ),
    )
    platform.on(
        "GET",
        "/contacts/requests",
        ok(
            {
                "received": [
                    {
                        "id": "r-1",
                        "inserted_at": TS,
                        "status": "pending",
                        "from_handle": "eve",
                        "from_name": "Eve",
                    }
                ],
                "sent": [],
            },
            metadata={
                "page": 1,
                "page_size": 50,
                "received": {"total": 1, "total_pages": 1},
                "sent": {"total": 0, "total_pages": 0},
            },
        ),
    )
    platform.on("POST", "/contacts/add", ok({"id": "r-2", "status": "pending"}))
    platform.on("POST", "/contacts/remove", ok({"status": "removed"}))
    platform.on("POST", "/contacts/requests/respond", ok({"id": "r-1", "status": "approved"}))
    tools = ContactTools(rest)
    with trio.fail_after(5):
        listed = await tools.list_contacts()
        requests = await tools.list_contact_requests()
        added = await tools.add_contact("@zed")
        removed = await tools.remove_contact(contact_id="c-1")
        responded = await tools.respond_contact_request("approve", request_id="r-1")
    assert listed == {
        "contacts": [{"id": "c-1", "handle": "dana", "name": "Dana", "type": "User"}],
        "metadata": {"page": 1, "page_size": 50, "total_count": 1, "total_pages": 1},
    }
    assert requests["received"][0]["from_handle"] == "eve"
    assert requests["sent"] == []
    assert added == {"id": "r-2", "status": "pending"}
    assert removed == {"status": "removed"}
    assert responded == {"id": "r-1", "status": "approved"}
    # arguments left out are not sent
    assert platform.requests_to("POST", "/contacts/add")[0].body == {"handle": "@zed"}
    assert platform.requests_to("POST", "/contacts/remove")[0].body == {"contact_id": "c-1"}
    assert platform.requests_to("POST", "/contacts/requests/respond")[0].body == {
        "action": "approve",
        "request_id": "r-1",
    }


async def test_contact_tools_refuse_missing_targets(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    tools = ContactTools(rest)
    with pytest.raises(BandToolError, match="handle or contact_id"):
        await tools.remove_contact()
    with pytest.raises(BandToolError, match="handle or request_id"):
        await tools.respond_contact_request("approve")
    with pytest.raises(BandToolError, match="action"):
        await tools.respond_contact_request("maybe", handle="x")
    assert platform.calls == []


async def test_contact_tools_retry_429(
    autojump_clock: trio.abc.Clock, rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on(
        "POST",
        "/contacts/add",
        error(429, "too_many_requests", "slow down"),
        ok({"id": "r-2", "status": "approved"}),
    )
    with trio.fail_after(120):
        assert await ContactTools(rest).add_contact("zed") == {"id": "r-2", "status": "approved"}
    assert len(platform.requests_to("POST", "/contacts/add")) == 2


# ------------------------------------------------------------------- handler


async def test_callback_runs_once_per_distinct_event(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    seen: list[tuple[ContactEvent, ContactTools]] = []

    async def on_event(event: ContactEvent, tools: ContactTools) -> None:
        await trio.lowlevel.checkpoint()
        seen.append((event, tools))

    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.CALLBACK, on_event=on_event),
        rest=rest,
        sink=Sink(),
    )
    with trio.fail_after(5):
        assert await handler.start() is None
        assert await handler.handle(RECEIVED)
        assert not await handler.handle(RECEIVED)
        assert await handler.handle(UPDATED)
        assert await handler.handle(ContactRequestUpdated(id="req-1", status="cancelled"))
    assert [e for e, _ in seen] == [
        RECEIVED,
        UPDATED,
        ContactRequestUpdated(id="req-1", status="cancelled"),
    ]
    assert all(t is handler.contact_tools for _, t in seen)
    stats = handler.statistics()
    assert (stats.handled, stats.duplicates, stats.failed) == (3, 1, 0)


async def test_failed_callback_is_retried_on_redelivery(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    attempts = 0

    def on_event(event: ContactEvent, tools: ContactTools) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("transient")

    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.CALLBACK, on_event=on_event),
        rest=rest,
        sink=Sink(),
    )
    with trio.fail_after(5):
        assert not await handler.handle(ADDED)
        assert await handler.handle(ADDED)
        assert not await handler.handle(ADDED)
    assert attempts == 2
    assert handler.statistics().failed == 1


async def test_broadcasts_reach_every_room_once(rest: RestClient) -> None:
    sink = Sink()
    handler = ContactEventHandler(
        config=ContactEventConfig(broadcast_changes=True), rest=rest, sink=sink
    )
    with trio.fail_after(5):
        await handler.handle(RECEIVED)
        await handler.handle(ADDED)
        await handler.handle(ADDED)  # duplicate: no second broadcast
        await handler.handle(REMOVED)
    assert sink.system == [
        ("room-a", "[Contacts]: @dana (Dana) is now a contact"),
        ("room-b", "[Contacts]: @dana (Dana) is now a contact"),
        ("room-a", "[Contacts]: Contact c-1 was removed"),
        ("room-b", "[Contacts]: Contact c-1 was removed"),
    ]
    assert sink.synthetic == []
    assert handler.statistics().broadcasts == 4


async def test_broadcast_is_not_repeated_when_a_callback_retry_happens(rest: RestClient) -> None:
    calls = 0

    def flaky(event: ContactEvent, tools: ContactTools) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("once")

    sink = Sink(rooms=["room-a"])
    handler = ContactEventHandler(
        config=ContactEventConfig(
            strategy=ContactStrategy.CALLBACK, on_event=flaky, broadcast_changes=True
        ),
        rest=rest,
        sink=sink,
    )
    with trio.fail_after(5):
        await handler.handle(ADDED)
        await handler.handle(ADDED)
    assert len(sink.system) == 1
    assert calls == 2


async def test_hub_room_is_created_with_stable_title_and_remembered(
    rest: RestClient, platform: ScriptedPlatform, tmp_path: Path
) -> None:
    platform.on(
        "GET", "/chats", ok([chat("room-a", "Other")], metadata={"page": 1, "total_pages": 1})
    )
    platform.on("POST", "/chats", ok(chat("hub-1", HUB_ROOM_TITLE, HUB_TASK), status=201))
    cfg = ContactEventConfig(strategy=ContactStrategy.HUB_ROOM, hub_task_id=HUB_TASK)
    handler = ContactEventHandler(config=cfg, rest=rest, sink=Sink(), state_dir=tmp_path)
    with trio.fail_after(5):
        assert await handler.start() == "hub-1"
    [create] = platform.requests_to("POST", "/chats")
    assert create.body == {"chat": {"title": HUB_ROOM_TITLE, "task_id": HUB_TASK}}
    assert (tmp_path / "contacts_hub_room").read_text() == "hub-1"

    # After a restart the remembered room is checked and reused, not re-created.
    platform.on("GET", "/chats/hub-1", ok(chat("hub-1", HUB_ROOM_TITLE, HUB_TASK)))
    again = ContactEventHandler(config=cfg, rest=rest, sink=Sink(), state_dir=tmp_path)
    with trio.fail_after(5):
        assert await again.start() == "hub-1"
    assert len(platform.requests_to("POST", "/chats")) == 1


async def test_hub_room_found_by_title_without_state_dir(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on(
        "GET",
        "/chats",
        ok(
            [chat("room-a", "Other"), chat("hub-7", HUB_ROOM_TITLE)],
            metadata={"page": 1, "total_pages": 1},
        ),
    )
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM), rest=rest, sink=Sink()
    )
    with trio.fail_after(5):
        assert await handler.start() == "hub-7"
    assert platform.requests_to("POST", "/chats") == []


async def test_remembered_hub_that_vanished_is_replaced(
    rest: RestClient, platform: ScriptedPlatform, tmp_path: Path
) -> None:
    (tmp_path / "contacts_hub_room").write_text("gone")
    platform.on("GET", "/chats/gone", error(404, "not_found", "no such room"))
    platform.on("GET", "/chats", ok([], metadata={"page": 1, "total_pages": 1}))
    platform.on("POST", "/chats", ok(chat("hub-2", HUB_ROOM_TITLE), status=201))
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM),
        rest=rest,
        sink=Sink(),
        state_dir=tmp_path,
    )
    with trio.fail_after(5):
        assert await handler.start() == "hub-2"
    assert (tmp_path / "contacts_hub_room").read_text() == "hub-2"


async def test_hub_events_become_synthetic_messages_at_once(
    autojump_clock: trio.abc.Clock, rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("GET", "/chats", ok([chat("hub-7", HUB_ROOM_TITLE)], metadata={"total_pages": 1}))
    platform.on(
        "POST", "/chats/hub-7/events", ok({"id": "e", "message_type": "task", "success": True})
    )
    sink = Sink(rooms=["room-a", "hub-7"])
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM, broadcast_changes=True),
        rest=rest,
        sink=sink,
    )
    start = trio.current_time()
    with trio.fail_after(5):
        assert await handler.handle(RECEIVED)  # the hub is found lazily
        assert await handler.handle(UPDATED)
        assert await handler.handle(ADDED)
    # the first event is not delayed by any readiness wait
    assert trio.current_time() - start < 0.001
    assert sink.system[0] == ("hub-7", HUB_SYSTEM_PROMPT)
    assert [r for r, _ in sink.system].count("hub-7") == 1  # prompt once, no broadcast to hub
    assert ("room-a", "[Contacts]: @dana (Dana) is now a contact") in sink.system
    rooms = {r for r, _ in sink.synthetic}
    assert rooms == {"hub-7"}
    messages = [m for _, m in sink.synthetic]
    assert messages[0].content.startswith("[Contact Request] Dana (@dana) wants to connect.")
    # the update uses the details cached from the received request
    assert messages[1].content.startswith("[Contact Request Update] Request from Dana (@dana)")
    for m in messages:
        assert (m.sender_id, m.sender_type, m.sender_name) == (
            "contact-events",
            "System",
            "Contact Events",
        )
        assert m.room_id == "hub-7"
    assert messages[0].metadata["contact_event_type"] == "contact_request_received"
    assert len({m.id for m in messages}) == 3
    traces = platform.requests_to("POST", "/chats/hub-7/events")
    assert [t.body["event"]["message_type"] for t in traces] == ["task"] * 3
    assert traces[2].body["event"]["metadata"] == {"contact_event_type": "contact_added"}


async def test_update_details_are_looked_up_when_not_cached(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("GET", "/chats", ok([chat("hub-7", HUB_ROOM_TITLE)], metadata={"total_pages": 1}))
    platform.on("POST", "/chats/hub-7/events", error(500, "internal", "trace lost"))
    platform.on(
        "GET",
        "/contacts/requests",
        ok(
            {
                "received": [],
                "sent": [
                    {
                        "id": "req-9",
                        "inserted_at": TS,
                        "status": "approved",
                        "to_handle": "zed",
                        "to_name": "Zed",
                    }
                ],
            }
        ),
    )
    sink = Sink()
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM), rest=rest, sink=sink
    )
    with trio.fail_after(5):
        # a failing trace post does not fail the event
        assert await handler.handle(ContactRequestUpdated(id="req-9", status="approved"))
    [(_, message)] = sink.synthetic
    assert message.content == (
        "[Contact Request Update] Request to Zed (@zed) status changed to: approved\n"
        "Request ID: req-9"
    )
    [lookup] = platform.requests_to("GET", "/contacts/requests")
    assert lookup.params["sent_status"] == "all"


async def test_hub_creation_failure_is_retried_on_redelivery(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("GET", "/chats", ok([], metadata={"total_pages": 1}))
    refused = error(403, "forbidden", "no")
    # refused for both tries of the first delivery, then accepted
    platform.on("POST", "/chats", refused, refused, ok(chat("hub-3", HUB_ROOM_TITLE)))
    platform.on(
        "POST", "/chats/hub-3/events", ok({"id": "e", "message_type": "task", "success": True})
    )
    sink = Sink()
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM), rest=rest, sink=sink
    )
    with trio.fail_after(5):
        assert not await handler.handle(REMOVED)
        assert await handler.handle(REMOVED)
    assert handler.hub_room_id == "hub-3"
    assert len(sink.synthetic) == 1


async def test_first_event_broadcast_skips_the_lazily_found_hub(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("GET", "/chats", ok([chat("hub-7", HUB_ROOM_TITLE)], metadata={"total_pages": 1}))
    platform.on(
        "POST", "/chats/hub-7/events", ok({"id": "e", "message_type": "task", "success": True})
    )
    sink = Sink(rooms=["hub-7", "room-a"])
    handler = ContactEventHandler(
        config=ContactEventConfig(strategy=ContactStrategy.HUB_ROOM, broadcast_changes=True),
        rest=rest,
        sink=sink,
    )
    with trio.fail_after(5):
        assert await handler.handle(ADDED)
    broadcasts = [(r, t) for r, t in sink.system if t.startswith("[Contacts]")]
    assert broadcasts == [("room-a", "[Contacts]: @dana (Dana) is now a contact")]


async def test_a_non_contact_event_is_counted_and_ignored(rest: RestClient) -> None:
    handler = ContactEventHandler(config=ContactEventConfig(), rest=rest, sink=Sink())
    with trio.fail_after(5):
        assert not await handler.handle("not an event")  # type: ignore[arg-type]
    assert handler.statistics().failed == 1
