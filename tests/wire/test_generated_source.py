"""Generated methods keep no source text in linecache, and still work."""

from __future__ import annotations

import linecache
import traceback

import attrs
import pytest

import band_trio.tools
import band_trio.wire.events
import band_trio.wire.models
from band_trio._generated_source import forget_generated_source
from band_trio.errors import InvalidEventError
from band_trio.wire.events import MessageCreated, decode_event, encode_event

_PAYLOAD = {
    "id": "m1",
    "content": "hi",
    "sender_id": "u1",
    "sender_type": "User",
    "sender_name": "Ann",
    "message_type": "text",
    "inserted_at": "2026-11-30T00:00:00Z",
    "updated_at": "2026-11-30T00:00:00Z",
    "unknown_key": 1,
}


def _cached(module: str) -> list[str]:
    return [key for key in linecache.cache if f" {module}." in key]


@pytest.mark.parametrize(
    "module",
    [band_trio.wire.events.__name__, band_trio.wire.models.__name__, band_trio.tools.__name__],
)
def test_no_generated_source_is_cached_for_our_classes(module: str) -> None:
    decode_event("chat_room:r1", "message_created", _PAYLOAD)
    assert _cached(module) == []


def test_forget_generated_source_drops_only_the_named_module() -> None:
    @attrs.frozen
    class Probe:
        x: int

    key = next(k for k in linecache.cache if k.endswith(f"{Probe.__qualname__}>"))
    other = "<attrs generated methods not_ours.Thing>"
    linecache.cache[other] = (1, None, ["x\n"], other)
    try:
        forget_generated_source(__name__)
        assert key not in linecache.cache
        assert other in linecache.cache
    finally:
        linecache.cache.pop(other, None)
    assert Probe(1) == Probe(1)


def test_events_round_trip_and_explain_errors_with_lazy_hooks() -> None:
    ev = decode_event("chat_room:r1", "message_created", _PAYLOAD)
    assert isinstance(ev, MessageCreated)
    name, out = encode_event(ev)
    assert name == "message_created"
    assert out["unknown_key"] == 1
    with pytest.raises(InvalidEventError, match="content"):
        decode_event("chat_room:r1", "message_created", {**_PAYLOAD, "content": 5})


def test_a_traceback_through_a_generated_init_still_formats() -> None:
    with pytest.raises(TypeError) as info:
        MessageCreated()  # type: ignore[call-arg]
    text = "".join(traceback.format_exception(info.value))
    assert "__init__" in text
