"""Property tests for band_trio.wire.events.

Reference: docs/reference/protocol.rst.

* Valid payloads (generated per (protocol, "Events and payloads")) decode, and re-encoding them
  gives a payload that decodes to the same object and keeps every key sent.
* Mutated payloads (a key dropped, a type changed, a field nulled, junk keys
  added, the payload replaced) are either accepted or rejected with
  InvalidEventError, never another exception, and the error never echoes values.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from band_trio.errors import InvalidEventError
from band_trio.wire.events import (
    EVENT_TAG,
    PlatformEvent,
    decode_event,
    encode_event,
    event_class,
)

SECRET = "sk-live-SECRET-VALUE"

text = st.text(max_size=12)
ident = st.text(min_size=1, max_size=12)
n_text = st.none() | text
n_bool = st.none() | st.booleans()

json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text | st.just(SECRET)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)

mention = st.fixed_dictionaries(
    {"id": ident},
    optional={"handle": n_text, "name": n_text, "username": n_text, "kind": text},
)
metadata = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "mentions": st.none() | st.lists(mention, max_size=3),
        "status": json_value,
        "delivery_status": st.none() | st.dictionaries(ident, json_value, max_size=2),
        "delegation": json_value,
    },
)
message = st.fixed_dictionaries(
    {
        "id": ident,
        "content": text,
        "message_type": text,
        "sender_id": ident,
        "sender_type": text,
        "inserted_at": text,
        "updated_at": text,
    },
    optional={
        "sender_name": n_text,
        "chat_room_id": json_value,
        "thread_id": json_value,
        "metadata": metadata,
        "attachments": st.none()
        | st.lists(st.dictionaries(text, json_value, max_size=3), max_size=2),
    },
)
room = st.fixed_dictionaries(
    {"id": ident, "inserted_at": text, "updated_at": text},
    optional={"title": n_text, "task_id": n_text},
)
participant_added = st.fixed_dictionaries(
    {"id": ident, "name": text, "type": text},
    optional={"handle": text, "description": n_text, "is_remote": n_bool, "is_external": n_bool},
)
participant_removed = st.fixed_dictionaries({"id": ident, "name": text, "type": text})
contact_added = st.fixed_dictionaries(
    {"id": ident, "handle": n_text, "name": n_text, "type": text, "inserted_at": text},
    optional={"description": text, "is_remote": n_bool, "is_external": n_bool},
)
supersede = st.fixed_dictionaries(
    {"reason": text, "message": text, "correlation_id": n_text},
    optional={
        "retryable": st.booleans(),
        "retry_after": st.none() | st.integers(min_value=0),
        "target_socket_id": n_text,
    },
)
control = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["interrupt", "stop", "play"]),
        "scope": st.sampled_from(["agent", "room"]),
        "agent_id": ident,
        "execution_id": n_text,
        "room_id": n_text,
        "correlation_id": text,
    },
    optional={"type": st.just("agent.control"), "reason": text},
)
raw_map = st.dictionaries(text, json_value, max_size=4)

# (event name, topic, payload strategy)
VALID: list[tuple[str, str, st.SearchStrategy[dict[str, Any]]]] = [
    ("message_created", "chat_room:r1", message),
    ("message_updated", "chat_room:r1", message),
    ("event_created", "chat_room:r1", raw_map),
    ("room_added", "agent_rooms:a1", room),
    ("room_removed", "agent_rooms:a1", room),
    (
        "room_updated",
        "user_rooms:u1",
        st.fixed_dictionaries({"id": ident}, optional={"title": n_text}),
    ),
    ("room_deleted", "room_participants:r1", st.fixed_dictionaries({"id": ident})),
    ("participant_added", "room_participants:r1", participant_added),
    ("participant_removed", "room_participants:r1", participant_removed),
    (
        "contact_request_received",
        "agent_contacts:a1",
        st.fixed_dictionaries(
            {"id": ident, "status": text, "inserted_at": text},
            optional={"from_handle": n_text, "from_name": n_text, "message": n_text},
        ),
    ),
    (
        "contact_request_updated",
        "agent_contacts:a1",
        st.fixed_dictionaries({"id": ident, "status": text}),
    ),
    ("contact_added", "agent_contacts:a1", contact_added),
    ("contact_removed", "agent_contacts:a1", st.fixed_dictionaries({"id": ident})),
    ("supersede", "agent_control:a1", supersede),
    ("agent.control", "agent_control:a1", control),
    ("task_created", "tasks:u1", raw_map),
    ("task_updated", "tasks:u1", raw_map),
]


@st.composite
def valid_event(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    event, topic, payload_strategy = draw(st.sampled_from(VALID))
    payload = draw(payload_strategy)
    cls = event_class(event)
    assert cls is not None
    reserved = {"room_id", EVENT_TAG, *(f.name for f in cls.__attrs_attrs__)}
    junk = draw(st.dictionaries(text.filter(lambda k: k not in reserved), json_value, max_size=3))
    payload.update({k: v for k, v in junk.items() if k not in payload})
    return event, topic, payload


# Keys whose value decode normalises, so the re-encoded value may legitimately differ.
NORMALISED = {"metadata", "attachments"}


def test_every_event_class_has_a_generator() -> None:
    assert {name for name, _, _ in VALID} == {cls.EVENT for cls in PlatformEvent.__args__}  # type: ignore[attr-defined]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(valid_event())
def test_valid_payloads_round_trip(case: tuple[str, str, dict[str, Any]]) -> None:
    event, topic, payload = case
    ev = decode_event(topic, event, payload)
    assert type(ev) is event_class(event)
    name, out = encode_event(ev)
    assert name == event
    assert decode_event(topic, name, out) == ev
    # Every key the platform sent survives the round trip with its value.
    for key, value in payload.items():
        if key in NORMALISED and (value is None or event.startswith("message_")):
            continue
        assert key in out, key
        assert out[key] == value, key


@settings(max_examples=150)
@given(message)
def test_message_mentions_survive_round_trip(payload: dict[str, Any]) -> None:
    ev = decode_event("chat_room:r1", "message_created", payload)
    _, out = encode_event(ev)
    sent = (payload.get("metadata") or {}).get("mentions") or []
    assert [m["id"] for m in out["metadata"]["mentions"]] == [m["id"] for m in sent]
    for sent_mention, out_mention in zip(sent, out["metadata"]["mentions"], strict=True):
        for key, value in sent_mention.items():
            assert out_mention[key] == value
    assert out["attachments"] == (payload.get("attachments") or [])


def try_decode(topic: str, event: str, payload: Any) -> PlatformEvent | InvalidEventError:
    """Decode, returning the InvalidEventError instead of raising it (any other error raises)."""
    try:
        return decode_event(topic, event, payload)
    except InvalidEventError as err:
        return err


@st.composite
def mutated_event(draw: st.DrawFn) -> tuple[str, str, Any]:
    event, topic, payload = draw(valid_event())
    kind = draw(st.sampled_from(["drop", "retype", "null", "junk", "replace", "nested"]))
    keys = sorted(payload)
    if kind == "drop" and keys:
        payload.pop(draw(st.sampled_from(keys)))
    elif kind == "retype" and keys:
        payload[draw(st.sampled_from(keys))] = draw(json_value)
    elif kind == "null" and keys:
        payload[draw(st.sampled_from(keys))] = None
    elif kind == "junk":
        payload.update(draw(st.dictionaries(text, json_value, min_size=1, max_size=3)))
    elif kind == "replace":
        return event, topic, draw(json_value)
    elif kind == "nested" and isinstance(payload.get("metadata"), dict):
        meta = payload["metadata"]
        meta[draw(st.sampled_from(["mentions", "delivery_status", "status"]))] = draw(json_value)
    if draw(st.booleans()):
        topic = draw(
            st.sampled_from(["chat_room:r1", "agent_rooms:a1", "chat_room:", "phoenix", topic])
        )
    return event, topic, payload


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mutated_event())
def test_mutated_payloads_accepted_or_rejected_cleanly(case: tuple[str, str, Any]) -> None:
    event, topic, payload = case
    result = try_decode(topic, event, payload)
    if isinstance(result, InvalidEventError):
        assert result.event == event
        assert result.topic == topic
        assert SECRET not in str(result)
    else:
        # Whatever is accepted is a well-formed event that re-encodes and re-decodes.
        name, out = encode_event(result)
        assert decode_event(topic, name, out) == result


@settings(max_examples=200)
@given(st.text(max_size=20), st.text(max_size=20), json_value)
def test_arbitrary_input_only_raises_invalid_event_error(
    topic: str, event: str, payload: Any
) -> None:
    result = try_decode(topic, event, payload)
    if isinstance(result, InvalidEventError):
        assert SECRET not in str(result)
