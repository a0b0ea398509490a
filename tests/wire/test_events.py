"""Unit tests for band_trio.wire.events: one test per validation rule.

Reference: docs/reference/protocol.rst (protocol, "Events and payloads").
"""

from __future__ import annotations

from typing import Any

import pytest

from band_trio.errors import InvalidEventError
from band_trio.wire import structure
from band_trio.wire.events import (
    EVENT_TAG,
    AgentControl,
    ContactAdded,
    ContactEvent,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
    Mention,
    MessageCreated,
    MessageMetadata,
    MessageUpdated,
    ParticipantAdded,
    ParticipantRemoved,
    PlatformEvent,
    RoomAdded,
    RoomDeleted,
    RoomEventCreated,
    RoomRemoved,
    RoomUpdated,
    Supersede,
    TaskCreated,
    TaskUpdated,
    decode_event,
    encode_event,
    event_class,
    topic_room_id,
)

ROOM = "3f0c-room"
AGENT = "8c1f-agent"


def message_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "b41e",
        "content": "@[[8c1f]] summarise the doc",
        "message_type": "text",
        "metadata": {
            "mentions": [{"id": "8c1f", "handle": "alice/summariser", "name": "Summariser"}],
            "status": "sent",
        },
        "sender_id": "5d2a",
        "sender_type": "User",
        "sender_name": "Alice",
        "chat_room_id": ROOM,
        "thread_id": None,
        "inserted_at": "2026-01-05T10:00:00.123456Z",
        "updated_at": "2026-01-05T10:00:00.123456Z",
    }
    payload.update(overrides)
    return payload


def control_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "agent.control",
        "mode": "stop",
        "scope": "room",
        "agent_id": AGENT,
        "execution_id": "e9",
        "room_id": ROOM,
        "reason": "user_requested",
        "correlation_id": "ctl-42",
    }
    payload.update(overrides)
    return payload


def supersede_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "reason": "session.already_connected",
        "message": "This connection has been superseded.",
        "retryable": False,
        "retry_after": None,
        "target_socket_id": f"agent_socket:{AGENT}",
        "correlation_id": "evict-9",
    }
    payload.update(overrides)
    return payload


def participant_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"id": "u1", "name": "Bob", "type": "User", "handle": "bob"}
    payload.update(overrides)
    return payload


def contact_payload(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "c1",
        "handle": "carol",
        "name": "Carol",
        "type": "User",
        "inserted_at": "2026-01-05T10:00:00Z",
    }
    payload.update(overrides)
    return payload


def without(payload: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != key}


def rejects(topic: str, event: str, payload: Any) -> InvalidEventError:
    with pytest.raises(InvalidEventError) as info:
        decode_event(topic, event, payload)
    assert info.value.topic == topic
    assert info.value.event == event
    return info.value


# ----------------------------------------------------------------- message_created


def test_message_created_example_frame_decodes() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload())
    assert isinstance(ev, MessageCreated)
    assert ev.room_id == ROOM
    assert ev.id == "b41e"
    assert ev.sender_name == "Alice"
    assert ev.metadata.mentions == (
        Mention(id="8c1f", handle="alice/summariser", name="Summariser"),
    )
    assert ev.metadata.status == "sent"
    assert ev.attachments == ()
    assert ev.extra == {}


def test_message_updated_has_the_same_shape_but_its_own_class() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "message_updated", message_payload())
    assert type(ev) is MessageUpdated
    assert not isinstance(ev, MessageCreated)
    assert encode_event(ev)[0] == "message_updated"


@pytest.mark.parametrize("key", ["id", "sender_id"])
def test_message_ids_must_be_non_empty(key: str) -> None:
    err = rejects(f"chat_room:{ROOM}", "message_created", message_payload(**{key: ""}))
    assert key in err.reason


@pytest.mark.parametrize(
    "key",
    ["id", "content", "message_type", "sender_id", "sender_type", "inserted_at", "updated_at"],
)
def test_message_required_keys(key: str) -> None:
    err = rejects(f"chat_room:{ROOM}", "message_created", without(message_payload(), key))
    assert "required field missing" in err.reason
    assert key in err.reason


@pytest.mark.parametrize("bad", [5, True, 1.5, None, ["x"], {"x": 1}])
def test_message_string_fields_are_strict(bad: Any) -> None:
    rejects(f"chat_room:{ROOM}", "message_created", message_payload(content=bad))


def test_message_content_may_be_empty() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(content=""))
    assert isinstance(ev, MessageCreated)
    assert ev.content == ""


def test_message_optional_fields_may_be_absent() -> None:
    minimal = {
        k: v
        for k, v in message_payload().items()
        if k not in {"sender_name", "chat_room_id", "thread_id", "metadata"}
    }
    ev = decode_event(f"chat_room:{ROOM}", "message_created", minimal)
    assert isinstance(ev, MessageCreated)
    assert ev.sender_name is None
    assert ev.metadata == MessageMetadata()
    assert ev.metadata.mentions == ()


def test_message_chat_room_id_and_thread_id_are_not_checked() -> None:
    ev = decode_event(
        f"chat_room:{ROOM}", "message_created", message_payload(chat_room_id=7, thread_id=["t"])
    )
    assert isinstance(ev, MessageCreated)
    assert ev.chat_room_id == 7
    assert ev.thread_id == ["t"]


def test_message_metadata_null_is_normalised() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(metadata=None))
    assert isinstance(ev, MessageCreated)
    assert ev.metadata.mentions == ()
    assert encode_event(ev)[1]["metadata"]["mentions"] == []


def test_message_mentions_null_defaults_to_empty() -> None:
    ev = decode_event(
        f"chat_room:{ROOM}", "message_created", message_payload(metadata={"mentions": None})
    )
    assert isinstance(ev, MessageCreated)
    assert ev.metadata.mentions == ()


@pytest.mark.parametrize("bad", ["x", 3, ["not", "an", "object"]])
def test_message_metadata_must_be_an_object(bad: Any) -> None:
    rejects(f"chat_room:{ROOM}", "message_created", message_payload(metadata=bad))


@pytest.mark.parametrize(
    "bad", [{"id": ""}, {"id": 3}, {"handle": "x"}, "8c1f", {"id": "a", "name": 4}]
)
def test_message_mention_items_are_validated(bad: Any) -> None:
    rejects(f"chat_room:{ROOM}", "message_created", message_payload(metadata={"mentions": [bad]}))


def test_message_mention_extra_keys_are_kept() -> None:
    ev = decode_event(
        f"chat_room:{ROOM}",
        "message_created",
        message_payload(
            metadata={"mentions": [{"id": "a", "kind": "reference", "username": None}]}
        ),
    )
    assert isinstance(ev, MessageCreated)
    assert ev.metadata.mentions[0].extra == {"kind": "reference"}
    assert ev.metadata.mentions[0].username is None


def test_message_attachments_null_becomes_empty_tuple() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(attachments=None))
    assert isinstance(ev, MessageCreated)
    assert ev.attachments == ()


def test_message_attachments_items_are_passed_through() -> None:
    item = {"id": "f1", "filename": "a.txt", "size": 3}
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(attachments=[item]))
    assert isinstance(ev, MessageCreated)
    assert ev.attachments == (item,)


@pytest.mark.parametrize("bad", ["x", {"id": "f1"}, 3, True])
def test_message_attachments_must_be_an_array(bad: Any) -> None:
    rejects(f"chat_room:{ROOM}", "message_created", message_payload(attachments=bad))


@pytest.mark.parametrize("items", [[1], [None], ["f1", {"id": "f2"}]])
def test_message_attachment_items_are_not_validated(items: list[Any]) -> None:
    # (protocol, "chat_room:<room_id>"): band-sdk-core does not look inside the array.
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(attachments=items))
    assert isinstance(ev, MessageCreated)
    assert ev.attachments == tuple(items)
    assert encode_event(ev)[1]["attachments"] == items


def test_message_delivery_status_and_delegation_kept() -> None:
    metadata = {
        "mentions": [],
        "delivery_status": {AGENT: {"status": "processing", "attempts": []}},
        "delegation": {"terminated": True},
    }
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(metadata=metadata))
    assert isinstance(ev, MessageCreated)
    assert ev.metadata.delivery_status == {AGENT: {"status": "processing", "attempts": []}}
    assert ev.metadata.extra == {"delegation": {"terminated": True}}
    assert encode_event(ev)[1]["metadata"]["delegation"] == {"terminated": True}


@pytest.mark.parametrize("value", ["delivered", [1], 7])
def test_message_delivery_status_is_not_checked(value: Any) -> None:
    # (protocol, "chat_room:<room_id>"): "delivery_status: opt, unchecked" - kept as sent.
    metadata = {"mentions": [], "delivery_status": value}
    ev = decode_event(f"chat_room:{ROOM}", "message_created", message_payload(metadata=metadata))
    assert isinstance(ev, MessageCreated)
    assert ev.metadata.delivery_status == value
    assert encode_event(ev)[1]["metadata"]["delivery_status"] == value


def test_message_room_id_comes_from_the_topic() -> None:
    ev = decode_event("room_participants:other", "message_created", message_payload())
    assert isinstance(ev, MessageCreated)
    assert ev.room_id == "other"
    assert "room_id" not in encode_event(ev)[1]


@pytest.mark.parametrize("topic", [f"agent_rooms:{AGENT}", "chat_room:", "phoenix", "chat_room"])
def test_per_room_event_needs_a_per_room_topic(topic: str) -> None:
    rejects(topic, "message_created", message_payload())


def test_unknown_keys_are_kept_and_round_trip() -> None:
    payload = message_payload(future_field={"nested": [1, 2]}, extra="literally named extra")
    ev = decode_event(f"chat_room:{ROOM}", "message_created", payload)
    assert isinstance(ev, MessageCreated)
    assert ev.extra == {"future_field": {"nested": [1, 2]}, "extra": "literally named extra"}
    name, out = encode_event(ev)
    assert name == "message_created"
    assert out["future_field"] == {"nested": [1, 2]}
    assert out["extra"] == "literally named extra"
    assert decode_event(f"chat_room:{ROOM}", name, out) == ev


# ----------------------------------------------------------------- agent_control


def test_agent_control_example_frame_decodes() -> None:
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", control_payload())
    assert ev == AgentControl(
        mode="stop",
        scope="room",
        agent_id=AGENT,
        execution_id="e9",
        room_id=ROOM,
        correlation_id="ctl-42",
        type="agent.control",
        reason="user_requested",
    )


@pytest.mark.parametrize(
    "key", ["execution_id", "room_id", "correlation_id", "mode", "scope", "agent_id"]
)
def test_agent_control_keys_required(key: str) -> None:
    err = rejects(f"agent_control:{AGENT}", "agent.control", without(control_payload(), key))
    assert key in err.reason


@pytest.mark.parametrize("key", ["execution_id", "room_id"])
def test_agent_control_nullable_keys(key: str) -> None:
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", control_payload(**{key: None}))
    assert isinstance(ev, AgentControl)
    assert getattr(ev, key) is None


def test_agent_control_correlation_id_null_rejected_but_empty_allowed() -> None:
    rejects(f"agent_control:{AGENT}", "agent.control", control_payload(correlation_id=None))
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", control_payload(correlation_id=""))
    assert isinstance(ev, AgentControl)
    assert ev.correlation_id == ""


@pytest.mark.parametrize("key", ["reason", "type"])
def test_agent_control_null_rejected_but_absence_fine(key: str) -> None:
    err = rejects(f"agent_control:{AGENT}", "agent.control", control_payload(**{key: None}))
    assert key in err.reason
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", without(control_payload(), key))
    assert isinstance(ev, AgentControl)
    assert getattr(ev, key) is None
    # An unset optional is omitted on encode, so the payload stays valid.
    assert key not in encode_event(ev)[1]


@pytest.mark.parametrize("mode", ["STOP", "pause", "", 1, None])
def test_agent_control_mode_is_case_sensitive_enum(mode: Any) -> None:
    rejects(f"agent_control:{AGENT}", "agent.control", control_payload(mode=mode))


@pytest.mark.parametrize("mode", ["interrupt", "stop", "play"])
def test_agent_control_modes(mode: str) -> None:
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", control_payload(mode=mode))
    assert isinstance(ev, AgentControl)
    assert ev.mode == mode


@pytest.mark.parametrize("scope", ["Agent", "global", None])
def test_agent_control_scope_enum(scope: Any) -> None:
    rejects(f"agent_control:{AGENT}", "agent.control", control_payload(scope=scope))


def test_agent_control_agent_id_non_empty() -> None:
    rejects(f"agent_control:{AGENT}", "agent.control", control_payload(agent_id=""))


# ----------------------------------------------------------------- supersede


def test_supersede_example_frame_decodes() -> None:
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload())
    assert isinstance(ev, Supersede)
    assert ev.reason == "session.already_connected"
    assert ev.retryable is False
    assert ev.correlation_id == "evict-9"


def test_supersede_correlation_id_key_required_value_nullable() -> None:
    rejects(f"agent_control:{AGENT}", "supersede", without(supersede_payload(), "correlation_id"))
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload(correlation_id=None))
    assert isinstance(ev, Supersede)
    assert ev.correlation_id is None


@pytest.mark.parametrize("value", ["true", 1, None, [True]])
def test_supersede_non_bool_retryable_normalised_to_false(value: Any) -> None:
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload(retryable=value))
    assert isinstance(ev, Supersede)
    assert ev.retryable is False


def test_supersede_absent_retryable_is_false_and_true_is_kept() -> None:
    ev = decode_event(
        f"agent_control:{AGENT}", "supersede", without(supersede_payload(), "retryable")
    )
    assert isinstance(ev, Supersede)
    assert ev.retryable is False
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload(retryable=True))
    assert isinstance(ev, Supersede)
    assert ev.retryable is True


@pytest.mark.parametrize("value", [1.5, "30", True, {}])
def test_supersede_non_integer_retry_after_normalised_to_null(value: Any) -> None:
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload(retry_after=value))
    assert isinstance(ev, Supersede)
    assert ev.retry_after is None


def test_supersede_integer_retry_after_kept() -> None:
    ev = decode_event(f"agent_control:{AGENT}", "supersede", supersede_payload(retry_after=30))
    assert isinstance(ev, Supersede)
    assert ev.retry_after == 30


@pytest.mark.parametrize("key", ["reason", "message"])
def test_supersede_required_strings(key: str) -> None:
    rejects(f"agent_control:{AGENT}", "supersede", without(supersede_payload(), key))
    rejects(f"agent_control:{AGENT}", "supersede", supersede_payload(**{key: None}))


# ----------------------------------------------------------------- rooms


def test_room_added_and_removed_shape() -> None:
    payload = {"id": ROOM, "inserted_at": "t1", "updated_at": "t2", "title": None}
    added = decode_event(f"agent_rooms:{AGENT}", "room_added", payload)
    removed = decode_event(f"agent_rooms:{AGENT}", "room_removed", payload)
    assert added == RoomAdded(id=ROOM, inserted_at="t1", updated_at="t2")
    assert removed == RoomRemoved(id=ROOM, inserted_at="t1", updated_at="t2")


def test_room_added_legacy_fields_kept() -> None:
    payload = {
        "id": ROOM,
        "inserted_at": "t",
        "updated_at": "t",
        "owner": {"id": "o"},
        "type": "direct",
    }
    ev = decode_event(f"user_rooms:{AGENT}", "room_added", payload)
    assert isinstance(ev, RoomAdded)
    assert ev.extra == {"owner": {"id": "o"}, "type": "direct"}


@pytest.mark.parametrize("key", ["id", "inserted_at", "updated_at"])
def test_room_added_required(key: str) -> None:
    payload = {"id": ROOM, "inserted_at": "t", "updated_at": "t"}
    rejects(f"agent_rooms:{AGENT}", "room_added", without(payload, key))


def test_room_added_id_non_empty_and_title_typed() -> None:
    rejects(f"agent_rooms:{AGENT}", "room_added", {"id": "", "inserted_at": "t", "updated_at": "t"})
    rejects(
        f"agent_rooms:{AGENT}",
        "room_added",
        {"id": ROOM, "inserted_at": "t", "updated_at": "t", "title": 3},
    )


def test_room_deleted_minimal() -> None:
    ev = decode_event(f"room_participants:{ROOM}", "room_deleted", {"id": ROOM})
    assert ev == RoomDeleted(room_id=ROOM, id=ROOM)
    rejects(f"room_participants:{ROOM}", "room_deleted", {"id": ""})
    rejects(f"room_participants:{ROOM}", "room_deleted", {})


def test_room_updated_keeps_the_row() -> None:
    ev = decode_event(
        "user_rooms:u1", "room_updated", {"id": ROOM, "title": "T", "status": "active"}
    )
    assert isinstance(ev, RoomUpdated)
    assert ev.extra == {"title": "T", "status": "active"}
    rejects("user_rooms:u1", "room_updated", {"title": "T"})


# ----------------------------------------------------------------- participants


def test_participant_added() -> None:
    ev = decode_event(f"room_participants:{ROOM}", "participant_added", participant_payload())
    assert ev == ParticipantAdded(room_id=ROOM, id="u1", name="Bob", type="User", handle="bob")


def test_participant_added_handle_null_rejected_absent_fine() -> None:
    err = rejects(
        f"room_participants:{ROOM}", "participant_added", participant_payload(handle=None)
    )
    assert "handle" in err.reason
    ev = decode_event(
        f"room_participants:{ROOM}", "participant_added", without(participant_payload(), "handle")
    )
    assert isinstance(ev, ParticipantAdded)
    assert ev.handle is None
    assert "handle" not in encode_event(ev)[1]


def test_participant_added_description_nullable() -> None:
    ev = decode_event(
        f"room_participants:{ROOM}", "participant_added", participant_payload(description=None)
    )
    assert isinstance(ev, ParticipantAdded)
    assert ev.description is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"is_remote": True}, (True, True)),
        ({"is_external": False}, (False, False)),
        ({"is_remote": None}, (None, None)),
        ({"is_remote": True, "is_external": False}, (True, False)),
        ({}, (None, None)),
    ],
)
def test_participant_is_remote_mirrored(given: dict[str, Any], expected: tuple[Any, Any]) -> None:
    ev = decode_event(
        f"room_participants:{ROOM}", "participant_added", participant_payload(**given)
    )
    assert isinstance(ev, ParticipantAdded)
    assert (ev.is_remote, ev.is_external) == expected


def test_participant_is_remote_must_be_bool() -> None:
    rejects(f"room_participants:{ROOM}", "participant_added", participant_payload(is_remote="yes"))
    rejects(f"room_participants:{ROOM}", "participant_added", participant_payload(is_external=1))


@pytest.mark.parametrize("key", ["id", "name", "type"])
def test_participant_required(key: str) -> None:
    rejects(f"room_participants:{ROOM}", "participant_added", without(participant_payload(), key))
    rejects(f"room_participants:{ROOM}", "participant_removed", without(participant_payload(), key))


def test_participant_removed_extras_pass_through() -> None:
    ev = decode_event(f"room_participants:{ROOM}", "participant_removed", participant_payload())
    assert ev == ParticipantRemoved(
        room_id=ROOM, id="u1", name="Bob", type="User", extra={"handle": "bob"}
    )


# ----------------------------------------------------------------- contacts


def test_contact_request_received() -> None:
    payload = {"id": "r1", "status": "pending", "inserted_at": "t", "from_handle": None}
    ev = decode_event(f"agent_contacts:{AGENT}", "contact_request_received", payload)
    assert ev == ContactRequestReceived(id="r1", status="pending", inserted_at="t")
    rejects(f"agent_contacts:{AGENT}", "contact_request_received", without(payload, "status"))
    rejects(f"agent_contacts:{AGENT}", "contact_request_received", {**payload, "message": 3})


def test_contact_request_updated() -> None:
    ev = decode_event(
        f"agent_contacts:{AGENT}", "contact_request_updated", {"id": "r1", "status": "approved"}
    )
    assert ev == ContactRequestUpdated(id="r1", status="approved")
    rejects(f"agent_contacts:{AGENT}", "contact_request_updated", {"id": "r1"})


@pytest.mark.parametrize("key", ["handle", "name"])
def test_contact_added_handle_and_name_keys_required_but_nullable(key: str) -> None:
    rejects(f"agent_contacts:{AGENT}", "contact_added", without(contact_payload(), key))
    ev = decode_event(f"agent_contacts:{AGENT}", "contact_added", contact_payload(**{key: None}))
    assert isinstance(ev, ContactAdded)
    assert getattr(ev, key) is None


def test_contact_added_description_null_rejected() -> None:
    rejects(f"agent_contacts:{AGENT}", "contact_added", contact_payload(description=None))
    ev = decode_event(f"agent_contacts:{AGENT}", "contact_added", contact_payload(description="d"))
    assert isinstance(ev, ContactAdded)
    assert ev.description == "d"


def test_contact_added_is_external_mirrored() -> None:
    ev = decode_event(f"agent_contacts:{AGENT}", "contact_added", contact_payload(is_external=True))
    assert isinstance(ev, ContactAdded)
    assert ev.is_remote is True


def test_contact_removed() -> None:
    assert decode_event(
        f"agent_contacts:{AGENT}", "contact_removed", {"id": "c1"}
    ) == ContactRemoved(id="c1")
    rejects(f"agent_contacts:{AGENT}", "contact_removed", {"id": ""})


def test_contact_event_union_is_tagged() -> None:
    data = {EVENT_TAG: "contact_removed", "id": "c1"}
    assert structure(data, ContactEvent) == ContactRemoved(id="c1")  # type: ignore[arg-type]


# ----------------------------------------------------------------- the rest


def test_event_created_has_no_required_fields() -> None:
    ev = decode_event(f"chat_room:{ROOM}", "event_created", {})
    assert ev == RoomEventCreated(room_id=ROOM)
    ev = decode_event("somewhere:else", "event_created", {"message_type": "thought"})
    assert ev == RoomEventCreated(room_id=None, extra={"message_type": "thought"})


@pytest.mark.parametrize(
    ("event", "cls"), [("task_created", TaskCreated), ("task_updated", TaskUpdated)]
)
def test_tasks_are_raw_maps(event: str, cls: type[Any]) -> None:
    payload = {"id": 5, "anything": [None, {"x": True}]}
    ev = decode_event("tasks:u1", event, payload)
    assert type(ev) is cls
    assert ev.extra == payload
    assert encode_event(ev) == (event, payload)


def test_unknown_event_rejected() -> None:
    err = rejects(f"chat_room:{ROOM}", "message_deleted", {})
    assert err.reason == "unknown event"
    assert event_class("message_deleted") is None
    assert event_class("agent.control") is AgentControl


@pytest.mark.parametrize("payload", [None, [], "x", 3, True])
def test_non_object_payload_rejected(payload: Any) -> None:
    err = rejects(f"agent_control:{AGENT}", "supersede", payload)
    assert err.reason == "payload is not an object"


def test_error_text_never_contains_payload_values() -> None:
    secret = "sk-live-TOPSECRET"
    cases = [
        ("message_created", message_payload(id=[secret])),
        ("message_created", message_payload(metadata={"mentions": [{"id": {secret: secret}}]})),
        ("agent.control", control_payload(mode=secret)),
        ("supersede", supersede_payload(message={"k": secret})),
    ]
    for event, payload in cases:
        topic = f"chat_room:{ROOM}" if event == "message_created" else f"agent_control:{AGENT}"
        err = rejects(topic, event, payload)
        assert secret not in str(err)
        assert secret not in repr(err)


def test_the_tag_key_cannot_be_spoofed_by_a_payload() -> None:
    payload = control_payload(**{EVENT_TAG: "supersede"})
    ev = decode_event(f"agent_control:{AGENT}", "agent.control", payload)
    assert isinstance(ev, AgentControl)


def test_platform_union_structures_by_tag() -> None:
    data = {EVENT_TAG: "room_deleted", "room_id": ROOM, "id": ROOM}
    assert structure(data, PlatformEvent) == RoomDeleted(room_id=ROOM, id=ROOM)  # type: ignore[arg-type]


def test_topic_room_id() -> None:
    assert topic_room_id("chat_room:r1") == "r1"
    assert topic_room_id("room_participants:r1") == "r1"
    assert topic_room_id("agent_rooms:r1") is None
    assert topic_room_id("phoenix") is None


def test_encode_rejects_non_events() -> None:
    with pytest.raises(TypeError):
        encode_event(Mention(id="x"))  # type: ignore[arg-type]


def test_constructing_with_an_empty_id_fails_locally() -> None:
    with pytest.raises(ValueError, match="id must be a non-empty string"):
        ContactRemoved(id="")
