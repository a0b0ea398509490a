"""Hypothesis stateful test: the delivery lifecycle of `PlatformState` against a model.

Drives the sans-io state directly (no sockets): posts, claims, settlements,
stop/play and `/next`, and checks every answer and every delivery against a
small reference model of the lifecycle: claim, processed, failed, the
execution gate, and the oldest-actionable rule of ``/next``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from band_trio.local import RequestRefusedError
from band_trio.local._input import Obj
from band_trio.local.store import PlatformState


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = PlatformState()
        self.user = self.state.create_user("Ann", "ann")
        self.agent = self.state.register_agent(self.user, "Bot", "a bot")
        self.room = self.state.create_room(self.user, None).id
        self.state.add_participant(
            self.user, self.room, Obj({"participant": {"participant_id": self.agent.id}})
        )
        self.ids: list[str] = []
        # model: message id -> (status, attempt number, attempt open)
        self.model: dict[str, dict[str, Any]] = {}
        self.stopped = False

    @rule()
    def post(self) -> None:
        sent = self.state.post_message(
            self.user,
            self.room,
            Obj({"message": {"content": "work", "mentions": [{"id": self.agent.id}]}}),
        )
        self.ids.append(sent["id"])
        self.model[sent["id"]] = {"status": "delivered", "attempt": 0, "open": False}

    @rule(who=st.integers(0, 1000))
    @precondition(lambda self: self.ids)
    def claim(self, who: int) -> None:
        mid = self.ids[who % len(self.ids)]
        answer = self.state.mark_processing(self.agent, self.room, mid)
        expected = self.model[mid]
        if self.stopped:
            assert answer is None
            return
        if not expected["open"]:
            expected.update(status="processing", attempt=expected["attempt"] + 1, open=True)
        assert answer == {
            "id": mid,
            "status": "processing",
            "attempt_number": expected["attempt"],
            "success": True,
        }

    @rule(who=st.integers(0, 1000), ok=st.booleans())
    @precondition(lambda self: self.ids)
    def settle(self, who: int, ok: bool) -> None:
        mid = self.ids[who % len(self.ids)]
        expected = self.model[mid]

        def call() -> dict[str, Any] | None:
            if ok:
                return self.state.mark_processed(self.agent, self.room, mid)
            return self.state.mark_failed(self.agent, self.room, mid, Obj({"error": "e"}))

        if not self.stopped and not expected["open"]:
            with pytest.raises(RequestRefusedError) as caught:
                call()
            assert caught.value.status == 422
            assert "/processing_attempt" in caught.value.details
            return
        answer = call()
        if self.stopped:
            assert answer is None
            return
        assert expected["open"]
        expected.update(status="processed" if ok else "failed", open=False)
        assert answer == {
            "id": mid,
            "status": expected["status"],
            "attempt_number": expected["attempt"],
            "success": True,
        }

    @rule()
    def stop(self) -> None:
        self.state.control(self.agent.id, "stop", room_id=self.room)
        self.stopped = True

    @rule()
    def play(self) -> None:
        self.state.control(self.agent.id, "play", room_id=self.room)
        self.stopped = False

    @rule()
    def next_message(self) -> None:
        answer = self.state.next_message(self.agent, self.room)
        actionable = [mid for mid in self.ids if self.model[mid]["status"] != "processed"]
        if self.stopped or not actionable:
            assert answer is None
        else:
            assert answer is not None
            assert answer["id"] == actionable[0]

    @invariant()
    def deliveries_match_the_model(self) -> None:
        room = self.state.rooms[self.room]
        for mid, expected in self.model.items():
            delivery = room.by_id[mid].deliveries[self.agent.id]
            assert delivery.status == expected["status"]
            assert delivery.attempt_number == expected["attempt"]
            assert (delivery.active_attempt is not None) == expected["open"]
            assert (delivery.processed_at is not None) == (expected["status"] == "processed")
        listed = [m.id for m in self.state.work_list(self.agent, self.room, None)]
        assert listed == [mid for mid in self.ids if self.model[mid]["status"] != "processed"]


TestLifecycle = LifecycleMachine.TestCase
TestLifecycle.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


@pytest.mark.parametrize("status", ["pending", "processing", "processed", "failed", "all"])
def test_status_filters_partition_consistently(status: str) -> None:
    state = PlatformState()
    user = state.create_user("Ann", "ann")
    agent = state.register_agent(user, "Bot", "b")
    room = state.create_room(user, None).id
    state.add_participant(user, room, Obj({"participant": {"participant_id": agent.id}}))
    ids = [
        state.post_message(
            user, room, Obj({"message": {"content": "x", "mentions": [{"id": agent.id}]}})
        )["id"]
        for _ in range(4)
    ]
    state.mark_processing(agent, room, ids[1])
    state.mark_processing(agent, room, ids[2])
    state.mark_processed(agent, room, ids[2])
    state.mark_processing(agent, room, ids[3])
    state.mark_failed(agent, room, ids[3], None)
    listed = {m.id for m in state.work_list(agent, room, status)}
    expected = {
        "pending": {ids[0], ids[3]},
        "processing": {ids[1]},
        "processed": {ids[2]},
        "failed": {ids[3]},
        "all": set(ids),
    }[status]
    assert listed == expected
