"""Time-dependent behaviour of one Room, on the autojump clock.

The platform here is an in-memory fake of the few REST calls a room makes (no
sockets, so autojump cannot jump while a real read is pending). What is tested
is *when* the room acts: the periodic reconcile and its backoff (runtime.md
§8.54/§8.55), the stopped-room probe (§8.88), the turn timeout (§8.47) and the
retry backoff of deferred messages (§8.37).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import trio
import trio.testing

from band_trio.adapter import (
    AgentToolsProtocol,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
    ToolEffect,
    TurnHooks,
)
from band_trio.errors import InternalServerError, RoomExecutionStoppedError
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.ledger import ClaimsLedger
from band_trio.runtime.preprocessor import DefaultPreprocessor
from band_trio.runtime.room import Room, RoomServices
from band_trio.wire.models import ChatMessage, ChatParticipant, CursorPage, MessageStatus

AGENT = "agent-1"
ROOM = "room-1"
TS = "2026-01-01T00:00:00.000000Z"


class FakeRest:
    """The REST calls of one room, in memory, with a call log on the Trio clock."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.status: dict[str, str] = {}
        self.errors: dict[str, list[str]] = {}
        self.events: list[tuple[str, str]] = []
        self.replies: list[str] = []
        self.calls: list[tuple[float, str]] = []
        self.gated = False
        self.refuse_processing = 0

    def add(self, text: str) -> str:
        mid = f"m{len(self.messages) + 1}"
        self.messages.append(
            ChatMessage(
                id=mid,
                content=text,
                message_type="text",
                sender_id="user-1",
                sender_type="User",
                sender_name="Ann",
                inserted_at=TS,
                updated_at=TS,
                metadata={"mentions": [{"id": AGENT, "handle": "ann/agent"}]},
            )
        )
        self.status[mid] = "delivered"
        return mid

    def _log(self, name: str) -> None:
        self.calls.append((trio.current_time(), name))

    def times(self, name: str) -> list[float]:
        return [t for t, n in self.calls if n == name]

    def _actionable(self) -> list[ChatMessage]:
        return [m for m in self.messages if self.status[m.id] != "processed"]

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        await trio.lowlevel.checkpoint()
        self._log("next")
        if self.gated:
            return None
        pending = self._actionable()
        return pending[0] if pending else None

    async def list_messages(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await trio.lowlevel.checkpoint()
        self._log("list")
        return CursorPage(items=tuple(self._actionable()), has_more=False)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("processing")
        if self.gated:
            raise RoomExecutionStoppedError(chat_id)
        if self.refuse_processing:
            self.refuse_processing -= 1
            raise InternalServerError(500)
        self.status[message_id] = "processing"
        return MessageStatus(id=message_id, status="processing", attempt_number=1, success=True)

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("processed")
        self.status[message_id] = "processed"
        return MessageStatus(id=message_id, status="processed", attempt_number=1, success=True)

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        await trio.lowlevel.checkpoint()
        self._log("failed")
        self.status[message_id] = "failed"
        self.errors.setdefault(message_id, []).append(error)
        return MessageStatus(id=message_id, status="failed", attempt_number=1, success=True)

    async def send_event(
        self, chat_id: str, content: str, message_type: str, metadata: Any = None
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.events.append((message_type, content))

    async def get_context(self, chat_id: str, **_: Any) -> CursorPage[ChatMessage]:
        await trio.lowlevel.checkpoint()
        return CursorPage(items=(), has_more=False)

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        await trio.lowlevel.checkpoint()
        return [
            ChatParticipant(id="user-1", role="owner", status="active", type="User", name="Ann")
        ]

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await trio.lowlevel.checkpoint()
        return working


class FakeTools:
    def __init__(self, rest: FakeRest, hooks: TurnHooks) -> None:
        self._rest = rest
        self._hooks = hooks

    async def send_message(self, content: str, mentions: Sequence[str]) -> Any:
        await trio.lowlevel.checkpoint()
        self._rest.replies.append(content)
        self._hooks.reply_sent(f"r{len(self._rest.replies)}")
        self._hooks.record_effect(ToolEffect.REPLY)

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> Any:
        return None

    async def execute_tool_call(self, name: str, args: Mapping[str, Any]) -> Any:
        return None

    def get_tool_schemas(self, fmt: Any, *, capabilities: Any = None) -> list[dict[str, Any]]:
        return []


class Adapter(SimpleAdapter[HistoryProvider]):
    def __init__(self, hang: bool = False) -> None:
        super().__init__()
        self.hang = hang
        self.seen: list[str] = []

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.seen.append(msg.id)
        if self.hang:
            await trio.sleep_forever()
        await tools.send_message("ok", [msg.sender_id])


def make_room(rest: FakeRest, adapter: Adapter, **config: Any) -> Room:
    values: dict[str, Any] = {
        "state_dir": None,
        "idle_resync_interval": 10.0,
        "idle_resync_max_interval": 40.0,
        "retry_delay": 1.0,
    }
    values.update(config)
    cfg = AgentConfig(**values)
    services = RoomServices(
        agent_id=AGENT,
        rest=rest,
        ledger=ClaimsLedger.in_memory(max_attempts=cfg.max_attempts),
        adapter=adapter,
        preprocessor=DefaultPreprocessor(),
        config=cfg,
        make_tools=lambda room_id, participants, hooks: FakeTools(rest, hooks),  # type: ignore[arg-type,return-value]
        rng=random.Random(7),
    )
    return Room(ROOM, services)


async def test_missed_push_is_recovered_by_the_timer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.54: with no doorbell at all, the periodic reconcile finds the message."""
    rest = FakeRest()
    adapter = Adapter()
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(1)
        mid = rest.add("nobody rang")  # no push: only /next can find it
        await trio.sleep(50)
        assert rest.status[mid] == "processed"
        assert adapter.seen == [mid]
        nursery.cancel_scope.cancel()


async def test_empty_reconciles_back_off_to_the_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.54/§8.55: the first check is jittered within the base interval; the
    interval doubles while /next is empty, capped; work resets it to the base."""
    rest = FakeRest()
    room = make_room(rest, Adapter(), idle_resync_interval=10.0, idle_resync_max_interval=80.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(400)
        times = rest.times("next")
        assert times[0] == 0  # the startup drain
        assert 0 < times[1] <= 10  # jittered first periodic check
        gaps = [round(b - a, 3) for a, b in itertools.pairwise(times[1:])]
        assert gaps[:4] == [40.0, 80.0, 80.0, 80.0]
        rest.add("work")
        await trio.sleep(81)
        assert rest.status["m1"] == "processed"
        (done_at,) = rest.times("processed")
        await trio.sleep(11)
        after = sorted({t for t in rest.times("next") if t >= done_at})
        # The drain's closing /next, then the next check a base interval later.
        assert round(after[1] - after[0], 3) == 10.0
        nursery.cancel_scope.cancel()


async def test_stopped_room_probes_and_resumes_when_work_appears(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.86/§8.88: a stopped room claims nothing; a probe that finds work on
    /next (the platform lifted the gate: a PLAY was missed) resumes it."""
    rest = FakeRest()
    adapter = Adapter()
    room = make_room(rest, adapter, stopped_resync_interval=5.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(1)
        room.stop()
        rest.gated = True
        mid = rest.add("while stopped")
        await trio.sleep(30)
        assert adapter.seen == []
        probes = rest.times("next")
        assert len(probes) >= 5  # probing at the stopped interval
        rest.gated = False
        await trio.sleep(6)
        assert not room.stopped
        assert rest.status[mid] == "processed"
        nursery.cancel_scope.cancel()


async def test_turn_timeout_fails_the_message(autojump_clock: trio.testing.MockClock) -> None:
    """§8.47: a hung handler is cancelled at the timeout and the message marked
    failed with a safe label; the last attempt posts the generic error event."""
    rest = FakeRest()
    adapter = Adapter(hang=True)
    room = make_room(rest, adapter, turn_timeout=30.0, max_attempts=2)
    mid = rest.add("hang")
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(29)
        assert rest.status[mid] == "processing"
        await trio.sleep(2)
        assert rest.errors[mid] == ["TurnTimeout"]
        await trio.sleep(40)
        assert rest.errors[mid] == ["TurnTimeout", "TurnTimeout"]
        assert [t for t, _ in rest.events] == ["error"]
        assert room.statistics().failed_for_good == 1
        nursery.cancel_scope.cancel()


async def test_refused_claims_are_retried_with_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.37: a refused claim runs nothing and is retried soon, with backoff."""
    rest = FakeRest()
    adapter = Adapter()
    rest.refuse_processing = 3
    mid = rest.add("claim me")
    room = make_room(rest, adapter, idle_resync_interval=1000.0, idle_resync_max_interval=1000.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(20)
        claims = rest.times("processing")
        assert len(claims) == 4
        gaps = [round(b - a, 3) for a, b in itertools.pairwise(claims)]
        assert gaps == [1.0, 2.0, 4.0]
        assert rest.status[mid] == "processed"
        assert adapter.seen == [mid]
        nursery.cancel_scope.cancel()


async def test_activity_echo_false_stops_the_turn_cooperatively(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """§8.90: a ``working: true`` report answered ``working: false`` ends the turn
    as a platform stop: nothing is marked failed and the message is retried."""

    class EchoFalse(FakeRest):
        def __init__(self) -> None:
            super().__init__()
            self.stop_reports = 1

        async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
            await trio.lowlevel.checkpoint()
            if working and self.stop_reports:
                self.stop_reports -= 1
                return False
            return working

    rest = EchoFalse()
    adapter = Adapter()
    first_hangs = [True]

    async def on_message(*args: Any, **kwargs: Any) -> None:
        msg = args[0]
        adapter.seen.append(msg.id)
        if first_hangs.pop() if first_hangs else False:
            await trio.sleep_forever()  # the platform stop must end this
        await args[1].send_message("ok", [msg.sender_id])

    adapter.on_message = on_message  # type: ignore[method-assign]
    mid = rest.add("stopped by the platform")
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(30)
        assert adapter.seen == [mid, mid]
        assert rest.status[mid] == "processed"
        assert mid not in rest.errors
        assert not room.stopped  # a platform stop is not a local pause
        assert len(rest.replies) == 1
        nursery.cancel_scope.cancel()
