"""Unit tests for the sans-io Phoenix v2 core.

Reference: docs/reference/protocol.rst (protocol, "Phoenix Channels v2 framing";
"Channel control frames"; "Heartbeat and liveness").
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from band_trio.errors import FrameError, InvalidEventError, LocalProtocolError
from band_trio.wire.events import decode_event
from band_trio.wire.phoenix import (
    ChannelClosed,
    ChannelErrored,
    ChannelMessage,
    Frame,
    HeartbeatAck,
    JoinFailed,
    JoinOk,
    LeaveFailed,
    LeaveOk,
    PhoenixProtocol,
    TopicState,
    decode_frame,
    encode_frame,
)

TOPIC = "agent_control:a1"


def frame(join_ref: Any, ref: Any, topic: str, event: str, payload: Any = None) -> str:
    return json.dumps([join_ref, ref, topic, event, {} if payload is None else payload])


def ok_reply(join_ref: str | None, ref: str | None, topic: str = TOPIC) -> str:
    return frame(join_ref, ref, topic, "phx_reply", {"status": "ok", "response": {}})


def connected(now: float = 0.0) -> PhoenixProtocol:
    proto = PhoenixProtocol()
    proto.reset_connection(now)
    return proto


def joined(topic: str = TOPIC) -> tuple[PhoenixProtocol, str]:
    proto = connected()
    ref, _ = proto.send_join(topic)
    assert proto.receive_frame(ok_reply(ref, ref, topic), 0.0) == [JoinOk(topic, ref, {})]
    return proto, ref


# ----------------------------------------------------------------- framing


def test_decode_frame_basic() -> None:
    f = decode_frame(frame("1", None, TOPIC, "supersede", {"a": 1}))
    assert f == Frame("1", None, TOPIC, "supersede", {"a": 1})


def test_decode_frame_accepts_bytes() -> None:
    assert decode_frame(frame("1", "2", TOPIC, "x").encode()).ref == "2"


@pytest.mark.parametrize("payload", [None, [], "x", 3, True])
def test_non_object_payload_becomes_empty(payload: Any) -> None:
    text = json.dumps(["1", None, TOPIC, "x", payload])
    assert decode_frame(text).payload == {}


@pytest.mark.parametrize(("raw", "expected"), [(7, "7"), (7.0, "7"), ("7", "7"), (None, None)])
def test_numeric_refs_are_coerced(raw: Any, expected: str | None) -> None:
    f = decode_frame(json.dumps([raw, raw, TOPIC, "x", {}]))
    assert f.join_ref == expected
    assert f.ref == expected


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "{}",
        "[]",
        '["1", "1", "t", "e"]',
        '["1", "1", "t", "e", {}, 6]',
        '["1", "1", "", "e", {}]',
        '["1", "1", "t", "", {}]',
        '["1", "1", null, "e", {}]',
        '["1", "1", "t", 5, {}]',
        '[true, "1", "t", "e", {}]',
        '["1", [1], "t", "e", {}]',
        '["1", 1.5, "t", "e", {}]',
        b"\xff\xfe",
        "[" * 100_000,
    ],
)
def test_malformed_frames_raise_frame_error(text: str | bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(text)


def test_encode_decode_round_trip() -> None:
    f = Frame("3", "4", "chat_room:r", "phx_join", {"k": ["v"]})
    assert decode_frame(encode_frame(f)) == f


# ----------------------------------------------------------------- refs and joins


def test_join_frame_and_shared_ref_counter() -> None:
    proto = connected()
    ref, text = proto.send_join(TOPIC)
    assert json.loads(text) == [ref, ref, TOPIC, "phx_join", {}]
    hb_ref, hb_text = proto.send_heartbeat(0.0)
    assert json.loads(hb_text) == [None, hb_ref, "phoenix", "heartbeat", {}]
    ref2, _ = proto.send_join("agent_rooms:a1")
    assert [int(ref), int(hb_ref), int(ref2)] == [1, 2, 3]


def test_ref_counter_not_reset_on_reconnect() -> None:
    proto, ref = joined()
    assert proto.reset_connection(10.0) == [TOPIC]
    new_ref, _ = proto.send_join(TOPIC)
    assert int(new_ref) > int(ref)
    assert proto.join_ref(TOPIC) == new_ref


def test_join_reply_matched_by_join_ref_not_ref() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    # A reply whose ref differs but join_ref matches is accepted.
    assert proto.receive_frame(ok_reply(ref, "999"), 0.0) == [JoinOk(TOPIC, ref, {})]
    assert proto.state(TOPIC) is TopicState.JOINED


def test_join_error_reply_unregisters_with_reason() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    reply = frame(ref, ref, TOPIC, "phx_reply", {"status": "error", "response": {"reason": "nope"}})
    assert proto.receive_frame(reply, 0.0) == [JoinFailed(TOPIC, ref, "nope")]
    assert proto.state(TOPIC) is None


def test_a_withdrawn_join_is_unregistered_and_its_late_reply_dropped() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    text = proto.cancel_join(TOPIC, ref)
    assert text is not None
    assert json.loads(text)[::2] == [ref, TOPIC, {}]
    assert json.loads(text)[3] == "phx_leave"
    assert proto.state(TOPIC) is None
    assert proto.receive_frame(ok_reply(ref, ref), 0.0) == []
    assert proto.state(TOPIC) is None
    new_ref, _ = proto.send_join(TOPIC)  # joinable again, with a fresh ref
    assert new_ref != ref


def test_withdrawing_a_join_that_moved_on_changes_nothing() -> None:
    proto, ref = joined()
    assert proto.cancel_join(TOPIC, ref) is None  # already joined
    assert proto.state(TOPIC) is TopicState.JOINED
    proto.reset_connection(1.0)
    new_ref, _ = proto.send_join(TOPIC)
    assert proto.cancel_join(TOPIC, ref) is None  # an older join's ref
    assert proto.state(TOPIC) is TopicState.JOINING
    assert proto.cancel_join(TOPIC, new_ref) is not None


def test_join_error_default_reason() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    reply = frame(ref, ref, TOPIC, "phx_reply", {"status": "weird"})
    assert proto.receive_frame(reply, 0.0) == [JoinFailed(TOPIC, ref, "invalid topic")]


def test_stale_and_null_join_ref_replies_dropped() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    assert proto.receive_frame(ok_reply("0", ref), 0.0) == []
    assert proto.receive_frame(ok_reply(None, ref), 0.0) == []
    assert proto.state(TOPIC) is TopicState.JOINING


def test_pushes_before_the_join_reply_are_dropped() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    assert proto.receive_frame(frame(ref, None, TOPIC, "supersede", {"x": 1}), 0.0) == []
    proto.receive_frame(ok_reply(ref, ref), 0.0)
    assert proto.receive_frame(frame(ref, None, TOPIC, "supersede", {"x": 1}), 0.0) == [
        ChannelMessage(TOPIC, "supersede", {"x": 1})
    ]


def test_pushes_need_the_current_join_ref() -> None:
    proto, ref = joined()
    assert proto.receive_frame(frame(None, None, TOPIC, "e"), 0.0) == []
    assert proto.receive_frame(frame("0", None, TOPIC, "e"), 0.0) == []
    assert proto.receive_frame(frame(ref, None, TOPIC, "e"), 0.0) == [
        ChannelMessage(TOPIC, "e", {})
    ]


def test_frames_for_unjoined_topics_dropped() -> None:
    proto, ref = joined()
    assert proto.receive_frame(frame(ref, None, "chat_room:zz", "e"), 0.0) == []


def test_joining_twice_is_local_misuse() -> None:
    proto = connected()
    proto.send_join(TOPIC)
    with pytest.raises(LocalProtocolError):
        proto.send_join(TOPIC)


@pytest.mark.parametrize("topic", ["", "phoenix"])
def test_reserved_topics_cannot_be_joined(topic: str) -> None:
    with pytest.raises(LocalProtocolError):
        connected().send_join(topic)


def test_nothing_sent_without_a_connection() -> None:
    proto = PhoenixProtocol()
    with pytest.raises(LocalProtocolError):
        proto.send_join(TOPIC)
    with pytest.raises(LocalProtocolError):
        proto.send_heartbeat(0.0)
    assert not proto.heartbeat_due(1e9)
    assert not proto.is_dead(1e9)


# ----------------------------------------------------------------- leave, close, error


def test_leave_then_ok_reply() -> None:
    proto, jr = joined()
    text = proto.send_leave(TOPIC)
    assert text is not None
    leave = json.loads(text)
    assert leave[0] == jr
    assert int(leave[1]) > int(jr)
    assert leave[2:] == [TOPIC, "phx_leave", {}]
    assert proto.state(TOPIC) is TopicState.LEAVING
    assert proto.receive_frame(ok_reply(jr, leave[1]), 0.0) == [LeaveOk(TOPIC)]
    assert proto.state(TOPIC) is None
    # The phx_close that real Phoenix sends afterwards is ignored.
    assert proto.receive_frame(frame(jr, jr, TOPIC, "phx_close"), 0.0) == []


def test_leave_error_reply() -> None:
    proto, jr = joined()
    proto.send_leave(TOPIC)
    reply = frame(jr, "9", TOPIC, "phx_reply", {"status": "error", "response": {}})
    assert proto.receive_frame(reply, 0.0) == [LeaveFailed(TOPIC, "leave refused")]
    assert proto.state(TOPIC) is None


def test_leave_while_joining_is_sent_but_completes_locally() -> None:
    proto = connected()
    proto.send_join(TOPIC)
    assert proto.send_leave(TOPIC) is not None
    assert proto.state(TOPIC) is None


def test_leave_while_disconnected_completes_locally() -> None:
    proto, _ = joined()
    proto.connection_lost()
    assert proto.send_leave(TOPIC) is None
    assert proto.state(TOPIC) is None


def test_leave_unknown_topic_is_misuse() -> None:
    with pytest.raises(LocalProtocolError):
        connected().send_leave(TOPIC)


def test_phx_close_loses_the_topic() -> None:
    proto, jr = joined()
    assert proto.receive_frame(frame(jr, jr, TOPIC, "phx_close"), 0.0) == [ChannelClosed(TOPIC)]
    assert proto.state(TOPIC) is None
    assert proto.reset_connection(1.0) == []


def test_phx_error_needs_rejoin_with_new_join_ref() -> None:
    proto, jr = joined()
    assert proto.receive_frame(frame(jr, jr, TOPIC, "phx_error"), 0.0) == [ChannelErrored(TOPIC)]
    assert proto.state(TOPIC) is TopicState.NEEDS_REJOIN
    assert proto.topics_needing_rejoin() == [TOPIC]
    # Old-instance pushes are dropped now.
    assert proto.receive_frame(frame(jr, None, TOPIC, "e"), 0.0) == []
    new_ref, _ = proto.send_join(TOPIC)
    assert new_ref != jr


def test_reset_connection_rejoins_everything_and_drops_leaving() -> None:
    proto = connected()
    a, _ = proto.send_join("a:1")
    proto.send_join("b:1")
    proto.receive_frame(ok_reply(a, a, "a:1"), 0.0)
    c, _ = proto.send_join("c:1")
    proto.receive_frame(ok_reply(c, c, "c:1"), 0.0)
    proto.send_leave("c:1")
    assert proto.reset_connection(5.0) == ["a:1", "b:1"]
    assert proto.topics() == {"a:1": TopicState.NEEDS_REJOIN, "b:1": TopicState.NEEDS_REJOIN}
    # Frames of the old socket's channels are stale now.
    assert proto.receive_frame(frame(a, None, "a:1", "e"), 5.0) == []


# ----------------------------------------------------------------- heartbeat


def test_heartbeat_schedule_and_dead_deadline() -> None:
    proto = connected(100.0)
    assert not proto.heartbeat_due(129.9)
    assert proto.heartbeat_due(130.0)
    ref, _ = proto.send_heartbeat(130.0)
    assert proto.next_heartbeat_at == 160.0
    assert not proto.is_dead(159.9)
    assert proto.dead_at == 160.0
    assert proto.is_dead(160.0)
    # An ack pushes the deadline back to 60 s after the ack.
    assert proto.receive_frame(ok_reply(None, ref, "phoenix"), 131.0) == [HeartbeatAck(ref)]
    assert proto.dead_at == 191.0
    assert not proto.is_dead(190.0)


def test_heartbeat_ack_matches_ref_only() -> None:
    proto = connected()
    ref, _ = proto.send_heartbeat(30.0)
    # Event and status are not checked, only the ref.
    assert proto.receive_frame(
        frame(None, ref, "phoenix", "whatever", {"status": "error"}), 31.0
    ) == [HeartbeatAck(ref)]
    # A second ack for the same ref, or an unknown ref, is ignored.
    assert proto.receive_frame(ok_reply(None, ref, "phoenix"), 32.0) == []
    assert proto.receive_frame(ok_reply(None, "12345", "phoenix"), 32.0) == []
    assert proto.dead_at == 91.0


def test_unanswered_heartbeat_does_not_block_the_next() -> None:
    proto = connected()
    first, _ = proto.send_heartbeat(30.0)
    second, _ = proto.send_heartbeat(60.0)
    assert first != second
    # A late ack of the first still counts.
    assert proto.receive_frame(ok_reply(None, first, "phoenix"), 61.0) == [HeartbeatAck(first)]
    assert not proto.is_dead(120.0)


def test_ack_of_a_later_heartbeat_answers_earlier_ones() -> None:
    proto = connected()
    first, _ = proto.send_heartbeat(30.0)
    second, _ = proto.send_heartbeat(60.0)
    assert proto.receive_frame(ok_reply(None, second, "phoenix"), 61.0) == [HeartbeatAck(second)]
    assert proto.receive_frame(ok_reply(None, first, "phoenix"), 62.0) == []


def test_reset_connection_restarts_heartbeat_timing() -> None:
    proto = connected()
    ref, _ = proto.send_heartbeat(30.0)
    proto.reset_connection(500.0)
    assert proto.next_heartbeat_at == 530.0
    assert proto.dead_at == 560.0
    # An ack for a heartbeat of the previous socket means nothing now.
    assert proto.receive_frame(ok_reply(None, ref, "phoenix"), 501.0) == []


def test_invalid_timing_configuration() -> None:
    with pytest.raises(LocalProtocolError):
        PhoenixProtocol(heartbeat_interval=0)


def test_extend_deadline_pushes_dead_time_back() -> None:
    proto = connected()
    proto.extend_deadline(15.0)
    assert proto.dead_at == 75.0
    proto.extend_deadline(-3.0)
    assert proto.dead_at == 75.0


def test_abandon_join_drops_the_late_reply() -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    proto.abandon_join(TOPIC, "not-the-ref")
    assert proto.state(TOPIC) is TopicState.JOINING
    proto.abandon_join(TOPIC, ref)
    assert proto.state(TOPIC) is TopicState.NEEDS_REJOIN
    assert proto.receive_frame(ok_reply(ref, ref), 0.0) == []
    new_ref, _ = proto.send_join(TOPIC)
    assert new_ref != ref


# ----------------------------------------------------------------- fuzz

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)
frame_like = st.lists(
    st.one_of(
        st.none(),
        st.sampled_from(["1", "2", "3", 1, 2.0, "0"]),
        st.sampled_from([TOPIC, "phoenix", "chat_room:r", ""]),
        st.sampled_from(["phx_reply", "phx_close", "phx_error", "agent.control", "supersede", ""]),
        json_values,
    ),
    min_size=0,
    max_size=6,
)


@settings(max_examples=300)
@given(st.one_of(frame_like.map(json.dumps), st.text(max_size=40), st.binary(max_size=40)))
def test_any_input_is_a_frame_error_or_events(text: str | bytes) -> None:
    proto = connected()
    ref, _ = proto.send_join(TOPIC)
    proto.send_heartbeat(30.0)
    proto.receive_frame(ok_reply(ref, ref), 0.0)
    try:
        events = proto.receive_frame(text, 31.0)
    except FrameError:
        return
    for item in events:
        if isinstance(item, ChannelMessage):
            with contextlib.suppress(InvalidEventError):
                decode_event(item.topic, item.event, item.payload)
