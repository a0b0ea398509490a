"""The event decoder facing a hostile platform: never a crash, always InvalidEventError.

A frame from the socket is decoded by ``json.loads``, which accepts ``NaN``,
``Infinity`` and integers of thousands of digits, and may nest deeply. Every
event name is fed payloads whose fields hold such values (and whole payloads
made of them); :func:`decode_event` either returns an event or raises
:class:`InvalidEventError`, never anything else.
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from band_trio.errors import InvalidEventError
from band_trio.wire.events import PlatformEvent, decode_event, event_class

EVENT_NAMES = sorted(cls.EVENT for cls in PlatformEvent.__args__)  # type: ignore[attr-defined]
TOPICS = ["chat_room:r1", "agent_rooms:a1", "room_participants:r1", "chat_room:", "phoenix", ""]

hostile_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.just(math.inf),
    st.just(-math.inf),
    st.just(math.nan),
    st.just(10**4000),
    st.just(-(10**4000)),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.just("\ud800"),  # a lone surrogate, as json.loads makes of "\\ud800"
    st.just("x" * 10_000),
    st.just("1e999"),
)
hostile_value = st.recursive(
    hostile_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def deep(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"content": value, "metadata": [value]}
    return value


def field_names(event: str) -> list[str]:
    cls = event_class(event)
    assert cls is not None
    return [field.alias or field.name for field in attrs.fields(cls)]


@st.composite
def hostile_payloads(draw: st.DrawFn) -> tuple[str, str, Any]:
    event = draw(st.sampled_from(EVENT_NAMES))
    topic = draw(st.sampled_from(TOPICS))
    names = [*field_names(event), "message", "metadata", "mentions", "id", "room_id"]
    payload = draw(st.dictionaries(st.sampled_from(names), hostile_value, max_size=len(names)))
    if draw(st.booleans()):
        payload = draw(st.one_of(hostile_value, st.just(deep(draw(st.integers(1, 400))))))
    return event, topic, payload


def decode_or_refuse(topic: str, event: str, payload: Any) -> None:
    """Decode; an InvalidEventError naming this frame is the one allowed failure."""
    refusal: InvalidEventError | None = None
    try:
        decode_event(topic, event, payload)
    except InvalidEventError as err:
        refusal = err
    if refusal is not None:
        assert (refusal.event, refusal.topic) == (event, topic)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_payloads())
def test_hostile_payloads_decode_or_raise_invalid_event_error(case: tuple[str, str, Any]) -> None:
    event, topic, payload = case
    decode_or_refuse(topic, event, payload)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(EVENT_NAMES), st.sampled_from(TOPICS), st.text(max_size=60))
def test_payloads_from_json_text_with_non_json_numbers(event: str, topic: str, junk: str) -> None:
    for text in (
        '{"message": {"id": "m", "content": NaN}, "id": Infinity}',
        '{"id": -Infinity, "metadata": {"mentions": [1e999]}}',
        '{"id": ' + "9" * 4000 + "}",
        json.dumps({"id": junk, "content": junk, "message": {"id": junk}}),
    ):
        decode_or_refuse(topic, event, json.loads(text))
