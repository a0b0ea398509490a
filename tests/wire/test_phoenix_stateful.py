"""A Hypothesis state machine driving PhoenixProtocol against a small model.

The model is deliberately naive (a dict of topic -> (state, join_ref), a ref
counter, and heartbeat bookkeeping); every rule predicts the events the real
protocol must return, and the invariants compare the two after each step.
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from band_trio.errors import LocalProtocolError
from band_trio.wire.phoenix import (
    ChannelClosed,
    ChannelErrored,
    ChannelMessage,
    HeartbeatAck,
    JoinFailed,
    JoinOk,
    LeaveFailed,
    LeaveOk,
    PhoenixEvent,
    PhoenixProtocol,
    TopicState,
)

TOPICS = ["agent_control:a", "agent_rooms:a", "chat_room:r", "room_participants:r"]
J, OK, LEAVING, REJOIN = (
    TopicState.JOINING,
    TopicState.JOINED,
    TopicState.LEAVING,
    TopicState.NEEDS_REJOIN,
)

topics = st.sampled_from(TOPICS)
which_ref = st.sampled_from(["current", "stale", "null"])


class PhoenixMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.proto = PhoenixProtocol()
        self.now = 0.0
        self.last_ref = 0
        self.topics: dict[str, tuple[TopicState, str | None]] = {}
        self.old_refs: dict[str, str] = {}
        self.connected = False
        self.next_hb = 0.0
        self.last_ack = 0.0
        self.pending_hb: set[int] = set()

    # ------------------------------------------------------------ helpers

    def feed(
        self, join_ref: str | None, ref: str | None, topic: str, event: str, payload: Any
    ) -> list[PhoenixEvent]:
        return self.proto.receive_frame(
            json.dumps([join_ref, ref, topic, event, payload]), self.now
        )

    def pick_join_ref(self, topic: str, which: str) -> str | None:
        if which == "null":
            return None
        current = self.topics.get(topic, (None, None))[1]
        if which == "current" and current is not None:
            return current
        stale = self.old_refs.get(topic, "0")
        return stale if stale != current else "0"

    def is_current(self, topic: str, join_ref: str | None) -> bool:
        entry = self.topics.get(topic)
        return entry is not None and entry[1] is not None and join_ref == entry[1]

    def remember(self, topic: str) -> None:
        old = self.topics.get(topic, (None, None))[1]
        if old is not None:
            self.old_refs[topic] = old

    def take_ref(self, ref: str) -> None:
        assert int(ref) == self.last_ref + 1, "one shared, strictly increasing ref counter"
        self.last_ref += 1

    # ------------------------------------------------------------ rules

    @rule(dt=st.floats(min_value=0, max_value=100))
    def reconnect(self, dt: float) -> None:
        self.now += dt
        rejoin = self.proto.reset_connection(self.now)
        for topic, (state, _) in list(self.topics.items()):
            self.remember(topic)
            if state is LEAVING:
                del self.topics[topic]
            else:
                self.topics[topic] = (REJOIN, None)
        assert rejoin == list(self.topics)
        self.connected = True
        self.next_hb = self.now + 30.0
        self.last_ack = self.now
        self.pending_hb.clear()

    @rule()
    def disconnect(self) -> None:
        self.proto.connection_lost()
        self.connected = False

    @rule(topic=topics)
    def join(self, topic: str) -> None:
        entry = self.topics.get(topic)
        if not self.connected or (entry is not None and entry[0] is not REJOIN):
            try:
                self.proto.send_join(topic)
            except LocalProtocolError:
                return
            raise AssertionError("join should have been refused")
        ref, text = self.proto.send_join(topic)
        self.take_ref(ref)
        assert json.loads(text) == [ref, ref, topic, "phx_join", {}]
        self.remember(topic)
        self.topics[topic] = (J, ref)

    @rule(topic=topics, which=which_ref, ok=st.booleans())
    def reply(self, topic: str, which: str, ok: bool) -> None:
        join_ref = self.pick_join_ref(topic, which)
        payload = {"status": "ok" if ok else "error", "response": {"reason": "no"}}
        events = self.feed(join_ref, join_ref, topic, "phx_reply", payload)
        expected: list[PhoenixEvent] = []
        if self.is_current(topic, join_ref):
            state, jr = self.topics[topic]
            assert jr is not None
            if state is J:
                if ok:
                    self.topics[topic] = (OK, jr)
                    expected = [JoinOk(topic, jr, {"reason": "no"})]
                else:
                    self.remember(topic)
                    del self.topics[topic]
                    expected = [JoinFailed(topic, jr, "no")]
            elif state is LEAVING:
                self.remember(topic)
                del self.topics[topic]
                expected = [LeaveOk(topic) if ok else LeaveFailed(topic, "no")]
        assert events == expected

    @rule(topic=topics, which=which_ref, event=st.sampled_from(["message_created", "supersede"]))
    def push(self, topic: str, which: str, event: str) -> None:
        join_ref = self.pick_join_ref(topic, which)
        events = self.feed(join_ref, None, topic, event, {"n": 1})
        delivered = self.is_current(topic, join_ref) and self.topics[topic][0] in (OK, LEAVING)
        assert events == ([ChannelMessage(topic, event, {"n": 1})] if delivered else [])

    @rule(topic=topics)
    def leave(self, topic: str) -> None:
        entry = self.topics.get(topic)
        if entry is None or entry[0] is LEAVING:
            try:
                self.proto.send_leave(topic)
            except LocalProtocolError:
                return
            raise AssertionError("leave should have been refused")
        text = self.proto.send_leave(topic)
        state, jr = entry
        if state is REJOIN or not self.connected:
            assert text is None
            self.remember(topic)
            del self.topics[topic]
            return
        assert text is not None
        sent = json.loads(text)
        self.take_ref(sent[1])
        assert sent[0] == jr
        assert sent[2:] == [topic, "phx_leave", {}]
        if state is J:
            self.remember(topic)
            del self.topics[topic]
        else:
            self.topics[topic] = (LEAVING, jr)

    @rule(topic=topics, which=which_ref)
    def server_close(self, topic: str, which: str) -> None:
        join_ref = self.pick_join_ref(topic, which)
        events = self.feed(join_ref, join_ref, topic, "phx_close", {})
        expected: list[PhoenixEvent] = []
        if self.is_current(topic, join_ref) and self.topics[topic][0] in (OK, LEAVING):
            expected = [
                LeaveOk(topic) if self.topics[topic][0] is LEAVING else ChannelClosed(topic)
            ]
            self.remember(topic)
            del self.topics[topic]
        assert events == expected

    @rule(topic=topics, which=which_ref)
    def server_error(self, topic: str, which: str) -> None:
        join_ref = self.pick_join_ref(topic, which)
        events = self.feed(join_ref, join_ref, topic, "phx_error", {})
        expected: list[PhoenixEvent] = []
        if self.is_current(topic, join_ref):
            state = self.topics[topic][0]
            if state is OK:
                self.remember(topic)
                self.topics[topic] = (REJOIN, None)
                expected = [ChannelErrored(topic)]
            elif state is LEAVING:
                self.remember(topic)
                del self.topics[topic]
                expected = [LeaveFailed(topic, "channel errored")]
        assert events == expected

    @rule(dt=st.floats(min_value=0, max_value=45))
    def advance_and_heartbeat(self, dt: float) -> None:
        self.now += dt
        due = self.connected and self.now >= self.next_hb
        assert self.proto.heartbeat_due(self.now) == due
        if due:
            ref, text = self.proto.send_heartbeat(self.now)
            self.take_ref(ref)
            assert json.loads(text) == [None, ref, "phoenix", "heartbeat", {}]
            self.pending_hb.add(int(ref))
            self.next_hb = self.now + 30.0

    @precondition(lambda self: bool(self.pending_hb))
    @rule(data=st.data(), dt=st.floats(min_value=0, max_value=10))
    def ack_heartbeat(self, data: st.DataObject, dt: float) -> None:
        self.now += dt
        ref = data.draw(st.sampled_from(sorted(self.pending_hb)))
        events = self.feed(None, str(ref), "phoenix", "phx_reply", {"status": "ok", "response": {}})
        assert events == [HeartbeatAck(str(ref))]
        self.pending_hb = {r for r in self.pending_hb if r > ref}
        self.last_ack = max(self.last_ack, self.now)

    @rule(ref=st.integers(min_value=0, max_value=200))
    def bogus_ack(self, ref: int) -> None:
        events = self.feed(None, str(ref), "phoenix", "phx_reply", {"status": "ok"})
        if ref in self.pending_hb:
            assert events == [HeartbeatAck(str(ref))]
            self.pending_hb = {r for r in self.pending_hb if r > ref}
            self.last_ack = max(self.last_ack, self.now)
        else:
            assert events == []

    # ------------------------------------------------------------ invariants

    @invariant()
    def topics_agree(self) -> None:
        assert self.proto.topics() == {t: s for t, (s, _) in self.topics.items()}
        for topic, (_, jr) in self.topics.items():
            assert self.proto.join_ref(topic) == jr

    @invariant()
    def timing_agrees(self) -> None:
        assert self.proto.last_ref == self.last_ref
        assert self.proto.connected == self.connected
        assert self.proto.is_dead(self.now) == (self.connected and self.now >= self.last_ack + 60.0)
        assert self.proto.heartbeat_due(self.now) == (self.connected and self.now >= self.next_hb)
        if self.connected:
            assert self.proto.dead_at == self.last_ack + 60.0
            assert self.proto.next_heartbeat_at == self.next_hb


PhoenixMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
TestPhoenixStateful = PhoenixMachine.TestCase
